package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// DriftPolicy says what plinth-controller does when a delivered object drifts.
type DriftPolicy string

const (
	// DriftPolicyDetect reports drift (Drifted=True with a driftSummary) and leaves the object
	// as it is, as the seed's origin does: a new delivery corrects it.
	DriftPolicyDetect DriftPolicy = "Detect"
	// DriftPolicyCorrect reports drift and applies the delivered revision again.
	DriftPolicyCorrect DriftPolicy = "Correct"
)

// OnDriftPolicy is what a dependent instance does when an instance it depends on drifts.
type OnDriftPolicy string

const (
	// OnDriftBlock sets DependencyBlocked=True and Ready=False on the dependent and holds its
	// deliveries until the dependency is no longer drifted.
	OnDriftBlock OnDriftPolicy = "Block"
	// OnDriftWarn names the drifted dependency in the dependent's Ready condition message and
	// goes on delivering.
	OnDriftWarn OnDriftPolicy = "Warn"
	// OnDriftIgnore does nothing.
	OnDriftIgnore OnDriftPolicy = "Ignore"
)

// UpgradeDirection is the direction of an instance's last version transition.
type UpgradeDirection string

const (
	// UpgradeDirectionInitial is the first delivery of the pack to the cluster.
	UpgradeDirectionInitial UpgradeDirection = "Initial"
	// UpgradeDirectionUpgrade is a delivery of a newer version (a revision bump alone counts).
	UpgradeDirectionUpgrade UpgradeDirection = "Upgrade"
	// UpgradeDirectionRollback is a delivery of an older version.
	UpgradeDirectionRollback UpgradeDirection = "Rollback"
	// UpgradeDirectionRedeploy is a delivery of the same version again.
	UpgradeDirectionRedeploy UpgradeDirection = "Redeploy"
)

// ClusterPhase is where a pack stands on one target cluster.
type ClusterPhase string

const (
	// ClusterPhaseReady means the cluster runs the pack's current revision.
	ClusterPhaseReady ClusterPhase = "Ready"
	// ClusterPhaseProgressing means a delivery to the cluster is under way or waits for the
	// instances it depends on.
	ClusterPhaseProgressing ClusterPhase = "Progressing"
	// ClusterPhaseDrifted means objects on the cluster differ from what was delivered.
	ClusterPhaseDrifted ClusterPhase = "Drifted"
	// ClusterPhaseBlocked means a dependency drifted and its onDrift policy is Block.
	ClusterPhaseBlocked ClusterPhase = "Blocked"
	// ClusterPhaseFailed means the delivery failed on the cluster.
	ClusterPhaseFailed ClusterPhase = "Failed"
	// ClusterPhaseUnreachable means plinth-controller could not reach the cluster.
	ClusterPhaseUnreachable ClusterPhase = "Unreachable"
)

// Names and labels of the packs subsystem.
const (
	// InstanceNamespacePrefix starts the namespace of a cluster's instances: seam-tenant-{cluster}.
	InstanceNamespacePrefix = "seam-tenant-"
	// LabelPack marks an instance and a kept revision with the name of its pack.
	LabelPack = "infrastructure.ontai.dev/pack"
	// LabelPackNamespace marks an instance with the namespace of its pack.
	LabelPackNamespace = "infrastructure.ontai.dev/pack-namespace"
	// LabelCluster marks an instance with its target cluster.
	LabelCluster = "infrastructure.ontai.dev/cluster"
	// FinalizerPack is the finalizer with which plinth-controller removes a deleted pack's
	// objects from its clusters before the pack goes.
	FinalizerPack = "infrastructure.ontai.dev/cleanup"
	// DefaultRevisionHistoryLimit is how many rendered revisions a pack keeps unless it says.
	DefaultRevisionHistoryLimit = 10
	// DefaultTargetNamespace is the release namespace of a pack unless it says, as Helm's.
	DefaultTargetNamespace = "default"
)

// InstanceNamespace is the namespace of the instances on the named cluster.
func InstanceNamespace(cluster string) string { return InstanceNamespacePrefix + cluster }

// InstanceName is the name of the instance of the pack on the cluster: {pack}-{cluster}.
func InstanceName(pack, cluster string) string { return pack + "-" + cluster }

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InfrastructureClusterPack is a versioned bundle of infrastructure (a Helm chart, a kustomize
// directory or raw manifests) that plinth-controller renders and delivers to target Clusters,
// recording each delivery in an InfrastructurePackInstance {pack}-{cluster} in namespace
// seam-tenant-{cluster}. Platform administrators only.
type InfrastructureClusterPack struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the pack's content, version and targets.
	Spec InfrastructureClusterPackSpec `json:"spec"`
	// Status is the rendered revision and where it is delivered, written by plinth-controller.
	// +optional
	Status InfrastructureClusterPackStatus `json:"status,omitempty"`
}

// InfrastructureClusterPackSpec is what to deliver, where and how.
type InfrastructureClusterPackSpec struct {
	// Version is the pack's version, vX.Y.Z or vX.Y.Z-rN (a revision of the same release).
	// Instances compare it as [major, minor, patch, revision] to tell an upgrade from a
	// rollback.
	Version string `json:"version"`
	// Chart is a Helm chart to render with Values. Exactly one of chart, kustomize and
	// manifests is set.
	// +optional
	Chart *PackChart `json:"chart,omitempty"`
	// Values are the chart's values, a JSON object, as `helm install --values` takes them.
	// Only with chart.
	// +optional
	Values *common.RawObject `json:"values,omitempty"`
	// Kustomize is a kustomize directory, taken from an OCIArtifact or a ConfigMap, rendered
	// with kustomize's krusty.
	// +optional
	Kustomize *PackKustomize `json:"kustomize,omitempty"`
	// Manifests are Kubernetes objects delivered as given. Each needs apiVersion, kind and
	// metadata.name.
	// +optional
	// +listType=atomic
	Manifests []common.RawObject `json:"manifests,omitempty"`
	// TargetNamespace is the release namespace: namespaced objects that name no namespace go
	// there (Helm's --namespace). Defaults to "default".
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// TargetClusters are names of Clusters to deliver to.
	// +optional
	// +listType=set
	TargetClusters []string `json:"targetClusters,omitempty"`
	// ClusterSelector selects further Clusters by their labels. A cluster named and selected is
	// a target once.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// DependsOn names packs in the same namespace that must be Ready on a cluster before this
	// one is delivered there. Cycles are refused.
	// +optional
	// +listType=set
	DependsOn []string `json:"dependsOn,omitempty"`
	// DependencyPolicy says what this pack's instances do when an instance they depend on
	// drifts. Passed to each instance.
	// +optional
	DependencyPolicy *DependencyPolicy `json:"dependencyPolicy,omitempty"`
	// DriftPolicy is Detect (report drift; the default) or Correct (report it and apply the
	// delivered revision again).
	// +optional
	DriftPolicy DriftPolicy `json:"driftPolicy,omitempty"`
	// LifecyclePolicies say what happens to delivered objects when the pack is deleted.
	// +optional
	LifecyclePolicies *LifecyclePolicies `json:"lifecyclePolicies,omitempty"`
	// RollbackToRevision, when set, delivers the kept rendered revision of that number
	// (status.history) instead of rendering the spec: no re-render, direction Rollback when its
	// version is older. Clear it to deliver the spec again.
	// +optional
	RollbackToRevision *int64 `json:"rollbackToRevision,omitempty"`
	// RevisionHistoryLimit is how many rendered revisions are kept for rollback, 1-100.
	// Defaults to 10.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// PackChart is a Helm chart in a chart repository or an OCI registry.
type PackChart struct {
	// URL is an https chart repository (with index.yaml) or an OCI registry path,
	// oci://host[:port]/path, where the chart is <url>/<name>:<version>. Loopback registries
	// (localhost, 127.0.0.1, [::1]) are reached over plain HTTP, as Plinth's own OCIRegistry.
	URL string `json:"url"`
	// Name is the chart's name.
	Name string `json:"name"`
	// Version is the chart's version, or a semver constraint such as ">=1.2.0 <2" resolved
	// against the repository at each render.
	Version string `json:"version"`
	// CABundle is PEM-encoded certificate authorities to trust for an https repository, besides
	// the system's.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// PackKustomize is a kustomize directory. Exactly one of artifactRef and configMapRef is set.
type PackKustomize struct {
	// ArtifactRef names an OCIArtifact in the pack's namespace whose pushed files hold the
	// directory.
	// +optional
	ArtifactRef *LocalObjectReference `json:"artifactRef,omitempty"`
	// ConfigMapRef names a ConfigMap in the pack's namespace: each key is a file of the
	// directory (kustomization.yaml among them).
	// +optional
	ConfigMapRef *LocalObjectReference `json:"configMapRef,omitempty"`
	// Path is the directory inside the artifact holding kustomization.yaml. Defaults to the
	// root.
	// +optional
	Path string `json:"path,omitempty"`
}

// DependencyPolicy is the behaviour when a declared dependency reports drift.
type DependencyPolicy struct {
	// OnDrift is Block, Warn (the default) or Ignore: see InfrastructurePackInstance.
	// +optional
	OnDrift OnDriftPolicy `json:"onDrift,omitempty"`
}

// LifecyclePolicies are the pack's deletion rules.
type LifecyclePolicies struct {
	// RetainOnDeletion leaves the delivered objects on the clusters when the pack is deleted;
	// only the instances go.
	// +optional
	RetainOnDeletion bool `json:"retainOnDeletion,omitempty"`
}

// InfrastructureClusterPackStatus is the pack's rendered revision and its delivery.
type InfrastructureClusterPackStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Revision is the number of the rendered revision being delivered.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Version is the pack version of that revision.
	// +optional
	Version string `json:"version,omitempty"`
	// Digest is the sha256 of the rendered objects of that revision.
	// +optional
	Digest string `json:"digest,omitempty"`
	// HelmVersion is the version of the Helm SDK that rendered the chart; empty for kustomize
	// and raw packs.
	// +optional
	HelmVersion string `json:"helmVersion,omitempty"`
	// ChartVersion is the chart version the chart's version constraint resolved to.
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`
	// History lists the kept rendered revisions, newest first: rollbackToRevision takes one of
	// their numbers.
	// +optional
	// +listType=map
	// +listMapKey=revision
	History []PackRevision `json:"history,omitempty"`
	// Summary counts the target clusters by phase.
	// +optional
	Summary PackSummary `json:"summary,omitempty"`
	// Clusters is the pack's phase on each target cluster.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Clusters []PackClusterStatus `json:"clusters,omitempty"`
	// Conditions are Rendered and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PackRevision is one kept rendered revision.
type PackRevision struct {
	// Revision is the revision's number, counting up from 1.
	Revision int64 `json:"revision"`
	// Version is the pack version it was rendered from.
	Version string `json:"version"`
	// Digest is the sha256 of its rendered objects.
	// +optional
	Digest string `json:"digest,omitempty"`
	// RenderedAt is when it was rendered.
	// +optional
	RenderedAt metav1.Time `json:"renderedAt,omitempty"`
}

// PackSummary counts target clusters by phase.
type PackSummary struct {
	// Ready clusters run the current revision.
	Ready int32 `json:"ready"`
	// Progressing clusters are being delivered to or wait for dependencies.
	Progressing int32 `json:"progressing"`
	// Drifted clusters have objects that differ from what was delivered.
	Drifted int32 `json:"drifted"`
	// Blocked clusters hold delivery because a dependency drifted.
	Blocked int32 `json:"blocked"`
	// Failed clusters refused or failed the delivery.
	Failed int32 `json:"failed"`
	// Unreachable clusters could not be reached.
	Unreachable int32 `json:"unreachable"`
}

// PackClusterStatus is the pack on one target cluster.
type PackClusterStatus struct {
	// Cluster is the target Cluster's name.
	Cluster string `json:"cluster"`
	// Phase is Ready, Progressing, Drifted, Blocked, Failed or Unreachable.
	Phase ClusterPhase `json:"phase"`
	// Revision is the rendered revision the cluster runs.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Message says why the cluster is not Ready, in one sentence.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InfrastructureClusterPackList is a list of InfrastructureClusterPacks.
type InfrastructureClusterPackList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the packs.
	Items []InfrastructureClusterPack `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InfrastructurePackInstance records the delivered state of an InfrastructureClusterPack on a
// target cluster (seed 000, verbatim): one per pack per cluster, named {pack}-{cluster} in
// namespace seam-tenant-{cluster}. Written by plinth-controller; never shown to tenants.
type InfrastructurePackInstance struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is written once at creation; a new delivery updates what it sets (version, chart
	// fields, dependencies). clusterPackRef and targetClusterRef never change.
	Spec InfrastructurePackInstanceSpec `json:"spec"`
	// Status is the runtime state, written by plinth-controller's delivery and drift passes.
	// +optional
	Status InfrastructurePackInstanceStatus `json:"status,omitempty"`
}

// InfrastructurePackInstanceSpec is the seed's InfrastructurePackInstance specification.
type InfrastructurePackInstanceSpec struct {
	// ClusterPackRef is the name of the InfrastructureClusterPack that was delivered.
	ClusterPackRef string `json:"clusterPackRef"`
	// Version is the semantic version of the ClusterPack that was delivered, copied from its
	// spec.version.
	// +optional
	Version string `json:"version,omitempty"`
	// TargetClusterRef is the name of the Cluster the pack was delivered to.
	TargetClusterRef string `json:"targetClusterRef"`
	// DependsOn are names of InfrastructurePackInstances (in this namespace) this instance
	// depends on.
	// +optional
	// +listType=atomic
	DependsOn []string `json:"dependsOn,omitempty"`
	// DependencyPolicy is the behaviour when a declared dependency reports drift.
	// +optional
	DependencyPolicy *DependencyPolicy `json:"dependencyPolicy,omitempty"`
	// ChartVersion is the version of the Helm chart delivered. Absent for kustomize and raw
	// packs.
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`
	// ChartURL is the URL of the Helm chart repository. Absent for kustomize and raw packs.
	// +optional
	ChartURL string `json:"chartURL,omitempty"`
	// ChartName is the name of the Helm chart delivered. Absent for kustomize and raw packs.
	// +optional
	ChartName string `json:"chartName,omitempty"`
	// HelmVersion is the version of the Helm SDK that rendered the pack. Absent for kustomize
	// and raw packs.
	// +optional
	HelmVersion string `json:"helmVersion,omitempty"`
}

// InfrastructurePackInstanceStatus is the seed's runtime status, with conditions.
type InfrastructurePackInstanceStatus struct {
	// DeliveredAt is when the pack was last confirmed delivered.
	// +optional
	DeliveredAt *metav1.Time `json:"deliveredAt,omitempty"`
	// DriftSummary is a human-readable summary of the current drift: the drifted objects and
	// fields, and what Correct mode re-applied.
	// +optional
	DriftSummary string `json:"driftSummary,omitempty"`
	// UpgradeDirection is the direction of the last version transition: Initial, Upgrade,
	// Rollback or Redeploy, by comparing [major, minor, patch, revision].
	// +optional
	UpgradeDirection UpgradeDirection `json:"upgradeDirection,omitempty"`
	// DeployedResources are the objects the last delivery applied, replaced on every delivery;
	// deleting the pack removes them.
	// +optional
	// +listType=atomic
	DeployedResources []DeployedResource `json:"deployedResources,omitempty"`
	// Revision is the pack's rendered revision the cluster runs.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Progressing, Drifted and DependencyBlocked.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeployedResource is one object a delivery applied.
type DeployedResource struct {
	// APIVersion is the object's apiVersion (e.g. apps/v1, v1).
	APIVersion string `json:"apiVersion"`
	// Kind is the object's kind (e.g. Deployment, Namespace).
	Kind string `json:"kind"`
	// Namespace is the object's namespace; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InfrastructurePackInstanceList is a list of InfrastructurePackInstances.
type InfrastructurePackInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the instances.
	Items []InfrastructurePackInstance `json:"items"`
}

// LocalObjectReference names an object in the pack's namespace.
type LocalObjectReference struct {
	// Name is the object's name.
	Name string `json:"name"`
}
