package platform

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterPhase is what the last probe of a target cluster found.
type ClusterPhase string

const (
	// ClusterPhaseUnknown means the cluster was not probed yet, or its credentials could not
	// be read.
	ClusterPhaseUnknown ClusterPhase = "UNKNOWN"
	// ClusterPhaseHealthy means the cluster answered and its API server is ready.
	ClusterPhaseHealthy ClusterPhase = "HEALTHY"
	// ClusterPhaseUnhealthy means the cluster answered but is not ready, or refused the
	// credentials.
	ClusterPhaseUnhealthy ClusterPhase = "UNHEALTHY"
	// ClusterPhaseUnreachable means the cluster's API server could not be reached.
	ClusterPhaseUnreachable ClusterPhase = "UNREACHABLE"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Cluster is a target cluster that Plinth creates VMs and workloads on. Its kubeconfig is
// write-only: accepted on create and update, stored encrypted, and never returned.
type Cluster struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   ClusterSpec
	Status ClusterStatus
}

// ClusterSpec is what a platform administrator registers.
type ClusterSpec struct {
	// Kubeconfig is the plain kubeconfig on writes. In storage it holds the sealed envelope
	// (see pkg/registry/platform/cluster); it is empty in everything the API returns.
	Kubeconfig string
	// Description tells approvers what the cluster is for.
	Description string
	// GitOps is how OCIArtifacts are delivered to the cluster.
	GitOps ClusterGitOps
}

// GitOpsEngine is how artifacts are delivered to a cluster.
type GitOpsEngine string

const (
	// GitOpsEngineKubectl: plinth-controller applies the manifests with server-side apply.
	GitOpsEngineKubectl GitOpsEngine = "Kubectl"
	// GitOpsEngineFlux: Flux on the cluster pulls the artifacts.
	GitOpsEngineFlux GitOpsEngine = "Flux"
)

// ClusterGitOps is how OCIArtifacts are delivered to a cluster.
type ClusterGitOps struct {
	// Engine is Kubectl (plinth-controller applies with server-side apply) or Flux.
	Engine GitOpsEngine
	// RegistryEnabled makes plinth-controller run an OCIRegistry for the cluster.
	RegistryEnabled bool
	// RegistryPort is that registry's localhost port.
	RegistryPort int32
	// FluxInterval is Flux's interval for the cluster's OCIRepositories and Kustomizations.
	FluxInterval *metav1.Duration
	// InstallFlux lets plinth-controller install Flux when engine is Flux and the cluster has none.
	InstallFlux bool
}

// ClusterGitOpsStatus is what plinth-controller found of a cluster's GitOps engine.
type ClusterGitOpsStatus struct {
	// FluxComponents are the Flux controllers found serving the cluster.
	FluxComponents []FluxComponent
	// Registry is the namespace/name of the OCIRegistry the Cluster owns.
	Registry string
	// RegistryEndpoint is that registry's endpoint.
	RegistryEndpoint string
}

// FluxComponent is one Flux controller serving a cluster.
type FluxComponent struct {
	// Name is source-controller or kustomize-controller.
	Name string
	// Version is the controller's version, empty when it cannot be told.
	Version string
}

// ClusterStatus is what plinth-controller's probes found.
type ClusterStatus struct {
	Phase              ClusterPhase
	APIServerURL       string
	KubernetesVersion  string
	KubevirtVersion    string
	EnabledFeatures    []string
	EncryptionKeyID    string
	LastProbeTime      *metav1.Time
	ObservedGeneration int64
	GitOps             *ClusterGitOpsStatus
	Conditions         []metav1.Condition
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterList is a list of clusters.
type ClusterList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []Cluster
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterCredentials is a Cluster's sealed kubeconfig, served by the clusters/credentials
// subresource. Its name, UID and generation are the Cluster's.
type ClusterCredentials struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	EncryptionKeyID  string
	SealedKubeconfig []byte
}
