package managedvm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/governance/vmprovider"
)

// infra is an InfrastructureProvider whose EnsureVM answers as the test says.
type infra struct {
	vmprovider.InfrastructureProvider
	vm  *vmprovider.VM
	err error
}

func (i *infra) EnsureVM(context.Context, string, vmprovider.VMSpec) (*vmprovider.VM, error) {
	return i.vm, i.err
}

// runtimeHarness is the runtime over a fake clientset, with a VM approved onto Cluster east
// and its creation ticket executing.
type runtimeHarness struct {
	t        *testing.T
	c        *Controller
	client   *fake.Clientset
	recorder *events.FakeRecorder
	infra    *infra
	// executions are the outcomes reported, by ticket.
	executions map[string]gov.TicketState
}

func newRuntimeHarness(t *testing.T) *runtimeHarness {
	t.Helper()
	vm := &gov.ManagedVM{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db", UID: "uid-db", Generation: 1, ResourceVersion: "1", Finalizers: []string{Finalizer}},
		Spec:       gov.ManagedVMSpec{Image: "img", RunStrategy: gov.RunStrategyAlways},
		Status: gov.ManagedVMStatus{Phase: gov.VMPhaseCreating, Instance: 1, InstanceName: "team-a-db-01", Cluster: "east", ApprovedRevision: 1, LastTicket: "tkt-1",
			Conditions: []metav1.Condition{{Type: gov.ConditionApproved, Status: metav1.ConditionTrue, Reason: gov.ReasonApproved, LastTransitionTime: metav1.Now()}}},
	}
	rev := &gov.VMRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: gov.RevisionName("db", 1)},
		Spec: gov.VMRevisionSpec{VMName: "db", Revision: 1, Operation: gov.OperationCreate, VMSpec: vm.Spec}}
	ticket := &gov.ApprovalTicket{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "tkt-1"},
		Spec:   gov.ApprovalTicketSpec{Operation: gov.OperationCreate, TargetRef: gov.TargetReference{Kind: "ManagedVM", Namespace: "team-a", Name: "db"}},
		Status: gov.ApprovalTicketStatus{State: gov.TicketExecuting}}
	cluster := &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Status: platform.ClusterStatus{Phase: platform.ClusterPhaseHealthy}}
	client := fake.NewSimpleClientset(vm, rev, ticket, cluster)
	h := &runtimeHarness{t: t, client: client, recorder: events.NewFakeRecorder(10), infra: &infra{}, executions: map[string]gov.TicketState{}}
	client.PrependReactor("create", "approvaltickets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "execution" {
			return false, nil, nil
		}
		c := a.(clienttesting.CreateActionImpl)
		h.executions[c.Name] = c.GetObject().(*gov.TicketExecution).State
		return true, ticket, nil
	})
	pf := informers.NewSharedInformerFactory(client, 0)
	g, p := pf.Governance().V1alpha1(), pf.Platform().V1alpha1()
	c, err := NewController(context.Background(), client.GovernanceV1alpha1(), h.recorder, g.ManagedVMs(), g.VMRevisions(), g.ApprovalTickets(), p.Clusters(),
		h.infra, time.Second, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for informer, obj := range map[cache.SharedIndexInformer]runtime.Object{
		g.ManagedVMs().Informer(): vm, g.VMRevisions().Informer(): rev, g.ApprovalTickets().Informer(): ticket, p.Clusters().Informer(): cluster,
	} {
		if err := informer.GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	h.c = c
	return h
}

func (h *runtimeHarness) reconcile() error {
	return h.c.reconcile(context.Background(), cache.NewObjectName("team-a", "db"))
}

// stored is the VM as stored; every status write must have named the runtime's field manager.
func (h *runtimeHarness) stored() *gov.ManagedVM {
	h.t.Helper()
	for _, a := range h.client.Actions() {
		if u, ok := a.(clienttesting.UpdateActionImpl); ok && a.GetSubresource() == "status" && u.GetUpdateOptions().FieldManager != FieldManager {
			h.t.Errorf("a status write by field manager %q, want %q", u.GetUpdateOptions().FieldManager, FieldManager)
		}
	}
	vm, err := h.client.GovernanceV1alpha1().ManagedVMs("team-a").Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return vm
}

func (h *runtimeHarness) events() []string {
	var out []string
	for len(h.recorder.Events) > 0 {
		out = append(out, <-h.recorder.Events)
	}
	return out
}

func expectReady(t *testing.T, vm *gov.ManagedVM, phase gov.VMPhase, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	c := apimeta.FindStatusCondition(vm.Status.Conditions, gov.ConditionReady)
	if vm.Status.Phase != phase || c == nil || c.Status != status || c.Reason != reason || c.Message != message {
		t.Errorf("phase %s, Ready %+v; want %s, %s/%s %q", vm.Status.Phase, c, phase, status, reason, message)
	}
}

// A cluster that refuses the VM fails it and its ticket at once, with a neutral sentence; the
// runtime does not try again.
func TestRefusedVMFailsWithItsTicket(t *testing.T) {
	h := newRuntimeHarness(t)
	h.infra.err = errkind.Stalled(apierrors.NewForbidden(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachines"}, "team-a-db-01",
		errors.New(`User "system:serviceaccount:plinth:target" cannot create`)))
	if err := h.reconcile(); err != nil {
		t.Fatalf("a refusal was returned for the loop to retry: %v", err)
	}
	const msg = "Cluster east does not allow plinth-controller to create the VM there."
	expectReady(t, h.stored(), gov.VMPhaseFailed, metav1.ConditionFalse, gov.ReasonRefused, msg)
	if diff := cmp.Diff(map[string]gov.TicketState{"tkt-1": gov.TicketFailed}, h.executions); diff != "" {
		t.Errorf("executions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Warning ExecutionFailed " + msg, "Warning Failed " + msg}, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// Any other error of the cluster is retried, and the VM keeps its status meanwhile.
func TestClusterErrorIsRetried(t *testing.T) {
	h := newRuntimeHarness(t)
	h.infra.err = apierrors.NewServiceUnavailable("the cluster is busy")
	if err := h.reconcile(); err == nil || errkind.IsStalled(err) {
		t.Fatalf("reconcile: %v, want an error to retry", err)
	}
	if vm := h.stored(); vm.Status.Phase != gov.VMPhaseCreating || len(h.executions) != 0 {
		t.Errorf("phase %s, executions %v: a retried error changed the VM", vm.Status.Phase, h.executions)
	}
}

// The VM running on its cluster is Ready; its creation is recorded, and its ticket ends in
// SUCCESS.
func TestRunningVMIsReady(t *testing.T) {
	h := newRuntimeHarness(t)
	h.infra.vm = &vmprovider.VM{Name: "team-a-db-01", Namespace: "team-a", State: vmprovider.VMStateRunning, Ready: true}
	if err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	const msg = "The VM is Running on cluster east."
	expectReady(t, h.stored(), gov.VMPhaseRunning, metav1.ConditionTrue, gov.ReasonRunning, msg)
	if diff := cmp.Diff(map[string]gov.TicketState{"tkt-1": gov.TicketSuccess}, h.executions); diff != "" {
		t.Errorf("executions (-want +got):\n%s", diff)
	}
	want := []string{"Normal Running " + msg, "Normal Created VirtualMachine team-a-db-01 was created on cluster east.",
		"Normal Executed The create is done: the VM is Running on cluster east."}
	if diff := cmp.Diff(want, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
