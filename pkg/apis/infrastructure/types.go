package infrastructure

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

// Condition types of the infrastructure.ontai.dev kinds.
const (
	// ConditionReady is True on an instance whose cluster runs the delivered revision, and on
	// a pack that every target cluster runs.
	ConditionReady = "Ready"
	// ConditionProgressing is True while a delivery is under way.
	ConditionProgressing = "Progressing"
	// ConditionDrifted is True when delivered objects were changed or deleted on the cluster.
	ConditionDrifted = "Drifted"
	// ConditionDependencyBlocked is True on an instance held because a dependency drifted and
	// its onDrift policy is Block.
	ConditionDependencyBlocked = "DependencyBlocked"
	// ConditionRendered is True on a pack whose spec rendered; False names the template and
	// line that failed.
	ConditionRendered = "Rendered"
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

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InfrastructureClusterPack is a versioned bundle of infrastructure (a Helm chart, a kustomize
// directory or raw manifests) that plinth-controller renders and delivers to target Clusters,
// recording each delivery in an InfrastructurePackInstance {pack}-{cluster} in namespace
// seam-tenant-{cluster}. Platform administrators only.
type InfrastructureClusterPack struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta

	// Spec is the pack's content, version and targets.
	Spec InfrastructureClusterPackSpec
	// Status is the rendered revision and where it is delivered, written by plinth-controller.
	Status InfrastructureClusterPackStatus
}

// InfrastructureClusterPackSpec is what to deliver, where and how.
type InfrastructureClusterPackSpec struct {
	// Version is the pack's version, vX.Y.Z or vX.Y.Z-rN (a revision of the same release).
	// Instances compare it as [major, minor, patch, revision] to tell an upgrade from a
	// rollback.
	Version string
	// Chart is a Helm chart to render with Values. Exactly one of chart, kustomize and
	// manifests is set.
	Chart *PackChart
	// Values are the chart's values, a JSON object, as `helm install --values` takes them.
	// Only with chart.
	Values *common.RawObject
	// Kustomize is a kustomize directory, taken from an OCIArtifact or a ConfigMap, rendered
	// with kustomize's krusty.
	Kustomize *PackKustomize
	// Manifests are Kubernetes objects delivered as given. Each needs apiVersion, kind and
	// metadata.name.
	Manifests []common.RawObject
	// TargetNamespace is the release namespace: namespaced objects that name no namespace go
	// there (Helm's --namespace). Defaults to "default".
	TargetNamespace string
	// TargetClusters are names of Clusters to deliver to.
	TargetClusters []string
	// ClusterSelector selects further Clusters by their labels. A cluster named and selected is
	// a target once.
	ClusterSelector *metav1.LabelSelector
	// DependsOn names packs in the same namespace that must be Ready on a cluster before this
	// one is delivered there. Cycles are refused.
	DependsOn []string
	// DependencyPolicy says what this pack's instances do when an instance they depend on
	// drifts. Passed to each instance.
	DependencyPolicy *DependencyPolicy
	// DriftPolicy is Detect (report drift; the default) or Correct (report it and apply the
	// delivered revision again).
	DriftPolicy DriftPolicy
	// LifecyclePolicies say what happens to delivered objects when the pack is deleted.
	LifecyclePolicies *LifecyclePolicies
	// RollbackToRevision, when set, delivers the kept rendered revision of that number
	// (status.history) instead of rendering the spec: no re-render, direction Rollback when its
	// version is older. Clear it to deliver the spec again.
	RollbackToRevision *int64
	// RevisionHistoryLimit is how many rendered revisions are kept for rollback, 1-100.
	// Defaults to 10.
	RevisionHistoryLimit *int32
}

// PackChart is a Helm chart in a chart repository or an OCI registry.
type PackChart struct {
	// URL is an https chart repository (with index.yaml) or an OCI registry path,
	// oci://host[:port]/path, where the chart is <url>/<name>:<version>. Loopback registries
	// (localhost, 127.0.0.1, [::1]) are reached over plain HTTP, as Plinth's own OCIRegistry.
	URL string
	// Name is the chart's name.
	Name string
	// Version is the chart's version, or a semver constraint such as ">=1.2.0 <2" resolved
	// against the repository at each render.
	Version string
	// CABundle is PEM-encoded certificate authorities to trust for an https repository, besides
	// the system's.
	CABundle []byte
}

// PackKustomize is a kustomize directory. Exactly one of artifactRef and configMapRef is set.
type PackKustomize struct {
	// ArtifactRef names an OCIArtifact in the pack's namespace whose pushed files hold the
	// directory.
	ArtifactRef *LocalObjectReference
	// ConfigMapRef names a ConfigMap in the pack's namespace: each key is a file of the
	// directory (kustomization.yaml among them).
	ConfigMapRef *LocalObjectReference
	// Path is the directory inside the artifact holding kustomization.yaml. Defaults to the
	// root.
	Path string
}

// DependencyPolicy is the behaviour when a declared dependency reports drift.
type DependencyPolicy struct {
	// OnDrift is Block, Warn (the default) or Ignore: see InfrastructurePackInstance.
	OnDrift OnDriftPolicy
}

// LifecyclePolicies are the pack's deletion rules.
type LifecyclePolicies struct {
	// RetainOnDeletion leaves the delivered objects on the clusters when the pack is deleted;
	// only the instances go.
	RetainOnDeletion bool
}

// InfrastructureClusterPackStatus is the pack's rendered revision and its delivery.
type InfrastructureClusterPackStatus struct {
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64
	// Revision is the number of the rendered revision being delivered.
	Revision int64
	// Version is the pack version of that revision.
	Version string
	// Digest is the sha256 of the rendered objects of that revision.
	Digest string
	// HelmVersion is the version of the Helm SDK that rendered the chart; empty for kustomize
	// and raw packs.
	HelmVersion string
	// ChartVersion is the chart version the chart's version constraint resolved to.
	ChartVersion string
	// History lists the kept rendered revisions, newest first: rollbackToRevision takes one of
	// their numbers.
	History []PackRevision
	// Summary counts the target clusters by phase.
	Summary PackSummary
	// Clusters is the pack's phase on each target cluster.
	Clusters []PackClusterStatus
	// Conditions are Rendered and Ready.
	Conditions []metav1.Condition
}

// PackRevision is one kept rendered revision.
type PackRevision struct {
	// Revision is the revision's number, counting up from 1.
	Revision int64
	// Version is the pack version it was rendered from.
	Version string
	// Digest is the sha256 of its rendered objects.
	Digest string
	// RenderedAt is when it was rendered.
	RenderedAt metav1.Time
}

// PackSummary counts target clusters by phase.
type PackSummary struct {
	// Ready clusters run the current revision.
	Ready int32
	// Progressing clusters are being delivered to or wait for dependencies.
	Progressing int32
	// Drifted clusters have objects that differ from what was delivered.
	Drifted int32
	// Blocked clusters hold delivery because a dependency drifted.
	Blocked int32
	// Failed clusters refused or failed the delivery.
	Failed int32
	// Unreachable clusters could not be reached.
	Unreachable int32
}

// PackClusterStatus is the pack on one target cluster.
type PackClusterStatus struct {
	// Cluster is the target Cluster's name.
	Cluster string
	// Phase is Ready, Progressing, Drifted, Blocked, Failed or Unreachable.
	Phase ClusterPhase
	// Revision is the rendered revision the cluster runs.
	Revision int64
	// Message says why the cluster is not Ready, in one sentence.
	Message string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InfrastructureClusterPackList is a list of InfrastructureClusterPacks.
type InfrastructureClusterPackList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items are the packs.
	Items []InfrastructureClusterPack
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InfrastructurePackInstance records the delivered state of an InfrastructureClusterPack on a
// target cluster (seed 000, verbatim): one per pack per cluster, named {pack}-{cluster} in
// namespace seam-tenant-{cluster}. Written by plinth-controller; never shown to tenants.
type InfrastructurePackInstance struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta

	// Spec is written once at creation; a new delivery updates what it sets (version, chart
	// fields, dependencies). clusterPackRef and targetClusterRef never change.
	Spec InfrastructurePackInstanceSpec
	// Status is the runtime state, written by plinth-controller's delivery and drift passes.
	Status InfrastructurePackInstanceStatus
}

// InfrastructurePackInstanceSpec is the seed's InfrastructurePackInstance specification.
type InfrastructurePackInstanceSpec struct {
	// ClusterPackRef is the name of the InfrastructureClusterPack that was delivered.
	ClusterPackRef string
	// Version is the semantic version of the ClusterPack that was delivered, copied from its
	// spec.version.
	Version string
	// TargetClusterRef is the name of the Cluster the pack was delivered to.
	TargetClusterRef string
	// DependsOn are names of InfrastructurePackInstances (in this namespace) this instance
	// depends on.
	DependsOn []string
	// DependencyPolicy is the behaviour when a declared dependency reports drift.
	DependencyPolicy *DependencyPolicy
	// ChartVersion is the version of the Helm chart delivered. Absent for kustomize and raw
	// packs.
	ChartVersion string
	// ChartURL is the URL of the Helm chart repository. Absent for kustomize and raw packs.
	ChartURL string
	// ChartName is the name of the Helm chart delivered. Absent for kustomize and raw packs.
	ChartName string
	// HelmVersion is the version of the Helm SDK that rendered the pack. Absent for kustomize
	// and raw packs.
	HelmVersion string
}

// InfrastructurePackInstanceStatus is the seed's runtime status, with conditions.
type InfrastructurePackInstanceStatus struct {
	// DeliveredAt is when the pack was last confirmed delivered.
	DeliveredAt *metav1.Time
	// DriftSummary is a human-readable summary of the current drift: the drifted objects and
	// fields, and what Correct mode re-applied.
	DriftSummary string
	// UpgradeDirection is the direction of the last version transition: Initial, Upgrade,
	// Rollback or Redeploy, by comparing [major, minor, patch, revision].
	UpgradeDirection UpgradeDirection
	// DeployedResources are the objects the last delivery applied, replaced on every delivery;
	// deleting the pack removes them.
	DeployedResources []DeployedResource
	// Revision is the pack's rendered revision the cluster runs.
	Revision int64
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64
	// Conditions are Ready, Progressing, Drifted and DependencyBlocked.
	Conditions []metav1.Condition
}

// DeployedResource is one object a delivery applied.
type DeployedResource struct {
	// APIVersion is the object's apiVersion (e.g. apps/v1, v1).
	APIVersion string
	// Kind is the object's kind (e.g. Deployment, Namespace).
	Kind string
	// Namespace is the object's namespace; empty for cluster-scoped objects.
	Namespace string
	// Name is the object's name.
	Name string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InfrastructurePackInstanceList is a list of InfrastructurePackInstances.
type InfrastructurePackInstanceList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items are the instances.
	Items []InfrastructurePackInstance
}

// LocalObjectReference names an object in the pack's namespace.
type LocalObjectReference struct {
	// Name is the object's name.
	Name string
}
