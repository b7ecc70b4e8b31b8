package v1alpha1

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

// Annotations and labels of the GitOps subsystem.
const (
	// ReconcileRequestAnnotation is Flux's "reconcile now" annotation (meta.ReconcileRequestAnnotation),
	// honoured by Flux's objects and, for its Kubectl-engine targets, by an OCIArtifact.
	ReconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"
	// LabelArtifact marks the objects plinth-controller creates on a target cluster for an
	// OCIArtifact (Flux objects or applied manifests): a hash of the artifact's namespace and
	// name, since those may be longer than a label value.
	LabelArtifact = "gitops.plinth.dev/artifact"
	// AnnotationArtifact holds <namespace>/<name> of the OCIArtifact an object on a target was
	// created for.
	AnnotationArtifact = "gitops.plinth.dev/artifact"
	// LabelCluster marks an OCIRegistry created for a Cluster's spec.gitOps.registryEnabled.
	LabelCluster = "gitops.plinth.dev/cluster"
	// ArtifactFinalizer is held by plinth-controller until an OCIArtifact's tag is deleted from
	// its registry and its objects are removed from its targets.
	ArtifactFinalizer = "gitops.plinth.dev/artifact"
	// RegistryFinalizer is held by plinth-controller until an OCIRegistry's server is stopped
	// (and its data removed when spec.deleteDataOnDelete is set).
	RegistryFinalizer = "gitops.plinth.dev/registry"
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

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OCIRegistry is an OCI registry that plinth-controller runs on localhost: the code of the
// registry:3 image (distribution v3), listening on spec.endpoint and storing blobs and
// manifests on the filesystem, where they survive restarts. OCIArtifacts are pushed to it and
// Flux's source-controller pulls from it. A Cluster with spec.gitOps.registryEnabled owns one.
type OCIRegistry struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is where the registry listens and stores its data.
	// +optional
	Spec OCIRegistrySpec `json:"spec,omitempty"`
	// Status is written by plinth-controller.
	// +optional
	Status OCIRegistryStatus `json:"status,omitempty"`
}

// OCIRegistrySpec is where a registry listens and stores its data.
type OCIRegistrySpec struct {
	// Endpoint is where the registry listens and where clients reach it: localhost:<port>,
	// with the same port as spec.port. Defaults to localhost:<port>. Immutable.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Port is the TCP port the registry listens on, 1024-65535. Defaults to the endpoint's port.
	// Immutable.
	// +optional
	Port int32 `json:"port,omitempty"`
	// DataPath is the absolute directory the registry stores blobs and manifests in. It must be
	// under one of plinth-controller's --registry-data-roots. At most one of dataPath and
	// volumeName may be set; with neither, the data lives in a volume named after the registry.
	// Immutable.
	// +optional
	DataPath string `json:"dataPath,omitempty"`
	// VolumeName names a volume for the registry's data: a directory of that name under
	// plinth-controller's volume directory (the local analogue of a container volume), or a
	// PersistentVolumeClaim of that name when the registry runs as a Deployment. Immutable.
	// +optional
	VolumeName string `json:"volumeName,omitempty"`
	// Retention limits how many versions each repository keeps.
	// +optional
	Retention *RetentionPolicy `json:"retention,omitempty"`
	// DeleteDataOnDelete removes the registry's data when the OCIRegistry is deleted. By default
	// the data is kept, so that a registry created again with the same storage serves it again.
	// +optional
	DeleteDataOnDelete bool `json:"deleteDataOnDelete,omitempty"`
}

// RetentionPolicy says which versions a registry keeps.
type RetentionPolicy struct {
	// KeepVersions is how many versions each repository keeps, the newest by semver (the tag
	// "latest" is never counted or removed); older tags are deleted after each push. 0 or
	// unset keeps every version.
	// +optional
	KeepVersions int32 `json:"keepVersions,omitempty"`
}

// OCIRegistryStatus is what plinth-controller observed of a registry.
type OCIRegistryStatus struct {
	// Phase is NotProvisioned, Provisioning (starting; /v2/ does not answer yet), Running
	// (/v2/ answers on the endpoint) or Error (see lastError).
	// +optional
	Phase RegistryPhase `json:"phase,omitempty"`
	// LastError describes the last failure: the port is taken, the data directory cannot be
	// written, the disk is full. Empty while the registry is Running.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// URL is the registry's base URL, http://<endpoint>.
	// +optional
	URL string `json:"url,omitempty"`
	// StoragePath is the directory the registry's data is in.
	// +optional
	StoragePath string `json:"storagePath,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions has Ready: True while the registry answers on /v2/.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OCIRegistryList is a list of OCI registries.
type OCIRegistryList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the registries.
	Items []OCIRegistry `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OCIArtifact is a versioned bundle of Kubernetes manifests that plinth-controller validates,
// packages in Flux's artifact format (as flux push artifact does), pushes to an OCIRegistry and
// delivers to target Clusters: through Flux (an OCIRepository and a Kustomization on the
// target) or by applying the manifests itself (server-side apply with pruning). A pushed version
// is immutable; a new version is a change of spec.version.
type OCIArtifact struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to package, where to push it and where to deliver it.
	// +optional
	Spec OCIArtifactSpec `json:"spec,omitempty"`
	// Status is written by plinth-controller.
	// +optional
	Status OCIArtifactStatus `json:"status,omitempty"`
}

// OCIArtifactSpec is what to package, where to push it and where to deliver it.
type OCIArtifactSpec struct {
	// RegistryRef names the OCIRegistry, in the artifact's namespace, to push to.
	RegistryRef LocalObjectReference `json:"registryRef"`
	// Name is the artifact's logical name, for example workloads/app: lowercase path segments
	// of letters, digits and separators.
	Name string `json:"name"`
	// Repository is the repository path in the registry, for example plinth/workloads/app.
	// Defaults to spec.name.
	// +optional
	Repository string `json:"repository,omitempty"`
	// Version is a semantic version (1.0.3, v1.2.0-rc.1) or latest. Pushing a version is
	// final: the same version with other content is refused with 409 Conflict (except latest,
	// which moves).
	Version string `json:"version"`
	// Tag is the registry tag the version is pushed as. Defaults to spec.version.
	// +optional
	Tag string `json:"tag,omitempty"`
	// Manifests are the Kubernetes objects to package, inline. Each needs apiVersion, kind and
	// metadata.name; no two may have the same kind, namespace and name. Exactly one of
	// manifests and configMapRef is set.
	// +optional
	// +listType=atomic
	Manifests []common.RawObject `json:"manifests,omitempty"`
	// ConfigMapRef names a ConfigMap in the artifact's namespace whose data keys ending in
	// .yaml or .yml are the files of the artifact (the seed's SourcePath, a local
	// directory, has no meaning on a server). plinth-controller reads it at each push.
	// +optional
	ConfigMapRef *LocalObjectReference `json:"configMapRef,omitempty"`
	// Targets are the Clusters to deliver the artifact to, each at most once.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Targets []ArtifactTarget `json:"targets,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name is the object's name.
	Name string `json:"name"`
}

// ArtifactTarget is one Cluster an OCIArtifact is delivered to.
type ArtifactTarget struct {
	// Cluster names a Cluster (platform.plinth.dev). Its spec.gitOps.engine decides how the
	// artifact is delivered.
	Cluster string `json:"cluster"`
	// Namespace is where the Flux OCIRepository and Kustomization are created on the target
	// (engine Flux). Defaults to flux-system.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// TargetNamespace, when set, is the namespace every namespaced object of the artifact is
	// applied in, overriding the manifests' own (Flux's spec.targetNamespace).
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// Path is the directory in the artifact to apply: ./ (or .), its root, the only one an
	// artifact has, since its files are flat; Flux's Kustomization gets it as spec.path, the
	// Kubectl engine applies every file. Defaults to ./.
	// +optional
	Path string `json:"path,omitempty"`
	// Prune deletes from the target the objects a new version no longer contains. Defaults to
	// true.
	// +optional
	Prune *bool `json:"prune,omitempty"`
}

// OCIArtifactStatus is what plinth-controller pushed and delivered.
type OCIArtifactStatus struct {
	// RegistryEndpoint is the endpoint of the registry the artifact was pushed to.
	// +optional
	RegistryEndpoint string `json:"registryEndpoint,omitempty"`
	// URL is where the pushed version is: oci://<endpoint>/<repository>:<tag>.
	// +optional
	URL string `json:"url,omitempty"`
	// Digest is the digest of the pushed OCI manifest, sha256:<hex>.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Revision is the revision annotation of the pushed artifact
	// (org.opencontainers.image.revision): <version>@sha256:<hex of the packaged content>.
	// +optional
	Revision string `json:"revision,omitempty"`
	// PushedVersion is the version the digest belongs to.
	// +optional
	PushedVersion string `json:"pushedVersion,omitempty"`
	// PushedAt is when that version was pushed.
	// +optional
	PushedAt *metav1.Time `json:"pushedAt,omitempty"`
	// Targets is the delivery to each target Cluster.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Targets []ArtifactTargetStatus `json:"targets,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastHandledReconcileAt is the last reconcile.fluxcd.io/requestedAt value plinth-controller
	// handled, as Flux's objects report it.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// Conditions are Pushed (the version is in the registry), Delivered (every target applied
	// it), Ready (both) and, when the tag was found pointing at another manifest than
	// status.digest, TagMoved (the pushed manifest was put back; it stays until another
	// version is pushed).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ArtifactTargetStatus is the delivery of an OCIArtifact to one Cluster.
type ArtifactTargetStatus struct {
	// Cluster is the target Cluster.
	Cluster string `json:"cluster"`
	// Engine is the cluster's GitOps engine the delivery used: Flux or Kubectl.
	// +optional
	Engine string `json:"engine,omitempty"`
	// Prune is the target's spec.prune at its last delivery: when the target is dropped from
	// spec.targets, what it applied is deleted only if it asked for pruning.
	// +optional
	Prune *bool `json:"prune,omitempty"`
	// Ready says whether the target applied the pushed version and it is healthy.
	Ready bool `json:"ready"`
	// Revision is what the target last applied: Flux's Kustomization lastAppliedRevision
	// (<tag>@sha256:<digest>) or, for the Kubectl engine, the same form for what
	// plinth-controller applied.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Message says what is missing when not Ready, in one sentence.
	// +optional
	Message string `json:"message,omitempty"`
	// OCIRepository is the namespace/name of the Flux OCIRepository on the target (engine Flux).
	// +optional
	OCIRepository string `json:"ociRepository,omitempty"`
	// Kustomization is the namespace/name of the Flux Kustomization on the target (engine Flux).
	// +optional
	Kustomization string `json:"kustomization,omitempty"`
	// LastHandledReconcileAt is the last reconcile request the target handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// Inventory lists the objects applied on the target (engine Kubectl), in Flux's inventory
	// form, so that the next version prunes what it drops.
	// +optional
	// +listType=atomic
	Inventory []InventoryEntry `json:"inventory,omitempty"`
}

// InventoryEntry is one applied object, as Flux's Kustomization inventory records it.
type InventoryEntry struct {
	// ID is <namespace>_<name>_<group>_<kind>.
	ID string `json:"id"`
	// Version is the object's API version (without the group).
	Version string `json:"version"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OCIArtifactList is a list of OCI artifacts.
type OCIArtifactList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the artifacts.
	Items []OCIArtifact `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReconciliationRequest is a record of "reconcile now": plinth-controller sets Flux's
// reconcile.fluxcd.io/requestedAt annotation on each target (as flux reconcile does), waits
// until each reports the request handled and is Ready, and records the outcome per target.
// plinth-controller creates Automatic ones after pushing a new version; people create Manual
// ones. The spec is immutable: a request is a record.
type ReconciliationRequest struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what to reconcile.
	// +optional
	Spec ReconciliationRequestSpec `json:"spec,omitempty"`
	// Status is written by plinth-controller.
	// +optional
	Status ReconciliationRequestStatus `json:"status,omitempty"`
}

// ReconciliationRequestSpec is what to reconcile, and when it was asked.
type ReconciliationRequestSpec struct {
	// Targets are the objects to reconcile, at least one and each at most once.
	// +listType=atomic
	Targets []ReconciliationTarget `json:"targets"`
	// Mode is Manual (a person asked) or Automatic (plinth-controller asked after a push).
	// Defaults to Manual.
	// +optional
	Mode ReconciliationMode `json:"mode,omitempty"`
	// RequestedAt is when the reconciliation was asked; it is the value written to each
	// target's reconcile.fluxcd.io/requestedAt annotation. Defaults to the time of creation;
	// a value a client sets must be within 5 minutes of the server's time.
	// +optional
	RequestedAt *metav1.MicroTime `json:"requestedAt,omitempty"`
	// Timeout is how long the targets have to handle the request and be Ready before the
	// request Fails. Defaults to 5m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// ReconciliationTarget names one object to reconcile.
type ReconciliationTarget struct {
	// Cluster names the Cluster the object is on.
	Cluster string `json:"cluster"`
	// Kind is OCIRepository or Kustomization (Flux objects on the cluster), or OCIArtifact (an
	// OCIArtifact in the request's namespace, redelivered to the cluster by its engine).
	Kind string `json:"kind"`
	// Name is the object's name.
	Name string `json:"name"`
	// Namespace is the Flux object's namespace on the cluster. Defaults to flux-system for Flux
	// kinds; must be empty for OCIArtifact.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Revision, when set, is the revision the target must report before the request counts as
	// handled, for example 1.1.0@sha256:<digest>: the OCIRepository's artifact revision, the
	// Kustomization's lastAppliedRevision, the OCIArtifact target's revision. plinth-controller
	// sets it on the Automatic requests it makes after a push, so that such a request succeeds
	// only once the new version is applied.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// ReconciliationRequestStatus is the outcome of a request.
type ReconciliationRequestStatus struct {
	// Phase is Pending, InProgress, Succeeded or Failed.
	// +optional
	Phase ReconciliationPhase `json:"phase,omitempty"`
	// Targets is the outcome per target, in the order of spec.targets.
	// +optional
	// +listType=atomic
	Targets []ReconciliationTargetStatus `json:"targets,omitempty"`
	// CompletionTime is when the request Succeeded or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions has Ready: True when the request Succeeded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReconciliationTargetStatus is the outcome of a request for one target.
type ReconciliationTargetStatus struct {
	// Cluster is the target's Cluster.
	Cluster string `json:"cluster"`
	// Kind is the target's kind.
	Kind string `json:"kind"`
	// Name is the target's name.
	Name string `json:"name"`
	// Namespace is the target's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// HandledAt is when plinth-controller saw the target report the request handled
	// (its status.lastHandledReconcileAt equal to the request's value).
	// +optional
	HandledAt *metav1.Time `json:"handledAt,omitempty"`
	// Ready says whether the target was Ready after handling the request.
	Ready bool `json:"ready"`
	// Revision is the revision the target reported after handling the request (an
	// OCIRepository's artifact revision, a Kustomization's lastAppliedRevision).
	// +optional
	Revision string `json:"revision,omitempty"`
	// Message says what happened, in one sentence.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReconciliationRequestList is a list of reconciliation requests.
type ReconciliationRequestList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the requests.
	Items []ReconciliationRequest `json:"items"`
}
