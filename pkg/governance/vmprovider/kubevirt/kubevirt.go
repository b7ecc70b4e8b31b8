package kubevirt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtclient "kubevirt.io/client-go/kubevirt"

	"github.com/plinth-dev/plinth/pkg/credentials"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/governance/vmprovider"
)

// RestartAnnotation records the restart a VM last got (RestartVM's time), so a restart
// request is carried out once.
const RestartAnnotation = "kubevirt-shepherd.io/restarted-at"

// Clients are the clients of one cluster.
type Clients struct {
	KubeVirt kubevirtclient.Interface
	Kube     kubernetes.Interface
}

// ClientsFunc returns the clients of a cluster.
type ClientsFunc func(ctx context.Context, cluster string) (*Clients, error)

// FromCredentials builds clients from a credentials vmprovider. client-go shares TLS transports
// between identical configs, so building clients per call costs no new connections.
func FromCredentials(creds credentials.Provider) ClientsFunc {
	return func(ctx context.Context, cluster string) (*Clients, error) {
		cfg, err := creds.GetRESTConfig(ctx, cluster)
		if err != nil {
			return nil, err
		}
		kv, err := kubevirtclient.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return &Clients{KubeVirt: kv, Kube: kube}, nil
	}
}

// Provider is the KubeVirt vmprovider.
type Provider struct {
	clients ClientsFunc
}

var _ vmprovider.InfrastructureProvider = &Provider{}

// New returns the vmprovider.
func New(clients ClientsFunc) *Provider { return &Provider{clients: clients} }

// Type is "kubevirt".
func (p *Provider) Type() string { return "kubevirt" }

// EnsureVM creates the VirtualMachine (and its namespace), or updates the fields the platform
// owns — labels, run strategy, size, boot source — on an existing one.
func (p *Provider) EnsureVM(ctx context.Context, cluster string, spec vmprovider.VMSpec) (*vmprovider.VM, error) {
	vm, err := p.ensureVM(ctx, cluster, spec)
	return vm, refused(err)
}

// refused marks the cluster refusing a request (the VM invalid there, the platform not allowed
// to create it, a request it could not read) as errkind.Stalled: asking again without a change
// gets the same answer. Any other error is left to be retried.
func refused(err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
		return errkind.Stalled(err)
	}
	return err
}

func (p *Provider) ensureVM(ctx context.Context, cluster string, spec vmprovider.VMSpec) (*vmprovider.VM, error) {
	c, err := p.clients(ctx, cluster)
	if err != nil {
		return nil, err
	}
	desired := virtualMachine(spec)
	vms := c.KubeVirt.KubevirtV1().VirtualMachines(spec.Namespace)
	current, err := vms.Get(ctx, spec.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Only a VM about to be created may lack its namespace: an existing one is in it, so
		// the runtime's frequent passes cost one request, not two.
		if err := ensureNamespace(ctx, c.Kube, spec.Namespace); err != nil {
			return nil, err
		}
		created, err := vms.Create(ctx, desired, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		if err := ensureDisk(ctx, c.Kube, spec, created); err != nil {
			return nil, err
		}
		return toDomain(created), nil
	case err != nil:
		return nil, err
	}
	if err := ensureDisk(ctx, c.Kube, spec, current); err != nil {
		return nil, err
	}
	updated := withOwnedFields(current, desired)
	if apiequality.Semantic.DeepEqual(updated.Labels, current.Labels) && apiequality.Semantic.DeepEqual(updated.Spec, current.Spec) {
		return toDomain(current), nil
	}
	out, err := vms.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return toDomain(out), nil
}

// GetVM returns the VirtualMachine as a domain VM.
func (p *Provider) GetVM(ctx context.Context, cluster, namespace, name string) (*vmprovider.VM, error) {
	c, err := p.clients(ctx, cluster)
	if err != nil {
		return nil, err
	}
	vm, err := c.KubeVirt.KubevirtV1().VirtualMachines(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("VirtualMachine %s/%s on cluster %s: %w", namespace, name, cluster, vmprovider.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return toDomain(vm), nil
}

// ListVMs lists the VirtualMachines carrying every label of selector.
func (p *Provider) ListVMs(ctx context.Context, cluster string, selector map[string]string) ([]vmprovider.VM, error) {
	c, err := p.clients(ctx, cluster)
	if err != nil {
		return nil, err
	}
	list, err := c.KubeVirt.KubevirtV1().VirtualMachines(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
	if err != nil {
		return nil, err
	}
	out := make([]vmprovider.VM, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, *toDomain(&list.Items[i]))
	}
	return out, nil
}

// DeleteVM deletes the VirtualMachine; its disk goes with it (owner reference).
func (p *Provider) DeleteVM(ctx context.Context, cluster, namespace, name string) error {
	c, err := p.clients(ctx, cluster)
	if err != nil {
		return err
	}
	err = c.KubeVirt.KubevirtV1().VirtualMachines(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// SetRunStrategy patches spec.runStrategy, which is how KubeVirt starts and stops VMs.
func (p *Provider) SetRunStrategy(ctx context.Context, cluster, namespace, name, runStrategy string) error {
	c, err := p.clients(ctx, cluster)
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"runStrategy": runStrategy}})
	_, err = c.KubeVirt.KubevirtV1().VirtualMachines(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// RestartVM records the restart on the VirtualMachine, then deletes its running instance,
// which KubeVirt starts again for a VM that should run — the effect of virtctl restart,
// without the subresource API. A restart already recorded with the same time does nothing.
func (p *Provider) RestartVM(ctx context.Context, cluster, namespace, name, at string) error {
	c, err := p.clients(ctx, cluster)
	if err != nil {
		return err
	}
	vms := c.KubeVirt.KubevirtV1().VirtualMachines(namespace)
	vm, err := vms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if vm.Annotations[RestartAnnotation] == at {
		return nil
	}
	err = c.KubeVirt.KubevirtV1().VirtualMachineInstances(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{RestartAnnotation: at}}})
	_, err = vms.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// DetectCapabilities reads the KubeVirt resource: the observed version and the feature gates.
func (p *Provider) DetectCapabilities(ctx context.Context, cluster string) (*vmprovider.Capabilities, error) {
	c, err := p.clients(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return detect(ctx, c.KubeVirt)
}

// DetectFromConfig is DetectCapabilities for a REST config in hand: plinth-controller's
// cluster probes use it.
func DetectFromConfig(ctx context.Context, cfg *rest.Config) (*vmprovider.Capabilities, error) {
	kv, err := kubevirtclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return detect(ctx, kv)
}

// detect reads the first KubeVirt resource. No kubevirt.io API, or no KubeVirt resource, is
// ErrNotFound.
func detect(ctx context.Context, kv kubevirtclient.Interface) (*vmprovider.Capabilities, error) {
	list, err := kv.KubevirtV1().KubeVirts(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsNotFound(err) || (err == nil && len(list.Items) == 0) {
		return nil, fmt.Errorf("KubeVirt: %w", vmprovider.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	kv0 := list.Items[0]
	caps := &vmprovider.Capabilities{
		Version: kv0.Status.ObservedKubeVirtVersion, Phase: string(kv0.Status.Phase),
		Deployed: kv0.Status.Phase == kubevirtv1.KubeVirtPhaseDeployed,
	}
	if cfg := kv0.Spec.Configuration.DeveloperConfiguration; cfg != nil {
		caps.Features = slices.Compact(slices.Sorted(slices.Values(cfg.FeatureGates)))
	}
	return caps, nil
}

func ensureNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	if _, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// diskName is the PersistentVolumeClaim of a VM's data disk.
func diskName(vm string) string { return vm + "-disk" }

// ensureDisk creates the data disk's claim, owned by the VirtualMachine so that it goes with it.
func ensureDisk(ctx context.Context, kube kubernetes.Interface, spec vmprovider.VMSpec, owner *kubevirtv1.VirtualMachine) error {
	if spec.DiskSize == nil {
		return nil
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: diskName(spec.Name), Namespace: spec.Namespace, Labels: spec.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: owner.Name, UID: owner.UID}},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *spec.DiskSize}},
		},
	}
	if spec.StorageClass != "" {
		claim.Spec.StorageClassName = &spec.StorageClass
	}
	_, err := kube.CoreV1().PersistentVolumeClaims(spec.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// userDataVolume is the disk and volume that carry the platform's cloud-init user data.
const userDataVolume = "userdata"

// ownedVolumes are the disks and volumes the platform puts on a VM; any other disk or volume
// on it (added on the cluster, or on an adopted VM) is left alone, except that the platform's
// user data replaces another cloud-init volume: a guest reads one cloud-init data source.
var ownedVolumes = map[string]bool{"root": true, "data": true, userDataVolume: true}

// owned says whether the platform sets the volume (or the disk of that name) on a VM it wants
// with or without user data.
func owned(v kubevirtv1.Volume, withUserData bool) bool {
	return ownedVolumes[v.Name] || (withUserData && (v.CloudInitNoCloud != nil || v.CloudInitConfigDrive != nil))
}

// withOwnedFields returns current with the fields the platform owns taken from desired: labels
// it sets, run strategy, instance type and preference, hostname, CPU and memory, the root and
// data disks, and the user data when the platform gives one. Everything else on the
// VirtualMachine — networks, a cloud-init of its own while the platform gives none, disks added
// on the cluster, KubeVirt's defaults — stays as it is, so an adopted VM is not rewritten and
// defaulting does not cause an update on every pass.
func withOwnedFields(current, desired *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	out := current.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		out.Labels[k] = v
	}
	out.Spec.RunStrategy, out.Spec.Instancetype, out.Spec.Preference = desired.Spec.RunStrategy, desired.Spec.Instancetype, desired.Spec.Preference
	if out.Spec.Template == nil {
		out.Spec.Template = desired.Spec.Template.DeepCopy()
		return out
	}
	tpl, want := &out.Spec.Template.Spec, &desired.Spec.Template.Spec
	if out.Spec.Template.ObjectMeta.Labels == nil {
		out.Spec.Template.ObjectMeta.Labels = map[string]string{}
	}
	for k, v := range desired.Spec.Template.ObjectMeta.Labels {
		out.Spec.Template.ObjectMeta.Labels[k] = v
	}
	tpl.Hostname = want.Hostname
	tpl.Domain.CPU, tpl.Domain.Memory = want.Domain.CPU, want.Domain.Memory
	if mem, ok := want.Domain.Resources.Requests[corev1.ResourceMemory]; ok {
		if tpl.Domain.Resources.Requests == nil {
			tpl.Domain.Resources.Requests = corev1.ResourceList{}
		}
		tpl.Domain.Resources.Requests[corev1.ResourceMemory] = mem
	} else {
		delete(tpl.Domain.Resources.Requests, corev1.ResourceMemory)
	}
	withUserData := slices.ContainsFunc(want.Volumes, func(v kubevirtv1.Volume) bool { return v.Name == userDataVolume })
	replaced := map[string]bool{}
	tpl.Volumes = slices.DeleteFunc(tpl.Volumes, func(v kubevirtv1.Volume) bool {
		replaced[v.Name] = owned(v, withUserData)
		return replaced[v.Name]
	})
	tpl.Volumes = append(tpl.Volumes, want.Volumes...)
	tpl.Domain.Devices.Disks = append(slices.DeleteFunc(tpl.Domain.Devices.Disks, func(d kubevirtv1.Disk) bool { return ownedVolumes[d.Name] || replaced[d.Name] }), want.Domain.Devices.Disks...)
	return out
}

// virtualMachine translates a domain VM spec into KubeVirt's VirtualMachine.
func virtualMachine(spec vmprovider.VMSpec) *kubevirtv1.VirtualMachine {
	runStrategy := kubevirtv1.VirtualMachineRunStrategy(spec.RunStrategy)
	vmi := kubevirtv1.VirtualMachineInstanceSpec{Hostname: spec.Hostname}
	if spec.InstanceType == "" {
		cores := uint32(max(spec.CPU, 1))
		vmi.Domain.CPU = &kubevirtv1.CPU{Cores: cores}
		if spec.Memory != nil {
			mem := spec.Memory.DeepCopy()
			vmi.Domain.Memory = &kubevirtv1.Memory{Guest: &mem}
			vmi.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: mem}
		}
	}
	if spec.Image != "" {
		vmi.Domain.Devices.Disks = append(vmi.Domain.Devices.Disks, kubevirtv1.Disk{Name: "root", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}})
		vmi.Volumes = append(vmi.Volumes, kubevirtv1.Volume{Name: "root", VolumeSource: kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: spec.Image}}})
	}
	if spec.DiskSize != nil {
		vmi.Domain.Devices.Disks = append(vmi.Domain.Devices.Disks, kubevirtv1.Disk{Name: "data", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}})
		vmi.Volumes = append(vmi.Volumes, kubevirtv1.Volume{Name: "data", VolumeSource: kubevirtv1.VolumeSource{
			PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: diskName(spec.Name)}},
		}})
	}
	if spec.UserData != "" {
		// Inline: KubeVirt takes up to 2048 bytes so (governance's limit on spec.cloudInit), and
		// inline needs no Secret on the target cluster.
		vmi.Domain.Devices.Disks = append(vmi.Domain.Devices.Disks, kubevirtv1.Disk{Name: userDataVolume, DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}})
		vmi.Volumes = append(vmi.Volumes, kubevirtv1.Volume{Name: userDataVolume, VolumeSource: kubevirtv1.VolumeSource{
			CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: spec.UserData},
		}})
	}
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: spec.Namespace, Labels: spec.Labels},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &runStrategy,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: spec.Labels},
				Spec:       vmi,
			},
		},
	}
	if spec.InstanceType != "" {
		vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: spec.InstanceType, Kind: "VirtualMachineClusterInstancetype"}
	}
	if spec.Template != "" {
		vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Name: spec.Template, Kind: "VirtualMachineClusterPreference"}
	}
	return vm
}

// toDomain translates KubeVirt's view of a VM into the domain's.
func toDomain(vm *kubevirtv1.VirtualMachine) *vmprovider.VM {
	out := &vmprovider.VM{
		Name: vm.Name, Namespace: vm.Namespace, Labels: vm.Labels, Ready: vm.Status.Ready,
		RestartRequestedAt: vm.Annotations[RestartAnnotation], Deleting: vm.DeletionTimestamp != nil,
	}
	if vm.Spec.RunStrategy != nil {
		out.RunStrategy = string(*vm.Spec.RunStrategy)
	}
	out.Spec = shapeOf(vm)
	switch s := vm.Status.PrintableStatus; s {
	case kubevirtv1.VirtualMachineStatusRunning, kubevirtv1.VirtualMachineStatusPaused, kubevirtv1.VirtualMachineStatusMigrating:
		out.State = vmprovider.VMStateRunning
	case kubevirtv1.VirtualMachineStatusStopped:
		out.State = vmprovider.VMStateStopped
	case kubevirtv1.VirtualMachineStatusStarting:
		out.State = vmprovider.VMStateStarting
	case kubevirtv1.VirtualMachineStatusStopping, kubevirtv1.VirtualMachineStatusTerminating:
		out.State = vmprovider.VMStateStopping
	case "", kubevirtv1.VirtualMachineStatusProvisioning, kubevirtv1.VirtualMachineStatusWaitingForVolumeBinding:
		out.State = vmprovider.VMStateProvisioning
	case kubevirtv1.VirtualMachineStatusUnknown:
		out.State, out.Message = vmprovider.VMStateUnknown, "KubeVirt reports the VM's state as unknown."
	default: // CrashLoopBackOff, ErrorUnschedulable, ErrImagePull, DataVolumeError, ...
		out.State, out.Message = vmprovider.VMStateFailed, fmt.Sprintf("KubeVirt reports %s.", s)
	}
	return out
}

// shapeOf reads back the domain spec of a VirtualMachine: what adoption records.
func shapeOf(vm *kubevirtv1.VirtualMachine) vmprovider.VMSpec {
	spec := vmprovider.VMSpec{Name: vm.Name, Namespace: vm.Namespace, Labels: vm.Labels}
	if vm.Spec.RunStrategy != nil {
		spec.RunStrategy = string(*vm.Spec.RunStrategy)
	}
	if m := vm.Spec.Instancetype; m != nil {
		spec.InstanceType = m.Name
	}
	if m := vm.Spec.Preference; m != nil {
		spec.Template = m.Name
	}
	if t := vm.Spec.Template; t != nil {
		spec.Hostname = t.Spec.Hostname
		if cpu := t.Spec.Domain.CPU; cpu != nil {
			spec.CPU = int32(cpu.Cores)
		}
		if mem := t.Spec.Domain.Memory; mem != nil && mem.Guest != nil {
			q := mem.Guest.DeepCopy()
			spec.Memory = &q
		}
		for _, v := range t.Spec.Volumes {
			if v.ContainerDisk != nil && spec.Image == "" {
				spec.Image = v.ContainerDisk.Image
			}
		}
	}
	return spec
}
