package managedvm

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/vmprovider"
)

func TestPhaseOf(t *testing.T) {
	cases := []struct {
		state   vmprovider.VMState
		current gov.VMPhase
		want    gov.VMPhase
	}{
		{vmprovider.VMStateProvisioning, gov.VMPhaseCreating, gov.VMPhaseCreating},
		{vmprovider.VMStateStarting, "", gov.VMPhaseCreating},
		{vmprovider.VMStateRunning, gov.VMPhaseCreating, gov.VMPhaseRunning},
		{vmprovider.VMStateStarting, gov.VMPhaseRunning, gov.VMPhaseRunning}, // a restart keeps RUNNING
		{vmprovider.VMStateStarting, gov.VMPhaseStopped, gov.VMPhaseStopped}, // a start shows once it runs
		{vmprovider.VMStateStopping, gov.VMPhaseRunning, gov.VMPhaseStopping},
		{vmprovider.VMStateStopped, gov.VMPhaseStopping, gov.VMPhaseStopped},
		{vmprovider.VMStateFailed, gov.VMPhaseRunning, gov.VMPhaseFailed},
		{vmprovider.VMStateUnknown, gov.VMPhaseRunning, gov.VMPhaseRunning},
	}
	for _, tc := range cases {
		if got := phaseOf(tc.state, tc.current); got != tc.want {
			t.Errorf("phaseOf(%s, %q) = %s, want %s", tc.state, tc.current, got, tc.want)
		}
	}
}

func TestDone(t *testing.T) {
	running := &vmprovider.VM{State: vmprovider.VMStateRunning, RestartRequestedAt: "t1"}
	stopped := &vmprovider.VM{State: vmprovider.VMStateStopped}
	always := gov.ManagedVMSpec{RunStrategy: gov.RunStrategyAlways, RestartedAt: "t1"}
	halted := gov.ManagedVMSpec{RunStrategy: gov.RunStrategyHalted}
	for _, tc := range []struct {
		op   gov.Operation
		spec gov.ManagedVMSpec
		vm   *vmprovider.VM
		want bool
	}{
		{gov.OperationCreate, always, running, true},
		{gov.OperationCreate, always, stopped, false},
		{gov.OperationCreate, halted, stopped, true},
		{gov.OperationStop, halted, running, false},
		{gov.OperationStop, halted, stopped, true},
		{gov.OperationStart, always, running, true},
		{gov.OperationRestart, always, running, true},
		{gov.OperationRestart, gov.ManagedVMSpec{RunStrategy: gov.RunStrategyAlways, RestartedAt: "t2"}, running, false},
		{gov.OperationDelete, always, running, false},
		{gov.OperationCreate, gov.ManagedVMSpec{RunStrategy: gov.RunStrategyManual}, stopped, true},
		{gov.OperationCreate, gov.ManagedVMSpec{RunStrategy: gov.RunStrategyManual}, &vmprovider.VM{State: vmprovider.VMStateProvisioning}, false},
		{gov.OperationRestart, halted, stopped, true},
	} {
		if got := done(tc.op, tc.spec, tc.vm); got != tc.want {
			t.Errorf("done(%s, %s, %s) = %v", tc.op, tc.spec.RunStrategy, tc.vm.State, got)
		}
	}
}

func TestVMSpecCarriesApprovedShapeAndPlatformLabels(t *testing.T) {
	mem := resource.MustParse("4Gi")
	vm := &gov.ManagedVM{
		ObjectMeta: metav1.ObjectMeta{Name: "cache-1", Namespace: "team-a", Labels: map[string]string{
			"kubevirt-shepherd.io/system": "shop", "kubevirt-shepherd.io/service": "redis", "kubevirt-shepherd.io/instance": "01",
			"kubevirt-shepherd.io/ticket-id": "tkt-1", "team": "ignored",
		}},
		Status: gov.ManagedVMStatus{InstanceName: "team-a-shop-redis-01", Hostname: "team-a-shop-redis-01", StorageClass: "fast"},
	}
	s := vmSpec(vm, gov.ManagedVMSpec{Resources: &gov.VMResources{CPU: 2, Memory: mem}, Image: "img", RunStrategy: gov.RunStrategyHalted,
		CloudInit: "#cloud-config\npackages: [podman]\n"})
	if s.Name != "team-a-shop-redis-01" || s.Namespace != "team-a" || s.CPU != 2 || s.Memory.String() != "4Gi" || s.RunStrategy != "Halted" || s.StorageClass != "fast" ||
		s.UserData != "#cloud-config\npackages: [podman]\n" {
		t.Errorf("spec: %+v", s)
	}
	if len(s.Labels) != 5 || s.Labels["kubevirt-shepherd.io/managed-by"] != "plinth" || s.Labels["team"] != "" {
		t.Errorf("labels: %v", s.Labels)
	}
}

// Created is recorded once, when the runtime first sees the VM it is creating; a running VM
// whose cluster comes back from CLUSTER_DEGRADED was not created again.
func TestCreatedOnlyWhileCreating(t *testing.T) {
	ready := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: reason}}
	}
	for _, tc := range []struct {
		what  string
		phase gov.VMPhase
		conds []metav1.Condition
		want  bool
	}{
		{"first look", gov.VMPhaseCreating, nil, true},
		{"cluster was degraded before the first look", gov.VMPhaseCreating, ready("ClusterDegraded"), true},
		{"seen provisioning already", gov.VMPhaseCreating, ready(string(vmprovider.VMStateProvisioning)), false},
		{"running VM, cluster back", gov.VMPhaseRunning, ready("ClusterDegraded"), false},
		{"stopped VM", gov.VMPhaseStopped, ready(string(vmprovider.VMStateStopped)), false},
	} {
		vm := &gov.ManagedVM{Status: gov.ManagedVMStatus{Phase: tc.phase, Conditions: tc.conds}}
		if got := created(vm); got != tc.want {
			t.Errorf("%s: created = %v, want %v", tc.what, got, tc.want)
		}
	}
}

// A cluster's refusal reaches the tenant as one neutral sentence, without the cluster's own
// error text (which names the platform's identity there).
func TestRefusalIsOneNeutralSentence(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "kubevirt.io", Kind: "VirtualMachine"}, "vm",
		field.ErrorList{field.Invalid(field.NewPath("spec", "template", "spec", "domain"), "x", "bad")})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachines"}, "vm",
		errors.New(`User "system:serviceaccount:plinth:target" cannot create`))
	for err, want := range map[error]string{
		invalid:                         "Cluster east refused the VM: spec.template.spec.domain is invalid there.",
		forbidden:                       "Cluster east does not allow plinth-controller to create the VM there.",
		apierrors.NewBadRequest("nope"): "Cluster east refused the VM's request as malformed.",
	} {
		if got := refusal("east", err); got != want {
			t.Errorf("refusal(%v) = %q, want %q", err, got, want)
		}
	}
}
