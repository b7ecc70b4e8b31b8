// Package flux is the delivery engine of Clusters with spec.gitOps.engine Flux: for each
// OCIArtifact it creates on the target an OCIRepository (source.toolkit.fluxcd.io/v1) that
// pulls the pushed manifest from the registry by its digest and a Kustomization (kustomize.toolkit.fluxcd.io/v1)
// that applies and prunes what it contains, both from Flux's own API types, applied with
// server-side apply. Flux does the rest; the engine reads back what Flux reports.
package flux

import (
	"fmt"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
)

// maxNameLength keeps the objects' names valid label values: Flux labels everything a
// Kustomization applies with the Kustomization's name.
const maxNameLength = 63

// hashLength is how much of the artifact's hash a shortened name keeps.
const hashLength = 10

// ObjectName is the name of the OCIRepository and the Kustomization of the OCIArtifact
// namespace/name: <namespace>-<name>, or, when that is longer than 63 characters, its first
// characters and a hash of namespace/name, so that two artifacts never share a name by
// shortening.
func ObjectName(namespace, name string) string {
	full := namespace + "-" + name
	if len(full) <= maxNameLength {
		return full
	}
	hash := delivery.ArtifactLabel(namespace, name)[:hashLength]
	return strings.TrimRight(full[:maxNameLength-hashLength-1], "-.") + "-" + hash
}

// Namespace is where the target's Flux objects go: its spec.namespace, flux-system unless set.
func Namespace(target delivery.Target) string {
	if target.Spec.Namespace != "" {
		return target.Spec.Namespace
	}
	return gitopsv1alpha1.DefaultFluxNamespace
}

// Objects are the OCIRepository and the Kustomization that deliver art to target: the
// repository pulls art.URL at art.Digest every target.Interval() (plain HTTP: the registry on
// localhost serves no TLS), and the Kustomization applies the target's path from it, into its
// targetNamespace, pruning what a new version drops when the target prunes. Both carry the
// artifact's label and annotation and, when the target has a reconcile request, Flux's
// reconcile.fluxcd.io/requestedAt annotation.
func Objects(art delivery.Artifact, target delivery.Target) (*sourcev1.OCIRepository, *kustomizev1.Kustomization) {
	interval := metav1.Duration{Duration: target.Interval()}
	meta := metav1.ObjectMeta{
		Name:        ObjectName(art.Namespace, art.Name),
		Namespace:   Namespace(target),
		Labels:      map[string]string{gitopsv1alpha1.LabelArtifact: delivery.ArtifactLabel(art.Namespace, art.Name)},
		Annotations: map[string]string{gitopsv1alpha1.AnnotationArtifact: delivery.ArtifactAnnotation(art.Namespace, art.Name)},
	}
	if target.ReconcileRequest != "" {
		meta.Annotations[gitopsv1alpha1.ReconcileRequestAnnotation] = target.ReconcileRequest
	}
	repo := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: *meta.DeepCopy(),
		Spec: sourcev1.OCIRepositorySpec{
			URL: art.URL,
			// Pinned to the pushed digest, which Flux prefers to the tag: a tag moved in the
			// registry by anyone but plinth-controller is never pulled. The tag stays for
			// whoever reads the object.
			Reference: &sourcev1.OCIRepositoryRef{Tag: art.Tag, Digest: art.Digest},
			Interval:  interval,
			Insecure:  true,
		},
	}
	path := target.Spec.Path
	if path == "" {
		path = gitopsv1alpha1.DefaultPath
	}
	kustomization := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: *meta.DeepCopy(),
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{
				APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind,
				Name: repo.Name, Namespace: repo.Namespace,
			},
			Path:            path,
			Prune:           target.Spec.Prune == nil || *target.Spec.Prune,
			TargetNamespace: target.Spec.TargetNamespace,
			Interval:        interval,
		},
	}
	return repo, kustomization
}

// toUnstructured is what is applied of a typed Flux object: everything but its status and
// the server-set metadata its Go type always carries.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// fromUnstructured reads a Flux object the target returned into its Go type.
func fromUnstructured(u *unstructured.Unstructured, into runtime.Object) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}
