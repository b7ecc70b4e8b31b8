package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
)

// fieldsOf lists the field paths of errs, for comparison.
func fieldsOf(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return strings.Join(out, ",")
}

func validVM() *governance.ManagedVM {
	disk := resource.MustParse("20Gi")
	return &governance.ManagedVM{
		ObjectMeta: metav1.ObjectMeta{Name: "cache-1", Namespace: "team-a"},
		Spec: governance.ManagedVMSpec{
			SystemServiceRef: governance.LocalObjectReference{Name: "redis"}, InstanceType: "u1.medium",
			DiskSize: &disk, Image: "quay.io/containerdisks/fedora:40", RunStrategy: governance.RunStrategyAlways,
		},
	}
}

func TestValidateManagedVM(t *testing.T) {
	negative := resource.MustParse("-1Gi")
	cases := []struct {
		name   string
		change func(vm *governance.ManagedVM)
		want   string
	}{
		{"valid", func(vm *governance.ManagedVM) {}, ""},
		{"valid with resources and a template", func(vm *governance.ManagedVM) {
			vm.Spec.InstanceType, vm.Spec.Image, vm.Spec.Template = "", "", "fedora-small"
			vm.Spec.Resources = &governance.VMResources{CPU: 2, Memory: resource.MustParse("4Gi")}
		}, ""},
		{"namespace too long for the instance name", func(vm *governance.ManagedVM) { vm.Namespace = "a-very-long-namespace" }, "metadata.namespace"},
		{"no service", func(vm *governance.ManagedVM) { vm.Spec.SystemServiceRef.Name = "" }, "spec.systemServiceRef.name"},
		{"no size", func(vm *governance.ManagedVM) { vm.Spec.InstanceType = "" }, "spec.instanceType"},
		{"both sizes", func(vm *governance.ManagedVM) {
			vm.Spec.Resources = &governance.VMResources{CPU: 1, Memory: resource.MustParse("1Gi")}
		}, "spec.resources"},
		{"zero CPU and memory", func(vm *governance.ManagedVM) {
			vm.Spec.InstanceType = ""
			vm.Spec.Resources = &governance.VMResources{}
		}, "spec.resources.cpu,spec.resources.memory"},
		{"negative disk", func(vm *governance.ManagedVM) { vm.Spec.DiskSize = &negative }, "spec.diskSize"},
		{"no image", func(vm *governance.ManagedVM) { vm.Spec.Image = "" }, "spec.image"},
		{"image and template", func(vm *governance.ManagedVM) { vm.Spec.Template = "fedora" }, "spec.template"},
		{"image with spaces", func(vm *governance.ManagedVM) { vm.Spec.Image = "fedora 40" }, "spec.image"},
		{"unknown run strategy", func(vm *governance.ManagedVM) { vm.Spec.RunStrategy = "Sometimes" }, "spec.runStrategy"},
		{"restartedAt not a time", func(vm *governance.ManagedVM) { vm.Spec.RestartedAt = "now" }, "spec.restartedAt"},
		{"reason too long", func(vm *governance.ManagedVM) { vm.Spec.Reason = strings.Repeat("x", 1025) }, "spec.reason"},
		{"valid required features", func(vm *governance.ManagedVM) { vm.Spec.RequiredFeatures = []string{"LiveMigration", "Snapshot"} }, ""},
		{"feature with a space", func(vm *governance.ManagedVM) { vm.Spec.RequiredFeatures = []string{"Live Migration"} }, "spec.requiredFeatures[0]"},
		{"duplicate feature", func(vm *governance.ManagedVM) { vm.Spec.RequiredFeatures = []string{"Snapshot", "Snapshot"} }, "spec.requiredFeatures[1]"},
		{"cloud-init at the limit", func(vm *governance.ManagedVM) {
			vm.Spec.CloudInit = "#cloud-config\n" + strings.Repeat("#", 2048-len("#cloud-config\n"))
		}, ""},
		{"cloud-init too long", func(vm *governance.ManagedVM) {
			vm.Spec.CloudInit = "#cloud-config\n" + strings.Repeat("#", 2048)
		}, "spec.cloudInit"},
		{"cloud-init not text", func(vm *governance.ManagedVM) { vm.Spec.CloudInit = "#cloud-config\n\xff\xfe" }, "spec.cloudInit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vm := validVM()
			tc.change(vm)
			if got := fieldsOf(ValidateManagedVM(vm)); got != tc.want {
				t.Errorf("errors on %q, want %q", got, tc.want)
			}
		})
	}
}

func TestManagedVMUpdateAndStatus(t *testing.T) {
	old := validVM()
	old.ResourceVersion = "1"
	moved := old.DeepCopy()
	moved.Spec.SystemServiceRef.Name = "mysql"
	if got := fieldsOf(ValidateManagedVMUpdate(moved, old)); got != "spec.systemServiceRef" {
		t.Errorf("service change: %q", got)
	}
	old.Status.Instance, old.Status.InstanceName, old.Status.ApprovedRevision = 1, "team-a-shop-redis-01", 2
	renumbered := old.DeepCopy()
	renumbered.Status.Instance, renumbered.Status.ApprovedRevision = 4, 1
	if got := fieldsOf(ValidateManagedVMStatusUpdate(renumbered, old)); got != "status.instance,status.approvedRevision" {
		t.Errorf("status renumbering: %q", got)
	}
}

func TestValidateSystemsAndServices(t *testing.T) {
	sys := &governance.System{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}, Spec: governance.SystemSpec{Environment: governance.EnvironmentTest}}
	if errs := ValidateSystem(sys); len(errs) > 0 {
		t.Fatalf("valid system: %v", errs)
	}
	long := sys.DeepCopy()
	long.Name = "a-name-longer-than-15"
	long.Spec.Environment = "staging"
	if got := fieldsOf(ValidateSystem(long)); got != "metadata.name,spec.environment" {
		t.Errorf("bad system: %q", got)
	}
	old := sys.DeepCopy()
	old.ResourceVersion = "1"
	prod := old.DeepCopy()
	prod.Spec.Environment, prod.Spec.CreatedBy = governance.EnvironmentProd, "mallory"
	if got := fieldsOf(ValidateSystemUpdate(prod, old)); got != "spec.environment,spec.createdBy" {
		t.Errorf("immutable system fields: %q", got)
	}
	svc := &governance.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "redis", Namespace: "team-a", ResourceVersion: "1"}, Status: governance.SystemServiceStatus{NextInstanceIndex: 5}}
	if got := fieldsOf(ValidateSystemService(svc)); got != "spec.systemRef.name" {
		t.Errorf("service without system: %q", got)
	}
	back := svc.DeepCopy()
	back.Status.NextInstanceIndex = 3
	if got := fieldsOf(ValidateSystemServiceStatusUpdate(back, svc)); got != "status.nextInstanceIndex" {
		t.Errorf("counter going back: %q", got)
	}
}

func TestValidateApprovalPolicyAndDecision(t *testing.T) {
	negative := int32(-1)
	p := &governance.ApprovalPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "dual"},
		Spec: governance.ApprovalPolicySpec{
			Environment: "staging", Operations: []governance.Operation{"create", "create", "reboot"},
			ApproverGroups: []string{" "}, RequiredApprovals: 0, VMQuotaPerNamespace: &negative,
		},
	}
	want := "spec.environment,spec.operations[1],spec.operations[2],spec.approverGroups[0],spec.requiredApprovals,spec.vmQuotaPerNamespace"
	if got := fieldsOf(ValidateApprovalPolicy(p)); got != want {
		t.Errorf("policy errors %q, want %q", got, want)
	}
	d := &governance.TicketDecision{Decision: governance.DecisionReject, Cluster: "Local_1", ModifiedSpec: &governance.ManagedVMSpec{}}
	got := fieldsOf(ValidateTicketDecision(d))
	for _, f := range []string{"cluster", "modifiedSpec", "modifiedSpec.systemServiceRef.name"} {
		if !strings.Contains(","+got+",", ","+f+",") {
			t.Errorf("decision errors %q lack %s", got, f)
		}
	}
	if errs := ValidateTicketDecision(&governance.TicketDecision{Decision: "Maybe"}); fieldsOf(errs) != "decision" {
		t.Errorf("unknown decision: %v", errs)
	}
}
