package approval_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	"github.com/plinth-dev/plinth/pkg/governance/approval"
	gt "github.com/plinth-dev/plinth/pkg/registry/governance/governancetest"
)

// approvers are distinct approvers, so that each may decide.
func approvers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("approver-%d", i)
	}
	return out
}

// approveAll has every user approve ticket at the same time; it returns the tickets of the
// approvals that were accepted and the codes of those that were refused.
func approveAll(f *fixture, ticket string, users []string) (accepted []*governance.ApprovalTicket, refused []apperror.Code) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, user := range users {
		wg.Go(func() {
			<-start
			t, err := f.env.Decide(ns, ticket, governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local"}, user, gt.Approvers)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = append(refused, apperror.CodeOf(err))
				return
			}
			accepted = append(accepted, t)
		})
	}
	close(start)
	wg.Wait()
	return accepted, refused
}

// interrupted leaves the pending creation of cache-1 as an approving request that stopped
// right after approving it leaves it: APPROVED by carol, its execution started at started,
// nothing carried out.
func interrupted(t *testing.T, f *fixture, started time.Time) string {
	t.Helper()
	f.request("cache-1")
	name := f.env.PendingTicket(ns, "cache-1")
	_, _, err := f.env.Stores.TicketStatus.Update(gt.As(ns, "admin"), name, rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		tk := old.DeepCopyObject().(*governance.ApprovalTicket)
		tk.Status.Cluster = "local"
		tk.Status.Decisions = []governance.TicketDecisionRecord{{User: "carol", Decision: governance.DecisionApprove, Time: metav1.NewTime(started),
			SpecHash: approval.SpecHash(tk.Spec.RequestedSpec), Cluster: "local"}}
		tk.Status.State, tk.Status.Message = governance.TicketApproved, "Approved by carol."
		tk.Status.ExecutionStartedAt = &metav1.Time{Time: started}
		return tk, nil
	}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// executedOnce checks that cache-1's creation was carried out once: one instance number taken
// from the service, the VM on it, revision 1 recording it, one allocation event, the ticket
// EXECUTING.
func executedOnce(t *testing.T, f *fixture, ticket string) {
	t.Helper()
	s := f.env.Snapshot(ns)
	if s.NextInstance["redis"] != 2 {
		t.Errorf("the service's next instance is %d: the creation took %d numbers, want 1", s.NextInstance["redis"], s.NextInstance["redis"]-1)
	}
	allocations := 0
	for _, e := range s.Events {
		if e == "VMInstanceAllocated" {
			allocations++
		}
	}
	if allocations != 1 {
		t.Errorf("%d VMInstanceAllocated events, want 1: %v", allocations, s.Events)
	}
	vm := f.env.GetVM(ns, "cache-1")
	if vm.Status.Instance != 1 || vm.Status.InstanceName != "team-a-shop-redis-01" || vm.Labels[v1alpha1.LabelInstance] != "01" {
		t.Errorf("VM instance %d (%s, label %q), want 1", vm.Status.Instance, vm.Status.InstanceName, vm.Labels[v1alpha1.LabelInstance])
	}
	if revs := f.env.Revisions(ns); len(revs) != 1 || revs[0].Labels[v1alpha1.LabelInstance] != "01" {
		t.Errorf("revisions %+v, want revision 1 of instance 01", revs)
	}
	if got := ticketNamed(t, f.env, ticket).Status.State; got != governance.TicketExecuting {
		t.Errorf("ticket %s, want EXECUTING", got)
	}
}

// TestExecutionOnce: an approved change is carried out once, however many approvals arrive at
// the same time — on a PENDING ticket, and on an APPROVED one whose execution was interrupted
// (approving it again resumes it), against the real stores.
func TestExecutionOnce(t *testing.T) {
	etcd := gt.RunEtcd(t)
	const parallel = 12

	t.Run("parallel approvals of a pending ticket execute it once", func(t *testing.T) {
		f := newFixture(t, etcd)
		f.request("cache-1")
		name := f.env.PendingTicket(ns, "cache-1")
		accepted, refused := approveAll(f, name, approvers(parallel))
		if len(accepted) != 1 {
			t.Errorf("%d approvals accepted, want 1 (refused: %v)", len(accepted), refused)
		}
		for _, code := range refused {
			if code != apperror.TicketNotPending {
				t.Errorf("a concurrent approval was refused with %q, want %s", code, apperror.TicketNotPending)
			}
		}
		executedOnce(t, f, name)
	})

	t.Run("parallel approvals of an interrupted approval resume it once", func(t *testing.T) {
		f := newFixture(t, etcd)
		name := interrupted(t, f, time.Now().Add(-2*time.Minute))
		accepted, refused := approveAll(f, name, approvers(parallel))
		if len(accepted) != 1 || accepted[0].Status.State != governance.TicketExecuting {
			t.Errorf("%d approvals accepted, want 1 resuming it (refused: %v)", len(accepted), refused)
		}
		for _, code := range refused {
			if code != apperror.TicketNotPending {
				t.Errorf("a concurrent approval was refused with %q, want %s", code, apperror.TicketNotPending)
			}
		}
		executedOnce(t, f, name)
	})

	t.Run("an execution under way is not taken over, and what was approved cannot change", func(t *testing.T) {
		f := newFixture(t, etcd)
		name := interrupted(t, f, time.Now())
		f.env.SeedCluster("east")
		before := f.env.Snapshot(ns)
		_, err := f.env.Decide(ns, name, governance.TicketDecision{Decision: governance.DecisionApprove}, "erin", gt.Approvers)
		expectCode(t, err, apperror.TicketNotPending)
		f.expect(before)

		f = newFixture(t, etcd)
		name = interrupted(t, f, time.Now().Add(-2*time.Minute))
		f.env.SeedCluster("east")
		before = f.env.Snapshot(ns)
		_, err = f.env.Decide(ns, name, governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "east"}, "erin", gt.Approvers)
		expectCode(t, err, apperror.TicketNotPending)
		f.expect(before)
		// Approving what was approved resumes it.
		if _, err := f.env.Decide(ns, name, governance.TicketDecision{Decision: governance.DecisionApprove}, "erin", gt.Approvers); err != nil {
			t.Fatal(err)
		}
		executedOnce(t, f, name)
	})
}
