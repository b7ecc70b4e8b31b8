package kubevirt

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/plinth-dev/plinth/pkg/governance/vmprovider"
)

func fakeProvider() (*Provider, *kubevirtfake.Clientset, *kubefake.Clientset) {
	kv := kubevirtfake.NewSimpleClientset()
	kube := kubefake.NewSimpleClientset()
	p := New(func(context.Context, string) (*Clients, error) { return &Clients{KubeVirt: kv, Kube: kube}, nil })
	return p, kv, kube
}

func spec() vmprovider.VMSpec {
	mem := resource.MustParse("2Gi")
	disk := resource.MustParse("20Gi")
	return vmprovider.VMSpec{
		Name: "team-a-shop-redis-01", Namespace: "team-a", Hostname: "team-a-shop-redis-01",
		Labels: map[string]string{"kubevirt-shepherd.io/managed-by": "plinth", "kubevirt-shepherd.io/instance": "01"},
		CPU:    2, Memory: &mem, Image: "quay.io/containerdisks/fedora:40", DiskSize: &disk, StorageClass: "fast", RunStrategy: "Always",
	}
}

func TestEnsureVMCreatesThenConverges(t *testing.T) {
	ctx := context.Background()
	p, kv, kube := fakeProvider()
	vm, err := p.EnsureVM(ctx, "local", spec())
	if err != nil {
		t.Fatal(err)
	}
	if vm.State != vmprovider.VMStateProvisioning || vm.RunStrategy != "Always" {
		t.Errorf("domain VM: %+v", vm)
	}
	got, err := kv.KubevirtV1().VirtualMachines("team-a").Get(ctx, "team-a-shop-redis-01", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["kubevirt-shepherd.io/instance"] != "01" || got.Spec.Template.Spec.Domain.CPU.Cores != 2 ||
		got.Spec.Template.Spec.Volumes[0].ContainerDisk.Image != "quay.io/containerdisks/fedora:40" || got.Spec.Template.Spec.Hostname != "team-a-shop-redis-01" {
		t.Errorf("VirtualMachine: %+v", got)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace: %v", err)
	}
	claim, err := kube.CoreV1().PersistentVolumeClaims("team-a").Get(ctx, "team-a-shop-redis-01-disk", metav1.GetOptions{})
	if err != nil || *claim.Spec.StorageClassName != "fast" || claim.OwnerReferences[0].Kind != "VirtualMachine" {
		t.Errorf("disk claim: %+v %v", claim, err)
	}
	// Idempotent, and converges a changed run strategy.
	s := spec()
	s.RunStrategy = "Halted"
	if _, err := p.EnsureVM(ctx, "local", s); err != nil {
		t.Fatal(err)
	}
	got, _ = kv.KubevirtV1().VirtualMachines("team-a").Get(ctx, "team-a-shop-redis-01", metav1.GetOptions{})
	if *got.Spec.RunStrategy != kubevirtv1.RunStrategyHalted {
		t.Errorf("run strategy %v", *got.Spec.RunStrategy)
	}
	if err := p.RestartVM(ctx, "local", "team-a", "team-a-shop-redis-01", "2026-11-23T10:00:00Z"); err != nil {
		t.Fatal(err)
	}
	vm, err = p.GetVM(ctx, "local", "team-a", "team-a-shop-redis-01")
	if err != nil || vm.RestartRequestedAt != "2026-11-23T10:00:00Z" {
		t.Errorf("after restart: %+v %v", vm, err)
	}
	list, err := p.ListVMs(ctx, "local", map[string]string{"kubevirt-shepherd.io/managed-by": "plinth"})
	if err != nil || len(list) != 1 {
		t.Errorf("list: %v %v", list, err)
	}
	if err := p.DeleteVM(ctx, "local", "team-a", "team-a-shop-redis-01"); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteVM(ctx, "local", "team-a", "team-a-shop-redis-01"); err != nil {
		t.Errorf("deleting a missing VM: %v", err)
	}
	if _, err := p.GetVM(ctx, "local", "team-a", "team-a-shop-redis-01"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
}

func TestToDomainStates(t *testing.T) {
	for printable, want := range map[kubevirtv1.VirtualMachinePrintableStatus]vmprovider.VMState{
		"":                 vmprovider.VMStateProvisioning,
		"Running":          vmprovider.VMStateRunning,
		"Paused":           vmprovider.VMStateRunning,
		"Stopped":          vmprovider.VMStateStopped,
		"Stopping":         vmprovider.VMStateStopping,
		"Starting":         vmprovider.VMStateStarting,
		"CrashLoopBackOff": vmprovider.VMStateFailed,
		"Unknown":          vmprovider.VMStateUnknown,
	} {
		vm := toDomain(&kubevirtv1.VirtualMachine{Status: kubevirtv1.VirtualMachineStatus{PrintableStatus: printable}})
		if vm.State != want {
			t.Errorf("%q → %s, want %s", printable, vm.State, want)
		}
	}
}

func TestDetectCapabilities(t *testing.T) {
	ctx := context.Background()
	p, kv, _ := fakeProvider()
	_, _ = kv.KubevirtV1().KubeVirts("kubevirt").Create(ctx, &kubevirtv1.KubeVirt{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Spec: kubevirtv1.KubeVirtSpec{Configuration: kubevirtv1.KubeVirtConfiguration{
			DeveloperConfiguration: &kubevirtv1.DeveloperConfiguration{FeatureGates: []string{"Snapshot", "LiveMigration", "Snapshot"}}}},
		Status: kubevirtv1.KubeVirtStatus{ObservedKubeVirtVersion: "v1.9.0"},
	}, metav1.CreateOptions{})
	caps, err := p.DetectCapabilities(ctx, "local")
	if err != nil || caps.Version != "v1.9.0" || len(caps.Features) != 2 || caps.Features[0] != "LiveMigration" {
		t.Errorf("capabilities %+v %v", caps, err)
	}
}

func TestEnsureVMKeepsWhatThePlatformDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	p, kv, _ := fakeProvider()
	s := spec()
	s.DiskSize = nil
	existing := virtualMachine(s)
	existing.Spec.Template.Spec.Domain.Devices.Disks = append(existing.Spec.Template.Spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "cloudinit"})
	existing.Spec.Template.Spec.Volumes = append(existing.Spec.Template.Spec.Volumes, kubevirtv1.Volume{Name: "cloudinit",
		VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config"}}})
	existing.Spec.Template.Spec.Networks = []kubevirtv1.Network{{Name: "default"}}
	if _, err := kv.KubevirtV1().VirtualMachines("team-a").Create(ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Image = "quay.io/containerdisks/fedora:41"
	if _, err := p.EnsureVM(ctx, "local", s); err != nil {
		t.Fatal(err)
	}
	got, _ := kv.KubevirtV1().VirtualMachines("team-a").Get(ctx, s.Name, metav1.GetOptions{})
	tpl := got.Spec.Template.Spec
	if len(tpl.Volumes) != 2 || len(tpl.Networks) != 1 || len(tpl.Domain.Devices.Disks) != 2 {
		t.Fatalf("volumes %+v networks %+v disks %+v", tpl.Volumes, tpl.Networks, tpl.Domain.Devices.Disks)
	}
	for _, v := range tpl.Volumes {
		if v.Name == "root" && v.ContainerDisk.Image != "quay.io/containerdisks/fedora:41" {
			t.Errorf("root image %s", v.ContainerDisk.Image)
		}
	}
}

// cloudInits lists a VM's cloud-init volumes as name=userData, and checks that each has its disk.
func cloudInits(t *testing.T, vm *kubevirtv1.VirtualMachine) []string {
	t.Helper()
	var out []string
	tpl := vm.Spec.Template.Spec
	for _, v := range tpl.Volumes {
		if v.CloudInitNoCloud == nil {
			continue
		}
		out = append(out, v.Name+"="+v.CloudInitNoCloud.UserData)
		if !slices.ContainsFunc(tpl.Domain.Devices.Disks, func(d kubevirtv1.Disk) bool { return d.Name == v.Name }) {
			t.Errorf("volume %s has no disk", v.Name)
		}
	}
	return out
}

func TestEnsureVMCarriesUserData(t *testing.T) {
	ctx := context.Background()
	p, kv, _ := fakeProvider()
	s := spec()
	s.DiskSize = nil
	s.UserData = "#cloud-config\npackages: [podman]\n"
	if _, err := p.EnsureVM(ctx, "local", s); err != nil {
		t.Fatal(err)
	}
	got, _ := kv.KubevirtV1().VirtualMachines("team-a").Get(ctx, s.Name, metav1.GetOptions{})
	if ci := cloudInits(t, got); !slices.Equal(ci, []string{"userdata=#cloud-config\npackages: [podman]\n"}) {
		t.Errorf("cloud-init volumes %q", ci)
	}

	// A changed user data replaces the old one.
	s.UserData = "#cloud-config\npackages: [podman, curl]\n"
	if _, err := p.EnsureVM(ctx, "local", s); err != nil {
		t.Fatal(err)
	}
	got, _ = kv.KubevirtV1().VirtualMachines("team-a").Get(ctx, s.Name, metav1.GetOptions{})
	if ci := cloudInits(t, got); !slices.Equal(ci, []string{"userdata=#cloud-config\npackages: [podman, curl]\n"}) {
		t.Errorf("cloud-init volumes after a change %q", ci)
	}

	// Without user data, the platform's goes; the disks and volumes left are the root's.
	s.UserData = ""
	if _, err := p.EnsureVM(ctx, "local", s); err != nil {
		t.Fatal(err)
	}
	got, _ = kv.KubevirtV1().VirtualMachines("team-a").Get(ctx, s.Name, metav1.GetOptions{})
	if ci := cloudInits(t, got); len(ci) != 0 || len(got.Spec.Template.Spec.Domain.Devices.Disks) != 1 || len(got.Spec.Template.Spec.Volumes) != 1 {
		t.Errorf("after removing the user data: cloud-init %q, spec %+v", ci, got.Spec.Template.Spec)
	}
}

// The platform's user data replaces a VM's own cloud-init (a guest reads one data source), and
// leaves every other volume alone.
func TestEnsureVMUserDataReplacesTheVMsCloudInit(t *testing.T) {
	ctx := context.Background()
	p, kv, _ := fakeProvider()
	s := spec()
	s.DiskSize = nil
	existing := virtualMachine(s)
	existing.Spec.Template.Spec.Domain.Devices.Disks = append(existing.Spec.Template.Spec.Domain.Devices.Disks,
		kubevirtv1.Disk{Name: "cloudinitdisk"}, kubevirtv1.Disk{Name: "scratch"})
	existing.Spec.Template.Spec.Volumes = append(existing.Spec.Template.Spec.Volumes,
		kubevirtv1.Volume{Name: "cloudinitdisk", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
		kubevirtv1.Volume{Name: "scratch", VolumeSource: kubevirtv1.VolumeSource{EmptyDisk: &kubevirtv1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}})
	if _, err := kv.KubevirtV1().VirtualMachines("team-a").Create(ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.UserData = "#cloud-config\npackages: [podman]\n"
	if _, err := p.EnsureVM(ctx, "local", s); err != nil {
		t.Fatal(err)
	}
	got, _ := kv.KubevirtV1().VirtualMachines("team-a").Get(ctx, s.Name, metav1.GetOptions{})
	if ci := cloudInits(t, got); !slices.Equal(ci, []string{"userdata=#cloud-config\npackages: [podman]\n"}) {
		t.Errorf("cloud-init volumes %q", ci)
	}
	var names []string
	for _, d := range got.Spec.Template.Spec.Domain.Devices.Disks {
		names = append(names, d.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"root", "scratch", "userdata"}) {
		t.Errorf("disks %v", names)
	}
}
