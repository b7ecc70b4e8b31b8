package workload

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
)

// writes drives one controller through a scripted sequence of states: the test changes what
// the caches hold between reconciles and counts the Workload status writes.
type writes struct {
	t *testing.T
	f *fixture
	c *Controller
}

func newWrites(t *testing.T, w *v1b1.Workload) *writes {
	f := newFixture(t)
	f.workloads = []*v1b1.Workload{w}
	c := f.newController()
	looptest.ResourceVersions(&f.plinth.Fake, f.plinth.Tracker(), workloadsResource)
	return &writes{t: t, f: f, c: c}
}

// sync reconciles the workload; any error (a 409 among them) fails the test.
func (h *writes) sync() {
	h.t.Helper()
	if err := h.c.reconcile(context.Background(), cache.NewObjectName("team-a", "hello")); err != nil {
		h.t.Fatalf("reconcile: %v", err)
	}
}

// statusWrites counts the Workload status updates sent so far.
func (h *writes) statusWrites() int {
	n := 0
	for _, a := range h.f.plinth.Actions() {
		if a.GetVerb() == "update" && a.GetResource() == workloadsResource && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// expect fails the test unless the writes so far number want.
func (h *writes) expect(step string, want int) {
	h.t.Helper()
	if got := h.statusWrites(); got != want {
		h.t.Errorf("%s: %d Workload status writes so far, want %d", step, got, want)
	}
}

// catchUp gives the workload informer what the server stores, as its watch would.
func (h *writes) catchUp() {
	h.t.Helper()
	stored, err := h.f.plinth.ScoreV1b1().Workloads("team-a").Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.cached(h.f.informers.Score().V1b1().Workloads().Informer(), stored)
}

// cached puts obj into an informer's cache.
func (h *writes) cached(informer cache.SharedIndexInformer, obj interface{}) {
	h.t.Helper()
	if err := informer.GetIndexer().Update(obj); err != nil {
		h.t.Fatal(err)
	}
}

func (h *writes) binding(phase v1b1.BindingPhase, status metav1.ConditionStatus, reason, message string) {
	h.t.Helper()
	b := boundBinding(h.f.workloads[0])
	b.Status.Phase = phase
	b.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: message}}
	h.cached(h.f.informers.Score().V1b1().ResourceBindings().Informer(), b)
}

func (h *writes) plan(status metav1.ConditionStatus, reason, message string) {
	h.t.Helper()
	plan, err := h.f.plinth.ScoreV1b1().WorkloadPlans("team-a").Get(context.Background(), "hello", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	plan.Status = v1b1.WorkloadPlanStatus{ObservedGeneration: plan.Generation,
		Conditions: []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: message}}}
	h.cached(h.f.informers.Score().V1b1().WorkloadPlans().Informer(), plan)
}

// A Workload is written once per transition its owner can see: resources pending, all bound,
// ready. The binding's way to Bound and the runtime's progress messages are no writes.
func TestOneStatusWritePerTransition(t *testing.T) {
	h := newWrites(t, newWorkload("hello", "registry.example.com/hello:1.0"))
	h.sync()
	h.expect("first reconcile: resources pending", 1)
	h.catchUp()

	h.binding(v1b1.BindingPhaseBinding, metav1.ConditionFalse, v1b1.ReasonBindingPending, "The database is starting.")
	h.sync()
	h.expect("binding Pending → Binding", 1)
	h.binding(v1b1.BindingPhaseBinding, metav1.ConditionFalse, v1b1.ReasonBindingPending, "The database accepts connections soon.")
	h.sync()
	h.expect("binding's progress message", 1)

	h.binding(v1b1.BindingPhaseBound, metav1.ConditionTrue, v1b1.ReasonSucceeded, "The resource is provisioned and ready.")
	h.sync()
	h.expect("binding Bound: the plan is made", 2)
	h.catchUp()

	for _, message := range []string{"The workload is being materialized.", "The workload is rolling out.", "The workload is starting."} {
		h.plan(metav1.ConditionFalse, v1b1.ReasonRuntimeProvisioning, message)
		h.sync()
		h.expect("plan provisioning: "+message, 2)
	}

	h.plan(metav1.ConditionTrue, v1b1.ReasonSucceeded, "The workload is available.")
	h.sync()
	h.expect("plan Ready", 3)
	h.catchUp()
	h.sync()
	h.expect("nothing changed", 3)

	// A failed binding is a transition again, with the binding's own message.
	h.binding(v1b1.BindingPhaseFailed, metav1.ConditionFalse, v1b1.ReasonBindingFailed, "The resource could not be provisioned.")
	h.sync()
	h.expect("binding Failed", 4)
	actions := h.f.plinth.Actions()
	written := actions[len(actions)-1].(clienttesting.UpdateAction).GetObject().(*v1b1.Workload)
	if s := written.Status.Bindings; len(s) != 1 || s[0].Phase != v1b1.BindingPhaseFailed || s[0].Message != "The resource could not be provisioned." {
		t.Errorf("binding summary after the failure: %+v", s)
	}
}

// A binding that rests Pending because no provisioner handles its type is shown with its
// message, which names the type: that is where it stays, not a step on its way.
func TestPendingBindingWithoutProvisionerIsShown(t *testing.T) {
	h := newWrites(t, newWorkload("hello", "registry.example.com/hello:1.0"))
	h.sync()
	h.catchUp()
	const message = `No provisioner handles resource type "postgres" yet; an external resolver may claim it.`
	h.binding(v1b1.BindingPhasePending, metav1.ConditionFalse, v1b1.ReasonBindingPending, message)
	h.sync()
	h.expect("binding Pending without a provisioner", 2)
	actions := h.f.plinth.Actions()
	written := actions[len(actions)-1].(clienttesting.UpdateAction).GetObject().(*v1b1.Workload)
	if s := written.Status.Bindings; len(s) != 1 || s[0].Phase != v1b1.BindingPhasePending || s[0].Message != message {
		t.Errorf("binding summary: %+v", s)
	}
	h.catchUp()
	h.sync()
	h.expect("nothing changed", 2)
}

// A reconcile woken before the controller's own status write reached the cache neither
// conflicts with that write nor repeats it; a real change in that window is written on top of
// it without a conflict.
func TestStaleCacheAfterOwnWrite(t *testing.T) {
	h := newWrites(t, newWorkload("hello", "registry.example.com/hello:1.0"))
	h.sync()
	h.expect("first reconcile", 1)

	// The informer still holds the workload without that status.
	h.sync()
	h.expect("woken again before the cache caught up", 1)

	h.binding(v1b1.BindingPhaseBound, metav1.ConditionTrue, v1b1.ReasonSucceeded, "The resource is provisioned and ready.")
	h.sync()
	h.expect("binding Bound while the cache is stale", 2)

	h.catchUp()
	h.plan(metav1.ConditionFalse, v1b1.ReasonRuntimeProvisioning, "The workload is being materialized.")
	h.sync()
	h.expect("cache caught up", 2)
	if n := h.c.written.Len(); n != 0 {
		t.Errorf("%d written objects kept after the cache caught up", n)
	}
}
