package v1b1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Workload is a Score workload run by the platform: containers, the resources they depend on and
// the service ports they expose. It is the only kind tenants write; the platform binds its
// resources, plans it for a runtime and reports readiness in status.
type Workload struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired workload, in Score terms.
	// +optional
	Spec WorkloadSpec `json:"spec,omitempty"`
	// Status is what the platform observed; written by the orchestrator only.
	// +optional
	Status WorkloadStatus `json:"status,omitempty"`
}

// WorkloadSpec is a Score workload specification adapted to the Kubernetes API.
type WorkloadSpec struct {
	// Source optionally carries the Score document itself, inline or by reference to a
	// ConfigMap key. Exactly one of inline and configMapRef is set when source is given.
	// When both source and the sections below are given, the sections below win field by
	// field; they exist so that policies and tooling can read a workload without parsing Score.
	// +optional
	Source *WorkloadSource `json:"source,omitempty"`

	// RuntimeClass names the runtime that materializes the workload, for example
	// "kubernetes" or "kubevirt". Empty means the platform chooses (PlatformPolicy defaults).
	// +optional
	RuntimeClass string `json:"runtimeClass,omitempty"`

	// Resources are the workload's dependencies keyed by resource name (a DNS label).
	// Each becomes a ResourceBinding that a resolver provisions; containers refer to their
	// outputs with ${resources.NAME.OUTPUT} placeholders.
	// +optional
	Resources map[string]ResourceSpec `json:"resources,omitempty"`

	// Containers are the workload's containers keyed by container name (a DNS label).
	// A workload without a source needs at least one container.
	// +optional
	Containers map[string]Container `json:"containers,omitempty"`

	// Service declares the network ports the workload exposes.
	// +optional
	Service *ServiceSpec `json:"service,omitempty"`
}

// WorkloadSource is where the Score document comes from. Exactly one field is set.
type WorkloadSource struct {
	// Inline is the Score document (apiVersion score.dev/v1b1, metadata, containers, ...)
	// embedded as an object.
	// +optional
	Inline *common.RawObject `json:"inline,omitempty"`
	// ConfigMapRef names a key of a ConfigMap in the workload's namespace that holds the
	// Score document as YAML or JSON. The controller resolves it; the API checks only its shape.
	// +optional
	ConfigMapRef *ConfigMapKeyReference `json:"configMapRef,omitempty"`
}

// ConfigMapKeyReference selects one key of a ConfigMap in the same namespace.
type ConfigMapKeyReference struct {
	// Name of the ConfigMap.
	Name string `json:"name"`
	// Key within the ConfigMap's data.
	Key string `json:"key"`
}

// ResourceSpec is a Score resource: a dependency the platform provisions for the workload.
type ResourceSpec struct {
	// Type of the resource, for example postgres, redis, dns, route or volume.
	Type string `json:"type"`
	// Class selects a flavour of the type, for example "default" or "large".
	// +optional
	Class string `json:"class,omitempty"`
	// ID shares one resource between workloads: resources with the same type, class and id
	// are the same resource.
	// +optional
	ID string `json:"id,omitempty"`
	// Params are type-specific parameters passed to the resolver.
	// +optional
	Params *common.RawObject `json:"params,omitempty"`
	// Metadata holds annotations for the resolver, as in Score's resource metadata.
	// +optional
	Metadata *common.RawObject `json:"metadata,omitempty"`
}

// Container is one container of the workload.
type Container struct {
	// Image is the OCI image reference to run. Required.
	Image string `json:"image"`
	// Command overrides the image's entrypoint.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// Args overrides the image's arguments.
	// +optional
	// +listType=atomic
	Args []string `json:"args,omitempty"`
	// Variables are environment variables, Score's name for them. Values may contain
	// ${metadata.KEY} and ${resources.NAME.OUTPUT} placeholders; $$ escapes a literal $.
	// Variables and env are the same map: the server copies one to the other when only one
	// is set, and refuses both set and different.
	// +optional
	Variables map[string]string `json:"variables,omitempty"`
	// Env is the seed's name for variables: the same map under the name the Score
	// Orchestrator CRD spec uses. Set either; the server keeps the other in step.
	// +optional
	Env map[string]string `json:"env,omitempty"`
	// Files are files mounted into the container, keyed by target path.
	// +optional
	// +listType=map
	// +listMapKey=target
	Files []ContainerFile `json:"files,omitempty"`
	// Volumes are volumes mounted into the container, keyed by target path.
	// +optional
	// +listType=map
	// +listMapKey=target
	Volumes []ContainerVolume `json:"volumes,omitempty"`
	// Resources are the container's compute requests and limits.
	// +optional
	Resources *ContainerResources `json:"resources,omitempty"`
	// LivenessProbe tells the runtime when to restart the container.
	// +optional
	LivenessProbe *ContainerProbe `json:"livenessProbe,omitempty"`
	// ReadinessProbe tells the runtime when the container can serve traffic.
	// +optional
	ReadinessProbe *ContainerProbe `json:"readinessProbe,omitempty"`
}

// ContainerFile is a file mounted into a container. Exactly one of content, binaryContent
// and source is set.
type ContainerFile struct {
	// Target is the absolute path of the file inside the container.
	Target string `json:"target"`
	// Mode is the file mode in octal, for example "0644".
	// +optional
	Mode string `json:"mode,omitempty"`
	// Content is the file's text. Placeholders are expanded unless noExpand is true.
	// +optional
	Content *string `json:"content,omitempty"`
	// BinaryContent is the file's content, base64 encoded. It is never expanded.
	// +optional
	BinaryContent *string `json:"binaryContent,omitempty"`
	// Source is a path, relative to the Score document, of a file holding the content. Only a
	// workload whose document is kept in a ConfigMap (spec.source.configMapRef) has anything
	// beside its document; any other workload is refused with this field named.
	// +optional
	Source *string `json:"source,omitempty"`
	// NoExpand disables placeholder expansion in content.
	// +optional
	NoExpand bool `json:"noExpand,omitempty"`
}

// ContainerVolume mounts a volume resource into a container.
type ContainerVolume struct {
	// Target is the absolute mount path inside the container.
	Target string `json:"target"`
	// Source names the volume, normally a ${resources.NAME} placeholder.
	Source string `json:"source"`
	// Path is a sub path inside the volume to mount.
	// +optional
	Path string `json:"path,omitempty"`
	// ReadOnly mounts the volume read-only.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
}

// ContainerResources are compute requests and limits.
type ContainerResources struct {
	// Requests is the minimum the container needs.
	// +optional
	Requests *ResourceAmounts `json:"requests,omitempty"`
	// Limits is the most the container may use.
	// +optional
	Limits *ResourceAmounts `json:"limits,omitempty"`
}

// ResourceAmounts are CPU and memory quantities in Kubernetes quantity notation.
type ResourceAmounts struct {
	// CPU, for example "250m" or "1".
	// +optional
	CPU string `json:"cpu,omitempty"`
	// Memory, for example "128Mi".
	// +optional
	Memory string `json:"memory,omitempty"`
}

// ContainerProbe checks a container's health. Exactly one of httpGet and exec is set.
type ContainerProbe struct {
	// HTTPGet probes with an HTTP GET request.
	// +optional
	HTTPGet *HTTPGetProbe `json:"httpGet,omitempty"`
	// Exec probes by running a command in the container.
	// +optional
	Exec *ExecProbe `json:"exec,omitempty"`
}

// HTTPGetProbe is an HTTP GET health check.
type HTTPGetProbe struct {
	// Scheme is HTTP or HTTPS; default HTTP.
	// +optional
	Scheme string `json:"scheme,omitempty"`
	// Host to connect to; defaults to the workload's address.
	// +optional
	Host string `json:"host,omitempty"`
	// Path to request, for example /healthz.
	Path string `json:"path"`
	// Port to connect to, 1-65535.
	Port int32 `json:"port"`
	// HTTPHeaders are extra request headers.
	// +optional
	// +listType=atomic
	HTTPHeaders []HTTPHeader `json:"httpHeaders,omitempty"`
}

// HTTPHeader is one HTTP request header.
type HTTPHeader struct {
	// Name of the header.
	Name string `json:"name"`
	// Value of the header.
	Value string `json:"value"`
}

// ExecProbe runs a command; exit status 0 is healthy.
type ExecProbe struct {
	// Command and its arguments.
	// +listType=atomic
	Command []string `json:"command"`
}

// ServiceSpec is the Score service section.
type ServiceSpec struct {
	// Ports keyed by port name (a DNS label). A port named web, http, https or main, or the
	// only port, becomes the workload's endpoint.
	// +optional
	Ports map[string]ServicePort `json:"ports,omitempty"`
}

// ServicePort is one exposed port.
type ServicePort struct {
	// Port is the port the workload is reached on, 1-65535. Required.
	Port int32 `json:"port"`
	// Protocol is TCP or UDP; default TCP.
	// +optional
	Protocol string `json:"protocol,omitempty"`
	// TargetPort is the container port traffic goes to; defaults to port.
	// +optional
	TargetPort int32 `json:"targetPort,omitempty"`
}

// WorkloadStatus is the user-facing, runtime-neutral view of a workload.
type WorkloadStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Endpoint is the workload's one canonical URL once it is reachable.
	// +optional
	Endpoint *string `json:"endpoint,omitempty"`
	// Conditions are Ready, InputsValid, BindingsReady and RuntimeReady, with reasons from a
	// fixed, runtime-neutral vocabulary (Succeeded, SpecInvalid, PolicyViolation, BindingPending,
	// BindingFailed, ProjectionError, RuntimeSelecting, RuntimeProvisioning, RuntimeDegraded,
	// QuotaExceeded, PermissionDenied, NetworkUnavailable). Ready is True when the other three are.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Bindings summarise each declared resource's binding.
	// +optional
	// +listType=map
	// +listMapKey=key
	Bindings []BindingSummary `json:"bindings,omitempty"`
}

// BindingSummary is the user-facing summary of one resource binding.
type BindingSummary struct {
	// Key is the resource name in spec.resources.
	Key string `json:"key"`
	// Phase is Pending, Binding, Bound or Failed.
	Phase BindingPhase `json:"phase"`
	// Reason is a condition reason from the workload vocabulary.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is one neutral sentence.
	// +optional
	Message string `json:"message,omitempty"`
	// OutputsAvailable is true once the binding's outputs can be consumed.
	// +optional
	OutputsAvailable bool `json:"outputsAvailable,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkloadList is a list of Workloads.
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the workloads.
	Items []Workload `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PlatformPolicy is a platform administrators' rule for the workloads it selects: defaults
// applied when a workload is admitted and constraints it must satisfy. Cluster-scoped and
// hidden from tenants.
type PlatformPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +optional
	Spec PlatformPolicySpec `json:"spec,omitempty"`
	// Status is what the platform observed about the policy.
	// +optional
	Status PlatformPolicyStatus `json:"status,omitempty"`
}

// PlatformPolicySpec selects workloads and says what to default and what to enforce.
type PlatformPolicySpec struct {
	// Selector matches workload labels. An empty or absent selector matches every workload.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// NamespaceSelector matches the labels of the workload's namespace, so a policy can target
	// teams. An absent selector matches every namespace. A Plinth extension of the Score spec.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Defaults are applied to a matching workload when it is admitted, for fields it leaves unset.
	// +optional
	Defaults *PolicyDefaults `json:"defaults,omitempty"`
	// Constraints reject a matching workload that does not satisfy them.
	// +optional
	Constraints *PolicyConstraints `json:"constraints,omitempty"`
	// Priority orders policies: higher priority applies first and wins conflicts; ties are
	// broken by name.
	// +optional
	Priority int32 `json:"priority,omitempty"`
}

// PolicyDefaults are values given to matching workloads that do not set them.
type PolicyDefaults struct {
	// RuntimeClass is used when the workload sets none.
	// +optional
	RuntimeClass string `json:"runtimeClass,omitempty"`
	// Resources are defaults per resource type (the map key), applied to every resource of
	// that type that leaves class or params unset.
	// +optional
	Resources map[string]ResourceDefaults `json:"resources,omitempty"`
	// Annotations are added to the workload when absent.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels are added to the workload when absent.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ResourceDefaults are defaults for resources of one type.
type ResourceDefaults struct {
	// Class is used when the resource sets none.
	// +optional
	Class string `json:"class,omitempty"`
	// Params are used when the resource sets none.
	// +optional
	Params *common.RawObject `json:"params,omitempty"`
}

// PolicyConstraints restrict what a matching workload may declare.
type PolicyConstraints struct {
	// AllowedRuntimeClasses, when non-empty, lists the only runtime classes allowed.
	// +optional
	// +listType=set
	AllowedRuntimeClasses []string `json:"allowedRuntimeClasses,omitempty"`
	// ResourceTypes restricts resource types.
	// +optional
	ResourceTypes *ResourceTypeConstraints `json:"resourceTypes,omitempty"`
	// Images restricts container images.
	// +optional
	Images *ImageConstraints `json:"images,omitempty"`
}

// ResourceTypeConstraints allow or deny resource types. Denied wins over allowed.
type ResourceTypeConstraints struct {
	// Allowed, when non-empty, lists the only resource types allowed.
	// +optional
	// +listType=set
	Allowed []string `json:"allowed,omitempty"`
	// Denied lists resource types that are never allowed.
	// +optional
	// +listType=set
	Denied []string `json:"denied,omitempty"`
}

// ImageConstraints restrict container images.
type ImageConstraints struct {
	// AllowedRegistries, when non-empty, lists registry hosts (optionally with a path prefix)
	// images must come from, for example "registry.example.com" or "ghcr.io/acme".
	// +optional
	// +listType=set
	AllowedRegistries []string `json:"allowedRegistries,omitempty"`
	// RequiredTags, when non-empty, lists tag patterns an image tag must match; "*" is a
	// wildcard, for example "v*". Images pinned by digest satisfy this constraint.
	// +optional
	// +listType=set
	RequiredTags []string `json:"requiredTags,omitempty"`
}

// PlatformPolicyStatus is what the platform observed about a policy.
type PlatformPolicyStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions describe the policy's state, for example Accepted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PlatformPolicyList is a list of PlatformPolicies.
type PlatformPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the policies.
	Items []PlatformPolicy `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Provisioner is one Score resource provisioner in score-k8s's provisioner file format: the
// entry of a score-k8s provisioners file, unchanged, under spec. Platform administrators apply
// them to add resource types, or to replace the built-in provisioner of a type, class or id,
// without restarting plinth-controller. Cluster-scoped and hidden from tenants.
type Provisioner struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the provisioner, with the field names of score-k8s's file format.
	// +optional
	Spec ProvisionerSpec `json:"spec,omitempty"`
}

// ProvisionerSpec is one template provisioner. Each template is a Go text/template with the
// sprig functions and encodeSecretRef; init, state, shared and outputs evaluate to a YAML map,
// manifests to a YAML list of Kubernetes objects. Templates see .Type, .Class, .Id, .Uid,
// .Guid, .Params, .Metadata, .Init, .State, .Shared, .SourceWorkload, .WorkloadMetadata,
// .WorkloadServices and .Namespace.
type ProvisionerSpec struct {
	// URI identifies the provisioner; its scheme says how it runs. Only template:// is
	// served: plinth-controller runs no commands, so cmd:// is refused.
	URI string `json:"uri"`
	// Type is the resource type the provisioner provides, for example postgres. Required.
	Type string `json:"type"`
	// Class, when set, restricts the provisioner to resources of that class; unset (null)
	// matches any class.
	// +optional
	Class *string `json:"class,omitempty"`
	// ID, when set, restricts the provisioner to the shared resource with that id; unset
	// (null) matches any resource.
	// +optional
	ID *string `json:"id,omitempty"`
	// Description says what the provisioner provides; kubectl get prints it.
	// +optional
	Description string `json:"description,omitempty"`
	// Init is evaluated first, to a map of working values the later templates read as .Init.
	// +optional
	Init string `json:"init,omitempty"`
	// State is evaluated to the resource's new state, read as .State; it persists between
	// reconciles (in a Secret, since it often holds generated passwords).
	// +optional
	State string `json:"state,omitempty"`
	// Shared is evaluated to changes merged into the state shared by every resource of the
	// namespace, read as .Shared; it persists in a Secret.
	// +optional
	Shared string `json:"shared,omitempty"`
	// Outputs is evaluated to the resource's outputs, which workloads read with
	// ${resources.NAME.OUTPUT}. An output made with encodeSecretRef is a Secret key and
	// reaches containers only as a secretKeyRef.
	// +optional
	Outputs string `json:"outputs,omitempty"`
	// Manifests is evaluated to a list of Kubernetes objects that plinth-controller applies
	// in the workload's namespace, owned by the resource's binding.
	// +optional
	Manifests string `json:"manifests,omitempty"`
	// ExpectedOutputs lists the outputs the provisioner promises.
	// +optional
	// +listType=set
	ExpectedOutputs []string `json:"expected_outputs,omitempty"`
	// SupportedParams lists the params the provisioner reads.
	// +optional
	// +listType=set
	SupportedParams []string `json:"supported_params,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProvisionerList is a list of Provisioners.
type ProvisionerList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the provisioners.
	Items []Provisioner `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ResourceBinding is the contract between the orchestrator and a resolver for one resource
// of one workload: the orchestrator writes spec, the resolver provisions the resource and
// publishes outputs in status. Internal: hidden from tenants.
type ResourceBinding struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. Owned by its Workload.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the requested resource.
	// +optional
	Spec ResourceBindingSpec `json:"spec,omitempty"`
	// Status is the resolver's progress and the resource's outputs.
	// +optional
	Status ResourceBindingStatus `json:"status,omitempty"`
}

// ResourceBindingSpec is the resource a workload asks for.
type ResourceBindingSpec struct {
	// WorkloadRef is the owning workload.
	WorkloadRef WorkloadReference `json:"workloadRef"`
	// ResourceKey is the resource's name in the workload's spec.resources.
	ResourceKey string `json:"resourceKey"`
	// Type of the resource, for example postgres. Required.
	Type string `json:"type"`
	// Class of the resource.
	// +optional
	Class string `json:"class,omitempty"`
	// ID of a shared resource.
	// +optional
	ID string `json:"id,omitempty"`
	// Params are the type-specific parameters.
	// +optional
	Params *common.RawObject `json:"params,omitempty"`
	// Metadata is the resource's Score metadata (annotations for the provisioner), which
	// template provisioners read as .Metadata.
	// +optional
	Metadata *common.RawObject `json:"metadata,omitempty"`
	// Provisioner identifies the resolver that handles this binding. Empty until a resolver
	// claims it.
	// +optional
	Provisioner string `json:"provisioner,omitempty"`
}

// WorkloadReference points at a workload in the same namespace by name and UID.
type WorkloadReference struct {
	// Name of the workload.
	Name string `json:"name"`
	// UID of the workload, so a recreated workload of the same name is not confused with it.
	// +optional
	UID string `json:"uid,omitempty"`
}

// BindingPhase is the lifecycle phase of a binding: Pending → Binding → Bound | Failed.
// +enum
type BindingPhase string

// Binding phases.
const (
	// BindingPhasePending means no resolver has started.
	BindingPhasePending BindingPhase = "Pending"
	// BindingPhaseBinding means provisioning is in progress.
	BindingPhaseBinding BindingPhase = "Binding"
	// BindingPhaseBound means the resource exists and its outputs are published.
	BindingPhaseBound BindingPhase = "Bound"
	// BindingPhaseFailed means provisioning failed.
	BindingPhaseFailed BindingPhase = "Failed"
)

// ResourceBindingStatus is written by the resolver.
type ResourceBindingStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Pending, Binding, Bound or Failed.
	// +optional
	Phase BindingPhase `json:"phase,omitempty"`
	// Conditions are Ready, Provisioned and OutputsAvailable.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Outputs are the resource's outputs in standard shapes. Credentials are never inlined:
	// they are references to Secrets.
	// +optional
	Outputs *BindingOutputs `json:"outputs,omitempty"`
	// BindingTime is when the binding became Bound.
	// +optional
	BindingTime *metav1.Time `json:"bindingTime,omitempty"`
	// ProvisionerInfo describes the resolver that bound the resource.
	// +optional
	ProvisionerInfo *ProvisionerInfo `json:"provisionerInfo,omitempty"`
}

// BindingOutputs are a bound resource's outputs.
type BindingOutputs struct {
	// ConnectionString is non-secret connection information, for example a host:port.
	// +optional
	ConnectionString string `json:"connectionString,omitempty"`
	// Endpoint is the resource's URI.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Credentials reference the Secret that holds secret outputs.
	// +optional
	Credentials *CredentialsReference `json:"credentials,omitempty"`
	// Certificates reference the ConfigMap that holds certificates.
	// +optional
	Certificates *CertificatesReference `json:"certificates,omitempty"`
	// Metadata holds the remaining non-secret outputs by name, for example host and port.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
	// Secrets are secret outputs by name, each a key of a Secret in the binding's namespace
	// (what a provisioner marks with encodeSecretRef). Containers receive them as
	// secretKeyRefs; their values never appear in the API.
	// +optional
	Secrets map[string]SecretKeyReference `json:"secrets,omitempty"`
}

// CredentialsReference points at credentials.
type CredentialsReference struct {
	// SecretRef is the Secret key holding the credentials.
	SecretRef *SecretKeyReference `json:"secretRef,omitempty"`
}

// SecretKeyReference selects a Secret, and optionally one key of it, in the same namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	Name string `json:"name"`
	// Key within the Secret; empty means the whole Secret.
	// +optional
	Key string `json:"key,omitempty"`
}

// CertificatesReference points at certificates.
type CertificatesReference struct {
	// ConfigMapRef is the ConfigMap key holding the certificates.
	ConfigMapRef *ConfigMapKeyReference `json:"configMapRef,omitempty"`
}

// ProvisionerInfo identifies a resolver.
type ProvisionerInfo struct {
	// Controller is the resolver's name.
	// +optional
	Controller string `json:"controller,omitempty"`
	// Version is the resolver's version.
	// +optional
	Version string `json:"version,omitempty"`
	// Metadata is resolver-specific information.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ResourceBindingList is a list of ResourceBindings.
type ResourceBindingList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the bindings.
	Items []ResourceBinding `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkloadPlan is the orchestrator's execution plan for one workload, with placeholders
// resolved, for the runtime named by runtimeClass to materialize. Same name and namespace as
// its Workload, which owns it. Internal: hidden from tenants; runtimes only read it.
type WorkloadPlan struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the plan.
	// +optional
	Spec WorkloadPlanSpec `json:"spec,omitempty"`
	// Status is the runtime's progress.
	// +optional
	Status WorkloadPlanStatus `json:"status,omitempty"`
}

// WorkloadPlanSpec is the plan for one workload generation.
type WorkloadPlanSpec struct {
	// WorkloadRef is the source workload and the generation the plan was made from.
	WorkloadRef PlanWorkloadReference `json:"workloadRef"`
	// RuntimeClass names the runtime that materializes the plan. Required.
	RuntimeClass string `json:"runtimeClass"`
	// Projection is the workload as the runtime should run it.
	// +optional
	Projection WorkloadProjection `json:"projection,omitempty"`
	// Bindings summarise the dependencies the plan needs.
	// +optional
	// +listType=map
	// +listMapKey=key
	Bindings []PlanBinding `json:"bindings,omitempty"`
	// Metadata is added to what the runtime creates.
	// +optional
	Metadata *PlanMetadata `json:"metadata,omitempty"`
}

// PlanWorkloadReference points at the source workload at one generation.
type PlanWorkloadReference struct {
	// Name of the workload.
	Name string `json:"name"`
	// UID of the workload.
	// +optional
	UID string `json:"uid,omitempty"`
	// Generation of the workload the plan was made from.
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// WorkloadProjection is the runtime-ready form of the workload.
type WorkloadProjection struct {
	// Containers keyed by container name.
	// +optional
	Containers map[string]ContainerProjection `json:"containers,omitempty"`
	// Service is the exposed ports, if any.
	// +optional
	Service *ServiceProjection `json:"service,omitempty"`
	// Networking is ingress and network policy, if any.
	// +optional
	Networking *NetworkingProjection `json:"networking,omitempty"`
}

// ContainerProjection is one container with its environment mapped from bindings.
type ContainerProjection struct {
	// Image to run.
	Image string `json:"image"`
	// Command overrides the entrypoint.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// Args overrides the arguments.
	// +optional
	// +listType=atomic
	Args []string `json:"args,omitempty"`
	// Env are the environment variables, static or taken from binding outputs.
	// +optional
	// +listType=map
	// +listMapKey=name
	Env []EnvProjection `json:"env,omitempty"`
	// Volumes are the volume mounts.
	// +optional
	// +listType=map
	// +listMapKey=target
	Volumes []ContainerVolume `json:"volumes,omitempty"`
	// Files are the file mounts. Their content keeps Score syntax: placeholders are filled
	// in with every $ of a filled-in value doubled, and $$ escapes are kept, so the runtime
	// undoes the escapes exactly once.
	// +optional
	// +listType=map
	// +listMapKey=target
	Files []ContainerFile `json:"files,omitempty"`
	// Resources are the compute requests and limits.
	// +optional
	Resources *ContainerResources `json:"resources,omitempty"`
	// LivenessProbe is the liveness check.
	// +optional
	LivenessProbe *ContainerProbe `json:"livenessProbe,omitempty"`
	// ReadinessProbe is the readiness check.
	// +optional
	ReadinessProbe *ContainerProbe `json:"readinessProbe,omitempty"`
}

// EnvProjection is one environment variable: a static value or a binding output.
// Exactly one of value and from is set.
type EnvProjection struct {
	// Name of the variable.
	Name string `json:"name"`
	// Value is a static value.
	// +optional
	Value *string `json:"value,omitempty"`
	// From takes the value from a binding output.
	// +optional
	From *BindingOutputSource `json:"from,omitempty"`
}

// BindingOutputSource names one output of one binding.
type BindingOutputSource struct {
	// BindingKey is the resource key of the binding.
	BindingKey string `json:"bindingKey"`
	// OutputKey is the output's name, for example host or password.
	OutputKey string `json:"outputKey"`
}

// ServiceProjection is the service the runtime exposes.
type ServiceProjection struct {
	// Ports keyed by port name.
	// +optional
	Ports map[string]ServicePort `json:"ports,omitempty"`
	// Annotations are added to the runtime's service object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NetworkingProjection is ingress and network policy for the workload.
type NetworkingProjection struct {
	// Ingress rules routing external traffic to the workload.
	// +optional
	// +listType=atomic
	Ingress []IngressRule `json:"ingress,omitempty"`
	// Policies are runtime network policies, opaque to the orchestrator.
	// +optional
	// +listType=atomic
	Policies []common.RawObject `json:"policies,omitempty"`
}

// IngressRule routes a host and path to a service port.
type IngressRule struct {
	// Host is the DNS name.
	Host string `json:"host"`
	// Path is the URL path prefix; default "/".
	// +optional
	Path string `json:"path,omitempty"`
	// Port is the service port number.
	Port int32 `json:"port"`
}

// PlanBinding is one dependency the plan needs.
type PlanBinding struct {
	// Key is the resource key.
	Key string `json:"key"`
	// Type is the resource type.
	// +optional
	Type string `json:"type,omitempty"`
	// Outputs are the output names the plan uses.
	// +optional
	// +listType=set
	Outputs []string `json:"outputs,omitempty"`
	// Critical means the workload cannot start without this binding.
	// +optional
	Critical bool `json:"critical,omitempty"`
}

// OwnershipMode says who owns what the runtime creates.
// +enum
type OwnershipMode string

// Ownership modes.
const (
	// OwnershipModeController means the runtime owns and overwrites the objects.
	OwnershipModeController OwnershipMode = "controller"
	// OwnershipModeUser means users own the objects and the runtime only creates them.
	OwnershipModeUser OwnershipMode = "user"
	// OwnershipModeShared means ownership is shared through server-side apply field managers.
	OwnershipModeShared OwnershipMode = "shared"
)

// PlanMetadata is metadata for what the runtime creates.
type PlanMetadata struct {
	// Labels to add.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations to add.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// OwnershipMode is controller, user or shared.
	// +optional
	OwnershipMode OwnershipMode `json:"ownershipMode,omitempty"`
}

// PlanPhase is the lifecycle phase of a plan.
// +enum
type PlanPhase string

// Plan phases.
const (
	// PlanPhasePending means the runtime has not started.
	PlanPhasePending PlanPhase = "Pending"
	// PlanPhasePlanning means the runtime is working on the plan.
	PlanPhasePlanning PlanPhase = "Planning"
	// PlanPhaseProjected means the runtime materialized the plan.
	PlanPhaseProjected PlanPhase = "Projected"
	// PlanPhaseFailed means the runtime could not materialize the plan.
	PlanPhaseFailed PlanPhase = "Failed"
)

// WorkloadPlanStatus is the runtime's report.
type WorkloadPlanStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Pending, Planning, Projected or Failed.
	// +optional
	Phase PlanPhase `json:"phase,omitempty"`
	// Conditions are the runtime's conditions.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// RuntimeInfo is runtime-specific and opaque to the orchestrator.
	// +optional
	RuntimeInfo *RuntimeInfo `json:"runtimeInfo,omitempty"`
	// LastProjectedTime is when the plan was last materialized successfully.
	// +optional
	LastProjectedTime *metav1.Time `json:"lastProjectedTime,omitempty"`
}

// RuntimeInfo is runtime-specific status.
type RuntimeInfo struct {
	// Controller is the runtime's name.
	// +optional
	Controller string `json:"controller,omitempty"`
	// State is the runtime's own state word.
	// +optional
	State string `json:"state,omitempty"`
	// Metadata is runtime-specific information.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkloadPlanList is a list of WorkloadPlans.
type WorkloadPlanList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the plans.
	Items []WorkloadPlan `json:"items"`
}
