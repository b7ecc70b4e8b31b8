package compute

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

// Condition types of a TenantCompute.
const (
	// ConditionProvisioned is True once the provider has created the tenant's compute.
	ConditionProvisioned = "Provisioned"
	// ConditionHealthy is True while the provider reports the compute healthy.
	ConditionHealthy = "Healthy"
	// ConditionReady is True when the compute runs as the current spec asks.
	ConditionReady = "Ready"
)

// Condition types of a ComputeProvider.
const (
	// ConditionProviderReady is True while the provider's controller serves it.
	ConditionProviderReady = "Ready"
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

// Finalizer is held by plinth-controller until the provider has destroyed the compute.
const Finalizer = "compute.plinth.dev/tenant-compute"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantCompute is one tenant's compute: containers, resources, networking and secrets,
// provisioned by the ComputeProvider named in spec.providerType. Tenants create it in their
// namespace; plinth-controller drives the provider and is the only writer of its status.
type TenantCompute struct {
	metav1.TypeMeta
	// Standard object metadata.
	metav1.ObjectMeta

	// Spec is the compute the tenant asks for.
	Spec TenantComputeSpec
	// Status is what the provider reports, written by plinth-controller.
	Status TenantComputeStatus
}

// TenantComputeSpec is the desired compute of one tenant (the seed's TenantComputeSpec) plus
// Plinth's lifecycle switches.
type TenantComputeSpec struct {
	// TenantID identifies the tenant, unique across the cluster: lowercase letters, digits and
	// '-'. Immutable.
	TenantID string
	// ProviderType names the ComputeProvider that provisions this tenant; it must be a Ready
	// ComputeProvider (kubectl get computeproviders). Immutable.
	ProviderType string
	// Containers are the tenant's container workloads; at least one, names unique.
	Containers []ContainerSpec
	// Resources are the compute resources of the whole tenant: cpu in millicores (at least
	// 128) and memory in megabytes (at least 128). ResourceQuota counts them as
	// compute.plinth.dev/cpu and compute.plinth.dev/memory.
	Resources ResourceRequirements
	// Networking is how the tenant is reached: a public IP, security groups, subnets and DNS.
	Networking NetworkConfig
	// Secrets are references to secrets the containers need, injected as environment
	// variables. Values are never copied: the provider references them where they are.
	Secrets []SecretReference
	// Labels are key-value pairs for organizing and filtering; providers copy them onto what
	// they create.
	Labels map[string]string
	// ProviderConfig is provider-specific configuration, validated at admission against the
	// JSON Schema the provider publishes in its ComputeProvider's status.configSchema.
	ProviderConfig *common.RawObject
	// Suspended stops the compute and keeps the object: the provider scales it to nothing and
	// the state becomes stopped. Clearing it starts the compute again.
	Suspended bool
	// Archived destroys the compute and keeps the object and its history, with phase Archived.
	// Clearing it provisions the tenant again.
	Archived bool
}

// ContainerSpec is one container of the tenant (the seed's ContainerSpec).
type ContainerSpec struct {
	// Name identifies the container within the tenant: lowercase letters, digits and '-'.
	Name string
	// Image is the container image reference, for example nginx:1.27.
	Image string
	// Command overrides the image's entrypoint.
	Command []string
	// Args are the arguments to the command.
	Args []string
	// Env are environment variables by name.
	Env map[string]string
	// Ports are the ports the container listens on and how they are exposed.
	Ports []PortMapping
	// HealthCheck is how the provider checks that the container is healthy.
	HealthCheck *HealthCheckConfig
	// Resources are this container's own limits (cpu in millicores, memory in megabytes);
	// without them the container shares the tenant's resources.
	Resources *ResourceRequirements
}

// PortMapping is how a container port is exposed (the seed's PortMapping).
type PortMapping struct {
	// ContainerPort is the port inside the container, 1-65535.
	ContainerPort int32
	// HostPort is the port on the host or the exposed port, 1-65535 (provider-specific; the
	// kubernetes provider uses it as the Service port, defaulting to containerPort).
	HostPort int32
	// Protocol is tcp or udp.
	Protocol string
	// Name identifies the port, for example http.
	Name string
}

// HealthCheckConfig is how a container's health is checked (the seed's HealthCheckConfig).
type HealthCheckConfig struct {
	// Type is http, tcp or exec.
	Type string
	// HTTPPath is the path an http check requests, for example /healthz.
	HTTPPath string
	// Port is the port of an http or tcp check.
	Port int32
	// Command is what an exec check runs in the container.
	Command []string
	// IntervalSeconds is the time between checks, at least 5.
	IntervalSeconds int32
	// TimeoutSeconds is how long one check may take, at least 1 and less than intervalSeconds.
	TimeoutSeconds int32
	// HealthyThreshold is how many consecutive successes make the container healthy.
	HealthyThreshold int32
	// UnhealthyThreshold is how many consecutive failures make it unhealthy.
	UnhealthyThreshold int32
}

// ResourceRequirements are compute resources (the seed's ResourceRequirements).
type ResourceRequirements struct {
	// CPU in millicores (1000 = one CPU), at least 128.
	CPU int32
	// Memory in megabytes, at least 128.
	Memory int32
	// Storage is ephemeral storage in megabytes.
	Storage int32
}

// NetworkConfig is the tenant's networking (the seed's NetworkConfig).
type NetworkConfig struct {
	// PublicIP asks for an address reachable from outside the cluster (the kubernetes
	// provider makes the Service a LoadBalancer).
	PublicIP bool
	// SecurityGroups are firewall rules or groups, provider-specific.
	SecurityGroups []string
	// Subnets to place the compute in, provider-specific.
	Subnets []string
	// DNS is the tenant's DNS name.
	DNS *DNSConfig
}

// DNSConfig is the tenant's DNS name (the seed's DNSConfig).
type DNSConfig struct {
	// Hostname is the host part, for example shop.
	Hostname string
	// Domain is the domain, for example tenants.example.com.
	Domain string
}

// SecretReference points to a secret a container needs (the seed's SecretReference).
type SecretReference struct {
	// Name is the secret's name in its store (for kubernetes-secret: a Secret in namespace
	// tenant-<tenantID> on the target cluster, which the people who may edit the
	// TenantCompute's namespace may write there on the default cluster).
	Name string
	// Source is where the secret is stored; it must be one the provider supports (its
	// ComputeProvider's status.supportedSecretSources), for example kubernetes-secret.
	Source string
	// Key is the key within the secret.
	Key string
	// EnvVar is the environment variable the value is injected as; defaults to the key in
	// upper case with '-' and '.' as '_'.
	EnvVar string
}

// TenantComputeStatus is the seed's ComputeStatus, the last ProvisionResult and UpdateResult,
// and the lifecycle. plinth-controller is its only writer.
type TenantComputeStatus struct {
	// Phase is the lifecycle: Requested, Provisioning, Ready, Updating, Deleting, Failed,
	// Stopped or Archived.
	Phase TenantComputePhase
	// State is the deployment's state: running, stopped, starting, stopping, failed or unknown.
	State ComputeState
	// Containers is the state of each container.
	Containers []ContainerStatus
	// Health is healthy, unhealthy or unknown.
	Health HealthStatus
	// LastUpdated is when the provider last reported this status.
	LastUpdated *metav1.Time
	// Metadata is provider-specific status information, for example the cluster and
	// namespace the compute runs in.
	Metadata map[string]string
	// ProvisionResult is the outcome of the last provision.
	ProvisionResult *ProvisionResult
	// UpdateResult is the outcome of the last update.
	UpdateResult *UpdateResult
	// Retries counts the provider's consecutive failures; the fifth makes the phase Failed.
	Retries int32
	// NextRetryTime is when the next attempt after a failure is due.
	NextRetryTime *metav1.Time
	// ObservedGeneration is the generation this status describes.
	ObservedGeneration int64
	// LastHandledReconcileAt is the value of the compute.plinth.dev/reconcile-requested-at
	// annotation the controller last acted on: setting the annotation to a new value (for
	// example the current time) makes the provider check the compute against the spec now.
	LastHandledReconcileAt string
	// Conditions are Provisioned, Healthy and Ready.
	Conditions []metav1.Condition
}

// ContainerStatus is one container's state (the seed's ContainerStatus).
type ContainerStatus struct {
	// Name is the container's name.
	Name string
	// State is running, stopped or failed (starting while it is being created).
	State string
	// Ready is whether the container is ready to serve.
	Ready bool
	// RestartCount is how many times it restarted.
	RestartCount int32
	// Message gives details, for example why it is waiting.
	Message string
}

// ProvisionResult is the outcome of a provision (the seed's ProvisionResult).
type ProvisionResult struct {
	// Status is success, in_progress or failed.
	Status ProvisionStatus
	// ResourceIDs maps resource types to the provider's identifiers of what it created, for
	// example deployment: tenant-shop/shop.
	ResourceIDs map[string]string
	// Endpoints are where the tenant is reachable.
	Endpoints []Endpoint
	// Message gives details.
	Message string
	// ProvisionedAt is when the provision completed.
	ProvisionedAt *metav1.Time
}

// UpdateResult is the outcome of an update (the seed's UpdateResult).
type UpdateResult struct {
	// Status is success, no_changes, in_progress or failed.
	Status UpdateStatus
	// Changes describes what was modified, one entry per change.
	Changes []string
	// Message gives details.
	Message string
	// UpdatedAt is when the update completed.
	UpdatedAt *metav1.Time
}

// Endpoint is how to reach a tenant (the seed's Endpoint).
type Endpoint struct {
	// Type is http, https, tcp, udp or grpc.
	Type string
	// Address is a hostname or IP address.
	Address string
	// Port is the port number.
	Port int32
	// URL is the full URL, when the endpoint has one.
	URL string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantComputeList is a list of TenantComputes.
type TenantComputeList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items are the TenantComputes.
	Items []TenantCompute
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComputeProvider is one registered compute provider. The controller that serves it writes it
// at start (plinth-controller for its built-in providers, an external provider process the
// same way) and publishes in status the JSON Schema of its providerConfig, the defaults and
// what it supports. Tenants read it to learn what they may ask for.
type ComputeProvider struct {
	metav1.TypeMeta
	// Standard object metadata. The name is the provider's name, used in
	// TenantCompute spec.providerType.
	metav1.ObjectMeta

	// Spec is the registration.
	Spec ComputeProviderSpec
	// Status is what the provider publishes.
	Status ComputeProviderStatus
}

// ComputeProviderSpec is a provider's registration.
type ComputeProviderSpec struct {
	// Controller names the controller that serves this provider, as a domain-prefixed path
	// (for example plinth.dev/plinth-controller). Immutable: a second controller registering
	// the same provider name is refused.
	Controller string
	// Description says what the provider provisions.
	Description string
}

// ComputeProviderStatus is what a provider publishes.
type ComputeProviderStatus struct {
	// ConfigSchema is the JSON Schema (draft 4, as OpenAPI v3 uses it) of the providerConfig
	// this provider accepts. plinth-apiserver validates TenantCompute spec.providerConfig
	// against it at admission.
	ConfigSchema *common.RawObject
	// ConfigDefaults are the values the provider uses for providerConfig fields left out.
	ConfigDefaults *common.RawObject
	// SupportedSecretSources are the secret sources this provider resolves, for example
	// kubernetes-secret.
	SupportedSecretSources []string
	// SupportedHealthChecks are the health-check types this provider runs (http, tcp, exec).
	SupportedHealthChecks []string
	// PublicIP is whether the provider can give a tenant a public address.
	PublicIP bool
	// ObservedGeneration is the generation this status describes.
	ObservedGeneration int64
	// Conditions has Ready: True while the provider's controller serves it.
	Conditions []metav1.Condition
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComputeProviderList is a list of ComputeProviders.
type ComputeProviderList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items are the ComputeProviders.
	Items []ComputeProvider
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantIDClaim records which TenantCompute holds a tenant ID. It is storage only, never
// served: plinth-apiserver creates one (named after the tenant ID) in the same request that
// creates a TenantCompute, and etcd's create-if-absent makes a second holder impossible, also
// under concurrent creates and across several apiserver replicas.
type TenantIDClaim struct {
	metav1.TypeMeta
	// Standard object metadata; the name is the tenant ID.
	metav1.ObjectMeta
	// Namespace of the TenantCompute that holds the ID.
	HolderNamespace string
	// Name of the TenantCompute that holds the ID.
	HolderName string
	// HolderUID is the UID of the TenantCompute that holds the ID.
	HolderUID string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantIDClaimList is a list of TenantIDClaims (storage only).
type TenantIDClaimList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta
	// Items are the claims.
	Items []TenantIDClaim
}
