package gitops

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// RegistryPhase is where an OCIRegistry is in its lifecycle (the seed's registry status).
type RegistryPhase string

const (
	// RegistryPhaseNotProvisioned means plinth-controller has not started the registry yet.
	RegistryPhaseNotProvisioned RegistryPhase = "NotProvisioned"
	// RegistryPhaseProvisioning means the registry is starting and its /v2/ does not answer yet.
	RegistryPhaseProvisioning RegistryPhase = "Provisioning"
	// RegistryPhaseRunning means the registry listens on its endpoint and /v2/ answers.
	RegistryPhaseRunning RegistryPhase = "Running"
	// RegistryPhaseError means the registry could not start or stopped serving; lastError says
	// why.
	RegistryPhaseError RegistryPhase = "Error"
)

// ReconciliationPhase is where a ReconciliationRequest is.
type ReconciliationPhase string

const (
	// ReconciliationPending means plinth-controller has not annotated the targets yet.
	ReconciliationPending ReconciliationPhase = "Pending"
	// ReconciliationInProgress means the targets are annotated and not all have handled it.
	ReconciliationInProgress ReconciliationPhase = "InProgress"
	// ReconciliationSucceeded means every target handled the request and is Ready.
	ReconciliationSucceeded ReconciliationPhase = "Succeeded"
	// ReconciliationFailed means a target does not exist, could not be reached, or did not
	// handle the request and become Ready within spec.timeout.
	ReconciliationFailed ReconciliationPhase = "Failed"
)

// ReconciliationMode says who asked for a reconciliation (the seed's Mode).
type ReconciliationMode string

const (
	// ReconciliationModeAutomatic is a request plinth-controller made itself, after pushing a
	// new version of an OCIArtifact.
	ReconciliationModeAutomatic ReconciliationMode = "Automatic"
	// ReconciliationModeManual is a request a person made ("reconcile now").
	ReconciliationModeManual ReconciliationMode = "Manual"
)

// Kinds a ReconciliationRequest may target.
const (
	// TargetKindOCIRepository is Flux's source.toolkit.fluxcd.io/v1 OCIRepository.
	TargetKindOCIRepository = "OCIRepository"
	// TargetKindKustomization is Flux's kustomize.toolkit.fluxcd.io/v1 Kustomization.
	TargetKindKustomization = "Kustomization"
	// TargetKindOCIArtifact is an OCIArtifact in the request's namespace: its delivery to the
	// cluster is redone, whatever the cluster's engine (Flux: both objects are annotated;
	// Kubectl: the manifests are applied again).
	TargetKindOCIArtifact = "OCIArtifact"
)

// Condition types of the gitops.plinth.dev kinds.
const (
	// ConditionReady is True when an OCIRegistry serves, when an OCIArtifact is pushed and
	// every target has applied it, and when a ReconciliationRequest succeeded.
	ConditionReady = "Ready"
	// ConditionPushed is True when the OCIArtifact's current version is in the registry.
	ConditionPushed = "Pushed"
	// ConditionDelivered is True when every target has applied the pushed version.
	ConditionDelivered = "Delivered"
)

// Defaults.
const (
	// DefaultFluxNamespace is where the Flux objects of a target go unless it names another.
	DefaultFluxNamespace = "flux-system"
	// DefaultPath is the path in the artifact a Kustomization applies.
	DefaultPath = "./"
	// LatestVersion is the one version that is not semver: it may be pushed again with new
	// content, as the tag "latest" conventionally moves.
	LatestVersion = "latest"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OCIRegistry is an OCI registry that plinth-controller runs on localhost: the code of the
// registry:3 image (distribution v3), listening on spec.endpoint and storing blobs and
// manifests on the filesystem, where they survive restarts. OCIArtifacts are pushed to it and
// Flux's source-controller pulls from it. A Cluster with spec.gitOps.registryEnabled owns one.
type OCIRegistry struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta

	// Spec is where the registry listens and stores its data.
	Spec OCIRegistrySpec
	// Status is written by plinth-controller.
	Status OCIRegistryStatus
}

// OCIRegistrySpec is where a registry listens and stores its data.
type OCIRegistrySpec struct {
	// Endpoint is where the registry listens and where clients reach it: localhost:<port>,
	// with the same port as spec.port. Defaults to localhost:<port>. Immutable.
	Endpoint string
	// Port is the TCP port the registry listens on, 1024-65535. Defaults to the endpoint's port.
	// Immutable.
	Port int32
	// DataPath is the absolute directory the registry stores blobs and manifests in. It must be
	// under one of plinth-controller's --registry-data-roots. At most one of dataPath and
	// volumeName may be set; with neither, the data lives in a volume named after the registry.
	// Immutable.
	DataPath string
	// VolumeName names a volume for the registry's data: a directory of that name under
	// plinth-controller's volume directory (the local analogue of a container volume), or a
	// PersistentVolumeClaim of that name when the registry runs as a Deployment. Immutable.
	VolumeName string
	// Retention limits how many versions each repository keeps.
	Retention *RetentionPolicy
	// DeleteDataOnDelete removes the registry's data when the OCIRegistry is deleted. By default
	// the data is kept, so that a registry created again with the same storage serves it again.
	DeleteDataOnDelete bool
}

// RetentionPolicy says which versions a registry keeps.
type RetentionPolicy struct {
	// KeepVersions is how many versions each repository keeps, the newest by semver (the tag
	// "latest" is never counted or removed); older tags are deleted after each push. 0 or
	// unset keeps every version.
	KeepVersions int32
}

// OCIRegistryStatus is what plinth-controller observed of a registry.
type OCIRegistryStatus struct {
	// Phase is NotProvisioned, Provisioning (starting; /v2/ does not answer yet), Running
	// (/v2/ answers on the endpoint) or Error (see lastError).
	Phase RegistryPhase
	// LastError describes the last failure: the port is taken, the data directory cannot be
	// written, the disk is full. Empty while the registry is Running.
	LastError string
	// URL is the registry's base URL, http://<endpoint>.
	URL string
	// StoragePath is the directory the registry's data is in.
	StoragePath string
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64
	// Conditions has Ready: True while the registry answers on /v2/.
	Conditions []metav1.Condition
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OCIRegistryList is a list of OCI registries.
type OCIRegistryList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items are the registries.
	Items []OCIRegistry
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OCIArtifact is a versioned bundle of Kubernetes manifests that plinth-controller validates,
// packages in Flux's artifact format (as flux push artifact does), pushes to an OCIRegistry and
// delivers to target Clusters: through Flux (an OCIRepository and a Kustomization on the
// target) or by applying the manifests itself (server-side apply with pruning). A pushed version
// is immutable; a new version is a change of spec.version.
type OCIArtifact struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta

	// Spec is what to package, where to push it and where to deliver it.
	Spec OCIArtifactSpec
	// Status is written by plinth-controller.
	Status OCIArtifactStatus
}

// OCIArtifactSpec is what to package, where to push it and where to deliver it.
type OCIArtifactSpec struct {
	// RegistryRef names the OCIRegistry, in the artifact's namespace, to push to.
	RegistryRef LocalObjectReference
	// Name is the artifact's logical name, for example workloads/app: lowercase path segments
	// of letters, digits and separators.
	Name string
	// Repository is the repository path in the registry, for example plinth/workloads/app.
	// Defaults to spec.name.
	Repository string
	// Version is a semantic version (1.0.3, v1.2.0-rc.1) or latest. Pushing a version is
	// final: the same version with other content is refused with 409 Conflict (except latest,
	// which moves).
	Version string
	// Tag is the registry tag the version is pushed as. Defaults to spec.version.
	Tag string
	// Manifests are the Kubernetes objects to package, inline. Each needs apiVersion, kind and
	// metadata.name; no two may have the same kind, namespace and name. Exactly one of
	// manifests and configMapRef is set.
	Manifests []common.RawObject
	// ConfigMapRef names a ConfigMap in the artifact's namespace whose data keys ending in
	// .yaml or .yml are the files of the artifact (the seed's SourcePath, a local
	// directory, has no meaning on a server). plinth-controller reads it at each push.
	ConfigMapRef *LocalObjectReference
	// Targets are the Clusters to deliver the artifact to, each at most once.
	Targets []ArtifactTarget
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name is the object's name.
	Name string
}

// ArtifactTarget is one Cluster an OCIArtifact is delivered to.
type ArtifactTarget struct {
	// Cluster names a Cluster (platform.plinth.dev). Its spec.gitOps.engine decides how the
	// artifact is delivered.
	Cluster string
	// Namespace is where the Flux OCIRepository and Kustomization are created on the target
	// (engine Flux). Defaults to flux-system.
	Namespace string
	// TargetNamespace, when set, is the namespace every namespaced object of the artifact is
	// applied in, overriding the manifests' own (Flux's spec.targetNamespace).
	TargetNamespace string
	// Path is the directory in the artifact to apply: ./ (or .), its root, the only one an
	// artifact has, since its files are flat; Flux's Kustomization gets it as spec.path, the
	// Kubectl engine applies every file. Defaults to ./.
	Path string
	// Prune deletes from the target the objects a new version no longer contains. Defaults to
	// true.
	Prune *bool
}

// OCIArtifactStatus is what plinth-controller pushed and delivered.
type OCIArtifactStatus struct {
	// RegistryEndpoint is the endpoint of the registry the artifact was pushed to.
	RegistryEndpoint string
	// URL is where the pushed version is: oci://<endpoint>/<repository>:<tag>.
	URL string
	// Digest is the digest of the pushed OCI manifest, sha256:<hex>.
	Digest string
	// Revision is the revision annotation of the pushed artifact
	// (org.opencontainers.image.revision): <version>@sha256:<hex of the packaged content>.
	Revision string
	// PushedVersion is the version the digest belongs to.
	PushedVersion string
	// PushedAt is when that version was pushed.
	PushedAt *metav1.Time
	// Targets is the delivery to each target Cluster.
	Targets []ArtifactTargetStatus
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64
	// LastHandledReconcileAt is the last reconcile.fluxcd.io/requestedAt value plinth-controller
	// handled, as Flux's objects report it.
	LastHandledReconcileAt string
	// Conditions are Pushed (the version is in the registry), Delivered (every target applied
	// it), Ready (both) and TagMoved (the tag was found on another manifest and put back).
	Conditions []metav1.Condition
}

// ArtifactTargetStatus is the delivery of an OCIArtifact to one Cluster.
type ArtifactTargetStatus struct {
	// Cluster is the target Cluster.
	Cluster string
	// Engine is the cluster's GitOps engine the delivery used: Flux or Kubectl.
	Engine string
	// Prune is the target's spec.prune at its last delivery: when the target is dropped from
	// spec.targets, what it applied is deleted only if it asked for pruning.
	Prune *bool
	// Ready says whether the target applied the pushed version and it is healthy.
	Ready bool
	// Revision is what the target last applied: Flux's Kustomization lastAppliedRevision
	// (<tag>@sha256:<digest>) or, for the Kubectl engine, the same form for what
	// plinth-controller applied.
	Revision string
	// Message says what is missing when not Ready, in one sentence.
	Message string
	// OCIRepository is the namespace/name of the Flux OCIRepository on the target (engine Flux).
	OCIRepository string
	// Kustomization is the namespace/name of the Flux Kustomization on the target (engine Flux).
	Kustomization string
	// LastHandledReconcileAt is the last reconcile request the target handled.
	LastHandledReconcileAt string
	// Inventory lists the objects applied on the target (engine Kubectl), in Flux's inventory
	// form, so that the next version prunes what it drops.
	Inventory []InventoryEntry
}

// InventoryEntry is one applied object, as Flux's Kustomization inventory records it.
type InventoryEntry struct {
	// ID is <namespace>_<name>_<group>_<kind>.
	ID string
	// Version is the object's API version (without the group).
	Version string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OCIArtifactList is a list of OCI artifacts.
type OCIArtifactList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items are the artifacts.
	Items []OCIArtifact
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReconciliationRequest is a record of "reconcile now": plinth-controller sets Flux's
// reconcile.fluxcd.io/requestedAt annotation on each target (as flux reconcile does), waits
// until each reports the request handled and is Ready, and records the outcome per target.
// plinth-controller creates Automatic ones after pushing a new version; people create Manual
// ones. The spec is immutable: a request is a record.
type ReconciliationRequest struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta

	// Spec is what to reconcile.
	Spec ReconciliationRequestSpec
	// Status is written by plinth-controller.
	Status ReconciliationRequestStatus
}

// ReconciliationRequestSpec is what to reconcile, and when it was asked.
type ReconciliationRequestSpec struct {
	// Targets are the objects to reconcile, at least one and each at most once.
	Targets []ReconciliationTarget
	// Mode is Manual (a person asked) or Automatic (plinth-controller asked after a push).
	// Defaults to Manual.
	Mode ReconciliationMode
	// RequestedAt is when the reconciliation was asked; it is the value written to each
	// target's reconcile.fluxcd.io/requestedAt annotation. Defaults to the time of creation;
	// a value a client sets must be within 5 minutes of the server's time.
	RequestedAt *metav1.MicroTime
	// Timeout is how long the targets have to handle the request and be Ready before the
	// request Fails. Defaults to 5m.
	Timeout *metav1.Duration
}

// ReconciliationTarget names one object to reconcile.
type ReconciliationTarget struct {
	// Cluster names the Cluster the object is on.
	Cluster string
	// Kind is OCIRepository or Kustomization (Flux objects on the cluster), or OCIArtifact (an
	// OCIArtifact in the request's namespace, redelivered to the cluster by its engine).
	Kind string
	// Name is the object's name.
	Name string
	// Namespace is the Flux object's namespace on the cluster. Defaults to flux-system for Flux
	// kinds; must be empty for OCIArtifact.
	Namespace string
	// Revision, when set, is the revision the target must report before the request counts as
	// handled.
	Revision string
}

// ReconciliationRequestStatus is the outcome of a request.
type ReconciliationRequestStatus struct {
	// Phase is Pending, InProgress, Succeeded or Failed.
	Phase ReconciliationPhase
	// Targets is the outcome per target, in the order of spec.targets.
	Targets []ReconciliationTargetStatus
	// CompletionTime is when the request Succeeded or Failed.
	CompletionTime *metav1.Time
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64
	// Conditions has Ready: True when the request Succeeded.
	Conditions []metav1.Condition
}

// ReconciliationTargetStatus is the outcome of a request for one target.
type ReconciliationTargetStatus struct {
	// Cluster is the target's Cluster.
	Cluster string
	// Kind is the target's kind.
	Kind string
	// Name is the target's name.
	Name string
	// Namespace is the target's namespace.
	Namespace string
	// HandledAt is when plinth-controller saw the target report the request handled
	// (its status.lastHandledReconcileAt equal to the request's value).
	HandledAt *metav1.Time
	// Ready says whether the target was Ready after handling the request.
	Ready bool
	// Revision is the revision the target reported after handling the request (an
	// OCIRepository's artifact revision, a Kustomization's lastAppliedRevision).
	Revision string
	// Message says what happened, in one sentence.
	Message string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReconciliationRequestList is a list of reconciliation requests.
type ReconciliationRequestList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items are the requests.
	Items []ReconciliationRequest
}
