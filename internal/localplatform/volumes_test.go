package localplatform

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
)

// volumesFixture is a provisioner on a fake clientset whose caches the test fills directly.
type volumesFixture struct {
	v       *localVolumes
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	events  *events.FakeRecorder
	dir     string
}

func newVolumesFixture(t *testing.T, objects ...runtime.Object) *volumesFixture {
	t.Helper()
	f := &volumesFixture{client: fake.NewClientset(objects...), events: events.NewFakeRecorder(10), dir: t.TempDir()}
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	var err error
	if f.v, err = newLocalVolumes(f.client, f.factory, f.events, f.dir); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objects {
		var err error
		switch o := obj.(type) {
		case *corev1.PersistentVolumeClaim:
			err = f.factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolume:
			err = f.factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o)
		case *storagev1.StorageClass:
			err = f.factory.Storage().V1().StorageClasses().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f.client.ClearActions()
	return f
}

// writes are the fake clientset's create and delete actions, as "verb resource".
func (f *volumesFixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "delete" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func (f *volumesFixture) event(t *testing.T) string {
	t.Helper()
	select {
	case e := <-f.events.Events:
		return e
	default:
		return ""
	}
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode, reclaim corev1.PersistentVolumeReclaimPolicy) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode, ReclaimPolicy: &reclaim}
}

// waitingClaim is a claim the binder has handed to provisioner, on node kwok-node-1.
func waitingClaim(className, provisioner string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "data-db-0", UID: "c1", ResourceVersion: "7",
			Annotations: map[string]string{annStorageProvisioner: provisioner, annSelectedNode: "kwok-node-1"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &className,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
}

var kwokNode1 = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node-1", Labels: map[string]string{corev1.LabelHostname: "host-1"}}}

var claimKey = cache.NewObjectName("team", "data-db-0")

func TestLocalVolumesProvisionAWaitingClaim(t *testing.T) {
	f := newVolumesFixture(t, class("local", VolumeProvisioner, storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimDelete),
		waitingClaim("local", VolumeProvisioner), kwokNode1)
	if err := f.v.reconcileClaim(context.Background(), claimKey); err != nil {
		t.Fatal(err)
	}
	pv, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "pvc-c1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no volume for the claim: %v", err)
	}
	path := filepath.Join(f.dir, "pvc-c1")
	if pv.Annotations[annProvisionedBy] != VolumeProvisioner {
		t.Errorf("provisioned-by = %q", pv.Annotations[annProvisionedBy])
	}
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.String() != "1Gi" {
		t.Errorf("capacity = %s, want the claim's 1Gi", size.String())
	}
	if len(pv.Spec.AccessModes) != 1 || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("access modes = %v", pv.Spec.AccessModes)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != "team" || ref.Name != "data-db-0" || ref.UID != "c1" {
		t.Errorf("claimRef = %+v", ref)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.StorageClassName != "local" {
		t.Errorf("reclaim policy %q, class %q", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.StorageClassName)
	}
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != path {
		t.Errorf("hostPath = %+v, want %s", pv.Spec.HostPath, path)
	}
	if info, err := os.Stat(path); err != nil || !info.IsDir() {
		t.Errorf("the volume's directory is missing: %v", err)
	}
	affinity := pv.Spec.NodeAffinity
	if affinity == nil || affinity.Required == nil || len(affinity.Required.NodeSelectorTerms) != 1 {
		t.Fatalf("node affinity = %+v", affinity)
	}
	if req := affinity.Required.NodeSelectorTerms[0].MatchExpressions; len(req) != 1 || req[0].Key != corev1.LabelHostname || len(req[0].Values) != 1 || req[0].Values[0] != "host-1" {
		t.Errorf("node affinity = %+v, want the chosen node's hostname label host-1", req)
	}
	if e := f.event(t); !strings.HasPrefix(e, "Normal ProvisioningSucceeded") {
		t.Errorf("event = %q", e)
	}
}

func TestLocalVolumesImmediateClassAndRetain(t *testing.T) {
	claim := waitingClaim("fast", VolumeProvisioner)
	delete(claim.Annotations, annSelectedNode)
	claim.Annotations = map[string]string{annBetaStorageProvisioner: VolumeProvisioner}
	f := newVolumesFixture(t, class("fast", VolumeProvisioner, storagev1.VolumeBindingImmediate, corev1.PersistentVolumeReclaimRetain), claim)
	if err := f.v.reconcileClaim(context.Background(), claimKey); err != nil {
		t.Fatal(err)
	}
	pv, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "pvc-c1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no volume for a claim of an Immediate class (beta annotation): %v", err)
	}
	if pv.Spec.NodeAffinity != nil {
		t.Errorf("a volume made before any node was chosen has node affinity %+v", pv.Spec.NodeAffinity)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("reclaim policy %q, want the class's Retain", pv.Spec.PersistentVolumeReclaimPolicy)
	}
}

func TestLocalVolumesLeaveOtherClaimsAlone(t *testing.T) {
	local := class("local", VolumeProvisioner, storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimDelete)
	cases := map[string]func(c *corev1.PersistentVolumeClaim) []runtime.Object{
		"another provisioner's class": func(c *corev1.PersistentVolumeClaim) []runtime.Object {
			*c = *waitingClaim("ebs", "ebs.csi.aws.com")
			return []runtime.Object{class("ebs", "ebs.csi.aws.com", storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimDelete)}
		},
		"not handed over by the binder": func(c *corev1.PersistentVolumeClaim) []runtime.Object {
			delete(c.Annotations, annStorageProvisioner)
			return nil
		},
		"bound": func(c *corev1.PersistentVolumeClaim) []runtime.Object {
			c.Spec.VolumeName, c.Status.Phase = "pvc-c1", corev1.ClaimBound
			return nil
		},
		"being deleted": func(c *corev1.PersistentVolumeClaim) []runtime.Object {
			c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			return nil
		},
		"no node chosen yet": func(c *corev1.PersistentVolumeClaim) []runtime.Object {
			delete(c.Annotations, annSelectedNode)
			return nil
		},
		"annotated for us, class of another provisioner": func(c *corev1.PersistentVolumeClaim) []runtime.Object {
			c.Spec.StorageClassName = ptrTo("nfs")
			return []runtime.Object{class("nfs", "nfs.example.com", storagev1.VolumeBindingImmediate, corev1.PersistentVolumeReclaimDelete)}
		},
		"no class": func(c *corev1.PersistentVolumeClaim) []runtime.Object {
			c.Spec.StorageClassName = nil
			return nil
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			claim := waitingClaim("local", VolumeProvisioner)
			objects := append(change(claim), local, claim, kwokNode1)
			f := newVolumesFixture(t, objects...)
			if err := f.v.reconcileClaim(context.Background(), claimKey); err != nil {
				t.Fatal(err)
			}
			if w := f.writes(); len(w) != 0 {
				t.Errorf("wrote %v", w)
			}
			if entries, _ := os.ReadDir(f.dir); len(entries) != 0 {
				t.Errorf("made %d directories", len(entries))
			}
		})
	}
	t.Run("gone", func(t *testing.T) {
		f := newVolumesFixture(t, local)
		if err := f.v.reconcileClaim(context.Background(), claimKey); err != nil || len(f.writes()) != 0 {
			t.Errorf("err %v, writes %v", err, f.writes())
		}
	})
}

func TestLocalVolumesRefuseWhatADirectoryCannotServe(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	cases := map[string]func(c *corev1.PersistentVolumeClaim){
		"no size": func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil },
		"block":   func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = &block },
		"data source": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "other"}
		},
		"data source ref": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "other"}
		},
		"selector": func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "ssd"}}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			claim := waitingClaim("local", VolumeProvisioner)
			change(claim)
			f := newVolumesFixture(t, class("local", VolumeProvisioner, storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimDelete), claim, kwokNode1)
			if err := f.v.reconcileClaim(context.Background(), claimKey); err != nil {
				t.Fatalf("a claim that cannot be served is not an error to retry: %v", err)
			}
			if w := f.writes(); len(w) != 0 {
				t.Errorf("wrote %v", w)
			}
			if e := f.event(t); !strings.HasPrefix(e, "Warning ProvisioningFailed The local volume provisioner cannot serve this claim: ") {
				t.Errorf("event = %q", e)
			}
		})
	}
}

func TestLocalVolumesProvisionFailures(t *testing.T) {
	local := class("local", VolumeProvisioner, storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimDelete)
	t.Run("already made", func(t *testing.T) {
		existing := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-c1"}}
		f := newVolumesFixture(t, local, waitingClaim("local", VolumeProvisioner), kwokNode1, existing)
		if err := f.v.reconcileClaim(context.Background(), claimKey); err != nil {
			t.Errorf("a volume made by an earlier pass is not an error: %v", err)
		}
		if e := f.event(t); e != "" {
			t.Errorf("event %q for a volume made earlier", e)
		}
	})
	t.Run("create refused", func(t *testing.T) {
		f := newVolumesFixture(t, local, waitingClaim("local", VolumeProvisioner), kwokNode1)
		f.client.PrependReactor("create", "persistentvolumes", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		})
		if err := f.v.reconcileClaim(context.Background(), claimKey); err == nil {
			t.Error("a refused create is not returned for a retry")
		}
		if _, err := os.Stat(filepath.Join(f.dir, "pvc-c1")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the directory of a volume never made is left behind: %v", err)
		}
	})
	t.Run("node gone", func(t *testing.T) {
		f := newVolumesFixture(t, local, waitingClaim("local", VolumeProvisioner))
		if err := f.v.reconcileClaim(context.Background(), claimKey); err == nil {
			t.Error("a volume was made for a node that does not exist")
		}
		if w := f.writes(); len(w) != 0 {
			t.Errorf("wrote %v", w)
		}
	})
	t.Run("node without hostname label", func(t *testing.T) {
		f := newVolumesFixture(t, local, waitingClaim("local", VolumeProvisioner), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node-1"}})
		if err := f.v.reconcileClaim(context.Background(), claimKey); err != nil {
			t.Fatal(err)
		}
		pv, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "pvc-c1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values; v[0] != "kwok-node-1" {
			t.Errorf("affinity values %v, want the node's name", v)
		}
	})
}

func volume(name, provisioner string, phase corev1.PersistentVolumePhase, reclaim corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{annProvisionedBy: provisioner}},
		Spec:       corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: reclaim},
		Status:     corev1.PersistentVolumeStatus{Phase: phase},
	}
}

func TestLocalVolumesDeleteReleasedOnes(t *testing.T) {
	cases := map[string]struct {
		pv      *corev1.PersistentVolume
		deleted bool
	}{
		"released, ours":             {volume("pvc-a", VolumeProvisioner, corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete), true},
		"bound, ours":                {volume("pvc-a", VolumeProvisioner, corev1.VolumeBound, corev1.PersistentVolumeReclaimDelete), false},
		"released, another's":        {volume("pvc-a", "ebs.csi.aws.com", corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete), false},
		"released, ours, retained":   {volume("pvc-a", VolumeProvisioner, corev1.VolumeReleased, corev1.PersistentVolumeReclaimRetain), false},
		"released, made by an admin": {volume("pvc-a", "", corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete), false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := newVolumesFixture(t, c.pv)
			dir := filepath.Join(f.dir, "pvc-a")
			if err := os.MkdirAll(filepath.Join(dir, "pgdata"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := f.v.reconcileVolume(context.Background(), cache.NewObjectName("", "pvc-a")); err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(dir)
			if c.deleted {
				if w := f.writes(); len(w) != 1 || w[0] != "delete persistentvolumes" {
					t.Errorf("writes %v, want the volume deleted", w)
				}
				if del, ok := f.client.Actions()[len(f.client.Actions())-1].(clienttesting.DeleteAction); !ok ||
					del.GetDeleteOptions().Preconditions == nil || *del.GetDeleteOptions().Preconditions.UID != "uid-pvc-a" {
					t.Errorf("the delete is not bound to the volume's UID: %+v", del)
				}
				if !errors.Is(statErr, os.ErrNotExist) {
					t.Errorf("the directory is still there: %v", statErr)
				}
				return
			}
			if w := f.writes(); len(w) != 0 {
				t.Errorf("wrote %v", w)
			}
			if statErr != nil {
				t.Errorf("the directory of a volume kept was removed: %v", statErr)
			}
		})
	}
	t.Run("already gone", func(t *testing.T) {
		f := newVolumesFixture(t, volume("pvc-a", VolumeProvisioner, corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete))
		f.client.PrependReactor("delete", "persistentvolumes", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, "pvc-a")
		})
		if err := f.v.reconcileVolume(context.Background(), cache.NewObjectName("", "pvc-a")); err != nil {
			t.Errorf("a volume deleted meanwhile is not an error: %v", err)
		}
	})
	t.Run("a name that is not a directory name", func(t *testing.T) {
		f := newVolumesFixture(t, volume("..", VolumeProvisioner, corev1.VolumeReleased, corev1.PersistentVolumeReclaimDelete))
		if err := f.v.reconcileVolume(context.Background(), cache.NewObjectName("", "..")); err == nil {
			t.Error("a volume named .. was accepted")
		}
		if _, err := os.Stat(f.dir); err != nil {
			t.Errorf("the volumes directory was removed: %v", err)
		}
		if w := f.writes(); len(w) != 0 {
			t.Errorf("wrote %v", w)
		}
	})
}

// TestLocalVolumesRun runs the provisioner's loops on a fake cluster: a claim handed over
// gets its volume, and the volume goes once it is Released.
func TestLocalVolumesRun(t *testing.T) {
	f := newVolumesFixture(t, class("local", VolumeProvisioner, storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimDelete), kwokNode1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.factory.Start(ctx.Done())
	done := make(chan struct{}, 2)
	for _, l := range []interface {
		Run(context.Context, int) error
	}{f.v.claimLoop, f.v.volumeLoop} {
		go func() { _ = l.Run(ctx, 1); done <- struct{}{} }()
	}
	defer func() { cancel(); <-done; <-done; f.factory.Shutdown() }()
	if _, err := f.client.CoreV1().PersistentVolumeClaims("team").Create(ctx, waitingClaim("local", VolumeProvisioner), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pv *corev1.PersistentVolume
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var err error
		pv, err = f.client.CoreV1().PersistentVolumes().Get(ctx, "pvc-c1", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("no volume for the claim: %v", err)
	}
	pv.Status.Phase = corev1.VolumeReleased
	if _, err := f.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := f.client.CoreV1().PersistentVolumes().Get(ctx, "pvc-c1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the released volume was not deleted: %v", err)
	}
}

// TestLocalVolumesWaitForTheirCaches: the claim loop reads claims and classes, the volume loop
// volumes; neither works on an empty cache.
func TestLocalVolumesWaitForTheirCaches(t *testing.T) {
	build := func(pick func(v *localVolumes) looptest.Controller, resources ...string) func(t *testing.T) (looptest.Controller, []looptest.Reads, func(<-chan struct{})) {
		return func(t *testing.T) (looptest.Controller, []looptest.Reads, func(<-chan struct{})) {
			client := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(client, 0)
			v, err := newLocalVolumes(client, factory, events.NewFakeRecorder(10), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			informer := map[string]cache.SharedIndexInformer{
				"persistentvolumeclaims": factory.Core().V1().PersistentVolumeClaims().Informer(),
				"persistentvolumes":      factory.Core().V1().PersistentVolumes().Informer(),
				"storageclasses":         factory.Storage().V1().StorageClasses().Informer(),
			}
			var reads []looptest.Reads
			for _, r := range resources {
				reads = append(reads, looptest.Reads{Fake: &client.Fake, Resource: r, Informer: informer[r]})
			}
			return pick(v), reads, func(stop <-chan struct{}) { factory.Start(stop) }
		}
	}
	t.Run("claims", func(t *testing.T) {
		looptest.ExpectWaitsForEvery(t, build(func(v *localVolumes) looptest.Controller { return v.claimLoop }, "persistentvolumeclaims", "storageclasses"))
	})
	t.Run("volumes", func(t *testing.T) {
		looptest.ExpectWaitsForEvery(t, build(func(v *localVolumes) looptest.Controller { return v.volumeLoop }, "persistentvolumes"))
	})
}

// TestStorageClassManifest: the class is the default one, names the provisioner and waits for
// the first consumer.
func TestStorageClassManifest(t *testing.T) {
	for _, want := range []string{"name: local\n", `storageclass.kubernetes.io/is-default-class: "true"`, "provisioner: plinth.dev/local-volume\n",
		"reclaimPolicy: Delete\n", "volumeBindingMode: WaitForFirstConsumer\n"} {
		if !strings.Contains(storageClassManifest, want) {
			t.Errorf("StorageClass manifest lacks %q:\n%s", want, storageClassManifest)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
