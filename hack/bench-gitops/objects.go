package main

import (
	"encoding/json"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

const (
	// version is the version every artifact of the benchmark pushes: each round has its own
	// repository, so each push is a new artifact.
	version = "1.0.0"
	// targetNamespace is where Flux applies both sides' ConfigMaps and Deployments.
	targetNamespace = "bench-gitops"
	// fluxNamespace holds both sides' OCIRepositories and Kustomizations, as the Flux engine's
	// default (gitopsv1alpha1.DefaultFluxNamespace).
	fluxNamespace = gitopsv1alpha1.DefaultFluxNamespace
	// benchLabel marks the floor's Flux objects.
	benchLabel = "bench.plinth.dev/gitops"
)

// roundObjects are the manifests of one side of one round: a ConfigMap and a Deployment named
// prefix-config and prefix-web, the same shape on both sides and in every round, so that each
// push carries new content and Flux applies new objects.
func roundObjects(prefix string) []map[string]interface{} {
	app := prefix + "-web"
	labels := map[string]interface{}{"app": app}
	return []map[string]interface{}{
		{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": prefix + "-config"},
			"data":     map[string]interface{}{"greeting": "hello from " + prefix, "settings.yaml": "feature: on\nthreshold: 0.75\n"},
		},
		{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]interface{}{"name": app, "labels": labels},
			"spec": map[string]interface{}{
				"replicas": int64(1),
				"selector": map[string]interface{}{"matchLabels": labels},
				"template": map[string]interface{}{
					"metadata": map[string]interface{}{"labels": labels},
					"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
						"name": "web", "image": "registry.example.com/bench/web:1",
						"ports": []interface{}{map[string]interface{}{"containerPort": int64(8080)}},
					}}},
				},
			},
		},
	}
}

// rawObjects are the objects as an OCIArtifact's inline manifests.
func rawObjects(objs []map[string]interface{}) ([]common.RawObject, error) {
	out := make([]common.RawObject, 0, len(objs))
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		out = append(out, common.RawObject{Raw: data})
	}
	return out, nil
}

// manifestObjects are the objects as pkg/oci/artifact lays them out as files: what the floor
// pushes is the same files Plinth pushes for the same objects.
func manifestObjects(objs []map[string]interface{}) []manifests.Object {
	out := make([]manifests.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, manifests.Object{Unstructured: &unstructured.Unstructured{Object: o}})
	}
	return out
}

// plinthArtifact is the Plinth side's OCIArtifact: repository bench/<name>, version 1.0.0,
// the objects inline, delivered to Cluster local into targetNamespace with the defaults
// (Flux objects in flux-system, path ./, prune).
func plinthArtifact(name, registry, cluster string, objs []map[string]interface{}) (*gitopsv1alpha1.OCIArtifact, error) {
	raw, err := rawObjects(objs)
	if err != nil {
		return nil, err
	}
	return &gitopsv1alpha1.OCIArtifact{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gitopsv1alpha1.OCIArtifactSpec{
			RegistryRef: gitopsv1alpha1.LocalObjectReference{Name: registry}, Name: "bench/" + name, Version: version,
			Manifests: raw, Targets: []gitopsv1alpha1.ArtifactTarget{{Cluster: cluster, TargetNamespace: targetNamespace}},
		},
	}, nil
}

// floorObjects are the floor's OCIRepository and Kustomization, written by hand with Flux's Go
// types as a Flux user would: the repository pulls url at digest (tag kept) every interval over plain HTTP,
// the Kustomization applies all of it into targetNamespace and prunes. These are the fields
// the Flux engine sets for an OCIArtifact's target (the test checks it).
func floorObjects(name, url, tag, digest string, interval time.Duration) (*sourcev1.OCIRepository, *kustomizev1.Kustomization) {
	meta := metav1.ObjectMeta{Name: name, Namespace: fluxNamespace, Labels: map[string]string{benchLabel: "floor"}}
	repo := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: *meta.DeepCopy(),
		Spec: sourcev1.OCIRepositorySpec{
			URL: url, Reference: &sourcev1.OCIRepositoryRef{Tag: tag, Digest: digest},
			Interval: metav1.Duration{Duration: interval}, Insecure: true,
		},
	}
	kustomization := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: *meta.DeepCopy(),
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{
				APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind, Name: name, Namespace: fluxNamespace,
			},
			Path: gitopsv1alpha1.DefaultPath, Prune: true, TargetNamespace: targetNamespace,
			Interval: metav1.Duration{Duration: interval},
		},
	}
	return repo, kustomization
}

// toUnstructured is a typed object as the dynamic client creates it, without a status.
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

// exists is true of any object: the milestone of an object appearing.
func exists(*unstructured.Unstructured) bool { return true }

// repositoryReady says the OCIRepository is Ready for its current generation with an
// artifact of revision (any, when revision is empty).
func repositoryReady(revision string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		var r sourcev1.OCIRepository
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			return false
		}
		return r.Status.ObservedGeneration == r.Generation && apimeta.IsStatusConditionTrue(r.Status.Conditions, fluxmeta.ReadyCondition) &&
			r.Status.Artifact != nil && (revision == "" || r.Status.Artifact.Revision == revision)
	}
}

// kustomizationApplied says the Kustomization is Ready for its current generation with
// revision applied (any, when revision is empty): what the Flux engine waits for.
func kustomizationApplied(revision string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		var k kustomizev1.Kustomization
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &k); err != nil {
			return false
		}
		return k.Status.ObservedGeneration == k.Generation && apimeta.IsStatusConditionTrue(k.Status.Conditions, fluxmeta.ReadyCondition) &&
			k.Status.LastAppliedRevision != "" && (revision == "" || delivery.SameRevision(k.Status.LastAppliedRevision, revision))
	}
}

// artifactDelivered says the OCIArtifact's current generation is pushed and every target
// applied its revision <tag>@<digest>, with Ready True.
func artifactDelivered(a *gitopsv1alpha1.OCIArtifact) bool {
	if a.Status.ObservedGeneration != a.Generation || a.Status.PushedVersion != a.Spec.Version || a.Status.Digest == "" ||
		len(a.Status.Targets) == 0 || !apimeta.IsStatusConditionTrue(a.Status.Conditions, gitopsv1alpha1.ConditionReady) {
		return false
	}
	for _, t := range a.Status.Targets {
		if !t.Ready || t.Revision != a.Spec.Tag+"@"+a.Status.Digest {
			return false
		}
	}
	return true
}

// revisionOf is Flux's revision of a pushed tag: <tag>@<digest>.
func revisionOf(tag, digest string) string { return fmt.Sprintf("%s@%s", tag, digest) }
