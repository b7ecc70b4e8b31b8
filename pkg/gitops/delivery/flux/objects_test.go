package flux

import (
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
)

func TestObjectName(t *testing.T) {
	if got := ObjectName("team-a", "app"); got != "team-a-app" {
		t.Errorf("ObjectName(team-a, app) = %q, want team-a-app", got)
	}
	long := strings.Repeat("n", 40)
	a, b := ObjectName(long, strings.Repeat("x", 40)), ObjectName(long, strings.Repeat("x", 41))
	for _, name := range []string{a, b} {
		if len(name) > 63 || !strings.HasPrefix(name, long) {
			t.Errorf("ObjectName = %q (%d characters), want at most 63 beginning with the namespace", name, len(name))
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("%q is not a valid name: %v", name, errs)
		}
		if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
			t.Errorf("%q is not a valid label value: %v", name, errs)
		}
	}
	if a == b {
		t.Errorf("two long names shorten to the same %q", a)
	}
	// A cut that ends in a separator leaves none before the hash's dash.
	if name := ObjectName(strings.Repeat("n", 51), "x-y-z-more-than-enough"); strings.Contains(name, "--") {
		t.Errorf("ObjectName = %q has a double dash", name)
	}
}

func TestObjects(t *testing.T) {
	art, target := testArtifact(), testTarget()
	target.Spec.TargetNamespace = "apps"
	repo, k := Objects(art, target)

	if repo.Name != "team-a-app" || repo.Namespace != "flux-system" || k.Name != repo.Name || k.Namespace != repo.Namespace {
		t.Errorf("names %s/%s and %s/%s, want flux-system/team-a-app for both", repo.Namespace, repo.Name, k.Namespace, k.Name)
	}
	if repo.APIVersion != "source.toolkit.fluxcd.io/v1" || repo.Kind != "OCIRepository" ||
		k.APIVersion != "kustomize.toolkit.fluxcd.io/v1" || k.Kind != "Kustomization" {
		t.Errorf("kinds %s %s and %s %s", repo.APIVersion, repo.Kind, k.APIVersion, k.Kind)
	}
	if repo.Spec.URL != art.URL || repo.Spec.Reference == nil || repo.Spec.Reference.Tag != "1.0.0" || repo.Spec.Reference.Digest != art.Digest ||
		!repo.Spec.Insecure {
		t.Errorf("OCIRepository spec %+v, want the artifact's URL, ref.tag 1.0.0, ref.digest %s and insecure", repo.Spec, art.Digest)
	}
	if repo.Spec.Interval.Duration != 30*time.Second || k.Spec.Interval.Duration != 30*time.Second {
		t.Errorf("intervals %s and %s, want the Cluster's fluxInterval 30s", repo.Spec.Interval.Duration, k.Spec.Interval.Duration)
	}
	ref := k.Spec.SourceRef
	if ref.Kind != "OCIRepository" || ref.Name != repo.Name || ref.Namespace != repo.Namespace || ref.APIVersion != "source.toolkit.fluxcd.io/v1" {
		t.Errorf("sourceRef %+v, want the OCIRepository", ref)
	}
	if k.Spec.Path != "./" || !k.Spec.Prune || k.Spec.TargetNamespace != "apps" {
		t.Errorf("Kustomization spec path %q prune %v targetNamespace %q", k.Spec.Path, k.Spec.Prune, k.Spec.TargetNamespace)
	}
	for _, meta := range []metav1.ObjectMeta{repo.ObjectMeta, k.ObjectMeta} {
		if meta.Labels[gitopsv1alpha1.LabelArtifact] != delivery.ArtifactLabel("team-a", "app") ||
			meta.Annotations[gitopsv1alpha1.AnnotationArtifact] != "team-a/app" {
			t.Errorf("%s: labels %v annotations %v", meta.Name, meta.Labels, meta.Annotations)
		}
		if _, ok := meta.Annotations[gitopsv1alpha1.ReconcileRequestAnnotation]; ok {
			t.Errorf("%s asks Flux to reconcile without a request", meta.Name)
		}
	}
}

func TestObjectsDefaultsAndReconcileRequest(t *testing.T) {
	art, target := testArtifact(), testTarget()
	target.Spec = gitopsv1alpha1.ArtifactTarget{Cluster: "local", Prune: ptr.To(false)}
	target.Cluster.Spec.GitOps.FluxInterval = nil
	target.ReconcileRequest = "2026-11-24T02:00:00.123456Z"
	repo, k := Objects(art, target)
	if repo.Namespace != "flux-system" || k.Spec.Path != "./" || k.Spec.Prune {
		t.Errorf("namespace %q path %q prune %v, want flux-system, ./ and no pruning", repo.Namespace, k.Spec.Path, k.Spec.Prune)
	}
	if repo.Spec.Interval.Duration != time.Minute {
		t.Errorf("interval %s, want the default 1m", repo.Spec.Interval.Duration)
	}
	for _, meta := range []metav1.ObjectMeta{repo.ObjectMeta, k.ObjectMeta} {
		if got := meta.Annotations["reconcile.fluxcd.io/requestedAt"]; got != target.ReconcileRequest {
			t.Errorf("%s requestedAt %q, want %q", meta.Name, got, target.ReconcileRequest)
		}
	}
}

func TestToUnstructuredLeavesOutStatus(t *testing.T) {
	repo, _ := Objects(testArtifact(), testTarget())
	u, err := toUnstructured(repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Object["status"]; ok {
		t.Error("the applied object has a status")
	}
	if _, ok := u.Object["metadata"].(map[string]interface{})["creationTimestamp"]; ok {
		t.Error("the applied object has a creationTimestamp")
	}
	var back sourcev1.OCIRepository
	if err := fromUnstructured(u, &back); err != nil || back.Spec.Reference.Tag != "1.0.0" {
		t.Errorf("round trip: %v, tag %v", err, back.Spec.Reference)
	}
}
