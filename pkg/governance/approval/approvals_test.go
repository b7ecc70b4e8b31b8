package approval_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	"github.com/plinth-dev/plinth/pkg/governance/approval"
	gt "github.com/plinth-dev/plinth/pkg/registry/governance/governancetest"
)

// dual makes every create in the test environment need two approvals.
func dual(f *fixture) {
	f.env.SeedPolicy("dual", governance.ApprovalPolicySpec{Environment: governance.EnvironmentTest,
		Operations: []governance.Operation{governance.OperationCreate}, ApprovalRequired: true, RequiredApprovals: 2})
}

// recorded is what each approval of a ticket records as approved: its user, spec hash and
// cluster.
func recorded(t *governance.ApprovalTicket) [][3]string {
	var out [][3]string
	for _, d := range t.Status.Decisions {
		out = append(out, [3]string{d.User, d.SpecHash, d.Cluster})
	}
	return out
}

// TestApprovalsCountForWhatTheyApproved: with two approvals required, an approver who replaces
// the spec or chooses another cluster sets the earlier approvals aside, since they approved
// something else; every approval records what it approved, and the change is carried out only
// once two approvers approved the same spec and placement.
func TestApprovalsCountForWhatTheyApproved(t *testing.T) {
	etcd := gt.RunEtcd(t)
	large := func() *governance.ManagedVMSpec {
		s := gt.VM("cache-1", "redis").Spec
		s.InstanceType = "u1.large"
		return &s
	}
	requested := approval.SpecHash(gt.VM("cache-1", "redis").Spec)
	decide := func(t *testing.T, f *fixture, user string, d governance.TicketDecision) *governance.ApprovalTicket {
		t.Helper()
		ticket, err := f.env.Decide(ns, f.env.PendingTicket(ns, "cache-1"), d, user, gt.Approvers)
		if err != nil {
			t.Fatalf("%s approves: %v", user, err)
		}
		return ticket
	}

	t.Run("a modifiedSpec on the second approval sets the first aside", func(t *testing.T) {
		f := newFixture(t, etcd)
		dual(f)
		f.request("cache-1")
		decide(t, f, "carol", governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local"})
		ticket := decide(t, f, "erin", governance.TicketDecision{Decision: governance.DecisionApprove, ModifiedSpec: large()})
		if ticket.Status.State != governance.TicketPending || !cmp.Equal(approval.Approvers(ticket), []string{"erin"}) {
			t.Fatalf("after erin's replacement: %s, counting %v, want PENDING with erin's approval only", ticket.Status.State, approval.Approvers(ticket))
		}
		if want := "1 of 2 approvals; earlier approvals were of another spec or placement and no longer count."; ticket.Status.Message != want {
			t.Errorf("message %q, want %q", ticket.Status.Message, want)
		}
		modified := approval.SpecHash(*large())
		if diff := cmp.Diff([][3]string{{"carol", requested, "local"}, {"erin", modified, "local"}}, recorded(ticket)); diff != "" {
			t.Errorf("what the approvals record (-want +got):\n%s", diff)
		}
		vm := f.env.GetVM(ns, "cache-1")
		if vm.Status.Instance != 0 || vm.Spec.InstanceType != "u1.medium" {
			t.Fatalf("the VM was created on one approval of u1.large: %+v", vm.Status)
		}
		// erin's approval counts: she may not approve again; carol's does not: she may.
		_, err := f.env.Decide(ns, ticket.Name, governance.TicketDecision{Decision: governance.DecisionApprove}, "erin", gt.Approvers)
		expectCode(t, err, apperror.AlreadyDecided)
		ticket = decide(t, f, "carol", governance.TicketDecision{Decision: governance.DecisionApprove})
		if ticket.Status.State != governance.TicketExecuting {
			t.Fatalf("after carol approves u1.large: %s %q", ticket.Status.State, ticket.Status.Message)
		}
		if diff := cmp.Diff([][3]string{{"carol", requested, "local"}, {"erin", modified, "local"}, {"carol", modified, "local"}}, recorded(ticket)); diff != "" {
			t.Errorf("what the approvals record (-want +got):\n%s", diff)
		}
		revisions := f.env.Revisions(ns)
		if len(revisions) != 1 || revisions[0].Spec.VMSpec.InstanceType != "u1.large" || !cmp.Equal(revisions[0].Spec.ApprovedBy, []string{"erin", "carol"}) {
			t.Errorf("revision 1: %+v, want u1.large approved by erin and carol", revisions)
		}
		if got := f.env.GetVM(ns, "cache-1"); got.Spec.InstanceType != "u1.large" || got.Status.Instance != 1 {
			t.Errorf("VM after two approvals of u1.large: %s, instance %d", got.Spec.InstanceType, got.Status.Instance)
		}
	})

	t.Run("another cluster on the second approval sets the first aside", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.env.SeedCluster("east")
		dual(f)
		f.request("cache-1")
		decide(t, f, "carol", governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local"})
		ticket := decide(t, f, "erin", governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "east"})
		if ticket.Status.State != governance.TicketPending || !cmp.Equal(approval.Approvers(ticket), []string{"erin"}) {
			t.Fatalf("after erin chose east: %s, counting %v", ticket.Status.State, approval.Approvers(ticket))
		}
		ticket = decide(t, f, "carol", governance.TicketDecision{Decision: governance.DecisionApprove})
		if ticket.Status.State != governance.TicketExecuting || f.env.GetVM(ns, "cache-1").Status.Cluster != "east" {
			t.Errorf("after carol approves east: %s, cluster %q", ticket.Status.State, f.env.GetVM(ns, "cache-1").Status.Cluster)
		}
	})

	t.Run("a second approval of the same spec and cluster completes it", func(t *testing.T) {
		f := newFixture(t, etcd)
		dual(f)
		f.request("cache-1")
		decide(t, f, "carol", governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local"})
		// Naming the cluster already chosen, or the requested spec, changes nothing.
		same := gt.VM("cache-1", "redis").Spec
		ticket := decide(t, f, "erin", governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local", ModifiedSpec: &same})
		if ticket.Status.State != governance.TicketExecuting || !cmp.Equal(approval.Approvers(ticket), []string{"carol", "erin"}) {
			t.Errorf("after two approvals of the same: %s, counting %v", ticket.Status.State, approval.Approvers(ticket))
		}
	})
}
