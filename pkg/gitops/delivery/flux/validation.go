package flux

import (
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/gitops/validation"
)

// ValidateOCIRepository checks the seed's rules for an OCIRepository before it is applied:
// spec.url is oci://<endpoint>/<repository> (the endpoint localhost:<port>, no tag: the tag
// is spec.ref.tag), spec.interval is greater than zero, spec.ref.tag is the tag that was
// pushed, and spec.ref.digest the digest that was pushed (what Flux pulls: a tag can be moved
// in the registry, a digest cannot).
func ValidateOCIRepository(repo *sourcev1.OCIRepository, pushedTag, pushedDigest string) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if err := validation.ValidateOCIURL(repo.Spec.URL); err != nil {
		errs = append(errs, field.Invalid(spec.Child("url"), repo.Spec.URL, err.Error()))
	} else if _, path, _ := strings.Cut(strings.TrimPrefix(repo.Spec.URL, "oci://"), "/"); strings.Contains(path, ":") {
		errs = append(errs, field.Invalid(spec.Child("url"), repo.Spec.URL, "must not name a tag: the tag is spec.ref.tag"))
	}
	if repo.Spec.Interval.Duration <= 0 {
		errs = append(errs, field.Invalid(spec.Child("interval"), repo.Spec.Interval.Duration.String(), "must be greater than zero"))
	}
	switch ref := spec.Child("ref", "tag"); {
	case repo.Spec.Reference == nil || repo.Spec.Reference.Tag == "":
		errs = append(errs, field.Required(ref, "must be the pushed tag "+pushedTag))
	case repo.Spec.Reference.Tag != pushedTag:
		errs = append(errs, field.Invalid(ref, repo.Spec.Reference.Tag, "must be the pushed tag "+pushedTag))
	}
	switch ref := spec.Child("ref", "digest"); {
	case repo.Spec.Reference == nil || repo.Spec.Reference.Digest == "":
		errs = append(errs, field.Required(ref, "must be the pushed digest "+pushedDigest))
	case repo.Spec.Reference.Digest != pushedDigest:
		errs = append(errs, field.Invalid(ref, repo.Spec.Reference.Digest, "must be the pushed digest "+pushedDigest))
	}
	return errs
}

// ValidateKustomization checks the seed's rules for a Kustomization before it is applied: its
// spec.sourceRef is the OCIRepository source, in the Kustomization's own namespace, and its
// spec.interval is greater than zero.
func ValidateKustomization(k *kustomizev1.Kustomization, source *sourcev1.OCIRepository) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	ref := k.Spec.SourceRef
	refPath := spec.Child("sourceRef")
	if ref.Kind != sourcev1.OCIRepositoryKind {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, []string{sourcev1.OCIRepositoryKind}))
	}
	if ref.APIVersion != "" && ref.APIVersion != sourcev1.GroupVersion.String() {
		errs = append(errs, field.NotSupported(refPath.Child("apiVersion"), ref.APIVersion, []string{sourcev1.GroupVersion.String()}))
	}
	if ref.Name != source.Name {
		errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, "must name the OCIRepository "+source.Name))
	}
	// An empty sourceRef.namespace means the Kustomization's own, as Flux reads it.
	if ref.Namespace != "" && ref.Namespace != k.Namespace {
		errs = append(errs, field.Invalid(refPath.Child("namespace"), ref.Namespace, "must be the Kustomization's own namespace "+k.Namespace))
	}
	if source.Namespace != k.Namespace {
		errs = append(errs, field.Invalid(refPath.Child("namespace"), source.Namespace, "the OCIRepository must be in the Kustomization's namespace "+k.Namespace))
	}
	if k.Spec.Interval.Duration <= 0 {
		errs = append(errs, field.Invalid(spec.Child("interval"), k.Spec.Interval.Duration.String(), "must be greater than zero"))
	}
	return errs
}
