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
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
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
	}{
		"applied":         {readyRepo, applied(art.Revision()), true, "Flux applied revision " + art.Revision() + "."},
		"older revision":  {readyRepo, applied("0.9.0@sha256:00"), false, "Flux has not applied revision " + art.Revision() + " yet; the last applied is 0.9.0@sha256:00."},
		"nothing yet":     {&sourcev1.OCIRepository{}, &kustomizev1.Kustomization{}, false, "Flux has not applied revision " + art.Revision() + " yet."},
		"stale condition": {readyRepo, func() *kustomizev1.Kustomization { k := applied(art.Revision()); k.Generation = 3; return k }(), false, "Flux has not applied revision " + art.Revision() + " yet."},
		"pull failed": {func() *sourcev1.OCIRepository {
			r := &sourcev1.OCIRepository{}
			r.Status.Conditions = readyCondition(metav1.ConditionFalse, "OCIArtifactPullFailed", "failed to pull artifact: connection refused")
			return r
		}(), func() *kustomizev1.Kustomization {
			k := applied("0.9.0@sha256:00")
			k.Status.Conditions = readyCondition(metav1.ConditionFalse, "ArtifactFailed", "Source is not ready")
			return k
		}(), false, "OCIRepository flux-system/x is not ready (OCIArtifactPullFailed): failed to pull artifact: connection refused."},
		"apply failed": {readyRepo, func() *kustomizev1.Kustomization {
			k := applied("0.9.0@sha256:00")
			k.Status.Conditions = readyCondition(metav1.ConditionFalse, "ReconciliationFailed", "ConfigMap/x dry-run failed")
			return k
		}(), false, "Kustomization flux-system/x is not ready (ReconciliationFailed): ConfigMap/x dry-run failed."},
	} {
		t.Run(name, func(t *testing.T) {
			got := Observe(base, art, c.repo, c.k)
			if got.Ready != c.ready || got.Message != c.message || got.Revision != c.k.Status.LastAppliedRevision {
				t.Errorf("ready %v message %q revision %q, want %v %q %q", got.Ready, got.Message, got.Revision, c.ready, c.message, c.k.Status.LastAppliedRevision)
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
