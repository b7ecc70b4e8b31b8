package compute

import (
	"context"
	"time"

	"k8s.io/client-go/tools/cache"

	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

// Provider provisions tenant compute: the seed's provider contract (Name, Validate, Provision,
// Update, Destroy, GetStatus) over compute.plinth.dev/v1alpha1 TenantComputes.
//
// Provision and Update are idempotent: calling them again with the same TenantCompute changes
// nothing and reports the same outcome. Destroy of a tenant that has nothing left succeeds.
// Every method honours tc.Spec.Suspended (the compute is kept but stopped) and reads
// tc.Spec.ProviderConfig merged over the provider's Descriptor().ConfigDefaults.
//
// Errors say what kind they are with pkg/errkind: an error retrying cannot fix (a config the
// provider cannot honour) is errkind.Stalled, and the controller fails the tenant at once
// instead of backing off; a Destroy that has begun but waits on something outside the provider
// is errkind.Waiting (RecheckAfter), and the controller keeps the tenant where it is and looks
// again then instead of counting an attempt. Either error's message is the provider's own
// sentence, shown to the tenant as it is.
type Provider interface {
	// Name is the provider's registered name, the value of spec.providerType.
	Name() string
	// Descriptor is what the provider publishes in its ComputeProvider object.
	Descriptor() Descriptor
	// Validate checks what only the provider can judge (the API has already checked the seed's
	// rules and the config against the schema). The error is shown to the tenant as is.
	Validate(ctx context.Context, tc *computev1alpha1.TenantCompute) error
	// Provision creates the tenant's compute, or finds it created.
	Provision(ctx context.Context, tc *computev1alpha1.TenantCompute) (*computev1alpha1.ProvisionResult, error)
	// Update brings existing compute to the spec and lists what it changed; UpdateStatus
	// no_changes when nothing differed.
	Update(ctx context.Context, tc *computev1alpha1.TenantCompute) (*computev1alpha1.UpdateResult, error)
	// Destroy removes the tenant's compute; a tenant with nothing left is destroyed already.
	Destroy(ctx context.Context, tc *computev1alpha1.TenantCompute) error
	// GetStatus reports the compute as it runs (the seed's ComputeStatus).
	GetStatus(ctx context.Context, tc *computev1alpha1.TenantCompute) (*ComputeStatus, error)
}

// Descriptor is what a provider publishes about itself (ComputeProvider spec and status).
type Descriptor struct {
	// Description says what the provider provisions.
	Description string
	// ConfigSchema is the JSON Schema of providerConfig, as JSON.
	ConfigSchema []byte
	// ConfigDefaults are the providerConfig values used when a field is left out, as JSON.
	ConfigDefaults []byte
	// SecretSources, HealthChecks and PublicIP are what the provider supports.
	SecretSources []string
	HealthChecks  []string
	PublicIP      bool
}

// ComputeStatus is a provider's report on a tenant's compute: the seed's ComputeStatus, plus the
// endpoints the tenant is reachable at once they are known.
type ComputeStatus struct {
	State      computev1alpha1.ComputeState
	Containers []computev1alpha1.ContainerStatus
	Health     computev1alpha1.HealthStatus
	Metadata   map[string]string
	Endpoints  []computev1alpha1.Endpoint
	// Message explains a state other than running, in one neutral sentence (for example the
	// approval a governed VM waits for).
	Message string
}

// Notifier is implemented by providers that watch what they create. The tenant-compute
// controller waits for these informers' caches and, when one of their objects changes, wakes
// the TenantCompute that TenantFor names.
type Notifier interface {
	Informers() []cache.SharedIndexInformer
	TenantFor(obj interface{}) (cache.ObjectName, bool)
}

// RecheckAfter is how long a provider asks the controller to wait, with an errkind.Waiting
// error, before it looks again at a call that waits on something outside the provider (a
// governed VM's delete waiting for its approval, a namespace being deleted): the tenant-compute
// controller's poll interval.
const RecheckAfter = 5 * time.Second
