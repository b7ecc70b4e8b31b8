package ociartifact

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
)

// Indexes NewController adds to the OCIArtifact informer, so that a change of a registry, a
// Cluster or a ConfigMap wakes only the artifacts that use it.
const (
	// ArtifactsByRegistry indexes artifacts by <namespace>/<spec.registryRef.name>.
	ArtifactsByRegistry = "ociartifact.gitops.plinth.dev/registry"
	// ArtifactsByCluster indexes artifacts by the Clusters they target or still have a status
	// entry for (a target being removed).
	ArtifactsByCluster = "ociartifact.gitops.plinth.dev/cluster"
	// ArtifactsByConfigMap indexes artifacts by <namespace>/<spec.configMapRef.name>.
	ArtifactsByConfigMap = "ociartifact.gitops.plinth.dev/configmap"
)

// Indexers are the indexes NewController adds to the OCIArtifact informer.
var Indexers = cache.Indexers{
	ArtifactsByRegistry: func(obj interface{}) ([]string, error) {
		art, ok := obj.(*gitopsv1alpha1.OCIArtifact)
		if !ok || art.Spec.RegistryRef.Name == "" {
			return nil, nil
		}
		return []string{art.Namespace + "/" + art.Spec.RegistryRef.Name}, nil
	},
	ArtifactsByCluster: func(obj interface{}) ([]string, error) {
		art, ok := obj.(*gitopsv1alpha1.OCIArtifact)
		if !ok {
			return nil, nil
		}
		var clusters []string
		for _, t := range art.Spec.Targets {
			clusters = append(clusters, t.Cluster)
		}
		for _, t := range art.Status.Targets {
			clusters = append(clusters, t.Cluster)
		}
		return clusters, nil
	},
	ArtifactsByConfigMap: func(obj interface{}) ([]string, error) {
		art, ok := obj.(*gitopsv1alpha1.OCIArtifact)
		if !ok || art.Spec.ConfigMapRef == nil {
			return nil, nil
		}
		return []string{art.Namespace + "/" + art.Spec.ConfigMapRef.Name}, nil
	},
}

func registryKey(obj interface{}) (string, bool) {
	r, ok := obj.(*gitopsv1alpha1.OCIRegistry)
	if !ok {
		return "", false
	}
	return r.Namespace + "/" + r.Name, true
}

func clusterKey(obj interface{}) (string, bool) {
	c, ok := obj.(*platformv1alpha1.Cluster)
	if !ok {
		return "", false
	}
	return c.Name, true
}

func configMapKey(obj interface{}) (string, bool) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return "", false
	}
	return cm.Namespace + "/" + cm.Name, true
}
