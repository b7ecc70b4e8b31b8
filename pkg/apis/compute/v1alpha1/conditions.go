package v1alpha1

import "github.com/plinth-dev/plinth/pkg/apis/common/conditions"

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

// Reasons of a TenantCompute's conditions and of the events that report its Ready condition's
// transitions.
const (
	// ReasonProvisioning: the provider is creating the compute.
	ReasonProvisioning = "Provisioning"
	// ReasonProvisioned: the provider created the compute.
	ReasonProvisioned = "Provisioned"
	// ReasonUpdating: the provider is bringing the compute to the spec (a rollout, a stop, a
	// start, an archive waiting on something outside the provider).
	ReasonUpdating = "Updating"
	// ReasonReady: the compute runs as the spec asks.
	ReasonReady = "Ready"
	// ReasonHealthy: the provider reports the compute healthy.
	ReasonHealthy = "Healthy"
	// ReasonHealthUnknown: the provider does not know the compute's health.
	ReasonHealthUnknown = "HealthUnknown"
	// ReasonStopped: the compute is stopped because spec.suspended is set.
	ReasonStopped = "Stopped"
	// ReasonArchived: the compute was destroyed because spec.archived is set.
	ReasonArchived = "Archived"
	// ReasonDeleting: the object is being deleted and the provider is destroying the compute.
	ReasonDeleting = "Deleting"
	// ReasonNotRunning: the compute of a Ready tenant is not running.
	ReasonNotRunning = "NotRunning"
	// ReasonUnhealthy: the provider reports the compute unhealthy.
	ReasonUnhealthy = "Unhealthy"
	// ReasonSpecInvalid: the provider cannot honour the spec; only a change of it helps.
	ReasonSpecInvalid = "SpecInvalid"
	// ReasonProvisionFailed: the provider failed to create the compute.
	ReasonProvisionFailed = "ProvisionFailed"
	// ReasonUpdateFailed: the provider failed to bring the compute to the spec.
	ReasonUpdateFailed = "UpdateFailed"
	// ReasonArchiveFailed: the provider failed to destroy the compute of an archived tenant.
	ReasonArchiveFailed = "ArchiveFailed"
	// ReasonDestroyFailed: the provider has not yet destroyed the compute of a tenant being
	// deleted; its finalizer holds until it has.
	ReasonDestroyFailed = "DestroyFailed"
	// ReasonCheckFailed: the provider could not check compute that ran as the spec asked; the
	// tenant keeps its phase and is checked again.
	ReasonCheckFailed = "CheckFailed"
	// ReasonComputeFailed: the provider reports the compute failed on its own.
	ReasonComputeFailed = "ComputeFailed"
)

// Reasons of a ComputeProvider's Ready condition and events.
const (
	// ReasonRegistered: the controller named in spec.controller serves the provider.
	ReasonRegistered = "Registered"
	// ReasonNotServed: the controller that registered the provider no longer serves it.
	ReasonNotServed = "NotServed"
	// ReasonProviderConflict: another controller registered a provider of the same name.
	ReasonProviderConflict = "ProviderConflict"
)

// Reasons is every reason compute.plinth.dev's conditions and events carry (ResourceQuota
// events of the compute quota controller included), and which need the owner's attention.
var Reasons = conditions.Declare(GroupName,
	conditions.Normal(
		ReasonProvisioning, ReasonProvisioned, ReasonUpdating, ReasonReady, ReasonHealthy, ReasonHealthUnknown,
		ReasonStopped, ReasonArchived, ReasonDeleting, ReasonRegistered, ReasonNotServed,
	),
	conditions.Warning(
		ReasonNotRunning, ReasonUnhealthy, ReasonSpecInvalid, ReasonProvisionFailed, ReasonUpdateFailed,
		ReasonArchiveFailed, ReasonDestroyFailed, ReasonCheckFailed, ReasonComputeFailed, ReasonProviderConflict,
	),
)
