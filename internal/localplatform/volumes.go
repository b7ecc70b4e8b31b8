package localplatform

// Local volumes: the local platform's stand-in for a storage driver. A real cluster has a
// default StorageClass whose provisioner (a CSI driver behind external-provisioner) creates a
// volume for each claim kube-controller-manager's PV binder hands it and deletes the volume once
// its claim is gone. Here StorageClass local names the provisioner plinth.dev/local-volume, which
// runs in the platform's own process: for each claim the binder marks as waiting for it, it makes
// a directory under <Dir>/volumes and a hostPath PersistentVolume pre-bound to the claim, which
// the binder then binds; when the binder marks such a volume Released (its claim was deleted), it
// removes both. kwok's pods mount nothing, so the directory only stands for the storage.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/plinth-dev/plinth/pkg/controllers/loop"
)

const (
	// StorageClassName is the local platform's default StorageClass.
	StorageClassName = "local"
	// VolumeProvisioner is StorageClass local's provisioner: the platform process itself.
	VolumeProvisioner = "plinth.dev/local-volume"
)

// Annotations the PV binder and kube-scheduler write (k8s.io/component-helpers names them; the
// module does not otherwise need it).
const (
	annStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	annBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	annSelectedNode           = "volume.kubernetes.io/selected-node"
	annProvisionedBy          = "pv.kubernetes.io/provisioned-by"
)

// storageClassManifest is StorageClass local. WaitForFirstConsumer, as kind's local-path class:
// a directory lives on one node, so kube-scheduler places the claim's first pod (writing the
// claim's selected-node annotation) before the volume is made, and the volume's node affinity
// then keeps later pods of the claim on that node.
var storageClassManifest = fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: %s
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: %s
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
`, StorageClassName, VolumeProvisioner)

// localVolumes provisions and deletes the volumes of StorageClass local.
type localVolumes struct {
	client   kubernetes.Interface
	recorder events.EventRecorder
	dir      string // where volume directories live
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	// claimLoop reconciles claims (provisioning), volumeLoop volumes (deletion).
	claimLoop, volumeLoop *loop.Loop
}

// newLocalVolumes builds the provisioner on factory's informers; start factory afterwards.
func newLocalVolumes(client kubernetes.Interface, factory informers.SharedInformerFactory, recorder events.EventRecorder, dir string) (*localVolumes, error) {
	claims, volumes := factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().PersistentVolumes()
	classes := factory.Storage().V1().StorageClasses()
	v := &localVolumes{client: client, recorder: recorder, dir: dir,
		claims: claims.Lister(), volumes: volumes.Lister(), classes: classes.Lister()}
	v.claimLoop = loop.New("local-volume-claims", v.reconcileClaim, claims.Informer(), classes.Informer())
	v.volumeLoop = loop.New("local-volumes", v.reconcileVolume, volumes.Informer())
	if err := v.claimLoop.Watch(claims.Informer()); err != nil {
		return nil, err
	}
	return v, v.volumeLoop.Watch(volumes.Informer())
}

// reconcileClaim makes the volume of a claim that the PV binder says waits for this provisioner.
func (v *localVolumes) reconcileClaim(ctx context.Context, key cache.ObjectName) error {
	claim, err := v.claims.PersistentVolumeClaims(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// The binder writes the storage-provisioner annotation when it wants a volume made: for
	// WaitForFirstConsumer, only once kube-scheduler has chosen the node.
	ours := claim.Annotations[annStorageProvisioner] == VolumeProvisioner || claim.Annotations[annBetaStorageProvisioner] == VolumeProvisioner
	if !ours || claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil || claim.Spec.StorageClassName == nil {
		return nil
	}
	class, err := v.classes.Get(*claim.Spec.StorageClassName)
	if err != nil {
		return err
	}
	node := claim.Annotations[annSelectedNode]
	if class.Provisioner != VolumeProvisioner ||
		(class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer && node == "") {
		return nil
	}
	if reason := unsupportedClaim(claim); reason != "" {
		// Nothing to retry until the claim changes; the event tells its owner why.
		v.recorder.Eventf(claim, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provision", "The local volume provisioner cannot serve this claim: %s.", reason)
		return nil
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(claim.UID), Annotations: map[string]string{annProvisionedBy: VolumeProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion},
		},
	}
	if class.ReclaimPolicy != nil {
		pv.Spec.PersistentVolumeReclaimPolicy = *class.ReclaimPolicy
	}
	if node != "" {
		if pv.Spec.NodeAffinity, err = v.nodeAffinity(ctx, node); err != nil {
			return err
		}
	}
	path := filepath.Join(v.dir, pv.Name)
	directory := corev1.HostPathDirectory
	pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: path, Type: &directory}
	// Writable by every user, as local-path and hostPath provisioners make them: a pod on the
	// real node that runs as non-root (the chart's etcd) writes its data there, and a
	// hostPath volume takes no fsGroup.
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o777); err != nil {
		return err
	}
	_, err = v.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err): // made by an earlier pass; the binder binds it
		return nil
	case err != nil:
		// The retry makes the directory again.
		_ = os.RemoveAll(path)
		return err
	}
	klog.FromContext(ctx).Info("Provisioned a volume", "volume", pv.Name, "claim", key, "path", path)
	v.recorder.Eventf(claim, nil, corev1.EventTypeNormal, "ProvisioningSucceeded", "Provision", "Successfully provisioned volume %s.", pv.Name)
	return nil
}

// unsupportedClaim says why a hostPath directory cannot serve a claim, or "" if it can.
func unsupportedClaim(claim *corev1.PersistentVolumeClaim) string {
	switch _, sized := claim.Spec.Resources.Requests[corev1.ResourceStorage]; {
	case !sized:
		return "it requests no storage size"
	case claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock:
		return "it asks for a block device, and local volumes are directories"
	case claim.Spec.DataSource != nil || claim.Spec.DataSourceRef != nil:
		return "it asks for a copy of a data source, and local volumes start empty"
	case claim.Spec.Selector != nil:
		return "it selects volumes by label, which dynamic provisioning does not do"
	}
	return ""
}

// nodeAffinity pins a volume to the node kube-scheduler chose, by the node's hostname label as
// kube-scheduler matches volumes (a node without the label is taken to be named after its host).
func (v *localVolumes) nodeAffinity(ctx context.Context, nodeName string) (*corev1.VolumeNodeAffinity, error) {
	node, err := v.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	hostname, ok := node.Labels[corev1.LabelHostname]
	if !ok {
		hostname = node.Name
	}
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
	}}}}, nil
}

// reconcileVolume deletes a volume this provisioner made once the binder has marked it
// Released under reclaim policy Delete, directory first. A volume object deleted directly
// leaves its directory behind, as a real driver's storage outlives a deleted PV object.
func (v *localVolumes) reconcileVolume(ctx context.Context, key cache.ObjectName) error {
	pv, err := v.volumes.Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[annProvisionedBy] != VolumeProvisioner || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	// The directory is found from the name, never from the (editable) spec; kube-apiserver
	// allows no path separators in names, and this keeps a fake or future one from escaping.
	if pv.Name != filepath.Base(pv.Name) || pv.Name == "." || pv.Name == ".." {
		return fmt.Errorf("volume name %q is not a directory name", pv.Name)
	}
	if err := os.RemoveAll(filepath.Join(v.dir, pv.Name)); err != nil {
		return err
	}
	err = v.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	klog.FromContext(ctx).Info("Deleted a released volume", "volume", pv.Name)
	return nil
}

// startVolumes applies StorageClass local and starts its provisioner with the admin's
// credentials, logging to <logs>/local-volumes.log; Stop stops it.
func (p *Platform) startVolumes(ctx context.Context) error {
	if err := p.kubectlStdin(ctx, storageClassManifest, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	cfg, err := p.AdminConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 0 // a client timeout would cut the informers' watches
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.LogDir(), 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(p.LogDir(), "local-volumes.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile)))
	// Its own context: Start's ends when Start returns, the provisioner lives until Stop.
	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	factory := informers.NewSharedInformerFactory(client, 0)
	v, err := newLocalVolumes(client, factory, broadcaster.NewRecorder(scheme.Scheme, VolumeProvisioner), filepath.Join(p.cfg.Dir, "volumes"))
	if err == nil {
		err = broadcaster.StartRecordingToSinkWithContext(runCtx)
	}
	if err != nil {
		cancel()
		logFile.Close()
		return err
	}
	factory.StartWithContext(runCtx)
	var running sync.WaitGroup
	for _, l := range []*loop.Loop{v.claimLoop, v.volumeLoop} {
		running.Go(func() {
			if err := l.Run(runCtx, 2); err != nil {
				logger.Error(err, "Local volume provisioner stopped", "loop", l.Name())
			}
		})
	}
	p.stopVolumes = func() {
		cancel()
		running.Wait()
		factory.Shutdown()
		broadcaster.Shutdown()
		logFile.Close()
	}
	return nil
}
