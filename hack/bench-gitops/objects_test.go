package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	fluxdelivery "github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
)

func TestRoundObjectsAreValidAndNamedForTheRound(t *testing.T) {
	a, b := roundObjects("plinth-01"), roundObjects("floor-01")
	for _, objs := range [][]map[string]interface{}{a, b} {
		if errs := manifests.ValidateObjects(manifestObjects(objs), func(i int) *field.Path { return field.NewPath("objects").Index(i) }); len(errs) > 0 {
			t.Errorf("not valid manifests: %v", errs)
		}
	}
	names := func(objs []map[string]interface{}) []string {
		var out []string
		for _, o := range manifestObjects(objs) {
			out = append(out, o.GetKind()+"/"+o.GetName())
		}
		return out
	}
	if got := strings.Join(names(a), ","); got != "ConfigMap/plinth-01-config,Deployment/plinth-01-web" {
		t.Errorf("objects %s", got)
	}
	if got := strings.Join(names(b), ","); got != "ConfigMap/floor-01-config,Deployment/floor-01-web" {
		t.Errorf("objects %s", got)
	}

	// Both sides push the same kind of files: two YAML manifests, new content each round.
	fa, err := artifact.Files(manifestObjects(a))
	if err != nil {
		t.Fatal(err)
	}
	fb, err := artifact.Files(manifestObjects(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(fa) != 2 || len(fb) != 2 || artifact.ContentDigest(fa) == artifact.ContentDigest(fb) {
		t.Errorf("files %d and %d, digests %s and %s", len(fa), len(fb), artifact.ContentDigest(fa), artifact.ContentDigest(fb))
	}
}

func TestPlinthArtifact(t *testing.T) {
	objs := roundObjects("plinth-02")
	art, err := plinthArtifact("plinth-02", "local", "local", objs)
	if err != nil {
		t.Fatal(err)
	}
	if art.Name != "plinth-02" || art.Spec.RegistryRef.Name != "local" || art.Spec.Name != "bench/plinth-02" || art.Spec.Version != version {
		t.Errorf("artifact %+v", art)
	}
	if len(art.Spec.Targets) != 1 || art.Spec.Targets[0] != (gitopsv1alpha1.ArtifactTarget{Cluster: "local", TargetNamespace: targetNamespace}) {
		t.Errorf("targets %+v", art.Spec.Targets)
	}
	if len(art.Spec.Manifests) != len(objs) {
		t.Fatalf("%d manifests, want %d", len(art.Spec.Manifests), len(objs))
	}
	for i, raw := range art.Spec.Manifests {
		var got map[string]interface{}
		if err := json.Unmarshal(raw.Raw, &got); err != nil {
			t.Fatal(err)
		}
		if got["kind"] != objs[i]["kind"] || got["metadata"].(map[string]interface{})["name"] != objs[i]["metadata"].(map[string]interface{})["name"] {
			t.Errorf("manifest %d is %s", i, raw.Raw)
		}
	}
	if _, err := plinthArtifact("bad", "local", "local", []map[string]interface{}{{"x": func() {}}}); err == nil {
		t.Error("an object that is not JSON made an artifact")
	}
}

// The floor asks Flux for exactly what the Flux engine asks for an OCIArtifact's target: only
// the names, labels and annotations differ.
func TestFloorObjectsAreWhatTheFluxEngineApplies(t *testing.T) {
	url := artifact.URL("localhost:5000", "bench/x", "")
	digest := "sha256:" + strings.Repeat("ab", 32)
	repo, k := floorObjects("floor-03", url, version, digest, 45*time.Second)

	target := gitopsv1alpha1.ArtifactTarget{Cluster: "local", TargetNamespace: targetNamespace}
	gitopsv1alpha1.SetDefaults_ArtifactTarget(&target)
	cluster := &platformv1alpha1.Cluster{Spec: platformv1alpha1.ClusterSpec{GitOps: platformv1alpha1.ClusterGitOps{
		Engine: platformv1alpha1.GitOpsEngineFlux, FluxInterval: &metav1.Duration{Duration: 45 * time.Second}}}}
	engineRepo, engineK := fluxdelivery.Objects(delivery.Artifact{Namespace: "plinth-system", Name: "x", URL: url, Tag: version, Digest: digest},
		delivery.Target{Spec: target, Cluster: cluster})

	if !apiequality.Semantic.DeepEqual(repo.Spec, engineRepo.Spec) {
		t.Errorf("OCIRepository spec\n%+v\nwant the engine's\n%+v", repo.Spec, engineRepo.Spec)
	}
	engineSpec := engineK.Spec.DeepCopy()
	engineSpec.SourceRef.Name = repo.Name
	if !apiequality.Semantic.DeepEqual(k.Spec, *engineSpec) {
		t.Errorf("Kustomization spec\n%+v\nwant the engine's\n%+v", k.Spec, *engineSpec)
	}
	if repo.Namespace != engineRepo.Namespace || k.Namespace != engineK.Namespace || repo.TypeMeta != engineRepo.TypeMeta || k.TypeMeta != engineK.TypeMeta {
		t.Errorf("namespaces or kinds differ: %s %v, %s %v", repo.Namespace, repo.TypeMeta, k.Namespace, k.TypeMeta)
	}
	if repo.Name != "floor-03" || k.Name != "floor-03" || repo.Labels[benchLabel] != "floor" || len(repo.Annotations) != 0 {
		t.Errorf("meta %+v %+v", repo.ObjectMeta, k.ObjectMeta)
	}

	u, err := toUnstructured(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Object["status"]; ok {
		t.Error("the create body has a status")
	}
	if _, ok := u.Object["metadata"].(map[string]interface{})["creationTimestamp"]; ok {
		t.Error("the create body has a creationTimestamp")
	}
}

// asUnstructured is a typed Flux object as the dynamic client returns it.
func asUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

func ready(status metav1.ConditionStatus) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: status, Reason: "Test"}}
}

func TestRepositoryReady(t *testing.T) {
	good := func() *sourcev1.OCIRepository {
		r := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		r.Status.ObservedGeneration = 2
		r.Status.Conditions = ready(metav1.ConditionTrue)
		r.Status.Artifact = &fluxmeta.Artifact{Revision: "1.0.0@sha256:aa"}
		return r
	}
	if !repositoryReady("1.0.0@sha256:aa")(asUnstructured(t, good())) || !repositoryReady("")(asUnstructured(t, good())) {
		t.Error("a Ready repository with the revision is not ready")
	}
	for name, mutate := range map[string]func(*sourcev1.OCIRepository){
		"another revision":    func(r *sourcev1.OCIRepository) { r.Status.Artifact.Revision = "1.0.0@sha256:bb" },
		"no artifact":         func(r *sourcev1.OCIRepository) { r.Status.Artifact = nil },
		"Ready False":         func(r *sourcev1.OCIRepository) { r.Status.Conditions = ready(metav1.ConditionFalse) },
		"no conditions":       func(r *sourcev1.OCIRepository) { r.Status.Conditions = nil },
		"an older generation": func(r *sourcev1.OCIRepository) { r.Status.ObservedGeneration = 1 },
	} {
		r := good()
		mutate(r)
		if repositoryReady("1.0.0@sha256:aa")(asUnstructured(t, r)) {
			t.Errorf("%s: ready", name)
		}
	}
	if repositoryReady("")(&unstructured.Unstructured{Object: map[string]interface{}{"status": "not an object"}}) {
		t.Error("an unreadable object is ready")
	}
}

func TestKustomizationApplied(t *testing.T) {
	good := func() *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
		k.Status.ObservedGeneration = 1
		k.Status.Conditions = ready(metav1.ConditionTrue)
		k.Status.LastAppliedRevision = "1.0.0@sha256:aa"
		return k
	}
	if !kustomizationApplied("1.0.0@sha256:aa")(asUnstructured(t, good())) || !kustomizationApplied("")(asUnstructured(t, good())) {
		t.Error("a Ready Kustomization with the revision applied is not applied")
	}
	for name, mutate := range map[string]func(*kustomizev1.Kustomization){
		"another revision":    func(k *kustomizev1.Kustomization) { k.Status.LastAppliedRevision = "1.0.0@sha256:bb" },
		"nothing applied":     func(k *kustomizev1.Kustomization) { k.Status.LastAppliedRevision = "" },
		"Ready False":         func(k *kustomizev1.Kustomization) { k.Status.Conditions = ready(metav1.ConditionFalse) },
		"an older generation": func(k *kustomizev1.Kustomization) { k.Generation = 2 },
	} {
		k := good()
		mutate(k)
		if kustomizationApplied("1.0.0@sha256:aa")(asUnstructured(t, k)) {
			t.Errorf("%s: applied", name)
		}
		if name != "another revision" && kustomizationApplied("")(asUnstructured(t, k)) {
			t.Errorf("%s: applied (any revision)", name)
		}
	}
}

func TestArtifactDelivered(t *testing.T) {
	good := func() *gitopsv1alpha1.OCIArtifact {
		a := &gitopsv1alpha1.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Spec: gitopsv1alpha1.OCIArtifactSpec{Version: "1.0.0", Tag: "1.0.0"}}
		a.Status = gitopsv1alpha1.OCIArtifactStatus{ObservedGeneration: 1, PushedVersion: "1.0.0", Digest: "sha256:aa",
			Conditions: ready(metav1.ConditionTrue),
			Targets:    []gitopsv1alpha1.ArtifactTargetStatus{{Cluster: "local", Ready: true, Revision: "1.0.0@sha256:aa"}}}
		return a
	}
	if !artifactDelivered(good()) {
		t.Error("a delivered artifact is not delivered")
	}
	for name, mutate := range map[string]func(*gitopsv1alpha1.OCIArtifact){
		"not pushed":              func(a *gitopsv1alpha1.OCIArtifact) { a.Status.PushedVersion, a.Status.Digest = "", "" },
		"no digest":               func(a *gitopsv1alpha1.OCIArtifact) { a.Status.Digest = "" },
		"another version":         func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Version = "1.1.0" },
		"an older generation":     func(a *gitopsv1alpha1.OCIArtifact) { a.Generation = 2 },
		"Ready False":             func(a *gitopsv1alpha1.OCIArtifact) { a.Status.Conditions = ready(metav1.ConditionFalse) },
		"no targets":              func(a *gitopsv1alpha1.OCIArtifact) { a.Status.Targets = nil },
		"a target not Ready":      func(a *gitopsv1alpha1.OCIArtifact) { a.Status.Targets[0].Ready = false },
		"a target's old revision": func(a *gitopsv1alpha1.OCIArtifact) { a.Status.Targets[0].Revision = "0.9.0@sha256:00" },
	} {
		a := good()
		mutate(a)
		if artifactDelivered(a) {
			t.Errorf("%s: delivered", name)
		}
	}
}
