package approvalticket_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	gt "github.com/plinth-dev/plinth/pkg/registry/governance/governancetest"
)

const ns = "team-a"

// admission stands for the server's validating admission chain (webhooks and
// ValidatingAdmissionPolicies): it records what it is shown and answers with err.
type admission struct {
	seen []runtime.Object
	err  error
}

func (a *admission) validate(_ context.Context, obj runtime.Object) error {
	a.seen = append(a.seen, obj)
	return a.err
}

var denied = apierrors.NewForbidden(governance.Resource("approvaltickets"), "", errors.New("approvals are frozen"))

// pending is a registry in which alice's VM cache-1 waits in a create ticket.
func pending(t *testing.T, etcd *gt.Etcd) (*gt.Env, string) {
	env := etcd.New(t)
	env.SeedService(ns, "shop", "redis", governance.EnvironmentTest)
	env.SeedCluster("local")
	if _, err := env.Request(ns, "alice", gt.VM("cache-1", "redis")); err != nil {
		t.Fatal(err)
	}
	return env, env.PendingTicket(ns, "cache-1")
}

// TestSubresourcesRunAdmission checks that decisions and execution reports pass validating
// admission before they take effect: a denial leaves everything as it was, and admission is
// shown the request body.
func TestSubresourcesRunAdmission(t *testing.T) {
	etcd := gt.RunEtcd(t)
	carol := gt.As(ns, "carol", gt.Approvers)

	t.Run("approval", func(t *testing.T) {
		env, ticket := pending(t, etcd)
		before := env.Snapshot(ns)
		decision := &governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local", Comment: "ok"}
		deny := &admission{err: denied}
		_, err := env.Approval.Create(carol, ticket, decision, deny.validate, &metav1.CreateOptions{})
		if !errors.Is(err, denied) {
			t.Fatalf("a denied approval: %v", err)
		}
		if diff := cmp.Diff([]runtime.Object{decision}, deny.seen); diff != "" {
			t.Errorf("admission was not shown the decision (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(before, env.Snapshot(ns)); diff != "" {
			t.Errorf("a denied approval changed state (-before +after):\n%s", diff)
		}

		allow := &admission{}
		obj, err := env.Approval.Create(carol, ticket, decision, allow.validate, &metav1.CreateOptions{})
		if err != nil || obj.(*governance.ApprovalTicket).Status.State != governance.TicketExecuting || len(allow.seen) != 1 {
			t.Fatalf("an admitted approval: %v, admission called %d times", err, len(allow.seen))
		}
	})

	t.Run("execution", func(t *testing.T) {
		env, ticket := pending(t, etcd)
		env.Approve(ns, ticket)
		controller := gt.As(ns, gt.RuntimeUser)
		report := &governance.TicketExecution{State: governance.TicketSuccess, Message: "The VM runs."}
		before := env.Snapshot(ns)
		deny := &admission{err: denied}
		if _, err := env.Execution.Create(controller, ticket, report, deny.validate, &metav1.CreateOptions{}); !errors.Is(err, denied) {
			t.Fatalf("a denied report: %v", err)
		}
		if diff := cmp.Diff([]runtime.Object{report}, deny.seen); diff != "" {
			t.Errorf("admission was not shown the report (-want +got):\n%s", diff)
		}

		obj, err := env.Execution.Create(controller, ticket, report, nil, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || obj.(*governance.ApprovalTicket).Status.State != governance.TicketSuccess {
			t.Fatalf("a dry-run report: %v %v", obj, err)
		}
		if diff := cmp.Diff(before, env.Snapshot(ns)); diff != "" {
			t.Errorf("a denied or dry-run report changed state (-before +after):\n%s", diff)
		}
	})
}

// TestDryRunDecisions checks that a dry run of each decision answers with the ticket as the
// decision would leave it and changes nothing, and that a dry run refuses what the real
// decision would refuse.
func TestDryRunDecisions(t *testing.T) {
	etcd := gt.RunEtcd(t)
	dryRun := &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for name, tc := range map[string]struct {
		user      string
		groups    []string
		decision  governance.Decision
		wantState governance.TicketState
		wantErr   bool
	}{
		"approve":              {user: "carol", groups: []string{gt.Approvers}, decision: governance.DecisionApprove, wantState: governance.TicketExecuting},
		"reject":               {user: "carol", groups: []string{gt.Approvers}, decision: governance.DecisionReject, wantState: governance.TicketRejected},
		"cancel":               {user: "alice", decision: governance.DecisionCancel, wantState: governance.TicketCancelled},
		"cancel by another":    {user: "carol", groups: []string{gt.Approvers}, decision: governance.DecisionCancel, wantErr: true},
		"approve by a tenant":  {user: "bob", decision: governance.DecisionApprove, wantErr: true},
		"approve by requester": {user: "alice", groups: []string{gt.Approvers}, decision: governance.DecisionApprove, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			env, ticket := pending(t, etcd)
			before := env.Snapshot(ns)
			decision := &governance.TicketDecision{Decision: tc.decision}
			if tc.decision == governance.DecisionApprove {
				decision.Cluster = "local"
			}
			obj, err := env.Approval.Create(gt.As(ns, tc.user, tc.groups...), ticket, decision, rest.ValidateAllObjectFunc, dryRun)
			switch {
			case tc.wantErr && err == nil:
				t.Errorf("a dry run allowed what the decision may not do: %+v", obj)
			case !tc.wantErr && err != nil:
				t.Errorf("dry run: %v", err)
			case !tc.wantErr && obj.(*governance.ApprovalTicket).Status.State != tc.wantState:
				t.Errorf("dry run answered %s, want %s", obj.(*governance.ApprovalTicket).Status.State, tc.wantState)
			}
			if diff := cmp.Diff(before, env.Snapshot(ns)); diff != "" {
				t.Errorf("a dry run changed state (-before +after):\n%s", diff)
			}
		})
	}
}

// TestSubresourcesMatchURLName checks that admission judges the ticket the flow acts on: a
// body whose metadata.name names another ticket is refused before admission and changes
// nothing, and an unnamed body is shown to admission with the URL's name.
func TestSubresourcesMatchURLName(t *testing.T) {
	etcd := gt.RunEtcd(t)
	for name, tc := range map[string]struct {
		ctx  context.Context
		body func(metadataName string) runtime.Object
		post func(*gt.Env) rest.NamedCreater
		prep func(env *gt.Env, ticket string)
	}{
		"approval": {
			ctx: gt.As(ns, "carol", gt.Approvers),
			body: func(n string) runtime.Object {
				return &governance.TicketDecision{ObjectMeta: metav1.ObjectMeta{Name: n}, Decision: governance.DecisionApprove, Cluster: "local"}
			},
			post: func(env *gt.Env) rest.NamedCreater { return env.Approval },
		},
		"execution": {
			ctx: gt.As(ns, gt.RuntimeUser),
			body: func(n string) runtime.Object {
				return &governance.TicketExecution{ObjectMeta: metav1.ObjectMeta{Name: n}, State: governance.TicketSuccess, Message: "The VM runs."}
			},
			post: func(env *gt.Env) rest.NamedCreater { return env.Execution },
			prep: func(env *gt.Env, ticket string) { env.Approve(ns, ticket) },
		},
	} {
		t.Run(name, func(t *testing.T) {
			env, ticket := pending(t, etcd)
			if tc.prep != nil {
				tc.prep(env, ticket)
			}
			before := env.Snapshot(ns)
			watch := &admission{}
			_, err := tc.post(env).Create(tc.ctx, ticket, tc.body("some-other-ticket"), watch.validate, &metav1.CreateOptions{})
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `"some-other-ticket"`) || !strings.Contains(err.Error(), `"`+ticket+`"`) {
				t.Errorf("a body naming another ticket: %v, want BadRequest naming both", err)
			}
			if len(watch.seen) != 0 {
				t.Errorf("admission was shown a body naming another ticket: %v", watch.seen)
			}
			if diff := cmp.Diff(before, env.Snapshot(ns)); diff != "" {
				t.Errorf("a refused body changed state (-before +after):\n%s", diff)
			}

			if _, err := tc.post(env).Create(tc.ctx, ticket, tc.body(""), watch.validate, &metav1.CreateOptions{}); err != nil {
				t.Fatalf("an unnamed body: %v", err)
			}
			if len(watch.seen) != 1 || watch.seen[0].(metav1.Object).GetName() != ticket {
				t.Errorf("admission was not shown the body named %s: %v", ticket, watch.seen)
			}
		})
	}
}
