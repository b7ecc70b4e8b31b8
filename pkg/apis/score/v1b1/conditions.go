package v1b1

import (
	"strings"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
)

// Workload condition types.
const (
	// ConditionReady is True when InputsValid, BindingsReady and RuntimeReady all are. A
	// ResourceBinding's and a WorkloadPlan's Ready condition is True when the resource is bound
	// and when the runtime materialized the plan.
	ConditionReady = "Ready"
	// ConditionInputsValid reports whether the specification is valid and allowed by policy.
	ConditionInputsValid = "InputsValid"
	// ConditionBindingsReady reports whether every resource is bound.
	ConditionBindingsReady = "BindingsReady"
	// ConditionRuntimeReady reports whether the runtime materialized the workload.
	ConditionRuntimeReady = "RuntimeReady"
)

// ResourceBinding condition types, besides Ready.
const (
	// ConditionProvisioned reports whether the resource exists.
	ConditionProvisioned = "Provisioned"
	// ConditionOutputsAvailable reports whether the resource's outputs are published.
	ConditionOutputsAvailable = "OutputsAvailable"
)

// Reasons of the Workload, ResourceBinding and WorkloadPlan conditions: a fixed, runtime-neutral
// vocabulary. A binding's and a plan's Ready condition carry the same reasons as the Workload
// condition they feed (BindingsReady, RuntimeReady), so the Workload can copy them.
const (
	// ReasonSucceeded: the condition holds (the inputs are valid, the resources bound, the
	// workload running).
	ReasonSucceeded = "Succeeded"
	// ReasonSpecInvalid: the specification cannot be used as written (invalid Score, a missing
	// source ConfigMap, params that refer to each other in a cycle or cannot be resolved).
	ReasonSpecInvalid = "SpecInvalid"
	// ReasonPolicyViolation: a platform policy that applies to the workload refuses it.
	ReasonPolicyViolation = "PolicyViolation"
	// ReasonBindingPending: resources wait to be provisioned, or for the resources their params
	// name.
	ReasonBindingPending = "BindingPending"
	// ReasonBindingFailed: a resource could not be provisioned; it waits for its params or the
	// objects in its way to change.
	ReasonBindingFailed = "BindingFailed"
	// ReasonProjectionError: the workload cannot be materialized as written (an output it uses
	// is missing, an object of its names is in the way).
	ReasonProjectionError = "ProjectionError"
	// ReasonRuntimeSelecting: no runtime has taken the workload yet (none handles its runtime
	// class, or it waits for approval).
	ReasonRuntimeSelecting = "RuntimeSelecting"
	// ReasonRuntimeProvisioning: the runtime is materializing the workload.
	ReasonRuntimeProvisioning = "RuntimeProvisioning"
	// ReasonRuntimeDegraded: the workload was materialized but does not run as asked (some
	// instances unavailable, its virtual machine stopped or failed).
	ReasonRuntimeDegraded = "RuntimeDegraded"
	// ReasonQuotaExceeded: the namespace has used up what its policy allows.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonPermissionDenied: the platform refused what the workload asked for (a request
	// rejected in governance).
	ReasonPermissionDenied = "PermissionDenied"
	// ReasonNetworkUnavailable: the network the workload needs is not available.
	ReasonNetworkUnavailable = "NetworkUnavailable"
)

// Reasons that only Events carry: the transitions they report show in the conditions with the
// reason Succeeded.
const (
	// ReasonReady: a Workload's or a WorkloadPlan's Ready condition turned True.
	ReasonReady = "Ready"
	// ReasonBindingsReady: every resource of a Workload became bound.
	ReasonBindingsReady = "BindingsReady"
	// ReasonBound: a ResourceBinding's Ready condition turned True.
	ReasonBound = "Bound"
)

// Reasons is every reason score.dev's conditions and Events carry, and which of them need the
// owner's attention.
var Reasons = conditions.Declare(GroupName,
	conditions.Normal(
		ReasonSucceeded, ReasonBindingPending, ReasonRuntimeSelecting, ReasonRuntimeProvisioning,
		ReasonReady, ReasonBindingsReady, ReasonBound,
	),
	conditions.Warning(
		ReasonSpecInvalid, ReasonPolicyViolation, ReasonBindingFailed, ReasonProjectionError,
		ReasonRuntimeDegraded, ReasonQuotaExceeded, ReasonPermissionDenied, ReasonNetworkUnavailable,
	),
)

// ResourceBindingName is the name of the ResourceBinding of one resource of a workload.
func ResourceBindingName(workload, resource string) string { return workload + "-" + resource }

// SharedResourceBindingName is the name of the one ResourceBinding that every workload in a
// namespace declaring a resource with the same type and Score id shares.
func SharedResourceBindingName(resourceType, id string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(resourceType) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return "shared-" + b.String() + "-" + id
}

// WorkloadBindingLabel marks a ResourceBinding as used by a workload; its value is the
// resource's name in that workload. Shared bindings carry one such label per workload.
func WorkloadBindingLabel(workload string) string { return workloadBindingLabelPrefix + workload }

const workloadBindingLabelPrefix = "workload.score.dev/"

// WorkloadsOfBinding names the workloads that use a binding, from its WorkloadBindingLabels.
func WorkloadsOfBinding(b *ResourceBinding) []string {
	var names []string
	for k := range b.Labels {
		if workload, found := strings.CutPrefix(k, workloadBindingLabelPrefix); found {
			names = append(names, workload)
		}
	}
	return names
}

// WorkloadLabel carries the workload's name on what is made for it alone: its own bindings,
// its plan and the objects its runtime applies.
const WorkloadLabel = "score.dev/workload"
