package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// TenantComputePhase is where a TenantCompute is in its lifecycle.
type TenantComputePhase string

const (
	// PhaseRequested means the object is stored and no provider has acted on it yet.
	PhaseRequested TenantComputePhase = "Requested"
	// PhaseProvisioning means the provider is creating the tenant's compute.
	PhaseProvisioning TenantComputePhase = "Provisioning"
	// PhaseReady means the compute runs as the spec asks.
	PhaseReady TenantComputePhase = "Ready"
	// PhaseUpdating means a spec change is being rolled out.
	PhaseUpdating TenantComputePhase = "Updating"
	// PhaseDeleting means the object is being deleted and the provider is destroying the compute.
	PhaseDeleting TenantComputePhase = "Deleting"
	// PhaseFailed means the provider failed five times in a row; a spec change starts again.
	PhaseFailed TenantComputePhase = "Failed"
	// PhaseStopped means spec.suspended is set and the compute is stopped.
	PhaseStopped TenantComputePhase = "Stopped"
	// PhaseArchived means spec.archived is set: the compute is destroyed, the object and its
	// history are kept.
	PhaseArchived TenantComputePhase = "Archived"
)

// ComputeState is the state of a tenant's deployment as its provider reports it (the seed's
// ComputeState).
type ComputeState string

const (
	ComputeStateRunning  ComputeState = "running"
	ComputeStateStopped  ComputeState = "stopped"
	ComputeStateStarting ComputeState = "starting"
	ComputeStateStopping ComputeState = "stopping"
	ComputeStateFailed   ComputeState = "failed"
	ComputeStateUnknown  ComputeState = "unknown"
)

// HealthStatus is the overall health of a tenant's compute (the seed's HealthStatus).
type HealthStatus string

const (
	HealthStatusHealthy   HealthStatus = "healthy"
	HealthStatusUnhealthy HealthStatus = "unhealthy"
	HealthStatusUnknown   HealthStatus = "unknown"
)

// ProvisionStatus is the outcome of a provision operation (the seed's ProvisionStatus).
type ProvisionStatus string

const (
	ProvisionStatusSuccess    ProvisionStatus = "success"
	ProvisionStatusInProgress ProvisionStatus = "in_progress"
	ProvisionStatusFailed     ProvisionStatus = "failed"
)

// UpdateStatus is the outcome of an update operation (the seed's UpdateStatus).
type UpdateStatus string

const (
	UpdateStatusSuccess    UpdateStatus = "success"
	UpdateStatusNoChanges  UpdateStatus = "no_changes"
	UpdateStatusInProgress UpdateStatus = "in_progress"
	UpdateStatusFailed     UpdateStatus = "failed"
)

// Protocols of a port mapping.
const (
	ProtocolTCP = "tcp"
	ProtocolUDP = "udp"
)

// Health-check types.
const (
	HealthCheckHTTP = "http"
	HealthCheckTCP  = "tcp"
	HealthCheckExec = "exec"
)

// Secret sources Plinth's built-in providers know.
const (
	// SecretSourceKubernetes is a key of a Secret in namespace tenant-<tenantID> on the target
	// cluster, which the people who may edit the TenantCompute's namespace may write there on
	// the default cluster.
	SecretSourceKubernetes = "kubernetes-secret"
)

// ReconcileRequestedAnnotation asks plinth-controller to check a TenantCompute against its
// spec now, the way Flux's reconcile.fluxcd.io/requestedAt does: any new value (for example
// the current time) triggers one Update, and status.lastHandledReconcileAt records it. Without
// it, Ready tenants are checked on the controller's resync period.
const ReconcileRequestedAnnotation = "compute.plinth.dev/reconcile-requested-at"

// Labels plinth-controller's providers put on everything they create for a TenantCompute, so
// that a change to those objects wakes the TenantCompute.
const (
	// LabelTenantComputeNamespace is the TenantCompute's namespace.
	LabelTenantComputeNamespace = "compute.plinth.dev/namespace"
	// LabelTenantComputeName is the TenantCompute's name.
	LabelTenantComputeName = "compute.plinth.dev/name"
	// LabelTenantID is the tenant ID.
	LabelTenantID = "compute.plinth.dev/tenant-id"
)

// TenantNamespace is the namespace the kubernetes provider runs a tenant in.
func TenantNamespace(tenantID string) string { return "tenant-" + tenantID }

// Finalizer is held by plinth-controller until the provider has destroyed the compute.
const Finalizer = "compute.plinth.dev/tenant-compute"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantCompute is one tenant's compute: containers, resources, networking and secrets,
// provisioned by the ComputeProvider named in spec.providerType. Tenants create it in their
// namespace; plinth-controller drives the provider and is the only writer of its status.
type TenantCompute struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the compute the tenant asks for.
	// +optional
	Spec TenantComputeSpec `json:"spec,omitempty"`
	// Status is what the provider reports, written by plinth-controller.
	// +optional
	Status TenantComputeStatus `json:"status,omitempty"`
}

// TenantComputeSpec is the desired compute of one tenant (the seed's TenantComputeSpec) plus
// Plinth's lifecycle switches.
type TenantComputeSpec struct {
	// TenantID identifies the tenant, unique across the cluster: lowercase letters, digits and
	// '-'. Immutable.
	TenantID string `json:"tenantID"`
	// ProviderType names the ComputeProvider that provisions this tenant; it must be a Ready
	// ComputeProvider (kubectl get computeproviders). Immutable.
	ProviderType string `json:"providerType"`
	// Containers are the tenant's container workloads; at least one, names unique.
	// +listType=map
	// +listMapKey=name
	Containers []ContainerSpec `json:"containers"`
	// Resources are the compute resources of the whole tenant: cpu in millicores (at least
	// 128) and memory in megabytes (at least 128). ResourceQuota counts them as
	// compute.plinth.dev/cpu and compute.plinth.dev/memory.
	Resources ResourceRequirements `json:"resources"`
	// Networking is how the tenant is reached: a public IP, security groups, subnets and DNS.
	// +optional
	Networking NetworkConfig `json:"networking,omitempty"`
	// Secrets are references to secrets the containers need, injected as environment
	// variables. Values are never copied: the provider references them where they are.
	// +optional
	// +listType=map
	// +listMapKey=name
	Secrets []SecretReference `json:"secrets,omitempty"`
	// Labels are key-value pairs for organizing and filtering; providers copy them onto what
	// they create.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// ProviderConfig is provider-specific configuration, validated at admission against the
	// JSON Schema the provider publishes in its ComputeProvider's status.configSchema.
	// +optional
	ProviderConfig *common.RawObject `json:"providerConfig,omitempty"`
	// Suspended stops the compute and keeps the object: the provider scales it to nothing and
	// the state becomes stopped. Clearing it starts the compute again.
	// +optional
	Suspended bool `json:"suspended,omitempty"`
	// Archived destroys the compute and keeps the object and its history, with phase Archived.
	// Clearing it provisions the tenant again.
	// +optional
	Archived bool `json:"archived,omitempty"`
}

// ContainerSpec is one container of the tenant (the seed's ContainerSpec).
type ContainerSpec struct {
	// Name identifies the container within the tenant: lowercase letters, digits and '-'.
	Name string `json:"name"`
	// Image is the container image reference, for example nginx:1.27.
	Image string `json:"image"`
	// Command overrides the image's entrypoint.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// Args are the arguments to the command.
	// +optional
	// +listType=atomic
	Args []string `json:"args,omitempty"`
	// Env are environment variables by name.
	// +optional
	Env map[string]string `json:"env,omitempty"`
	// Ports are the ports the container listens on and how they are exposed.
	// +optional
	// +listType=atomic
	Ports []PortMapping `json:"ports,omitempty"`
	// HealthCheck is how the provider checks that the container is healthy.
	// +optional
	HealthCheck *HealthCheckConfig `json:"healthCheck,omitempty"`
	// Resources are this container's own limits (cpu in millicores, memory in megabytes);
	// without them the container shares the tenant's resources.
	// +optional
	Resources *ResourceRequirements `json:"resources,omitempty"`
}

// PortMapping is how a container port is exposed (the seed's PortMapping).
type PortMapping struct {
	// ContainerPort is the port inside the container, 1-65535.
	ContainerPort int32 `json:"containerPort"`
	// HostPort is the port on the host or the exposed port, 1-65535 (provider-specific; the
	// kubernetes provider uses it as the Service port, defaulting to containerPort).
	// +optional
	HostPort int32 `json:"hostPort,omitempty"`
	// Protocol is tcp or udp.
	Protocol string `json:"protocol"`
	// Name identifies the port, for example http.
	// +optional
	Name string `json:"name,omitempty"`
}

// HealthCheckConfig is how a container's health is checked (the seed's HealthCheckConfig).
type HealthCheckConfig struct {
	// Type is http, tcp or exec.
	Type string `json:"type"`
	// HTTPPath is the path an http check requests, for example /healthz.
	// +optional
	HTTPPath string `json:"httpPath,omitempty"`
	// Port is the port of an http or tcp check.
	// +optional
	Port int32 `json:"port,omitempty"`
	// Command is what an exec check runs in the container.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// IntervalSeconds is the time between checks, at least 5.
	IntervalSeconds int32 `json:"intervalSeconds"`
	// TimeoutSeconds is how long one check may take, at least 1 and less than intervalSeconds.
	TimeoutSeconds int32 `json:"timeoutSeconds"`
	// HealthyThreshold is how many consecutive successes make the container healthy.
	// +optional
	HealthyThreshold int32 `json:"healthyThreshold,omitempty"`
	// UnhealthyThreshold is how many consecutive failures make it unhealthy.
	// +optional
	UnhealthyThreshold int32 `json:"unhealthyThreshold,omitempty"`
}

// ResourceRequirements are compute resources (the seed's ResourceRequirements).
type ResourceRequirements struct {
	// CPU in millicores (1000 = one CPU), at least 128.
	CPU int32 `json:"cpu"`
	// Memory in megabytes, at least 128.
	Memory int32 `json:"memory"`
	// Storage is ephemeral storage in megabytes.
	// +optional
	Storage int32 `json:"storage,omitempty"`
}

// NetworkConfig is the tenant's networking (the seed's NetworkConfig).
type NetworkConfig struct {
	// PublicIP asks for an address reachable from outside the cluster (the kubernetes
	// provider makes the Service a LoadBalancer).
	// +optional
	PublicIP bool `json:"publicIP,omitempty"`
	// SecurityGroups are firewall rules or groups, provider-specific.
	// +optional
	// +listType=atomic
	SecurityGroups []string `json:"securityGroups,omitempty"`
	// Subnets to place the compute in, provider-specific.
	// +optional
	// +listType=atomic
	Subnets []string `json:"subnets,omitempty"`
	// DNS is the tenant's DNS name.
	// +optional
	DNS *DNSConfig `json:"dns,omitempty"`
}

// DNSConfig is the tenant's DNS name (the seed's DNSConfig).
type DNSConfig struct {
	// Hostname is the host part, for example shop.
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// Domain is the domain, for example tenants.example.com.
	// +optional
	Domain string `json:"domain,omitempty"`
}

// SecretReference points to a secret a container needs (the seed's SecretReference).
type SecretReference struct {
	// Name is the secret's name in its store (for kubernetes-secret: a Secret in namespace
	// tenant-<tenantID> on the target cluster, which the people who may edit the
	// TenantCompute's namespace may write there on the default cluster).
	Name string `json:"name"`
	// Source is where the secret is stored; it must be one the provider supports (its
	// ComputeProvider's status.supportedSecretSources), for example kubernetes-secret.
	Source string `json:"source"`
	// Key is the key within the secret.
	Key string `json:"key"`
	// EnvVar is the environment variable the value is injected as; defaults to the key in
	// upper case with '-' and '.' as '_'.
	// +optional
	EnvVar string `json:"envVar,omitempty"`
}

// TenantComputeStatus is the seed's ComputeStatus, the last ProvisionResult and UpdateResult,
// and the lifecycle. plinth-controller is its only writer.
type TenantComputeStatus struct {
	// Phase is the lifecycle: Requested, Provisioning, Ready, Updating, Deleting, Failed,
	// Stopped or Archived.
	// +optional
	Phase TenantComputePhase `json:"phase,omitempty"`
	// State is the deployment's state: running, stopped, starting, stopping, failed or unknown.
	// +optional
	State ComputeState `json:"state,omitempty"`
	// Containers is the state of each container.
	// +optional
	// +listType=map
	// +listMapKey=name
	Containers []ContainerStatus `json:"containers,omitempty"`
	// Health is healthy, unhealthy or unknown.
	// +optional
	Health HealthStatus `json:"health,omitempty"`
	// LastUpdated is when the provider last reported this status.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
	// Metadata is provider-specific status information, for example the cluster and
	// namespace the compute runs in.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
	// ProvisionResult is the outcome of the last provision.
	// +optional
	ProvisionResult *ProvisionResult `json:"provisionResult,omitempty"`
	// UpdateResult is the outcome of the last update.
	// +optional
	UpdateResult *UpdateResult `json:"updateResult,omitempty"`
	// Retries counts the provider's consecutive failures; the fifth makes the phase Failed.
	// +optional
	Retries int32 `json:"retries,omitempty"`
	// NextRetryTime is when the next attempt after a failure is due.
	// +optional
	NextRetryTime *metav1.Time `json:"nextRetryTime,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastHandledReconcileAt is the value of the compute.plinth.dev/reconcile-requested-at
	// annotation the controller last acted on: setting the annotation to a new value (for
	// example the current time) makes the provider check the compute against the spec now.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// Conditions are Provisioned, Healthy and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ContainerStatus is one container's state (the seed's ContainerStatus).
type ContainerStatus struct {
	// Name is the container's name.
	Name string `json:"name"`
	// State is running, stopped or failed (starting while it is being created).
	// +optional
	State string `json:"state,omitempty"`
	// Ready is whether the container is ready to serve.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// RestartCount is how many times it restarted.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty"`
	// Message gives details, for example why it is waiting.
	// +optional
	Message string `json:"message,omitempty"`
}

// ProvisionResult is the outcome of a provision (the seed's ProvisionResult).
type ProvisionResult struct {
	// Status is success, in_progress or failed.
	// +optional
	Status ProvisionStatus `json:"status,omitempty"`
	// ResourceIDs maps resource types to the provider's identifiers of what it created, for
	// example deployment: tenant-shop/shop.
	// +optional
	ResourceIDs map[string]string `json:"resourceIDs,omitempty"`
	// Endpoints are where the tenant is reachable.
	// +optional
	// +listType=atomic
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// Message gives details.
	// +optional
	Message string `json:"message,omitempty"`
	// ProvisionedAt is when the provision completed.
	// +optional
	ProvisionedAt *metav1.Time `json:"provisionedAt,omitempty"`
}

// UpdateResult is the outcome of an update (the seed's UpdateResult).
type UpdateResult struct {
	// Status is success, no_changes, in_progress or failed.
	// +optional
	Status UpdateStatus `json:"status,omitempty"`
	// Changes describes what was modified, one entry per change.
	// +optional
	// +listType=atomic
	Changes []string `json:"changes,omitempty"`
	// Message gives details.
	// +optional
	Message string `json:"message,omitempty"`
	// UpdatedAt is when the update completed.
	// +optional
	UpdatedAt *metav1.Time `json:"updatedAt,omitempty"`
}

// Endpoint is how to reach a tenant (the seed's Endpoint).
type Endpoint struct {
	// Type is http, https, tcp, udp or grpc.
	Type string `json:"type"`
	// Address is a hostname or IP address.
	Address string `json:"address"`
	// Port is the port number.
	// +optional
	Port int32 `json:"port,omitempty"`
	// URL is the full URL, when the endpoint has one.
	// +optional
	URL string `json:"url,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantComputeList is a list of TenantComputes.
type TenantComputeList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the TenantComputes.
	Items []TenantCompute `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComputeProvider is one registered compute provider. The controller that serves it writes it
// at start (plinth-controller for its built-in providers, an external provider process the
// same way) and publishes in status the JSON Schema of its providerConfig, the defaults and
// what it supports. Tenants read it to learn what they may ask for.
type ComputeProvider struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The name is the provider's name, used in
	// TenantCompute spec.providerType.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the registration.
	// +optional
	Spec ComputeProviderSpec `json:"spec,omitempty"`
	// Status is what the provider publishes.
	// +optional
	Status ComputeProviderStatus `json:"status,omitempty"`
}

// ComputeProviderSpec is a provider's registration.
type ComputeProviderSpec struct {
	// Controller names the controller that serves this provider, as a domain-prefixed path
	// (for example plinth.dev/plinth-controller). Immutable: a second controller registering
	// the same provider name is refused.
	Controller string `json:"controller"`
	// Description says what the provider provisions.
	// +optional
	Description string `json:"description,omitempty"`
}

// ComputeProviderStatus is what a provider publishes.
type ComputeProviderStatus struct {
	// ConfigSchema is the JSON Schema (draft 4, as OpenAPI v3 uses it) of the providerConfig
	// this provider accepts. plinth-apiserver validates TenantCompute spec.providerConfig
	// against it at admission.
	// +optional
	ConfigSchema *common.RawObject `json:"configSchema,omitempty"`
	// ConfigDefaults are the values the provider uses for providerConfig fields left out.
	// +optional
	ConfigDefaults *common.RawObject `json:"configDefaults,omitempty"`
	// SupportedSecretSources are the secret sources this provider resolves, for example
	// kubernetes-secret.
	// +optional
	// +listType=set
	SupportedSecretSources []string `json:"supportedSecretSources,omitempty"`
	// SupportedHealthChecks are the health-check types this provider runs (http, tcp, exec).
	// +optional
	// +listType=set
	SupportedHealthChecks []string `json:"supportedHealthChecks,omitempty"`
	// PublicIP is whether the provider can give a tenant a public address.
	// +optional
	PublicIP bool `json:"publicIP,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions has Ready: True while the provider's controller serves it.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComputeProviderList is a list of ComputeProviders.
type ComputeProviderList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ComputeProviders.
	Items []ComputeProvider `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantIDClaim records which TenantCompute holds a tenant ID. It is storage only, never
// served: plinth-apiserver creates one (named after the tenant ID) in the same request that
// creates a TenantCompute, and etcd's create-if-absent makes a second holder impossible, also
// under concurrent creates and across several apiserver replicas.
type TenantIDClaim struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; the name is the tenant ID.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Namespace of the TenantCompute that holds the ID.
	HolderNamespace string `json:"holderNamespace"`
	// Name of the TenantCompute that holds the ID.
	HolderName string `json:"holderName"`
	// HolderUID is the UID of the TenantCompute that holds the ID.
	HolderUID string `json:"holderUID"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantIDClaimList is a list of TenantIDClaims (storage only).
type TenantIDClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the claims.
	Items []TenantIDClaim `json:"items"`
}
