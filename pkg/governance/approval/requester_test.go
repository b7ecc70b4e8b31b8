package approval_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	gt "github.com/plinth-dev/plinth/pkg/registry/governance/governancetest"
)

// onBehalfOf is VM name as the runtime asks for it for user, the last writer of its Workload.
func onBehalfOf(name, user string) *governance.ManagedVM {
	vm := gt.VM(name, "redis")
	vm.Annotations = map[string]string{v1alpha1.AnnotationOnBehalfOf: user}
	return vm
}

// TestRequesterIsWhoCausedTheRequest: when plinth-controller asks for a VM for a Workload or
// TenantCompute, the ticket's requester is the user the server recorded as its last spec
// writer, so that a tenant who is also an approver cannot approve what she caused; only the
// runtime may name that user.
func TestRequesterIsWhoCausedTheRequest(t *testing.T) {
	etcd := gt.RunEtcd(t)

	t.Run("alice, an approver, may not approve the VM the runtime asked for her", func(t *testing.T) {
		f := newFixture(t, etcd)
		if _, err := f.env.Request(ns, gt.RuntimeUser, onBehalfOf("cache-1", "alice")); err != nil {
			t.Fatalf("the runtime asks for cache-1 for alice: %v", err)
		}
		name := f.env.PendingTicket(ns, "cache-1")
		pending := gt.TicketView{Operation: governance.OperationCreate, VM: "cache-1", Requester: "alice", SubmittedBy: gt.RuntimeUser,
			State: governance.TicketPending, Message: "Waiting for 1 approval(s)."}
		before := f.env.Snapshot(ns)
		if diff := cmp.Diff([]gt.TicketView{pending}, before.Tickets); diff != "" {
			t.Errorf("the ticket does not name alice as requester (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]gt.AuditView{audit("alice", "vm.request", "cache-1", create)}, before.Audit); diff != "" {
			t.Errorf("the request's audit record (-want +got):\n%s", diff)
		}
		for _, decision := range []governance.Decision{governance.DecisionApprove, governance.DecisionReject} {
			d := governance.TicketDecision{Decision: decision}
			if decision == governance.DecisionApprove {
				d.Cluster = "local"
			}
			_, err := f.env.Decide(ns, name, d, "alice", gt.Approvers)
			expectCode(t, err, apperror.SelfApprovalForbidden)
			if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != 403 || status.Status().Message == "" {
				t.Errorf("alice's %s: %v, want a 403 with a message", decision, err)
			}
			// The runtime that submitted it is no approver of it either.
			_, err = f.env.Decide(ns, name, d, gt.RuntimeUser, gt.Approvers)
			expectCode(t, err, apperror.SelfApprovalForbidden)
		}
		f.expect(before)
		ticket := f.env.Approve(ns, name)
		if ticket.Status.State != governance.TicketExecuting || ticket.Spec.Requester != "alice" {
			t.Errorf("carol's approval: %s, requester %q", ticket.Status.State, ticket.Spec.Requester)
		}
	})

	t.Run("a change the runtime asks for names alice; the runtime and alice may cancel it", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.approved("cache-1")
		for _, canceller := range []string{gt.RuntimeUser, "alice"} {
			vm := f.env.GetVM(ns, "cache-1")
			vm.Spec.InstanceType = "u1.large"
			vm.Annotations = map[string]string{v1alpha1.AnnotationOnBehalfOf: "alice"}
			if _, _, err := f.env.Flow.UpdateVM(gt.As(ns, gt.RuntimeUser), "cache-1", rest.DefaultUpdatedObjectInfo(vm),
				rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
				t.Fatalf("the runtime asks for u1.large for alice: %v", err)
			}
			name := f.env.PendingTicket(ns, "cache-1")
			_, err := f.env.Decide(ns, name, governance.TicketDecision{Decision: governance.DecisionApprove}, "alice", gt.Approvers)
			expectCode(t, err, apperror.SelfApprovalForbidden)
			_, err = f.env.Decide(ns, name, governance.TicketDecision{Decision: governance.DecisionCancel}, "bob")
			expectCode(t, err, apperror.NotRequester)
			ticket, err := f.env.Decide(ns, name, governance.TicketDecision{Decision: governance.DecisionCancel}, canceller)
			if err != nil || ticket.Status.State != governance.TicketCancelled || ticket.Spec.Requester != "alice" || ticket.Spec.SubmittedBy != gt.RuntimeUser {
				t.Fatalf("%s cancels: %+v %+v %v", canceller, ticket.Spec, ticket.Status, err)
			}
		}
	})

	t.Run("nobody but the runtime may name whom a request is for", func(t *testing.T) {
		f := newFixture(t, etcd)
		before := f.env.Snapshot(ns)
		_, err := f.env.Request(ns, "alice", onBehalfOf("cache-1", "bob"))
		expectCode(t, err, apperror.PlatformLabel)
		if !apierrors.IsInvalid(err) {
			t.Errorf("alice names bob: %v, want 422 Invalid", err)
		} else if causes := err.(apierrors.APIStatus).Status().Details.Causes; causes[0].Field != "metadata.annotations[governance.plinth.dev/on-behalf-of]" {
			t.Errorf("causes %+v, want the annotation's field path first", causes)
		}
		f.expect(before)

		// On a VM the runtime asked for, a tenant may keep the annotation (her own request
		// is hers), not change it.
		if _, err := f.env.Request(ns, gt.RuntimeUser, onBehalfOf("cache-2", "alice")); err != nil {
			t.Fatal(err)
		}
		f.env.Approve(ns, f.env.PendingTicket(ns, "cache-2"))
		if err := f.env.Change(ns, "bob", "cache-2", func(s *governance.ManagedVMSpec) { s.InstanceType = "u1.large" }); err != nil {
			t.Fatalf("bob changes cache-2, keeping the annotation: %v", err)
		}
		ticket := ticketNamed(t, f.env, f.env.PendingTicket(ns, "cache-2"))
		if ticket.Spec.Requester != "bob" || ticket.Spec.SubmittedBy != "" {
			t.Errorf("bob's change names %q (submitted by %q), want bob", ticket.Spec.Requester, ticket.Spec.SubmittedBy)
		}
		vm := f.env.GetVM(ns, "cache-2")
		vm.Annotations[v1alpha1.AnnotationOnBehalfOf] = "carol"
		_, _, err = f.env.Flow.UpdateVM(gt.As(ns, "bob"), "cache-2", rest.DefaultUpdatedObjectInfo(vm),
			rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		expectCode(t, err, apperror.PlatformLabel)
	})
}

// ticketNamed reads a ticket of ns.
func ticketNamed(t *testing.T, env *gt.Env, name string) *governance.ApprovalTicket {
	t.Helper()
	obj, err := env.Stores.Tickets.Get(gt.As(ns, "admin"), name, &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ticket %s: %v", name, err)
	}
	return obj.(*governance.ApprovalTicket)
}
