package v1alpha1

import (
	"time"

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

// GitOpsEngine is how artifacts are delivered to a cluster (the seed's GitOpsEngine).
type GitOpsEngine string

const (
	// GitOpsEngineKubectl means plinth-controller applies the manifests itself, with
	// server-side apply, and prunes what a new version drops.
	GitOpsEngineKubectl GitOpsEngine = "Kubectl"
	// GitOpsEngineFlux means Flux on the cluster pulls the artifacts: plinth-controller creates
	// an OCIRepository and a Kustomization there.
	GitOpsEngineFlux GitOpsEngine = "Flux"
)

// DefaultFluxInterval is how often Flux checks an OCIRepository unless the Cluster says.
const DefaultFluxInterval = time.Minute

// +genclient
// +genclient:nonNamespaced
// +genclient:method=GetCredentials,verb=get,subresource=credentials,result=github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1.ClusterCredentials
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Cluster is a target cluster that Plinth creates VMs and workloads on, registered by a
// platform administrator. Its kubeconfig is write-only: plinth-apiserver accepts it on create
// and update, stores it encrypted with AES-256-GCM, and never returns it. plinth-controller
// probes the cluster and reports its health, versions and KubeVirt features in status.
type Cluster struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the registration.
	// +optional
	Spec ClusterSpec `json:"spec,omitempty"`
	// Status is written by plinth-controller's probes.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec is what a platform administrator registers.
type ClusterSpec struct {
	// Kubeconfig is the cluster's kubeconfig (YAML), write-only: required on create, optional
	// on update (an update without it keeps the stored one), and always empty in responses.
	// It must name a current context whose cluster has an https server and inline
	// certificate-authority-data, and whose user authenticates with inline data (a token or a
	// client certificate): exec plugins, auth providers and file references are refused,
	// because plinth-controller would run or read them on its own host. Changing it takes
	// effect at the next probe, without restarting anything.
	// +optional
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Description tells approvers what the cluster is for.
	// +optional
	Description string `json:"description,omitempty"`
	// GitOps is how OCIArtifacts are delivered to the cluster (the seed's ClusterConfig GitOps
	// fields).
	// +optional
	GitOps ClusterGitOps `json:"gitOps,omitempty"`
}

// ClusterGitOps is how OCIArtifacts are delivered to a cluster.
type ClusterGitOps struct {
	// Engine is Kubectl (plinth-controller applies the manifests with server-side apply and
	// prunes) or Flux (Flux's source-controller and kustomize-controller on the cluster pull
	// the artifacts; a cluster without them reports FluxAvailable False). Defaults to Kubectl.
	// +optional
	Engine GitOpsEngine `json:"engine,omitempty"`
	// RegistryEnabled makes plinth-controller create and run an OCIRegistry for the cluster on
	// localhost:<registryPort>, owned by the Cluster.
	// +optional
	RegistryEnabled bool `json:"registryEnabled,omitempty"`
	// RegistryPort is the localhost port of the cluster's registry, 1024-65535. Defaults to
	// 5000 when registryEnabled is set.
	// +optional
	RegistryPort int32 `json:"registryPort,omitempty"`
	// FluxInterval is how often Flux checks the cluster's OCIRepositories and Kustomizations,
	// a duration greater than zero such as 30s or 1m. Defaults to 1m.
	// +optional
	FluxInterval *metav1.Duration `json:"fluxInterval,omitempty"`
	// InstallFlux lets plinth-controller install Flux's source-controller and
	// kustomize-controller v1.9.6 (their CRDs and Deployments in flux-system) when engine is
	// Flux and the cluster has no Flux. Without it, such a cluster reports FluxAvailable False
	// with reason FluxNotInstalled. An installed Flux is left in place when this is turned off.
	// +optional
	InstallFlux bool `json:"installFlux,omitempty"`
}

// ClusterStatus is what plinth-controller's probes found.
type ClusterStatus struct {
	// Phase is UNKNOWN (not probed yet, or the credentials cannot be read), HEALTHY (the API
	// server answers and is ready), UNHEALTHY (it answers but is not ready, or refuses the
	// credentials) or UNREACHABLE (it does not answer).
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`
	// APIServerURL is the server of the kubeconfig's current context.
	// +optional
	APIServerURL string `json:"apiServerURL,omitempty"`
	// KubernetesVersion is the cluster's Kubernetes version, for example v1.37.1.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// KubevirtVersion is the version KubeVirt reports on the cluster (its KubeVirt resource's
	// observed version); empty when KubeVirt is not installed.
	// +optional
	KubevirtVersion string `json:"kubevirtVersion,omitempty"`
	// EnabledFeatures are the KubeVirt feature gates enabled on the cluster, sorted. Approvers
	// may only place a VM on a cluster that has the features it needs.
	// +optional
	// +listType=set
	EnabledFeatures []string `json:"enabledFeatures,omitempty"`
	// EncryptionKeyID names the key of plinth-apiserver's key file that encrypts the stored
	// kubeconfig. After a key rotation, objects still sealed with an old key show it here
	// until they are written again.
	// +optional
	EncryptionKeyID string `json:"encryptionKeyID,omitempty"`
	// LastProbeTime is when plinth-controller last probed the cluster.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
	// ObservedGeneration is the generation whose kubeconfig the last probe used.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// GitOps is what plinth-controller found of the cluster's GitOps engine and registry.
	// +optional
	GitOps *ClusterGitOpsStatus `json:"gitOps,omitempty"`
	// Conditions are CredentialsValid (the kubeconfig decrypts and loads), Reachable (the API
	// server answers and is ready), KubeVirtAvailable (KubeVirt serves VirtualMachines) and,
	// with engine Flux, FluxAvailable (Flux's controllers serve the cluster).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterGitOpsStatus is what plinth-controller found of a cluster's GitOps engine.
type ClusterGitOpsStatus struct {
	// FluxComponents are the Flux controllers found serving the cluster, with their versions:
	// source-controller and kustomize-controller.
	// +optional
	// +listType=map
	// +listMapKey=name
	FluxComponents []FluxComponent `json:"fluxComponents,omitempty"`
	// Registry is the namespace/name of the OCIRegistry the Cluster owns (registryEnabled).
	// +optional
	Registry string `json:"registry,omitempty"`
	// RegistryEndpoint is that registry's endpoint, localhost:<port>.
	// +optional
	RegistryEndpoint string `json:"registryEndpoint,omitempty"`
}

// FluxComponent is one Flux controller serving a cluster.
type FluxComponent struct {
	// Name is the controller, source-controller or kustomize-controller.
	Name string `json:"name"`
	// Version is the controller's version, for example v1.9.6; empty when it cannot be told.
	// +optional
	Version string `json:"version,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterList is a list of clusters.
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the clusters.
	Items []Cluster `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ClusterCredentials is a Cluster's kubeconfig as stored: sealed with AES-256-GCM, never in
// plain text. The clusters/credentials subresource serves it to plinth-controller, which holds
// the same key file as plinth-apiserver and decrypts it; reading it needs both the RBAC grant
// and the key. The name, UID and generation are the Cluster's; the ciphertext only decrypts
// for the Cluster it was sealed for.
type ClusterCredentials struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: the Cluster's name, UID and generation.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// EncryptionKeyID names the key that sealed the kubeconfig.
	EncryptionKeyID string `json:"encryptionKeyID"`
	// SealedKubeconfig is the nonce followed by the AES-256-GCM ciphertext and tag.
	SealedKubeconfig []byte `json:"sealedKubeconfig"`
}
