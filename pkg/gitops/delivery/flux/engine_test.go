package flux

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
)

// TestDeliverAppliesBothObjects: the first delivery applies the OCIRepository and the
// Kustomization with server-side apply as plinth-gitops, without a status, and reports the
// target not Ready until Flux has applied the revision.
func TestDeliverAppliesBothObjects(t *testing.T) {
	client, clients := newFakeCluster(t)
	status, err := New(clients).Deliver(context.Background(), testArtifact(), testTarget())
	if err != nil {
		t.Fatal(err)
	}
	got := applies(client)
	if len(got) != 2 || got[0].GetResource() != repoGVR || got[1].GetResource() != kustomizationGVR {
		t.Fatalf("applies %v, want the OCIRepository then the Kustomization", got)
	}
	for _, a := range got {
		opts := a.(clienttesting.PatchActionImpl).PatchOptions
		if opts.FieldManager != "plinth-gitops" || opts.Force == nil || !*opts.Force {
			t.Errorf("%s applied with %+v, want field manager plinth-gitops, forced", a.GetResource().Resource, opts)
		}
		if a.GetNamespace() != "flux-system" || a.GetName() != "team-a-app" {
			t.Errorf("applied %s/%s", a.GetNamespace(), a.GetName())
		}
		var body map[string]interface{}
		if err := json.Unmarshal(a.GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		if _, ok := body["status"]; ok {
			t.Errorf("%s applied with a status", a.GetResource().Resource)
		}
	}
	want := gitopsv1alpha1.ArtifactTargetStatus{
		Cluster: "local", Engine: "Flux", OCIRepository: "flux-system/team-a-app", Kustomization: "flux-system/team-a-app",
		Message: "Flux has not applied revision " + testArtifact().Revision() + " yet.",
	}
	if !equalStatus(status, want) {
		t.Errorf("status %+v, want %+v", status, want)
	}
}

// TestDeliverReportsWhatFluxApplied: once Flux reports the Kustomization Ready with the
// artifact's revision, the target is Ready with that revision and the last handled request.
func TestDeliverReportsWhatFluxApplied(t *testing.T) {
	art, target := testArtifact(), testTarget()
	repo, k := Objects(art, target)
	repo.Generation, k.Generation = 1, 1
	repo.Status.Conditions = readyCondition(metav1.ConditionTrue, "Succeeded", "stored artifact")
	k.Status.ObservedGeneration = 1
	k.Status.Conditions = readyCondition(metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: "+art.Revision())
	k.Status.LastAppliedRevision = art.Revision()
	k.Status.LastHandledReconcileAt = "2026-11-24T02:00:00Z"
	_, clients := newFakeCluster(t, fluxStatus(t, repo), fluxStatus(t, k))

	status, err := New(clients).Deliver(context.Background(), art, target)
	if err != nil {
		t.Fatal(err)
	}
	if !status.Ready || status.Revision != art.Revision() || status.LastHandledReconcileAt != "2026-11-24T02:00:00Z" {
		t.Errorf("status %+v, want Ready at %s, handled 2026-11-24T02:00:00Z", status, art.Revision())
	}
	if !strings.HasPrefix(art.Revision(), "1.0.0@sha256:") {
		t.Errorf("revision %q is not Flux's <tag>@sha256:<hex>", art.Revision())
	}
}

func TestObserve(t *testing.T) {
	art := testArtifact()
	base := gitopsv1alpha1.ArtifactTargetStatus{Cluster: "local", OCIRepository: "flux-system/x", Kustomization: "flux-system/x"}
	applied := func(revision string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{}
		k.Generation = 2
		k.Status.ObservedGeneration = 2
		k.Status.LastAppliedRevision = revision
		k.Status.Conditions = readyCondition(metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: "+revision)
		return k
	}
	readyRepo := &sourcev1.OCIRepository{}
	readyRepo.Status.Conditions = readyCondition(metav1.ConditionTrue, "Succeeded", "stored")
	for name, c := range map[string]struct {
		repo    *sourcev1.OCIRepository
		k       *kustomizev1.Kustomization
		ready   bool
		message string
		// revision is the status's revision when not Flux's own.
		revision string
	}{
		"applied": {readyRepo, applied(art.Revision()), true, "Flux applied revision " + art.Revision() + ".", ""},
		// Pinned to the digest, Flux reports the digest alone; the status names the tag too.
		"applied by digest": {readyRepo, applied(art.Digest), true, "Flux applied revision " + art.Revision() + ".", art.Revision()},
		"another digest": {readyRepo, applied("sha256:" + strings.Repeat("0", 64)), false,
			"Flux has not applied revision " + art.Revision() + " yet; the last applied is sha256:" + strings.Repeat("0", 64) + ".", ""},
		"older revision":  {readyRepo, applied("0.9.0@sha256:00"), false, "Flux has not applied revision " + art.Revision() + " yet; the last applied is 0.9.0@sha256:00.", ""},
		"nothing yet":     {&sourcev1.OCIRepository{}, &kustomizev1.Kustomization{}, false, "Flux has not applied revision " + art.Revision() + " yet.", ""},
		"stale condition": {readyRepo, func() *kustomizev1.Kustomization { k := applied(art.Revision()); k.Generation = 3; return k }(), false, "Flux has not applied revision " + art.Revision() + " yet.", ""},
		"pull failed": {func() *sourcev1.OCIRepository {
			r := &sourcev1.OCIRepository{}
			r.Status.Conditions = readyCondition(metav1.ConditionFalse, "OCIArtifactPullFailed", "failed to pull artifact: connection refused")
			return r
		}(), func() *kustomizev1.Kustomization {
			k := applied("0.9.0@sha256:00")
			k.Status.Conditions = readyCondition(metav1.ConditionFalse, "ArtifactFailed", "Source is not ready")
			return k
		}(), false, "OCIRepository flux-system/x is not ready (OCIArtifactPullFailed): failed to pull artifact: connection refused.", ""},
		"apply failed": {readyRepo, func() *kustomizev1.Kustomization {
			k := applied("0.9.0@sha256:00")
			k.Status.Conditions = readyCondition(metav1.ConditionFalse, "ReconciliationFailed", "ConfigMap/x dry-run failed")
			return k
		}(), false, "Kustomization flux-system/x is not ready (ReconciliationFailed): ConfigMap/x dry-run failed.", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := Observe(base, art, c.repo, c.k)
			revision := c.revision
			if revision == "" {
				revision = c.k.Status.LastAppliedRevision
			}
			if got.Ready != c.ready || got.Message != c.message || got.Revision != revision {
				t.Errorf("ready %v message %q revision %q, want %v %q %q", got.Ready, got.Message, got.Revision, c.ready, c.message, revision)
			}
		})
	}
}

func TestDeliverRefusesInvalidObjects(t *testing.T) {
	client, clients := newFakeCluster(t)
	art := testArtifact()
	art.URL = "oci://registry.example.com/workloads/app"
	status, err := New(clients).Deliver(context.Background(), art, testTarget())
	if err == nil || !strings.Contains(err.Error(), "spec.url") {
		t.Fatalf("error %v, want spec.url refused", err)
	}
	if !strings.HasPrefix(status.Message, "The Flux objects for cluster local are not valid") || status.Ready {
		t.Errorf("status %+v", status)
	}
	if len(client.Actions()) != 0 {
		t.Errorf("the cluster was called: %v", client.Actions())
	}
}

func TestDeliverWithoutFluxOnTheCluster(t *testing.T) {
	_, clients := newFakeCluster(t)
	clients.mapper = fluxMapper(false)
	status, err := New(clients).Deliver(context.Background(), testArtifact(), testTarget())
	if !apimeta.IsNoMatchError(err) {
		t.Fatalf("error %v, want a no-match error", err)
	}
	if want := "Cluster local does not serve Flux's source.toolkit.fluxcd.io/v1 OCIRepository: Flux is not installed there."; status.Message != want {
		t.Errorf("message %q, want %q", status.Message, want)
	}
}

func TestDeliverToAnUnreachableCluster(t *testing.T) {
	clients := &fakeClients{err: errUnreachable}
	status, err := New(clients).Deliver(context.Background(), testArtifact(), testTarget())
	if err != errUnreachable || status.Ready || !strings.HasPrefix(status.Message, "Cluster local: the API server") {
		t.Errorf("error %v status %+v", err, status)
	}
}

// TestDeliverDoesNotTakeOverAnotherArtifactsObjects: team-a/b-app and team-a-b/app share the
// name team-a-b-app; the second is refused rather than taking the first's objects.
func TestDeliverDoesNotTakeOverAnotherArtifactsObjects(t *testing.T) {
	first := testArtifact()
	first.Namespace, first.Name = "team-a", "b-app"
	repo, _ := Objects(first, testTarget())
	client, clients := newFakeCluster(t, fluxStatus(t, repo))
	second := testArtifact()
	second.Namespace, second.Name = "team-a-b", "app"
	_, err := New(clients).Deliver(context.Background(), second, testTarget())
	if err == nil || !strings.Contains(err.Error(), "exists for team-a/b-app, not for team-a-b/app") {
		t.Fatalf("error %v, want the name refused", err)
	}
	if len(applies(client)) != 0 {
		t.Error("the other artifact's objects were applied over")
	}
}

// TestDeliverPassesOnAReconcileRequest: a request sets Flux's annotation on both objects.
func TestDeliverPassesOnAReconcileRequest(t *testing.T) {
	client, clients := newFakeCluster(t)
	target := testTarget()
	target.ReconcileRequest = "2026-11-24T02:00:00.5Z"
	if _, err := New(clients).Deliver(context.Background(), testArtifact(), target); err != nil {
		t.Fatal(err)
	}
	got := applies(client)
	if len(got) != 2 {
		t.Fatalf("%d applies, want 2", len(got))
	}
	for _, a := range got {
		var body struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(a.GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		if got := body.Metadata.Annotations[meta.ReconcileRequestAnnotation]; got != target.ReconcileRequest {
			t.Errorf("%s requestedAt %q, want %q", a.GetResource().Resource, got, target.ReconcileRequest)
		}
	}
}

// deletes are the objects the client was asked to delete, as "<resource> <namespace>/<name>".
func deletes(client *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			out = append(out, d.GetResource().Resource+" "+d.GetNamespace()+"/"+d.GetName())
		}
	}
	return out
}

// TestRemoveDeletesBothObjects: the Kustomization goes first (Flux prunes what it applied),
// then the OCIRepository; removing again finds nothing and succeeds.
func TestRemoveDeletesBothObjects(t *testing.T) {
	art, target := testArtifact(), testTarget()
	repo, k := Objects(art, target)
	client, clients := newFakeCluster(t, fluxStatus(t, repo), fluxStatus(t, k))
	if err := New(clients).Remove(context.Background(), art.Namespace, art.Name, target, nil, delivery.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "kustomizations flux-system/team-a-app,ocirepositories flux-system/team-a-app"; strings.Join(deletes(client), ",") != want {
		t.Errorf("deleted %v, want %s", deletes(client), want)
	}
	if _, err := client.Resource(kustomizationGVR).Namespace("flux-system").Get(context.Background(), "team-a-app", metav1.GetOptions{}); err == nil {
		t.Error("the Kustomization is still there")
	}
	if err := New(clients).Remove(context.Background(), art.Namespace, art.Name, target, nil, delivery.RemoveOptions{}); err != nil {
		t.Errorf("removing again: %v", err)
	}
}

// patches are the non-apply patches the client received, as "<resource> <namespace>/<name> <patch>".
func patches(client *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() != types.ApplyPatchType {
			out = append(out, p.GetResource().Resource+" "+p.GetNamespace()+"/"+p.GetName()+" "+string(p.GetPatch()))
		}
	}
	return out
}

// TestRemoveWithoutPrune: handed over (Keep) or a target that does not prune, the
// Kustomization's prune is turned off before it is deleted, so that Flux's finalizer leaves
// what it applied; a Kustomization whose prune is off already is not patched.
func TestRemoveWithoutPrune(t *testing.T) {
	for name, c := range map[string]struct {
		livePrune bool
		prune     bool
		opts      delivery.RemoveOptions
		patched   bool
	}{
		"keep":                   {livePrune: true, prune: true, opts: delivery.RemoveOptions{Keep: true}, patched: true},
		"target without prune":   {livePrune: true, prune: false, patched: true},
		"prune off already":      {livePrune: false, prune: false},
		"prune, nothing to keep": {livePrune: true, prune: true},
	} {
		t.Run(name, func(t *testing.T) {
			art, target := testArtifact(), testTarget()
			repo, k := Objects(art, target)
			k.Spec.Prune = c.livePrune
			live := fluxStatus(t, k)
			live.SetUID("uid-k")
			client, clients := newFakeCluster(t, fluxStatus(t, repo), live)
			target.Spec.Prune = ptr.To(c.prune)
			if err := New(clients).Remove(context.Background(), art.Namespace, art.Name, target, nil, c.opts); err != nil {
				t.Fatal(err)
			}
			var want []string
			if c.patched {
				want = []string{`kustomizations flux-system/team-a-app {"metadata":{"uid":"uid-k"},"spec":{"prune":false}}`}
			}
			if got := patches(client); !slices.Equal(got, want) {
				t.Errorf("patches %v, want %v", got, want)
			}
			if got := strings.Join(deletes(client), ","); got != "kustomizations flux-system/team-a-app,ocirepositories flux-system/team-a-app" {
				t.Errorf("deleted %s", got)
			}
			// The patch came before the delete.
			for _, a := range client.Actions() {
				if a.GetVerb() == "delete" {
					break
				}
				if a.GetVerb() == "patch" && !c.patched {
					t.Error("patched")
				}
			}
		})
	}
}

// TestRemoveUsesTheLastStatusNames: objects delivered into another namespace (the target's
// namespace changed since) are found through the last status.
func TestRemoveUsesTheLastStatusNames(t *testing.T) {
	art, target := testArtifact(), testTarget()
	target.Spec.Namespace = "gitops"
	repo, k := Objects(art, target)
	client, clients := newFakeCluster(t, fluxStatus(t, repo), fluxStatus(t, k))
	last := &gitopsv1alpha1.ArtifactTargetStatus{OCIRepository: "gitops/team-a-app", Kustomization: "gitops/team-a-app"}
	if err := New(clients).Remove(context.Background(), art.Namespace, art.Name, testTarget(), last, delivery.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "kustomizations gitops/team-a-app,ocirepositories gitops/team-a-app"; strings.Join(deletes(client), ",") != want {
		t.Errorf("deleted %v, want %s", deletes(client), want)
	}
}

// TestRemoveLeavesOtherObjectsAlone: an object of the same name made for another artifact, or
// by hand, is not deleted.
func TestRemoveLeavesOtherObjectsAlone(t *testing.T) {
	other := testArtifact()
	other.Namespace, other.Name = "team-a", "b-app"
	repo, k := Objects(other, testTarget())
	k.Annotations = nil
	client, clients := newFakeCluster(t, fluxStatus(t, repo), fluxStatus(t, k))
	if err := New(clients).Remove(context.Background(), "team-a-b", "app", testTarget(), nil, delivery.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := deletes(client); len(got) != 0 {
		t.Errorf("deleted %v", got)
	}
}

// TestRemoveWithoutFluxOnTheCluster: where Flux's kinds are not served there is nothing to
// remove; an unreachable cluster is an error.
func TestRemoveWithoutFluxOnTheCluster(t *testing.T) {
	_, clients := newFakeCluster(t)
	clients.mapper = fluxMapper(false)
	if err := New(clients).Remove(context.Background(), "team-a", "app", testTarget(), nil, delivery.RemoveOptions{}); err != nil {
		t.Errorf("without Flux: %v", err)
	}
	if err := New(&fakeClients{err: errUnreachable}).Remove(context.Background(), "team-a", "app", testTarget(), nil, delivery.RemoveOptions{}); err != errUnreachable {
		t.Errorf("unreachable: %v", err)
	}
}

// equalStatus compares the fields Deliver sets.
func equalStatus(a, b gitopsv1alpha1.ArtifactTargetStatus) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestDeliverHandsOverFromTheOldNamespace: a target whose namespace changed has its old pair
// handed over (prune off, then deleted) before the new pair is applied; a failed hand-over
// keeps reporting the old names, so that the next attempt tries again.
func TestDeliverHandsOverFromTheOldNamespace(t *testing.T) {
	art, old := testArtifact(), testTarget()
	old.Spec.Namespace = "gitops"
	oldRepo, oldK := Objects(art, old)
	client, clients := newFakeCluster(t, fluxStatus(t, oldRepo), fluxStatus(t, oldK))
	target := testTarget()
	target.Previous = &gitopsv1alpha1.ArtifactTargetStatus{Cluster: "local", Engine: "Flux", OCIRepository: "gitops/team-a-app", Kustomization: "gitops/team-a-app"}

	client.PrependReactor("delete", "kustomizations", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errUnreachable
	})
	status, err := New(clients).Deliver(context.Background(), art, target)
	if err == nil || status.Kustomization != "gitops/team-a-app" || status.OCIRepository != "gitops/team-a-app" ||
		!strings.HasPrefix(status.Message, "Handing the objects over from the Flux objects in namespace gitops failed") {
		t.Fatalf("error %v, status %+v", err, status)
	}
	if len(applies(client)) != 0 {
		t.Error("the new pair was applied before the old one was handed over")
	}

	client, clients = newFakeCluster(t, fluxStatus(t, oldRepo), fluxStatus(t, oldK))
	status, err = New(clients).Deliver(context.Background(), art, target)
	if err != nil {
		t.Fatal(err)
	}
	if status.Kustomization != "flux-system/team-a-app" || status.OCIRepository != "flux-system/team-a-app" {
		t.Errorf("status %+v", status)
	}
	var verbs []string
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace())
		}
	}
	want := []string{
		"patch kustomizations gitops", "delete kustomizations gitops", "delete ocirepositories gitops",
		"patch ocirepositories flux-system", "patch kustomizations flux-system",
	}
	if !slices.Equal(verbs, want) {
		t.Errorf("actions %v, want %v", verbs, want)
	}
	if got := patches(client); len(got) != 1 || !strings.Contains(got[0], `"spec":{"prune":false}`) {
		t.Errorf("patches %v, want the old Kustomization's prune off", got)
	}

	// Delivered again under the same names: nothing to hand over.
	client.ClearActions()
	target.Previous = &status
	if _, err := New(clients).Deliver(context.Background(), art, target); err != nil || len(deletes(client)) != 0 || len(patches(client)) != 0 {
		t.Errorf("error %v, deleted %v, patched %v", err, deletes(client), patches(client))
	}
}

// TestDeliverKeepsANewerReconcileRequest: a requestedAt the ReconciliationRequest controller
// set on the objects after the artifact's own is not rolled back; an older one is replaced.
func TestDeliverKeepsANewerReconcileRequest(t *testing.T) {
	for name, c := range map[string]struct {
		live, ours, handled string
		applied             bool
	}{
		"newer live value":          {live: "2026-11-24T03:00:00Z", ours: "2026-11-24T02:00:00Z", applied: false},
		"older live value":          {live: "2026-11-24T01:00:00Z", ours: "2026-11-24T02:00:00Z", applied: true},
		"same value":                {live: "2026-11-24T02:00:00Z", ours: "2026-11-24T02:00:00Z", applied: true},
		"no live value":             {live: "", ours: "2026-11-24T02:00:00Z", applied: true},
		"other value, ours handled": {live: "manual-2", ours: "manual-1", handled: "manual-1", applied: false},
		"other value, not handled":  {live: "manual-2", ours: "manual-1", applied: true},
	} {
		t.Run(name, func(t *testing.T) {
			art, target := testArtifact(), testTarget()
			repo, k := Objects(art, target)
			for _, obj := range []metav1.Object{repo, k} {
				if c.live != "" {
					obj.GetAnnotations()[meta.ReconcileRequestAnnotation] = c.live
				}
			}
			client, clients := newFakeCluster(t, fluxStatus(t, repo), fluxStatus(t, k))
			target.ReconcileRequest = c.ours
			target.Previous = &gitopsv1alpha1.ArtifactTargetStatus{Cluster: "local", Engine: "Flux", LastHandledReconcileAt: c.handled,
				OCIRepository: "flux-system/team-a-app", Kustomization: "flux-system/team-a-app"}
			if _, err := New(clients).Deliver(context.Background(), art, target); err != nil {
				t.Fatal(err)
			}
			for _, a := range applies(client) {
				var body struct {
					Metadata metav1.ObjectMeta `json:"metadata"`
				}
				if err := json.Unmarshal(a.GetPatch(), &body); err != nil {
					t.Fatal(err)
				}
				got, ok := body.Metadata.Annotations[meta.ReconcileRequestAnnotation]
				if ok != c.applied || (ok && got != c.ours) {
					t.Errorf("%s applied requestedAt %q (%v), want applied %v", a.GetResource().Resource, got, ok, c.applied)
				}
				live, err := client.Resource(a.GetResource()).Namespace("flux-system").Get(context.Background(), "team-a-app", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				want := c.ours
				if !c.applied {
					want = c.live
				}
				if got := live.GetAnnotations()[meta.ReconcileRequestAnnotation]; got != want {
					t.Errorf("%s holds requestedAt %q, want %q", a.GetResource().Resource, got, want)
				}
			}
		})
	}
}

// TestStalled: Flux failing for the current spec and revision, not at work, with no request
// pending, is stalled; everything else is progress.
func TestStalled(t *testing.T) {
	art := testArtifact()
	cond := func(ready metav1.ConditionStatus, generation int64, reconciling string) []metav1.Condition {
		c := []metav1.Condition{{Type: "Ready", Status: ready, Reason: "Failed", ObservedGeneration: generation}}
		if reconciling != "" {
			c = append(c, metav1.Condition{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: reconciling, ObservedGeneration: generation})
		}
		return c
	}
	repo := func(conditions []metav1.Condition) *sourcev1.OCIRepository {
		r := &sourcev1.OCIRepository{}
		r.Generation = 2
		r.Status.Conditions = conditions
		return r
	}
	kustomization := func(conditions []metav1.Condition, attempted string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{}
		k.Generation = 3
		k.Status.Conditions = conditions
		k.Status.LastAttemptedRevision = attempted
		return k
	}
	readyRepo := repo(cond(metav1.ConditionTrue, 2, ""))
	for name, c := range map[string]struct {
		repo    *sourcev1.OCIRepository
		k       *kustomizev1.Kustomization
		stalled bool
	}{
		"apply failed":                 {readyRepo, kustomization(cond(metav1.ConditionFalse, 3, ""), art.Revision()), true},
		"apply failed, retrying later": {readyRepo, kustomization(cond(metav1.ConditionFalse, 3, meta.ProgressingWithRetryReason), art.Revision()), true},
		"apply failed, by digest":      {readyRepo, kustomization(cond(metav1.ConditionFalse, 3, ""), art.Digest), true},
		"failed another digest":        {readyRepo, kustomization(cond(metav1.ConditionFalse, 3, ""), "sha256:"+strings.Repeat("0", 64)), false},
		"reconciling":                  {readyRepo, kustomization(cond(metav1.ConditionFalse, 3, meta.ProgressingReason), art.Revision()), false},
		"ready unknown":                {readyRepo, kustomization(cond(metav1.ConditionUnknown, 3, ""), art.Revision()), false},
		"failed an older revision":     {readyRepo, kustomization(cond(metav1.ConditionFalse, 3, ""), "0.9.0@sha256:00"), false},
		"failed an older spec":         {readyRepo, kustomization(cond(metav1.ConditionFalse, 2, ""), art.Revision()), false},
		"pull failed":                  {repo(cond(metav1.ConditionFalse, 2, meta.ProgressingWithRetryReason)), kustomization(nil, ""), true},
		"pull failed for an older tag": {repo(cond(metav1.ConditionFalse, 1, "")), kustomization(nil, ""), false},
		"request pending": {readyRepo, func() *kustomizev1.Kustomization {
			k := kustomization(cond(metav1.ConditionFalse, 3, ""), art.Revision())
			k.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
			return k
		}(), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Stalled(art, c.repo, c.k); got != c.stalled {
				t.Errorf("stalled %v, want %v", got, c.stalled)
			}
		})
	}
}

// TestDeliverReportsAStalledTarget: Flux failing to apply the revision is reported in the
// status with a Waiting error for the target's Flux interval: Flux retries by itself.
func TestDeliverReportsAStalledTarget(t *testing.T) {
	art, target := testArtifact(), testTarget()
	repo, k := Objects(art, target)
	repo.Status.Conditions = readyCondition(metav1.ConditionTrue, "Succeeded", "stored artifact")
	k.Generation = 1
	k.Status.Conditions = readyCondition(metav1.ConditionFalse, "ReconciliationFailed", "ConfigMap/x dry-run failed")
	k.Status.Conditions[0].ObservedGeneration = 1
	k.Status.LastAttemptedRevision = art.Revision()
	_, clients := newFakeCluster(t, fluxStatus(t, repo), fluxStatus(t, k))
	status, err := New(clients).Deliver(context.Background(), art, target)
	if after, waiting := errkind.WaitFor(err); !waiting || after != target.Interval() || status.Ready ||
		status.Message != "Kustomization flux-system/team-a-app is not ready (ReconciliationFailed): ConfigMap/x dry-run failed." {
		t.Errorf("error %v, status %+v", err, status)
	}
}
