package flux

import (
	"slices"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

func TestValidateOCIRepository(t *testing.T) {
	good, _ := Objects(testArtifact(), testTarget())
	digest := testArtifact().Digest
	if errs := ValidateOCIRepository(good, "1.0.0", digest); len(errs) > 0 {
		t.Fatalf("the engine's own OCIRepository: %v", errs)
	}
	for name, c := range map[string]struct {
		change func(*sourcev1.OCIRepository)
		field  string
		// also is a second field with an error, when the change makes two.
		also string
	}{
		"url without oci://":       {func(r *sourcev1.OCIRepository) { r.Spec.URL = "https://localhost:5000/workloads/app" }, "spec.url", ""},
		"url not on localhost":     {func(r *sourcev1.OCIRepository) { r.Spec.URL = "oci://registry.example.com/workloads/app" }, "spec.url", ""},
		"url without a repository": {func(r *sourcev1.OCIRepository) { r.Spec.URL = "oci://localhost:5000" }, "spec.url", ""},
		"url with a tag":           {func(r *sourcev1.OCIRepository) { r.Spec.URL = "oci://localhost:5000/workloads/app:1.0.0" }, "spec.url", ""},
		"url with a digest": {func(r *sourcev1.OCIRepository) {
			r.Spec.URL = "oci://localhost:5000/workloads/app@sha256:" + strings.Repeat("a", 64)
		}, "spec.url", ""},
		"url with capitals": {func(r *sourcev1.OCIRepository) { r.Spec.URL = "oci://localhost:5000/Workloads/App" }, "spec.url", ""},
		"zero interval":     {func(r *sourcev1.OCIRepository) { r.Spec.Interval.Duration = 0 }, "spec.interval", ""},
		"negative interval": {func(r *sourcev1.OCIRepository) { r.Spec.Interval.Duration = -1 }, "spec.interval", ""},
		"no ref":            {func(r *sourcev1.OCIRepository) { r.Spec.Reference = nil }, "spec.ref.tag", "spec.ref.digest"},
		"no tag": {func(r *sourcev1.OCIRepository) {
			r.Spec.Reference = &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0", Digest: digest}
		}, "spec.ref.tag", ""},
		"another tag": {func(r *sourcev1.OCIRepository) { r.Spec.Reference.Tag = "1.0.1" }, "spec.ref.tag", ""},
		// Following the tag alone would pull whatever the tag points to when Flux looks.
		"no digest": {func(r *sourcev1.OCIRepository) { r.Spec.Reference.Digest = "" }, "spec.ref.digest", ""},
		"another digest": {func(r *sourcev1.OCIRepository) {
			r.Spec.Reference.Digest = "sha256:" + strings.Repeat("f", 64)
		}, "spec.ref.digest", ""},
	} {
		t.Run(name, func(t *testing.T) {
			repo := good.DeepCopy()
			c.change(repo)
			errs := ValidateOCIRepository(repo, "1.0.0", digest)
			want := []string{c.field}
			if c.also != "" {
				want = append(want, c.also)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, want) {
				t.Errorf("errors %v, want one for each of %v", errs, want)
			}
		})
	}
}

func TestValidateKustomization(t *testing.T) {
	repo, good := Objects(testArtifact(), testTarget())
	if errs := ValidateKustomization(good, repo); len(errs) > 0 {
		t.Fatalf("the engine's own Kustomization: %v", errs)
	}
	// An empty sourceRef.namespace is the Kustomization's own.
	sameNamespace := good.DeepCopy()
	sameNamespace.Spec.SourceRef.Namespace = ""
	if errs := ValidateKustomization(sameNamespace, repo); len(errs) > 0 {
		t.Errorf("sourceRef without a namespace: %v", errs)
	}
	for name, c := range map[string]struct {
		change func(*kustomizev1.Kustomization, *sourcev1.OCIRepository)
		field  string
	}{
		"a GitRepository source": {func(k *kustomizev1.Kustomization, _ *sourcev1.OCIRepository) { k.Spec.SourceRef.Kind = "GitRepository" }, "spec.sourceRef.kind"},
		"another source API": {func(k *kustomizev1.Kustomization, _ *sourcev1.OCIRepository) {
			k.Spec.SourceRef.APIVersion = "source.toolkit.fluxcd.io/v1beta2"
		}, "spec.sourceRef.apiVersion"},
		"another OCIRepository": {func(k *kustomizev1.Kustomization, _ *sourcev1.OCIRepository) { k.Spec.SourceRef.Name = "other" }, "spec.sourceRef.name"},
		"sourceRef elsewhere":   {func(k *kustomizev1.Kustomization, _ *sourcev1.OCIRepository) { k.Spec.SourceRef.Namespace = "team-a" }, "spec.sourceRef.namespace"},
		"source elsewhere": {func(k *kustomizev1.Kustomization, r *sourcev1.OCIRepository) {
			r.Namespace = "team-a"
			k.Spec.SourceRef.Namespace = ""
		}, "spec.sourceRef.namespace"},
		"zero interval": {func(k *kustomizev1.Kustomization, _ *sourcev1.OCIRepository) { k.Spec.Interval.Duration = 0 }, "spec.interval"},
	} {
		t.Run(name, func(t *testing.T) {
			k, r := good.DeepCopy(), repo.DeepCopy()
			c.change(k, r)
			errs := ValidateKustomization(k, r)
			if len(errs) != 1 || errs[0].Field != c.field {
				t.Errorf("errors %v, want one for %s", errs, c.field)
			}
		})
	}
}
