package reconciliationrequest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
)

var (
	repoGVR          = sourcev1.GroupVersion.WithResource("ocirepositories")
	kustomizationGVR = kustomizev1.GroupVersion.WithResource("kustomizations")
	requested        = time.Date(2026, 11, 24, 2, 0, 0, 123456000, time.UTC)
	// created is the request's creationTimestamp, as the server stores it (in seconds).
	created = requested.Truncate(time.Second)
	// value is the annotation value of a request made at requested.
	value = "2026-11-24T02:00:00.123456Z"
	key   = cache.NewObjectName("team-a", "now")
)

// fakeClients gives every cluster the same fake dynamic client, or err.
type fakeClients struct {
	client dynamic.Interface
	mapper apimeta.RESTMapper
	err    error
}

func (f *fakeClients) For(context.Context, string) (dynamic.Interface, apimeta.RESTMapper, error) {
	return f.client, f.mapper, f.err
}

func fluxMapper(served bool) apimeta.RESTMapper {
	m := apimeta.NewDefaultRESTMapper(nil)
	if served {
		m.AddSpecific(flux.OCIRepositoryKind, repoGVR, repoGVR.GroupVersion().WithResource("ocirepository"), apimeta.RESTScopeNamespace)
		m.AddSpecific(flux.KustomizationKind, kustomizationGVR, kustomizationGVR.GroupVersion().WithResource("kustomization"), apimeta.RESTScopeNamespace)
	}
	return m
}

// harness is a controller with fake clients: plinth's (requests, artifacts, clusters) and a
// target cluster's (Flux objects).
type harness struct {
	t        *testing.T
	c        *Controller
	plinth   *fake.Clientset
	target   *dynamicfake.FakeDynamicClient
	clients  *fakeClients
	recorder *events.FakeRecorder
	clock    *clocktesting.FakePassiveClock
	factory  informers.SharedInformerFactory
}

func newHarness(t *testing.T, req *gitopsv1alpha1.ReconciliationRequest, plinthObjects []runtime.Object, fluxObjects ...runtime.Object) *harness {
	t.Helper()
	local := &platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "local"}}
	objects := append([]runtime.Object{req, local}, plinthObjects...)
	h := &harness{t: t, plinth: fake.NewSimpleClientset(objects...), recorder: events.NewFakeRecorder(20),
		clock: clocktesting.NewFakePassiveClock(requested.Add(time.Second))}
	looptest.ResourceVersions(&h.plinth.Fake, h.plinth.Tracker(), gitopsv1alpha1.SchemeGroupVersion.WithResource("reconciliationrequests"))
	h.target = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		repoGVR: "OCIRepositoryList", kustomizationGVR: "KustomizationList",
	}, fluxObjects...)
	h.clients = &fakeClients{client: h.target, mapper: fluxMapper(true)}
	h.factory = informers.NewSharedInformerFactory(h.plinth, 0)
	gitops := h.factory.Gitops().V1alpha1()
	for _, obj := range objects {
		var err error
		switch o := obj.(type) {
		case *gitopsv1alpha1.ReconciliationRequest:
			err = gitops.ReconciliationRequests().Informer().GetIndexer().Add(o)
		case *gitopsv1alpha1.OCIArtifact:
			err = gitops.OCIArtifacts().Informer().GetIndexer().Add(o)
		case *platformv1alpha1.Cluster:
			err = h.factory.Platform().V1alpha1().Clusters().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewController(h.plinth.GitopsV1alpha1(), h.recorder, gitops.ReconciliationRequests(), gitops.OCIArtifacts(),
		h.factory.Platform().V1alpha1().Clusters(), h.clients, Options{PollInterval: time.Second, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

// reconcile runs one reconcile and brings the informer's copy of the request up to date with
// what was stored, as the informer would.
func (h *harness) reconcile() *gitopsv1alpha1.ReconciliationRequest {
	h.t.Helper()
	if err := h.c.reconcile(context.Background(), key); err != nil {
		h.t.Fatal(err)
	}
	return h.stored()
}

func (h *harness) stored() *gitopsv1alpha1.ReconciliationRequest {
	h.t.Helper()
	req, err := h.plinth.GitopsV1alpha1().ReconciliationRequests("team-a").Get(context.Background(), "now", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.factory.Gitops().V1alpha1().ReconciliationRequests().Informer().GetIndexer().Update(req); err != nil {
		h.t.Fatal(err)
	}
	return req
}

// setArtifact replaces the informer's copy of an OCIArtifact, as its controller's writes would.
func (h *harness) setArtifact(art *gitopsv1alpha1.OCIArtifact) {
	h.t.Helper()
	if err := h.factory.Gitops().V1alpha1().OCIArtifacts().Informer().GetIndexer().Update(art); err != nil {
		h.t.Fatal(err)
	}
}

// report makes a Flux object on the target report lastHandled, a Ready condition and a
// revision, as Flux does after a reconcile.
func (h *harness) report(gvr schema.GroupVersionResource, name, lastHandled string, ready metav1.ConditionStatus, message, revision string) {
	h.t.Helper()
	u, err := h.target.Resource(gvr).Namespace("flux-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	status := map[string]interface{}{
		"lastHandledReconcileAt": lastHandled,
		"conditions":             []interface{}{map[string]interface{}{"type": "Ready", "status": string(ready), "reason": "Test", "message": message, "lastTransitionTime": "2026-11-24T02:00:01Z"}},
	}
	if gvr == repoGVR {
		status["artifact"] = map[string]interface{}{"revision": revision, "path": "p", "url": "u", "digest": "sha256:00", "lastUpdateTime": "2026-11-24T02:00:01Z"}
	} else {
		status["lastAppliedRevision"] = revision
	}
	u.Object["status"] = status
	if _, err := h.target.Resource(gvr).Namespace("flux-system").Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// expectEvents compares the events recorded so far with want ("Type Reason Note" each).
func (h *harness) expectEvents(want ...string) {
	h.t.Helper()
	var got []string
	for len(h.recorder.Events) > 0 {
		got = append(got, <-h.recorder.Events)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		h.t.Errorf("events (-want +got):\n%s", diff)
	}
}

func request(targets ...gitopsv1alpha1.ReconciliationTarget) *gitopsv1alpha1.ReconciliationRequest {
	return &gitopsv1alpha1.ReconciliationRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "now", Generation: 1, CreationTimestamp: metav1.NewTime(created)},
		Spec: gitopsv1alpha1.ReconciliationRequestSpec{
			Targets: targets, Mode: gitopsv1alpha1.ReconciliationModeManual,
			RequestedAt: &metav1.MicroTime{Time: requested}, Timeout: &metav1.Duration{Duration: time.Minute},
		},
	}
}

func fluxTarget(kind string) gitopsv1alpha1.ReconciliationTarget {
	return gitopsv1alpha1.ReconciliationTarget{Cluster: "local", Kind: kind, Name: "team-a-app", Namespace: "flux-system"}
}

func fluxObject(kind string) *unstructured.Unstructured {
	gvk := flux.OCIRepositoryKind
	if kind == gitopsv1alpha1.TargetKindKustomization {
		gvk = flux.KustomizationKind
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("flux-system")
	u.SetName("team-a-app")
	return u
}

// annotationPatches are the merge patches the fake received, as "<resource> <name> <value>".
func annotationPatches(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		p, ok := a.(clienttesting.PatchAction)
		if !ok || p.GetPatchType() != types.MergePatchType {
			continue
		}
		var patch struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(p.GetPatch(), &patch)
		out = append(out, p.GetResource().Resource+" "+p.GetName()+" "+patch.Metadata.Annotations[fluxmeta.ReconcileRequestAnnotation])
	}
	return out
}

func readyCondition(t *testing.T, req *gitopsv1alpha1.ReconciliationRequest) metav1.Condition {
	t.Helper()
	c := apimeta.FindStatusCondition(req.Status.Conditions, gitopsv1alpha1.ConditionReady)
	if c == nil {
		t.Fatalf("no Ready condition: %+v", req.Status)
	}
	return *c
}

func TestRequestValue(t *testing.T) {
	req := request()
	if got := RequestValue(req); got != value {
		t.Errorf("RequestValue = %q, want %q", got, value)
	}
	req.Spec.RequestedAt = &metav1.MicroTime{Time: time.Date(2026, 11, 24, 3, 0, 0, 0, time.FixedZone("CET", 3600))}
	if got := RequestValue(req); got != "2026-11-24T02:00:00Z" {
		t.Errorf("RequestValue = %q, want the time in UTC without fractional digits", got)
	}
	req.Spec.RequestedAt = nil
	if got := RequestValue(req); got != "2026-11-24T02:00:00Z" {
		t.Errorf("RequestValue without requestedAt = %q, want the creation time", got)
	}
}

// TestFluxTargetsAreAnnotatedThenFollowedToSuccess: both Flux objects get the annotation;
// the request is InProgress until both report it handled and are Ready; then it Succeeded,
// with each target's handled time and revision, and is never touched again.
func TestFluxTargetsAreAnnotatedThenFollowedToSuccess(t *testing.T) {
	req := request(fluxTarget("OCIRepository"), fluxTarget("Kustomization"))
	h := newHarness(t, req, nil, fluxObject("OCIRepository"), fluxObject("Kustomization"))

	got := h.reconcile()
	if want := []string{"ocirepositories team-a-app " + value, "kustomizations team-a-app " + value}; !cmp.Equal(annotationPatches(h.target.Actions()), want) {
		t.Errorf("patches %v, want %v", annotationPatches(h.target.Actions()), want)
	}
	if got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress || readyCondition(t, got).Status != metav1.ConditionUnknown {
		t.Fatalf("status after the request: %+v", got.Status)
	}
	h.expectEvents("Normal InProgress Asked 2 targets to reconcile at " + value + "; waiting for them to handle it and be Ready.")

	// The source handled it; the Kustomization still reports an older request.
	h.report(repoGVR, "team-a-app", value, metav1.ConditionTrue, "stored artifact for digest '1.0.0@sha256:ab'", "1.0.0@sha256:ab")
	h.report(kustomizationGVR, "team-a-app", "2026-11-24T01:00:00Z", metav1.ConditionTrue, "Applied revision: 1.0.0@sha256:aa", "1.0.0@sha256:aa")
	got = h.reconcile()
	repo, k := got.Status.Targets[0], got.Status.Targets[1]
	if got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress || !repo.Ready || repo.HandledAt == nil || repo.Revision != "1.0.0@sha256:ab" ||
		k.Ready || k.HandledAt != nil || !strings.Contains(k.Message, "the last handled was made at 2026-11-24T01:00:00Z") {
		t.Fatalf("status while the Kustomization has not handled it: %+v", got.Status)
	}
	handledAt := repo.HandledAt

	h.clock.SetTime(requested.Add(5 * time.Second))
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionTrue, "Applied revision: 1.0.0@sha256:ab", "1.0.0@sha256:ab")
	got = h.reconcile()
	if got.Status.Phase != gitopsv1alpha1.ReconciliationSucceeded || got.Status.CompletionTime == nil || readyCondition(t, got).Status != metav1.ConditionTrue {
		t.Fatalf("status once both handled it: %+v", got.Status)
	}
	repo, k = got.Status.Targets[0], got.Status.Targets[1]
	if !repo.HandledAt.Equal(handledAt) || !k.Ready || k.HandledAt == nil || !k.HandledAt.Time.Equal(requested.Add(5*time.Second)) ||
		k.Revision != "1.0.0@sha256:ab" || k.Message != "Applied revision: 1.0.0@sha256:ab." {
		t.Errorf("targets: %+v", got.Status.Targets)
	}
	h.expectEvents("Normal Succeeded 2 targets handled the request made at " + value + " and are Ready.")

	// Finished: a record.
	h.target.ClearActions()
	h.plinth.ClearActions()
	h.reconcile()
	if len(h.target.Actions()) != 0 || len(h.plinth.Actions()) != 1 { // the test's own Get
		t.Errorf("a finished request was worked on: %v %v", h.target.Actions(), h.plinth.Actions())
	}
}

// TestReconcilesFromItsOwnWrite: a reconcile right after a status write, before the informer
// shows it, works from what the write returned: it follows the targets it asked instead of
// asking them again, and its next write is based on its last (no conflict).
func TestReconcilesFromItsOwnWrite(t *testing.T) {
	h := newHarness(t, request(fluxTarget("Kustomization")), nil, fluxObject("Kustomization"))
	if err := h.c.reconcile(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	h.target.ClearActions()
	if err := h.c.reconcile(context.Background(), key); err != nil { // the cache still holds the request as created
		t.Fatal(err)
	}
	if patches := annotationPatches(h.target.Actions()); len(patches) != 0 {
		t.Errorf("asked the targets again: %v", patches)
	}
	if got := h.stored(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress ||
		got.Status.Targets[0].Message != "Waiting for the request to be handled." {
		t.Errorf("status: %+v", got.Status)
	}
}

func TestMissingTargetFails(t *testing.T) {
	h := newHarness(t, request(fluxTarget("OCIRepository"), fluxTarget("Kustomization")), nil, fluxObject("OCIRepository"))
	got := h.reconcile()
	cond := readyCondition(t, got)
	if got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || got.Status.CompletionTime == nil || cond.Reason != "TargetNotFound" ||
		cond.Message != "Kustomization flux-system/team-a-app on cluster local does not exist." {
		t.Fatalf("status: %+v", got.Status)
	}
	h.expectEvents("Warning TargetNotFound Kustomization flux-system/team-a-app on cluster local does not exist.")
}

// TestTargetDeletedWhileInProgressFails: a target that goes away after the request was passed on.
func TestTargetDeletedWhileInProgressFails(t *testing.T) {
	h := newHarness(t, request(fluxTarget("Kustomization")), nil, fluxObject("Kustomization"))
	h.reconcile()
	if err := h.target.Resource(kustomizationGVR).Namespace("flux-system").Delete(context.Background(), "team-a-app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || readyCondition(t, got).Reason != "TargetNotFound" {
		t.Fatalf("status: %+v", got.Status)
	}
}

func TestClusterProblemsFail(t *testing.T) {
	for name, c := range map[string]struct {
		target  gitopsv1alpha1.ReconciliationTarget
		clients func(*fakeClients)
		reason  string
		message string
	}{
		"an unregistered cluster": {gitopsv1alpha1.ReconciliationTarget{Cluster: "edge", Kind: "Kustomization", Name: "team-a-app", Namespace: "flux-system"},
			nil, "ClusterNotFound", "Cluster edge is not registered."},
		"a cluster without Flux": {fluxTarget("Kustomization"), func(f *fakeClients) { f.mapper = fluxMapper(false) },
			"FluxNotInstalled", "Cluster local does not serve Flux's kustomize.toolkit.fluxcd.io/v1 Kustomization: Flux is not installed there."},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, request(c.target), nil, fluxObject("Kustomization"))
			if c.clients != nil {
				c.clients(h.clients)
			}
			got := h.reconcile()
			cond := readyCondition(t, got)
			if got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || cond.Reason != c.reason || cond.Message != c.message ||
				got.Status.Targets[0].Message != c.message {
				t.Errorf("status: %+v", got.Status)
			}
			h.expectEvents("Warning " + c.reason + " " + c.message)
		})
	}
}

// TestTimeout: targets that never handle the request fail it once spec.timeout has passed
// since the request's creation, and not before, whatever requestedAt says: a client sets it
// (within a few minutes of the server's time), the server's creationTimestamp bounds the wait.
func TestTimeout(t *testing.T) {
	req := request(fluxTarget("Kustomization"))
	later := created.Add(5 * time.Minute)
	req.Spec.RequestedAt = &metav1.MicroTime{Time: later}
	laterValue := later.Format(time.RFC3339Nano)
	h := newHarness(t, req, nil, fluxObject("Kustomization"))
	h.reconcile()
	h.expectEvents("Normal InProgress Asked 1 target to reconcile at " + laterValue + "; waiting for it to handle it and be Ready.")
	h.clock.SetTime(created.Add(time.Minute))
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress {
		t.Fatalf("failed at the deadline, not after it: %+v", got.Status)
	}
	h.clock.SetTime(created.Add(time.Minute + time.Millisecond))
	got := h.reconcile()
	cond := readyCondition(t, got)
	if got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || cond.Reason != "TimedOut" ||
		cond.Message != "Not handled and Ready within 1m0s: Kustomization flux-system/team-a-app on cluster local." {
		t.Fatalf("status: %+v", got.Status)
	}
	h.expectEvents("Warning TimedOut " + cond.Message)
}

// TestHandledButNotReadyFails: a target that handled the request and reports Ready False
// failed its reconcile, as flux reconcile reports it.
func TestHandledButNotReadyFails(t *testing.T) {
	h := newHarness(t, request(fluxTarget("Kustomization")), nil, fluxObject("Kustomization"))
	h.reconcile()
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionUnknown, "Reconciliation in progress", "")
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress {
		t.Fatalf("Ready Unknown is progress: %+v", got.Status)
	}
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionFalse, "ConfigMap/apps/x dry-run failed", "")
	got := h.reconcile()
	cond := readyCondition(t, got)
	if got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || cond.Reason != gitopsv1alpha1.ReasonReconciliationFailed || got.Status.Targets[0].HandledAt == nil ||
		cond.Message != "Kustomization flux-system/team-a-app on cluster local handled the request and is not Ready: ConfigMap/apps/x dry-run failed." {
		t.Fatalf("status: %+v", got.Status)
	}
}

// TestANewerRequestCoversThisOne: when a later request overwrote the annotation before this
// one was seen handled, the later one's handling covers it.
func TestANewerRequestCoversThisOne(t *testing.T) {
	h := newHarness(t, request(fluxTarget("OCIRepository")), nil, fluxObject("OCIRepository"))
	h.reconcile()
	h.report(repoGVR, "team-a-app", "2026-11-24T02:00:03Z", metav1.ConditionTrue, "stored", "1.0.0@sha256:ab")
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationSucceeded {
		t.Fatalf("status: %+v", got.Status)
	}
}

func ociArtifact(clusters ...string) *gitopsv1alpha1.OCIArtifact {
	art := &gitopsv1alpha1.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"}}
	for _, c := range clusters {
		art.Spec.Targets = append(art.Spec.Targets, gitopsv1alpha1.ArtifactTarget{Cluster: c})
	}
	return art
}

// TestOCIArtifactTarget: an OCIArtifact is annotated through plinth's API and followed through
// its status entry for the cluster.
func TestOCIArtifactTarget(t *testing.T) {
	art := ociArtifact("local")
	h := newHarness(t, request(gitopsv1alpha1.ReconciliationTarget{Cluster: "local", Kind: "OCIArtifact", Name: "app"}), []runtime.Object{art})
	got := h.reconcile()
	if patches := annotationPatches(h.plinth.Actions()); !cmp.Equal(patches, []string{"ociartifacts app " + value}) {
		t.Errorf("patches %v", patches)
	}
	if got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress {
		t.Fatalf("status: %+v", got.Status)
	}
	art = art.DeepCopy()
	art.Status.Targets = []gitopsv1alpha1.ArtifactTargetStatus{{Cluster: "local", Ready: true, Revision: "1.0.0@sha256:ab", LastHandledReconcileAt: "2026-11-24T01:00:00Z"}}
	h.setArtifact(art)
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress || got.Status.Targets[0].Ready {
		t.Fatalf("an older handled request counted: %+v", got.Status)
	}
	art = art.DeepCopy()
	art.Status.Targets[0].LastHandledReconcileAt, art.Status.Targets[0].Message = value, "Applied revision 1.0.0@sha256:ab."
	h.setArtifact(art)
	got = h.reconcile()
	if got.Status.Phase != gitopsv1alpha1.ReconciliationSucceeded || !got.Status.Targets[0].Ready || got.Status.Targets[0].Revision != "1.0.0@sha256:ab" ||
		got.Status.Targets[0].HandledAt == nil || got.Status.Targets[0].Message != "Applied revision 1.0.0@sha256:ab." {
		t.Fatalf("status: %+v", got.Status)
	}
}

func TestOCIArtifactTargetProblemsFail(t *testing.T) {
	for name, c := range map[string]struct {
		objects []runtime.Object
		message string
	}{
		"missing":                  {nil, "OCIArtifact app on cluster local does not exist."},
		"not delivered to cluster": {[]runtime.Object{ociArtifact("edge")}, "OCIArtifact app is not delivered to cluster local."},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, request(gitopsv1alpha1.ReconciliationTarget{Cluster: "local", Kind: "OCIArtifact", Name: "app"}), c.objects)
			got := h.reconcile()
			if cond := readyCondition(t, got); got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || cond.Reason != "TargetNotFound" || cond.Message != c.message {
				t.Errorf("status: %+v", got.Status)
			}
			if patches := annotationPatches(h.plinth.Actions()); len(patches) != 0 {
				t.Errorf("patched %v", patches)
			}
		})
	}
}

// TestTransientErrorsAreRetriedUntilTheDeadline: a server error from a target while asking
// it keeps the request Pending and asked again at each poll; once the error passes, the
// request goes on.
func TestTransientErrorsAreRetriedUntilTheDeadline(t *testing.T) {
	h := newHarness(t, request(fluxTarget("Kustomization")), nil, fluxObject("Kustomization"))
	failing := true
	h.target.PrependReactor("patch", "kustomizations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return failing, nil, fmt.Errorf("applying: %w", &apiStatusError{})
	})
	got := h.reconcile()
	cond := readyCondition(t, got)
	message := "Kustomization flux-system/team-a-app on cluster local could not be read or asked: Applying: the server is currently unable to handle the request."
	if got.Status.Phase != gitopsv1alpha1.ReconciliationPending || cond.Status != metav1.ConditionUnknown || cond.Reason != gitopsv1alpha1.ReasonTargetUnavailable ||
		cond.Message != message+" Trying again until 2026-11-24T02:01:00Z." || got.Status.Targets[0].Message != message {
		t.Fatalf("status after a server error: %+v", got.Status)
	}
	failing = false
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress || readyCondition(t, got).Reason != gitopsv1alpha1.ReasonInProgress {
		t.Fatalf("status once the error passed: %+v", got.Status)
	}
}

// TestUnreachableClusterIsRetriedUntilTheDeadline: a cluster that does not answer, while the
// request is passed on or followed, does not fail it at once: it times out at its deadline,
// naming the problem.
func TestUnreachableClusterIsRetriedUntilTheDeadline(t *testing.T) {
	unreachable := fmt.Errorf("cluster local: %w", &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, Err: syscall.ECONNREFUSED})
	h := newHarness(t, request(fluxTarget("Kustomization")), nil, fluxObject("Kustomization"))
	h.clients.err = unreachable
	got := h.reconcile()
	cond := readyCondition(t, got)
	if got.Status.Phase != gitopsv1alpha1.ReconciliationPending || cond.Status != metav1.ConditionUnknown || cond.Reason != gitopsv1alpha1.ReasonUnreachable ||
		cond.Message != "Cluster local: dial tcp 127.0.0.1:1: connection refused. Trying again until 2026-11-24T02:01:00Z." {
		t.Fatalf("status while the cluster is down: %+v", got.Status)
	}
	h.expectEvents("Warning Unreachable " + cond.Message)
	h.clock.SetTime(created.Add(time.Minute + time.Millisecond))
	got = h.reconcile()
	if cond := readyCondition(t, got); got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || cond.Reason != gitopsv1alpha1.ReasonTimedOut ||
		cond.Message != "The request was not passed on before its timeout of 1m0s. Cluster local: dial tcp 127.0.0.1:1: connection refused. Trying again until 2026-11-24T02:01:00Z." {
		t.Fatalf("status after the deadline: %+v", got.Status)
	}

	// Once in progress: a failed read (the network) is retried too.
	h = newHarness(t, request(fluxTarget("Kustomization")), nil, fluxObject("Kustomization"))
	h.reconcile()
	h.target.PrependReactor("get", "kustomizations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, &net.OpError{Op: "read", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443}, Err: syscall.ECONNRESET}
	})
	got = h.reconcile()
	if cond := readyCondition(t, got); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress || cond.Status != metav1.ConditionUnknown ||
		cond.Reason != gitopsv1alpha1.ReasonUnreachable || got.Status.Targets[0].Ready {
		t.Fatalf("status after a failed read: %+v", got.Status)
	}
	h.clock.SetTime(created.Add(time.Minute + time.Millisecond))
	got = h.reconcile()
	if cond := readyCondition(t, got); got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || cond.Reason != gitopsv1alpha1.ReasonTimedOut ||
		cond.Message != "Not handled and Ready within 1m0s: Kustomization flux-system/team-a-app on cluster local (Cluster local could not be reached: Read tcp 127.0.0.1:6443: connection reset by peer)." {
		t.Fatalf("status after the deadline: %+v", got.Status)
	}
}

// TestClientProblemsAreNotUnreachability: an error getting a cluster's clients that does not
// say, by its type, that the cluster did not answer (a kubeconfig that cannot be read) is
// retried until the deadline as TargetUnavailable, whatever its text says.
func TestClientProblemsAreNotUnreachability(t *testing.T) {
	h := newHarness(t, request(fluxTarget("Kustomization")), nil, fluxObject("Kustomization"))
	h.clients.err = errors.New("reading the kubeconfig of cluster local: connection refused")
	got := h.reconcile()
	if cond := readyCondition(t, got); got.Status.Phase != gitopsv1alpha1.ReconciliationPending || cond.Status != metav1.ConditionUnknown ||
		cond.Reason != gitopsv1alpha1.ReasonTargetUnavailable {
		t.Fatalf("status: %+v", got.Status)
	}
}

// apiStatusError is a server's 500.
type apiStatusError struct{}

func (apiStatusError) Error() string { return "the server is currently unable to handle the request" }
func (apiStatusError) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError}
}

func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth := fake.NewSimpleClientset()
		f := informers.NewSharedInformerFactory(plinth, 0)
		gitops := f.Gitops().V1alpha1()
		c, err := NewController(plinth.GitopsV1alpha1(), events.NewFakeRecorder(10), gitops.ReconciliationRequests(), gitops.OCIArtifacts(),
			f.Platform().V1alpha1().Clusters(), &fakeClients{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&plinth.Fake}, func(stop <-chan struct{}) { f.Start(stop) }
	})
}

// TestTargetsMustReportTheRevision: a target whose spec names a revision (an Automatic request
// after a push) is not done when it handled the request and is Ready with another revision,
// as a Kustomization is when it reconciled before its source had the new revision: the request
// stays InProgress, and succeeds once the target reports the revision.
func TestTargetsMustReportTheRevision(t *testing.T) {
	repo, k := fluxTarget("OCIRepository"), fluxTarget("Kustomization")
	repo.Revision, k.Revision = "1.1.0@sha256:bb", "1.1.0@sha256:bb"
	h := newHarness(t, request(repo, k), nil, fluxObject("OCIRepository"), fluxObject("Kustomization"))
	h.reconcile()
	h.expectEvents("Normal InProgress Asked 2 targets to reconcile at " + value + "; waiting for them to handle it and be Ready.")

	h.report(repoGVR, "team-a-app", value, metav1.ConditionTrue, "stored artifact", "1.1.0@sha256:bb")
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionTrue, "Applied revision: 1.0.0@sha256:aa", "1.0.0@sha256:aa")
	got := h.reconcile()
	r, ks := got.Status.Targets[0], got.Status.Targets[1]
	if got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress || readyCondition(t, got).Reason != gitopsv1alpha1.ReasonInProgress || !r.Ready ||
		ks.Ready || ks.HandledAt == nil || ks.Revision != "1.0.0@sha256:aa" ||
		ks.Message != "Handled the request; waiting for revision 1.1.0@sha256:bb, it reports 1.0.0@sha256:aa." {
		t.Fatalf("status while the Kustomization applied the old revision: %+v", got.Status)
	}
	h.expectEvents()

	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionTrue, "Applied revision: 1.1.0@sha256:bb", "1.1.0@sha256:bb")
	got = h.reconcile()
	if got.Status.Phase != gitopsv1alpha1.ReconciliationSucceeded || !got.Status.Targets[1].Ready || got.Status.Targets[1].Revision != "1.1.0@sha256:bb" {
		t.Fatalf("status once the Kustomization applied the revision: %+v", got.Status)
	}
	h.expectEvents("Normal Succeeded 2 targets handled the request made at " + value + " and are Ready.")
}

// TestTargetsPinnedToADigestReportIt: Flux objects pinned to a digest report the digest
// alone; that is the revision <tag>@<digest> the request waits for, and a failure to apply it
// is the request's.
func TestTargetsPinnedToADigestReportIt(t *testing.T) {
	repo, k := fluxTarget("OCIRepository"), fluxTarget("Kustomization")
	repo.Revision, k.Revision = "1.1.0@sha256:bb", "1.1.0@sha256:bb"
	h := newHarness(t, request(repo, k), nil, fluxObject("OCIRepository"), fluxObject("Kustomization"))
	h.reconcile()
	h.report(repoGVR, "team-a-app", value, metav1.ConditionTrue, "stored artifact", "sha256:bb")
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionTrue, "Applied revision: sha256:aa", "sha256:aa")
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress || !got.Status.Targets[0].Ready || got.Status.Targets[1].Ready {
		t.Fatalf("status while the Kustomization applied another digest: %+v", got.Status)
	}
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionTrue, "Applied revision: sha256:bb", "sha256:bb")
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationSucceeded {
		t.Fatalf("status once both report the digest: %+v", got.Status)
	}

	k2 := fluxTarget("Kustomization")
	k2.Revision = "1.1.0@sha256:bb"
	h = newHarness(t, request(k2), nil, fluxObject("Kustomization"))
	h.reconcile()
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionFalse, "ConfigMap/apps/y dry-run failed", "sha256:99")
	u, err := h.target.Resource(kustomizationGVR).Namespace("flux-system").Get(context.Background(), "team-a-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "sha256:bb", "status", "lastAttemptedRevision"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.target.Resource(kustomizationGVR).Namespace("flux-system").Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationFailed {
		t.Fatalf("status after the digest failed to apply: %+v", got.Status)
	}
}

// TestTargetNotAtTheRevisionTimesOut: a target that never reports the revision fails the
// request at its deadline, saying which revision it still reports.
func TestTargetNotAtTheRevisionTimesOut(t *testing.T) {
	for name, c := range map[string]struct {
		revision, want string
	}{
		"an older revision": {"1.0.0@sha256:aa", "Kustomization flux-system/team-a-app on cluster local (waiting for revision 1.1.0@sha256:bb, it reports 1.0.0@sha256:aa)"},
		"no revision":       {"", "Kustomization flux-system/team-a-app on cluster local (waiting for revision 1.1.0@sha256:bb, it reports none yet)"},
	} {
		t.Run(name, func(t *testing.T) {
			k := fluxTarget("Kustomization")
			k.Revision = "1.1.0@sha256:bb"
			h := newHarness(t, request(k), nil, fluxObject("Kustomization"))
			h.reconcile()
			h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionTrue, "Applied", c.revision)
			if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress {
				t.Fatalf("status before the deadline: %+v", got.Status)
			}
			h.clock.SetTime(created.Add(time.Minute + time.Millisecond))
			got := h.reconcile()
			if cond := readyCondition(t, got); got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || cond.Reason != gitopsv1alpha1.ReasonTimedOut ||
				cond.Message != "Not handled and Ready within 1m0s: "+c.want+"." {
				t.Fatalf("status after the deadline: %+v", got.Status)
			}
		})
	}
}

// TestAnOlderRevisionsFailureIsNotTheRequests: a Kustomization that handled the request and
// failed to apply an older revision than the one the request waits for (its source has not
// brought the new one yet) keeps the request waiting; failing to apply the awaited revision
// fails it.
func TestAnOlderRevisionsFailureIsNotTheRequests(t *testing.T) {
	k := fluxTarget("Kustomization")
	k.Revision = "1.1.0@sha256:bb"
	h := newHarness(t, request(k), nil, fluxObject("Kustomization"))
	h.reconcile()
	attempt := func(revision string) {
		t.Helper()
		u, err := h.target.Resource(kustomizationGVR).Namespace("flux-system").Get(context.Background(), "team-a-app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(u.Object, revision, "status", "lastAttemptedRevision"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.target.Resource(kustomizationGVR).Namespace("flux-system").Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionFalse, "ConfigMap/apps/x dry-run failed", "0.9.0@sha256:99")
	attempt("1.0.0@sha256:aa")
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress {
		t.Fatalf("failed on an older revision's failure: %+v", got.Status)
	}
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionFalse, "ConfigMap/apps/y dry-run failed", "0.9.0@sha256:99")
	attempt("1.1.0@sha256:bb")
	got := h.reconcile()
	if cond := readyCondition(t, got); got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || cond.Reason != gitopsv1alpha1.ReasonReconciliationFailed ||
		cond.Message != "Kustomization flux-system/team-a-app on cluster local handled the request and is not Ready: ConfigMap/apps/y dry-run failed." {
		t.Fatalf("status after the revision failed: %+v", got.Status)
	}
}

// TestOCIArtifactTargetMustReportTheRevision: an OCIArtifact target's entry for the cluster
// must report the revision too.
func TestOCIArtifactTargetMustReportTheRevision(t *testing.T) {
	art := ociArtifact("local")
	h := newHarness(t, request(gitopsv1alpha1.ReconciliationTarget{Cluster: "local", Kind: "OCIArtifact", Name: "app", Revision: "1.1.0@sha256:bb"}), []runtime.Object{art})
	h.reconcile()
	art = art.DeepCopy()
	art.Status.Targets = []gitopsv1alpha1.ArtifactTargetStatus{{Cluster: "local", Ready: true, Revision: "1.0.0@sha256:aa", LastHandledReconcileAt: value}}
	h.setArtifact(art)
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress || got.Status.Targets[0].Ready {
		t.Fatalf("the old revision counted: %+v", got.Status)
	}
	art = art.DeepCopy()
	art.Status.Targets[0].Revision = "1.1.0@sha256:bb"
	h.setArtifact(art)
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationSucceeded || !got.Status.Targets[0].Ready {
		t.Fatalf("status at the revision: %+v", got.Status)
	}
}

// TestAutomaticRequestSupersededByANewerPush: the Automatic request of a push waits for its
// revision until its OCIArtifact has a status for a later generation that pushed another
// revision (two versions in quick succession); then it ends, Failed with reason Superseded and
// a Normal event. A later generation that pushed nothing new, another artifact of the same
// name, or a Manual request keep waiting.
func TestAutomaticRequestSupersededByANewerPush(t *testing.T) {
	const v12 = "1.2.0@sha256:bb"
	automatic := func(mode gitopsv1alpha1.ReconciliationMode) *gitopsv1alpha1.ReconciliationRequest {
		repo, k := fluxTarget("OCIRepository"), fluxTarget("Kustomization")
		repo.Revision, k.Revision = v12, v12
		req := request(repo, k)
		req.Spec.Mode = mode
		req.Annotations = map[string]string{AnnotationArtifactGeneration: "3"}
		req.OwnerReferences = []metav1.OwnerReference{{APIVersion: "gitops.plinth.dev/v1alpha1", Kind: "OCIArtifact", Name: "app", UID: "uid-app"}}
		return req
	}
	artifactAt := func(uid types.UID, generation int64, tag, digest string) *gitopsv1alpha1.OCIArtifact {
		art := ociArtifact("local")
		art.UID, art.Generation = uid, generation
		art.Status.ObservedGeneration = generation
		art.Status.URL, art.Status.Digest = "oci://localhost:5000/workloads/app:"+tag, digest
		return art
	}
	for name, c := range map[string]struct {
		mode       gitopsv1alpha1.ReconciliationMode
		art        *gitopsv1alpha1.OCIArtifact
		superseded bool
	}{
		"a later generation pushed 1.3.0": {gitopsv1alpha1.ReconciliationModeAutomatic, artifactAt("uid-app", 4, "1.3.0", "sha256:cc"), true},
		"the same generation (a status not written yet)": {gitopsv1alpha1.ReconciliationModeAutomatic,
			artifactAt("uid-app", 3, "1.1.0", "sha256:aa"), false},
		"a later generation that pushed nothing new": {gitopsv1alpha1.ReconciliationModeAutomatic, artifactAt("uid-app", 4, "1.2.0", "sha256:bb"), false},
		"another artifact of the same name":          {gitopsv1alpha1.ReconciliationModeAutomatic, artifactAt("uid-other", 4, "1.3.0", "sha256:cc"), false},
		"a Manual request":                           {gitopsv1alpha1.ReconciliationModeManual, artifactAt("uid-app", 4, "1.3.0", "sha256:cc"), false},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, automatic(c.mode), []runtime.Object{c.art}, fluxObject("OCIRepository"), fluxObject("Kustomization"))
			h.reconcile()
			h.expectEvents("Normal InProgress Asked 2 targets to reconcile at " + value + "; waiting for them to handle it and be Ready.")
			h.report(repoGVR, "team-a-app", value, metav1.ConditionTrue, "stored artifact", "1.1.0@sha256:aa")
			h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionTrue, "Applied revision: 1.1.0@sha256:aa", "1.1.0@sha256:aa")
			got := h.reconcile()
			if !c.superseded {
				if got.Status.Phase != gitopsv1alpha1.ReconciliationInProgress {
					t.Fatalf("status: %+v", got.Status)
				}
				h.expectEvents()
				return
			}
			cond := readyCondition(t, got)
			want := "OCIArtifact app pushed revision 1.3.0@sha256:cc since; the targets will not get revision 1.2.0@sha256:bb this request waited for."
			if got.Status.Phase != gitopsv1alpha1.ReconciliationFailed || got.Status.CompletionTime == nil || cond.Reason != gitopsv1alpha1.ReasonSuperseded || cond.Message != want {
				t.Fatalf("status: %+v", got.Status)
			}
			h.expectEvents("Normal Superseded " + want)
		})
	}

	// A request whose targets report its revision succeeds, even when superseded since.
	h := newHarness(t, automatic(gitopsv1alpha1.ReconciliationModeAutomatic), []runtime.Object{artifactAt("uid-app", 4, "1.3.0", "sha256:cc")},
		fluxObject("OCIRepository"), fluxObject("Kustomization"))
	h.reconcile()
	h.report(repoGVR, "team-a-app", value, metav1.ConditionTrue, "stored artifact", v12)
	h.report(kustomizationGVR, "team-a-app", value, metav1.ConditionTrue, "Applied revision: "+v12, v12)
	if got := h.reconcile(); got.Status.Phase != gitopsv1alpha1.ReconciliationSucceeded {
		t.Fatalf("status: %+v", got.Status)
	}
}
