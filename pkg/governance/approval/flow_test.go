package approval_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	gt "github.com/plinth-dev/plinth/pkg/registry/governance/governancetest"
)

const ns = "team-a"

// fixture is one test's governance registry, seeded as a tenant's namespace is before it asks
// for VMs: System shop (test environment) with SystemService redis in team-a, and Cluster
// local, HEALTHY with KubeVirt. alice is the tenant, carol an approver.
type fixture struct {
	t   *testing.T
	env *gt.Env
}

func newFixture(t *testing.T, etcd *gt.Etcd) *fixture {
	env := etcd.New(t)
	env.SeedService(ns, "shop", "redis", governance.EnvironmentTest)
	env.SeedCluster("local")
	return &fixture{t: t, env: env}
}

// request asks, as alice, for VM name of redis; the request must be accepted.
func (f *fixture) request(name string) *governance.ManagedVM {
	f.t.Helper()
	vm, err := f.env.Request(ns, "alice", gt.VM(name, "redis"))
	if err != nil {
		f.t.Fatalf("alice requests %s: %v", name, err)
	}
	return vm
}

// approved is VM name, requested by alice and approved by carol.
func (f *fixture) approved(name string) {
	f.t.Helper()
	f.request(name)
	f.env.Approve(ns, f.env.PendingTicket(ns, name))
}

// expect compares what the flow has left in team-a with want.
func (f *fixture) expect(want gt.Snapshot) {
	f.t.Helper()
	if diff := cmp.Diff(want, f.env.Snapshot(ns)); diff != "" {
		f.t.Errorf("unexpected state (-want +got):\n%s", diff)
	}
}

// audit is one expected audit record.
func audit(actor, action, vm string, op governance.Operation) gt.AuditView {
	return gt.AuditView{Actor: actor, Action: action, VM: vm, Operation: op}
}

// expectCode checks that err is the flow's error code.
func expectCode(t *testing.T, err error, code apperror.Code) {
	t.Helper()
	if got := apperror.CodeOf(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

var (
	redisNext = func(n int32) map[string]int32 { return map[string]int32{"redis": n} }
	finalizer = []string{"governance.plinth.dev/delete-approval"}
	// cache1 is VM cache-1 as its approved creation leaves it.
	cache1 = gt.VMView{
		Name: "cache-1", InstanceType: "u1.medium", Instance: 1, InstanceName: "team-a-shop-redis-01", Phase: governance.VMPhaseCreating,
		Cluster: "local", ApprovedRevision: 1, Approved: "True/Approved", Finalizers: finalizer,
	}
	createApproved = gt.TicketView{Operation: governance.OperationCreate, VM: "cache-1", Requester: "alice", State: governance.TicketExecuting,
		Message: "Instance 01 (team-a-shop-redis-01) waits for a runtime to create it.", Approvers: []string{"carol"}}
	create      = governance.OperationCreate
	createAudit = []gt.AuditView{audit("carol", "approval.approve", "cache-1", create), audit("alice", "vm.request", "cache-1", create)}
	with        = func(base gt.VMView, change func(*gt.VMView)) gt.VMView { change(&base); return base }
)

// TestFlow runs the approval flow's create, update, delete and decisions on the registry's
// real stores over one etcd; each case has a namespace of its own.
func TestFlow(t *testing.T) {
	etcd := gt.RunEtcd(t)

	t.Run("a create that needs approval is a PENDING ticket with an audit record, nothing allocated", func(t *testing.T) {
		f := newFixture(t, etcd)
		vm := f.request("cache-1")
		if vm.Status.PendingApproval == nil || vm.Status.Instance != 0 {
			t.Errorf("the response is not the pending request: %+v", vm.Status)
		}
		f.expect(gt.Snapshot{
			VMs:          []gt.VMView{{Name: "cache-1", InstanceType: "u1.medium", Pending: governance.OperationCreate, Approved: "False/PendingApproval"}},
			Tickets:      []gt.TicketView{{Operation: governance.OperationCreate, VM: "cache-1", Requester: "alice", State: governance.TicketPending, Message: "Waiting for 1 approval(s)."}},
			Audit:        []gt.AuditView{audit("alice", "vm.request", "cache-1", create)},
			Events:       []string{"VMRequested"},
			NextInstance: redisNext(1),
		})
	})

	t.Run("a create that needs no approval takes effect at once, placed on a fitting cluster", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.env.SeedPolicy("test-creates-free", governance.ApprovalPolicySpec{Environment: governance.EnvironmentTest,
			Operations: []governance.Operation{governance.OperationCreate}, ApprovalRequired: false, RequiredApprovals: 1})
		f.request("cache-1")
		f.expect(gt.Snapshot{
			VMs:          []gt.VMView{cache1},
			Audit:        []gt.AuditView{audit("alice", "vm.create", "cache-1", create)},
			Events:       []string{"VMInstanceAllocated"},
			Revisions:    []string{"cache-1-r1"},
			NextInstance: redisNext(2),
		})
	})

	t.Run("an approval allocates the instance number, records revision 1 and moves the ticket to EXECUTING", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.request("cache-1")
		ticket := f.env.Approve(ns, f.env.PendingTicket(ns, "cache-1"))
		if diff := cmp.Diff(createApproved, gt.ViewTicket(ticket)); diff != "" {
			t.Errorf("the response is not the executing ticket (-want +got):\n%s", diff)
		}
		f.expect(gt.Snapshot{
			VMs:          []gt.VMView{cache1},
			Tickets:      []gt.TicketView{createApproved},
			Audit:        createAudit,
			Events:       []string{"TicketApproved", "VMInstanceAllocated", "VMRequested"},
			Revisions:    []string{"cache-1-r1"},
			NextInstance: redisNext(2),
		})
		// A second VM gets the next number.
		f.approved("cache-2")
		if got := f.env.GetVM(ns, "cache-2").Status.InstanceName; got != "team-a-shop-redis-02" {
			t.Errorf("second instance: %q", got)
		}
	})

	t.Run("the requester may not approve her own request, even as an approver", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.request("cache-1")
		before := f.env.Snapshot(ns)
		_, err := f.env.Decide(ns, f.env.PendingTicket(ns, "cache-1"), governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local"}, "alice", gt.Approvers)
		expectCode(t, err, apperror.SelfApprovalForbidden)
		_, err = f.env.Decide(ns, f.env.PendingTicket(ns, "cache-1"), governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local"}, "dana")
		expectCode(t, err, apperror.ApproverNotAuthorized)
		f.expect(before)
	})

	t.Run("a second request while one is pending is refused", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.approved("cache-1")
		if err := f.env.Change(ns, "alice", "cache-1", func(s *governance.ManagedVMSpec) { s.InstanceType = "u1.large" }); err != nil {
			t.Fatalf("alice asks for u1.large: %v", err)
		}
		before := f.env.Snapshot(ns)
		err := f.env.Change(ns, "alice", "cache-1", func(s *governance.ManagedVMSpec) { s.InstanceType = "u1.xlarge" })
		expectCode(t, err, apperror.DuplicatePendingRequest)
		err = f.env.Delete(ns, "alice", "cache-1")
		expectCode(t, err, apperror.PendingRequestExists)
		f.expect(before)
		if diff := cmp.Diff(with(cache1, func(v *gt.VMView) {
			v.InstanceType, v.Pending, v.Approved = "u1.large", governance.OperationModify, "False/PendingApproval"
		}),
			before.VMs[0]); diff != "" {
			t.Errorf("the VM does not hold the first request (-want +got):\n%s", diff)
		}
	})

	t.Run("a deletion is held by the finalizer until approved, then the VM goes", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.approved("cache-1")
		if err := f.env.Delete(ns, "alice", "cache-1"); err != nil {
			t.Fatalf("alice deletes cache-1: %v", err)
		}
		held := with(cache1, func(v *gt.VMView) {
			v.Pending, v.Approved, v.Deleting = governance.OperationDelete, "False/PendingApproval", true
		})
		deletion := gt.TicketView{Operation: governance.OperationDelete, VM: "cache-1", Requester: "alice", State: governance.TicketPending, Message: "Waiting for 1 approval(s)."}
		if diff := cmp.Diff([]gt.VMView{held}, f.env.Snapshot(ns).VMs); diff != "" {
			t.Errorf("the VM is not held (-want +got):\n%s", diff)
		}
		f.env.Approve(ns, f.env.PendingTicket(ns, "cache-1"))
		deletion.State, deletion.Message, deletion.Approvers = governance.TicketSuccess, "The VM is deleted.", []string{"carol"}
		del := governance.OperationDelete
		f.expect(gt.Snapshot{
			Tickets: []gt.TicketView{createApproved, deletion},
			Audit: []gt.AuditView{audit("carol", "approval.approve", "cache-1", create), audit("carol", "approval.approve", "cache-1", del),
				audit("alice", "vm.delete_submitted", "cache-1", del), audit("alice", "vm.request", "cache-1", create)},
			Events:       []string{"TicketApproved", "TicketApproved", "VMDeleteRequested", "VMDeleted", "VMInstanceAllocated", "VMRequested"},
			Revisions:    []string{"cache-1-r1"},
			NextInstance: redisNext(2),
		})
	})

	t.Run("a rejected change restores the approved spec", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.approved("cache-1")
		if err := f.env.Change(ns, "alice", "cache-1", func(s *governance.ManagedVMSpec) { s.InstanceType = "u1.large" }); err != nil {
			t.Fatalf("alice asks for u1.large: %v", err)
		}
		ticket, err := f.env.Decide(ns, f.env.PendingTicket(ns, "cache-1"), governance.TicketDecision{Decision: governance.DecisionReject, Comment: "too big"}, "carol", gt.Approvers)
		if err != nil {
			t.Fatalf("carol rejects: %v", err)
		}
		got := f.env.Snapshot(ns)
		if diff := cmp.Diff([]gt.VMView{with(cache1, func(v *gt.VMView) { v.Approved = "False/Rejected" })}, got.VMs); diff != "" {
			t.Errorf("the VM is not back to its approved spec (-want +got):\n%s", diff)
		}
		want := gt.TicketView{Operation: governance.OperationModify, VM: "cache-1", Requester: "alice", State: governance.TicketRejected, Message: "Rejected by carol."}
		if diff := cmp.Diff(want, gt.ViewTicket(ticket)); diff != "" {
			t.Errorf("the response is not the rejected ticket (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"cache-1-r1"}, got.Revisions); diff != "" {
			t.Errorf("a rejected change left a revision (-want +got):\n%s", diff)
		}
	})

	t.Run("a dry-run approval makes every check and changes nothing", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.request("cache-1")
		name := f.env.PendingTicket(ns, "cache-1")
		before := f.env.Snapshot(ns)
		dryRun := &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		decide := func(user string, groups ...string) (*governance.ApprovalTicket, error) {
			obj, err := f.env.Approval.Create(gt.As(ns, user, groups...), name,
				&governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local"}, nil, dryRun)
			if err != nil {
				return nil, err
			}
			return obj.(*governance.ApprovalTicket), nil
		}
		_, err := decide("alice", gt.Approvers)
		expectCode(t, err, apperror.SelfApprovalForbidden)
		_, err = decide("dana")
		expectCode(t, err, apperror.ApproverNotAuthorized)
		ticket, err := decide("carol", gt.Approvers)
		if err != nil {
			t.Fatalf("carol's dry-run approval: %v", err)
		}
		if diff := cmp.Diff(createApproved, gt.ViewTicket(ticket)); diff != "" {
			t.Errorf("the response is not what the approval would do (-want +got):\n%s", diff)
		}
		f.expect(before)
		// The dry run took nothing a real approval needs.
		if got := f.env.Approve(ns, name); got.Status.State != governance.TicketExecuting {
			t.Errorf("the approval after the dry run: %s", got.Status.State)
		}
	})
}
