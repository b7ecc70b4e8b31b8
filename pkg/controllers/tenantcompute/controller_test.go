package tenantcompute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

var (
	shop  = cache.NewObjectName("team-a", "shop")
	start = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
)

// harness runs the controller's reconcile against a fake clientset, refreshing the informer's
// cache from the clientset after each pass as the watch would.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	indexer  cache.Indexer
	clock    *testingclock.FakeClock
	recorder *events.FakeRecorder
	p        *fakeProvider
	c        *Controller
}

func tenant() *v1alpha1.TenantCompute {
	return &v1alpha1.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Generation: 1, UID: "uid-shop"},
		Spec: v1alpha1.TenantComputeSpec{
			TenantID: "shop", ProviderType: "fake",
			Containers: []v1alpha1.ContainerSpec{{Name: "web", Image: "nginx:1.27"}},
			Resources:  v1alpha1.ResourceRequirements{CPU: 250, Memory: 256},
		},
	}
}

func newHarness(t *testing.T, tc *v1alpha1.TenantCompute) *harness {
	t.Helper()
	client := fake.NewSimpleClientset(tc) // NewClientset needs apply configurations, which Plinth does not generate
	looptest.ResourceVersions(&client.Fake, client.Tracker(), v1alpha1.SchemeGroupVersion.WithResource("tenantcomputes"))
	factory := informers.NewSharedInformerFactory(client, 0)
	tenants := factory.Compute().V1alpha1().TenantComputes()
	if err := tenants.Informer().GetIndexer().Add(tc); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, client: client, indexer: tenants.Informer().GetIndexer(), clock: testingclock.NewFakeClock(start),
		recorder: events.NewFakeRecorder(100), p: newFakeProvider()}
	c, err := NewController(client.ComputeV1alpha1(), h.recorder, tenants, registry{h.p}, Options{ResyncPeriod: 5 * time.Minute, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

// step reconciles the tenant once and refreshes the cache.
func (h *harness) step() {
	h.t.Helper()
	if err := h.c.reconcile(context.Background(), shop); err != nil {
		h.t.Fatalf("reconcile: %v", err)
	}
	h.refresh()
}

func (h *harness) refresh() {
	h.t.Helper()
	tc, err := h.client.ComputeV1alpha1().TenantComputes("team-a").Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.indexer.Update(tc); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get() *v1alpha1.TenantCompute {
	h.t.Helper()
	tc, err := h.client.ComputeV1alpha1().TenantComputes("team-a").Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return tc
}

// edit changes the stored tenant as a user would; a spec change moves the generation.
func (h *harness) edit(specChange bool, change func(*v1alpha1.TenantCompute)) {
	h.t.Helper()
	tc := h.get()
	change(tc)
	if specChange {
		tc.Generation++
	}
	if _, err := h.client.ComputeV1alpha1().TenantComputes("team-a").Update(context.Background(), tc, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.refresh()
}

// statusWrites counts the status updates since the last call; each must name the controller's
// field manager.
func (h *harness) statusWrites() int {
	h.t.Helper()
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
			if fm := a.(clienttesting.UpdateActionImpl).GetUpdateOptions().FieldManager; fm != FieldManager {
				h.t.Errorf("a status write by field manager %q, want %q", fm, FieldManager)
			}
		}
	}
	h.client.ClearActions()
	return n
}

// events returns the events recorded since the last call ("Type Reason Note" each).
func (h *harness) events() []string {
	var out []string
	for len(h.recorder.Events) > 0 {
		out = append(out, <-h.recorder.Events)
	}
	return out
}

func (h *harness) expectCalls(want ...string) {
	h.t.Helper()
	if diff := cmp.Diff(want, h.p.took()); diff != "" {
		h.t.Errorf("provider calls (-want +got):\n%s", diff)
	}
}

func (h *harness) expectPhase(want v1alpha1.TenantComputePhase) *v1alpha1.TenantCompute {
	h.t.Helper()
	tc := h.get()
	if tc.Status.Phase != want {
		h.t.Fatalf("phase %q, want %q (conditions %+v)", tc.Status.Phase, want, tc.Status.Conditions)
	}
	return tc
}

func (h *harness) expectEvents(want ...string) {
	h.t.Helper()
	if diff := cmp.Diff(want, h.events()); diff != "" {
		h.t.Errorf("events (-want +got):\n%s", diff)
	}
}

func condition(t *testing.T, tc *v1alpha1.TenantCompute, condType string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(tc.Status.Conditions, condType)
	if c == nil {
		t.Fatalf("no %s condition in %+v", condType, tc.Status.Conditions)
	}
	return *c
}

func expectCondition(t *testing.T, tc *v1alpha1.TenantCompute, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := condition(t, tc, condType)
	if c.Status != status || c.Reason != reason || c.ObservedGeneration != tc.Generation {
		t.Errorf("%s condition: %s/%s at generation %d, want %s/%s at %d (%s)", condType, c.Status, c.Reason, c.ObservedGeneration,
			status, reason, tc.Generation, c.Message)
	}
}

var (
	starting = &compute.ComputeStatus{State: v1alpha1.ComputeStateStarting, Health: v1alpha1.HealthStatusUnknown, Message: "Waiting for 1 of 1 replicas."}
	running  = &compute.ComputeStatus{
		State: v1alpha1.ComputeStateRunning, Health: v1alpha1.HealthStatusHealthy,
		Containers: []v1alpha1.ContainerStatus{{Name: "web", State: "running", Ready: true}},
		Metadata:   map[string]string{"namespace": "tenant-shop"},
		Endpoints:  []v1alpha1.Endpoint{{Type: "http", Address: "10.0.0.7", Port: 80, URL: "http://10.0.0.7"}},
	}
	stopped = &compute.ComputeStatus{State: v1alpha1.ComputeStateStopped, Health: v1alpha1.HealthStatusUnknown}
)

// ready drives a new tenant to Ready and forgets what that took.
func (h *harness) ready() {
	h.t.Helper()
	h.p.status = running
	h.step()
	h.expectPhase(v1alpha1.PhaseReady)
	h.p.took()
	h.events()
	h.statusWrites()
}

func TestProvisionThroughProvisioningToReady(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.status = starting
	h.step()
	h.expectCalls("Validate", "Provision", "GetStatus")
	tc := h.expectPhase(v1alpha1.PhaseProvisioning)
	if !slices.Contains(tc.Finalizers, v1alpha1.Finalizer) {
		t.Errorf("finalizer not added: %v", tc.Finalizers)
	}
	expectCondition(t, tc, v1alpha1.ConditionProvisioned, metav1.ConditionTrue, "Provisioned")
	expectCondition(t, tc, v1alpha1.ConditionHealthy, metav1.ConditionUnknown, "HealthUnknown")
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "Provisioning")
	if got := condition(t, tc, v1alpha1.ConditionReady).Message; got != "Waiting for 1 of 1 replicas." {
		t.Errorf("the provider's message is not shown: %q", got)
	}
	if r := tc.Status.ProvisionResult; r == nil || r.Status != v1alpha1.ProvisionStatusSuccess || r.ProvisionedAt == nil || !r.ProvisionedAt.Time.Equal(start) ||
		r.ResourceIDs["deployment"] != "tenant-shop/shop" {
		t.Errorf("provision result: %+v", r)
	}
	if tc.Status.State != v1alpha1.ComputeStateStarting || tc.Status.ObservedGeneration != 1 {
		t.Errorf("status: %+v", tc.Status)
	}
	h.expectEvents("Normal Provisioning Waiting for 1 of 1 replicas.")

	// Provisioned already: the next passes only look, until the compute runs.
	h.step()
	h.expectCalls("GetStatus")
	if n := h.statusWrites(); n != 1 { // the finalizer's update is not a status write
		t.Errorf("%d status writes for provisioning and an unchanged look, want 1", n)
	}
	h.p.status = running
	h.clock.Step(3 * time.Second)
	h.step()
	h.expectCalls("GetStatus")
	tc = h.expectPhase(v1alpha1.PhaseReady)
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionTrue, "Ready")
	expectCondition(t, tc, v1alpha1.ConditionHealthy, metav1.ConditionTrue, "Healthy")
	if diff := cmp.Diff(running.Endpoints, tc.Status.ProvisionResult.Endpoints); diff != "" {
		t.Errorf("endpoints GetStatus reported are not in provisionResult (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(running.Containers, tc.Status.Containers); diff != "" || tc.Status.Metadata["namespace"] != "tenant-shop" ||
		!tc.Status.LastUpdated.Time.Equal(start.Add(3*time.Second)) {
		t.Errorf("containers, metadata or lastUpdated not from GetStatus: %+v %s", tc.Status, diff)
	}
	h.expectEvents("Normal Ready The compute runs as the spec asks.")
}

func TestProvisionInProgressIsRepeatedUntilSuccess(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.provision = &v1alpha1.ProvisionResult{Status: v1alpha1.ProvisionStatusInProgress, Message: "Waiting for approval of ticket tkt-1."}
	h.step()
	h.expectCalls("Validate", "Provision", "GetStatus")
	tc := h.expectPhase(v1alpha1.PhaseProvisioning)
	expectCondition(t, tc, v1alpha1.ConditionProvisioned, metav1.ConditionFalse, "Provisioning")
	if tc.Status.ProvisionResult.ProvisionedAt != nil {
		t.Errorf("an unfinished provision has a completion time: %v", tc.Status.ProvisionResult.ProvisionedAt)
	}
	h.statusWrites()
	h.step() // the same answer: nothing to write
	h.expectCalls("Validate", "Provision", "GetStatus")
	if n := h.statusWrites(); n != 0 {
		t.Errorf("%d status writes for an unchanged in-progress provision", n)
	}
	h.p.provision = &v1alpha1.ProvisionResult{Status: v1alpha1.ProvisionStatusSuccess}
	h.p.status = running
	h.step()
	h.expectPhase(v1alpha1.PhaseReady)
}

func TestUnhealthyComputeIsNotReady(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.status = &compute.ComputeStatus{State: v1alpha1.ComputeStateRunning, Health: v1alpha1.HealthStatusUnhealthy, Message: "Container web fails its http check."}
	h.step()
	tc := h.expectPhase(v1alpha1.PhaseProvisioning)
	expectCondition(t, tc, v1alpha1.ConditionHealthy, metav1.ConditionFalse, "Unhealthy")
	// Once Ready, losing health shows on the conditions (a warning), not as a new phase.
	h.p.status = running
	h.step()
	h.events()
	h.p.status = &compute.ComputeStatus{State: v1alpha1.ComputeStateRunning, Health: v1alpha1.HealthStatusUnhealthy, Message: "Container web fails its http check."}
	h.step()
	tc = h.expectPhase(v1alpha1.PhaseReady)
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "Unhealthy")
	h.expectEvents("Warning Unhealthy Container web fails its http check.")
}

func TestSpecChangeUpdatesThroughUpdatingToReady(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Containers[0].Image = "nginx:1.28" })
	h.p.update = &v1alpha1.UpdateResult{Status: v1alpha1.UpdateStatusSuccess, Changes: []string{"container web: image nginx:1.27 → nginx:1.28"}}
	h.p.status = starting
	h.step()
	h.expectCalls("Validate", "Update", "GetStatus")
	tc := h.expectPhase(v1alpha1.PhaseUpdating)
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "Updating")
	if r := tc.Status.UpdateResult; r == nil || r.Status != v1alpha1.UpdateStatusSuccess || len(r.Changes) != 1 || !r.UpdatedAt.Time.Equal(start) {
		t.Errorf("update result: %+v", r)
	}
	if tc.Status.ObservedGeneration != 2 {
		t.Errorf("observedGeneration %d, want 2", tc.Status.ObservedGeneration)
	}
	// The rollout completes; Update is repeated (idempotent) and its no_changes does not hide
	// the rollout's changes.
	h.p.update = &v1alpha1.UpdateResult{Status: v1alpha1.UpdateStatusNoChanges}
	h.p.status = running
	h.clock.Step(5 * time.Second)
	h.step()
	h.expectCalls("Update", "GetStatus")
	tc = h.expectPhase(v1alpha1.PhaseReady)
	if r := tc.Status.UpdateResult; r.Status != v1alpha1.UpdateStatusSuccess || len(r.Changes) != 1 {
		t.Errorf("the rollout's changes were overwritten: %+v", r)
	}
	h.expectEvents("Normal Updating Waiting for 1 of 1 replicas.", "Normal Ready The compute runs as the spec asks.")
}

func TestReconcileRequestRecordsNoChanges(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	h.step() // at rest, checked just now: only a look
	h.expectCalls("GetStatus")
	h.edit(false, func(tc *v1alpha1.TenantCompute) {
		tc.Annotations = map[string]string{v1alpha1.ReconcileRequestedAnnotation: "2026-07-01T12:00:10Z"}
	})
	h.step()
	h.expectCalls("Update", "GetStatus")
	tc := h.expectPhase(v1alpha1.PhaseReady)
	if r := tc.Status.UpdateResult; r == nil || r.Status != v1alpha1.UpdateStatusNoChanges {
		t.Errorf("update result: %+v", r)
	}
	if tc.Status.LastHandledReconcileAt != "2026-07-01T12:00:10Z" {
		t.Errorf("lastHandledReconcileAt %q", tc.Status.LastHandledReconcileAt)
	}
	if n := h.statusWrites(); n != 1 {
		t.Errorf("%d status writes, want 1", n)
	}
	// Handled: the next pass does not check again, and writes nothing.
	h.step()
	h.expectCalls("GetStatus")
	if n := h.statusWrites(); n != 0 {
		t.Errorf("%d status writes after the request was handled", n)
	}
	h.expectEvents()
}

func TestIdleResyncWritesNothing(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	// A restarted controller checks each tenant once; with nothing to change, nothing is
	// written: no_changes first, and then an unchanged no_changes.
	for i, wantCalls := range [][]string{{"Update", "GetStatus"}, {"Update", "GetStatus"}} {
		h.c = restart(t, h)
		h.step()
		h.expectCalls(wantCalls...)
		want := 1
		if i > 0 {
			want = 0
		}
		if n := h.statusWrites(); n != want {
			t.Errorf("check %d: %d status writes, want %d", i, n, want)
		}
	}
	h.clock.Step(4 * time.Minute)
	h.step()
	h.expectCalls("GetStatus")
	h.clock.Step(time.Minute)
	h.step()
	h.expectCalls("Update", "GetStatus") // the resync period is up
	if n := h.statusWrites(); n != 0 {
		t.Errorf("%d status writes for idle reconciles", n)
	}
	h.expectEvents()
}

// restart returns a new controller on the same clientset and cache: what a new leader sees.
func restart(t *testing.T, h *harness) *Controller {
	t.Helper()
	factory := informers.NewSharedInformerFactory(h.client, 0)
	tenants := factory.Compute().V1alpha1().TenantComputes()
	h.indexer = tenants.Informer().GetIndexer()
	h.refresh()
	c, err := NewController(h.client.ComputeV1alpha1(), h.recorder, tenants, registry{h.p}, Options{ResyncPeriod: 5 * time.Minute, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSuspendStopsAndResumeRuns(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Suspended = true })
	h.p.update = &v1alpha1.UpdateResult{Status: v1alpha1.UpdateStatusSuccess, Changes: []string{"replicas 1 → 0"}}
	h.p.status = &compute.ComputeStatus{State: v1alpha1.ComputeStateStopping, Health: v1alpha1.HealthStatusUnknown}
	h.step()
	h.expectCalls("Validate", "Update", "GetStatus")
	h.expectPhase(v1alpha1.PhaseUpdating)
	h.p.status = stopped
	h.step()
	tc := h.expectPhase(v1alpha1.PhaseStopped)
	if tc.Status.State != v1alpha1.ComputeStateStopped {
		t.Errorf("state %q", tc.Status.State)
	}
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "Stopped")
	h.expectEvents("Normal Updating Provider fake is bringing the compute to the spec.",
		"Normal Stopped The compute is stopped because spec.suspended is set.")

	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Suspended = false })
	h.p.status = starting
	h.step()
	h.expectPhase(v1alpha1.PhaseUpdating)
	h.p.status = running
	h.step()
	h.expectPhase(v1alpha1.PhaseReady)
}

func TestArchiveDestroysAndKeepsHistory(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Archived = true })
	h.step()
	h.expectCalls("Destroy")
	tc := h.expectPhase(v1alpha1.PhaseArchived)
	expectCondition(t, tc, v1alpha1.ConditionProvisioned, metav1.ConditionFalse, "Archived")
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "Archived")
	if tc.Status.State != v1alpha1.ComputeStateStopped || len(tc.Status.Containers) != 0 {
		t.Errorf("an archived tenant still shows compute: %+v", tc.Status)
	}
	if r := tc.Status.ProvisionResult; r == nil || r.Status != v1alpha1.ProvisionStatusSuccess || len(r.Endpoints) != 1 {
		t.Errorf("the provision history was not kept: %+v", r)
	}
	h.step() // archived: nothing more to do
	h.expectCalls()
	h.expectEvents("Normal Archived The compute was destroyed because spec.archived is set; the object keeps its history.")

	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Archived = false })
	h.p.status = starting
	h.step()
	h.expectCalls("Validate", "Provision", "GetStatus")
	tc = h.expectPhase(v1alpha1.PhaseProvisioning)
	expectCondition(t, tc, v1alpha1.ConditionProvisioned, metav1.ConditionTrue, "Provisioned")
	h.p.status = running
	h.step()
	h.expectPhase(v1alpha1.PhaseReady)
}

func TestDeleteDestroysThenReleasesTheFinalizer(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	var phaseAtDestroy v1alpha1.TenantComputePhase
	h.p.onDestroy = func(*v1alpha1.TenantCompute) { phaseAtDestroy = h.get().Status.Phase }
	h.p.destroyErr = errors.New("namespace tenant-shop: connection refused")
	h.edit(false, func(tc *v1alpha1.TenantCompute) { tc.DeletionTimestamp = &metav1.Time{Time: start} })
	if err := h.c.reconcile(context.Background(), shop); err == nil {
		t.Fatal("a failed Destroy was not retried")
	}
	h.refresh()
	if phaseAtDestroy != v1alpha1.PhaseDeleting {
		t.Errorf("phase when Destroy ran: %q, want Deleting written first", phaseAtDestroy)
	}
	tc := h.get()
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "DestroyFailed")
	if !slices.Contains(tc.Finalizers, v1alpha1.Finalizer) {
		t.Error("the finalizer was removed although Destroy failed")
	}
	h.expectEvents("Normal Deleting Provider fake is destroying the compute.",
		"Warning DestroyFailed Provider fake could not destroy the compute yet: namespace tenant-shop: connection refused.")

	h.p.destroyErr = nil
	h.p.took()
	h.step()
	h.expectCalls("Destroy")
	if tc := h.get(); slices.Contains(tc.Finalizers, v1alpha1.Finalizer) {
		t.Errorf("finalizer kept after Destroy: %v", tc.Finalizers)
	}
}

func TestProviderErrorsBackOffThenFail(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.provisionErr = errors.New("cluster east is unreachable")
	for attempt, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		h.step()
		h.expectCalls("Validate", "Provision")
		tc := h.expectPhase(v1alpha1.PhaseProvisioning)
		if tc.Status.Retries != int32(attempt+1) || tc.Status.NextRetryTime == nil || !tc.Status.NextRetryTime.Time.Equal(h.clock.Now().Add(wait)) {
			t.Fatalf("attempt %d: retries %d, next %v; want next in %s", attempt+1, tc.Status.Retries, tc.Status.NextRetryTime, wait)
		}
		expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "ProvisionFailed")
		if r := tc.Status.ProvisionResult; r == nil || r.Status != v1alpha1.ProvisionStatusFailed || r.Message != "cluster east is unreachable." {
			t.Errorf("provision result: %+v", r)
		}
		// Before the retry time, a wake-up asks the provider nothing.
		h.clock.Step(wait - time.Millisecond)
		h.step()
		h.expectCalls()
		h.clock.Step(time.Millisecond)
	}
	h.step()
	h.expectCalls("Validate", "Provision")
	tc := h.expectPhase(v1alpha1.PhaseFailed)
	if tc.Status.Retries != MaxAttempts || tc.Status.NextRetryTime != nil {
		t.Errorf("retries %d, next %v", tc.Status.Retries, tc.Status.NextRetryTime)
	}
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "ProvisionFailed")
	expectCondition(t, tc, v1alpha1.ConditionProvisioned, metav1.ConditionFalse, "ProvisionFailed")
	want := "Provider fake failed to provision the compute 5 times in a row: cluster east is unreachable."
	if got := condition(t, tc, v1alpha1.ConditionReady).Message; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	evs := h.events()
	if len(evs) != 5 || evs[4] != "Warning ProvisionFailed "+want {
		t.Errorf("events: %q", evs)
	}
	h.clock.Step(time.Hour)
	h.step() // Failed: nothing until the spec changes
	h.expectCalls()
}

func TestUpdateErrorsFailAsUpdateFailed(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Resources.CPU = 500 })
	h.p.updateErr = errors.New("deployments.apps is forbidden")
	for i := 0; i < MaxAttempts; i++ {
		h.step()
		h.clock.Step(5 * time.Minute)
	}
	tc := h.expectPhase(v1alpha1.PhaseFailed)
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "UpdateFailed")
	expectCondition(t, tc, v1alpha1.ConditionProvisioned, metav1.ConditionTrue, "Provisioned")
	if r := tc.Status.UpdateResult; r == nil || r.Status != v1alpha1.UpdateStatusFailed {
		t.Errorf("update result: %+v", r)
	}
	if calls := h.p.took(); len(calls) != 1+MaxAttempts { // Validate once for the new spec, then the attempts
		t.Errorf("calls: %v", calls)
	}
}

func TestFailedComputeCountsAsAFailure(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.status = &compute.ComputeStatus{State: v1alpha1.ComputeStateFailed, Health: v1alpha1.HealthStatusUnhealthy, Message: "Container web cannot pull image nginx:1.99."}
	h.step()
	tc := h.expectPhase(v1alpha1.PhaseProvisioning)
	if tc.Status.Retries != 1 || tc.Status.State != v1alpha1.ComputeStateFailed {
		t.Errorf("retries %d, state %q", tc.Status.Retries, tc.Status.State)
	}
	if got := condition(t, tc, v1alpha1.ConditionReady).Message; got != "Provider fake failed to run the compute (attempt 1 of 5, next at 2026-07-01T12:00:01Z): Container web cannot pull image nginx:1.99." {
		t.Errorf("message %q", got)
	}
	// The compute is provisioned: retries look again rather than provision again.
	h.clock.Step(time.Second)
	h.step()
	h.expectCalls("Validate", "Provision", "GetStatus", "GetStatus")
	// Once it runs, the failures are forgotten.
	h.p.status = running
	h.clock.Step(2 * time.Second)
	h.step()
	if tc := h.expectPhase(v1alpha1.PhaseReady); tc.Status.Retries != 0 || tc.Status.NextRetryTime != nil {
		t.Errorf("retries %d, next %v", tc.Status.Retries, tc.Status.NextRetryTime)
	}
}

func TestPermanentErrorFailsAtOnce(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.provisionErr = fmt.Errorf("provisioning: %w", errkind.Stalledf("cluster west is not registered"))
	h.step()
	tc := h.expectPhase(v1alpha1.PhaseFailed)
	if tc.Status.Retries != 1 || tc.Status.NextRetryTime != nil {
		t.Errorf("retries %d, next %v", tc.Status.Retries, tc.Status.NextRetryTime)
	}
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "ProvisionFailed")
	h.expectEvents("Warning ProvisionFailed Provider fake cannot provision the compute: provisioning: cluster west is not registered.")
}

func TestValidateErrorFailsAtOnceAsSpecInvalid(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.validateErr = errors.New("providerConfig.cluster: cluster west is not registered")
	h.step()
	h.expectCalls("Validate")
	tc := h.expectPhase(v1alpha1.PhaseFailed)
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "SpecInvalid")
	expectCondition(t, tc, v1alpha1.ConditionProvisioned, metav1.ConditionFalse, "SpecInvalid")
	h.expectEvents("Warning SpecInvalid Provider fake cannot provision this spec: providerConfig.cluster: cluster west is not registered.")
	h.step()
	h.expectCalls()
}

func TestSpecChangeWhileFailedStartsAgain(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.provisionErr = errors.New("image pull secret missing")
	for i := 0; i < MaxAttempts; i++ {
		h.step()
		h.clock.Step(time.Minute)
	}
	h.expectPhase(v1alpha1.PhaseFailed)
	h.p.took()
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Containers[0].Image = "nginx:1.28" })
	h.step()
	h.expectCalls("Validate", "Provision")
	if tc := h.expectPhase(v1alpha1.PhaseProvisioning); tc.Status.Retries != 1 {
		t.Errorf("retries %d after a spec change and one failure, want 1", tc.Status.Retries)
	}
	h.p.provisionErr = nil
	h.p.status = running
	h.clock.Step(time.Second)
	h.step()
	if tc := h.expectPhase(v1alpha1.PhaseReady); tc.Status.Retries != 0 {
		t.Errorf("retries %d", tc.Status.Retries)
	}
}

func TestReconcileRequestWhileFailedStartsAgain(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.provisionErr = errkind.Stalledf("cluster west is not registered")
	h.step()
	h.expectPhase(v1alpha1.PhaseFailed)
	h.p.provisionErr = nil
	h.p.took()
	h.edit(false, func(tc *v1alpha1.TenantCompute) {
		tc.Annotations = map[string]string{v1alpha1.ReconcileRequestedAnnotation: "now"}
	})
	h.step()
	h.expectCalls("Validate", "Provision", "GetStatus")
	if tc := h.expectPhase(v1alpha1.PhaseProvisioning); tc.Status.Retries != 0 || tc.Status.LastHandledReconcileAt != "now" {
		t.Errorf("retries %d, lastHandledReconcileAt %q", tc.Status.Retries, tc.Status.LastHandledReconcileAt)
	}
}

func TestTenantOfAnotherControllerIsLeftAlone(t *testing.T) {
	tc := tenant()
	tc.Spec.ProviderType = "ecs"
	h := newHarness(t, tc)
	h.step()
	h.expectCalls()
	for _, a := range h.client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("touched a tenant of another provider: %s %s", a.GetVerb(), a.GetSubresource())
		}
	}
}

// Without events, a tenant is looked at again at its retry time, after the poll interval on
// its way, at the next resync at rest, and never when Failed or Archived.
func TestNextLook(t *testing.T) {
	h := newHarness(t, tenant())
	h.p.status = starting
	h.step()
	look := func() time.Duration {
		return h.c.nextLook(shop, &pass{status: &h.get().Status, now: h.clock.Now()})
	}
	if after := look(); after != DefaultPollInterval {
		t.Errorf("provisioning: looked at again in %s", after)
	}
	h.p.status = running
	h.step()
	h.clock.Step(time.Minute)
	if after := look(); after != 4*time.Minute {
		t.Errorf("ready a minute ago: looked at again in %s, want at the resync", after)
	}
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Archived = true })
	h.step()
	if after := look(); after != 0 {
		t.Errorf("archived: looked at again in %s", after)
	}
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Archived = false })
	h.p.provisionErr = errors.New("quota")
	h.step()
	if after := look(); after != time.Second {
		t.Errorf("after a failure: looked at again in %s", after)
	}
	h.p.validateErr = errors.New("no")
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Containers[0].Image = "nginx:1.28" })
	h.step()
	if after := look(); after != 0 {
		t.Errorf("failed: looked at again in %s", after)
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int32]time.Duration{
		1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 9: 256 * time.Second, 10: 5 * time.Minute, 40: 5 * time.Minute,
	} {
		if got := backoff(failures); got != want {
			t.Errorf("backoff(%d) = %s, want %s", failures, got, want)
		}
	}
}

func TestWakesOnSpecDeletionAndRequestOnly(t *testing.T) {
	base := tenant()
	statusOnly := base.DeepCopy()
	statusOnly.Status.Phase = v1alpha1.PhaseReady
	spec := base.DeepCopy()
	spec.Generation = 2
	deleting := base.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: start}
	requested := base.DeepCopy()
	requested.Annotations = map[string]string{v1alpha1.ReconcileRequestedAnnotation: "now"}
	other := base.DeepCopy()
	other.Annotations = map[string]string{"team": "a"}
	for name, tc := range map[string]struct {
		obj  *v1alpha1.TenantCompute
		want bool
	}{
		"status": {statusOnly, false}, "spec": {spec, true}, "deletion": {deleting, true}, "request": {requested, true}, "other annotation": {other, false},
	} {
		if got := wakesTenant(base, tc.obj); got != tc.want {
			t.Errorf("%s: wakes = %v, want %v", name, got, tc.want)
		}
	}
}

func TestNewControllerNeedsAResyncPeriod(t *testing.T) {
	client := fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	if _, err := NewController(client.ComputeV1alpha1(), events.NewFakeRecorder(1), factory.Compute().V1alpha1().TenantComputes(), registry{}, Options{}); err == nil {
		t.Error("a zero resync period was accepted")
	}
}

// A status write that fails (a conflict with a newer object) is returned for the loop to
// retry, and nothing is recorded.
func TestFailedStatusWriteIsRetried(t *testing.T) {
	h := newHarness(t, tenant())
	h.client.PrependReactor("update", "tenantcomputes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, nil, errors.New("conflict")
		}
		return false, nil, nil
	})
	if err := h.c.reconcile(context.Background(), shop); err == nil {
		t.Error("a failed status write was not returned")
	}
	h.expectEvents()
}

// A Destroy the provider reports in progress (a governed VM's delete waiting for approval) is
// no failure: an archive stays on its way with no attempt counted, a delete keeps the finalizer
// without a DestroyFailed warning, and both finish once Destroy succeeds.
func TestDestroyInProgressIsNotAFailure(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	h.p.destroyErr = errkind.Waitingf(compute.RecheckAfter, "the delete of ManagedVM shop waits for approval of ticket tkt-1")
	h.edit(true, func(tc *v1alpha1.TenantCompute) { tc.Spec.Archived = true })
	for range MaxAttempts + 1 {
		h.step()
		h.expectCalls("Destroy")
		tc := h.expectPhase(v1alpha1.PhaseUpdating)
		if tc.Status.Retries != 0 || tc.Status.NextRetryTime != nil {
			t.Fatalf("an archive in progress counted as a failure: retries %d", tc.Status.Retries)
		}
		if c := meta.FindStatusCondition(tc.Status.Conditions, v1alpha1.ConditionReady); c == nil || !strings.Contains(c.Message, "tkt-1") {
			t.Fatalf("Ready condition does not say what the archive waits for: %+v", c)
		}
	}
	h.p.destroyErr = nil
	h.step()
	h.expectCalls("Destroy")
	h.expectPhase(v1alpha1.PhaseArchived)

	h2 := newHarness(t, tenant())
	h2.ready()
	h2.p.destroyErr = errkind.Waitingf(compute.RecheckAfter, "waits for approval of ticket tkt-2")
	h2.edit(false, func(tc *v1alpha1.TenantCompute) { tc.DeletionTimestamp = &metav1.Time{Time: start} })
	if after, waiting := errkind.WaitFor(h2.c.reconcile(context.Background(), shop)); !waiting || after != compute.RecheckAfter {
		t.Fatalf("a delete in progress asked to wait %s (%v), want the provider's wait: the loop would count a failure otherwise", after, waiting)
	}
	h2.refresh()
	tc := h2.get()
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "Deleting")
	if !slices.Contains(tc.Finalizers, v1alpha1.Finalizer) {
		t.Error("the finalizer was removed while Destroy is in progress")
	}
	h2.p.destroyErr = nil
	h2.p.took()
	h2.step()
	if tc := h2.get(); slices.Contains(tc.Finalizers, v1alpha1.Finalizer) {
		t.Errorf("finalizer kept after Destroy: %v", tc.Finalizers)
	}
}

// A tenant at rest whose provider cannot be reached (an outage of its cluster) keeps its phase
// however many checks fail, with Ready False and the next check backed off; it is Ready again
// at the first check that works. Compute the provider reports failed still ends in Failed.
func TestCheckFailuresOfATenantAtRestNeverFailIt(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	h.p.statusErr = errors.New("cluster east is unreachable")
	for attempt := 1; attempt <= 2*MaxAttempts; attempt++ {
		h.clock.Step(10 * time.Minute) // past any backoff and the resync
		h.step()
		tc := h.expectPhase(v1alpha1.PhaseReady)
		expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "CheckFailed")
		if tc.Status.Retries != int32(attempt) || tc.Status.NextRetryTime == nil {
			t.Fatalf("check %d: retries %d, next %v", attempt, tc.Status.Retries, tc.Status.NextRetryTime)
		}
	}
	h.p.statusErr = nil
	h.clock.Step(10 * time.Minute)
	h.step()
	tc := h.expectPhase(v1alpha1.PhaseReady)
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionTrue, "Ready")
	if tc.Status.Retries != 0 {
		t.Errorf("retries %d after a good check", tc.Status.Retries)
	}

	h.p.status = &compute.ComputeStatus{State: v1alpha1.ComputeStateFailed, Health: v1alpha1.HealthStatusUnhealthy, Message: "Container web keeps crashing."}
	for range MaxAttempts {
		h.clock.Step(10 * time.Minute)
		h.step()
	}
	h.expectPhase(v1alpha1.PhaseFailed)
}

// A tenant Failed because its compute failed on its own (not because the provider could not do
// its part) comes back to Ready when the compute runs again, without a spec change; while it
// stays broken, looking at it writes nothing. A tenant Failed because the provider failed
// stays Failed (TestProviderErrorsBackOffThenFail).
func TestFailedComputeThatRecoversIsReadyAgain(t *testing.T) {
	h := newHarness(t, tenant())
	h.ready()
	h.p.status = &compute.ComputeStatus{State: v1alpha1.ComputeStateFailed, Health: v1alpha1.HealthStatusUnhealthy, Message: "Container web keeps crashing."}
	for range MaxAttempts {
		h.clock.Step(10 * time.Minute)
		h.step()
	}
	tc := h.expectPhase(v1alpha1.PhaseFailed)
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionFalse, "ComputeFailed")
	h.statusWrites()
	h.clock.Step(10 * time.Minute)
	h.step()
	h.expectPhase(v1alpha1.PhaseFailed)
	if n := h.statusWrites(); n != 0 {
		t.Errorf("looking at still-broken compute wrote the status %d times", n)
	}
	h.p.status = running
	h.step()
	tc = h.expectPhase(v1alpha1.PhaseReady)
	expectCondition(t, tc, v1alpha1.ConditionReady, metav1.ConditionTrue, "Ready")
	if tc.Status.Retries != 0 {
		t.Errorf("retries %d", tc.Status.Retries)
	}
}
