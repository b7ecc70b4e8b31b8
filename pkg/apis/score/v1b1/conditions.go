package v1b1

import "strings"

// Workload condition types.
const (
	// ConditionReady is True when InputsValid, BindingsReady and RuntimeReady all are.
	ConditionReady = "Ready"
	// ConditionInputsValid reports whether the specification is valid and allowed by policy.
	ConditionInputsValid = "InputsValid"
	// ConditionBindingsReady reports whether every resource is bound.
	ConditionBindingsReady = "BindingsReady"
	// ConditionRuntimeReady reports whether the runtime materialized the workload.
	ConditionRuntimeReady = "RuntimeReady"
)

// Workload condition reasons: a fixed, runtime-neutral vocabulary.
const (
	ReasonSucceeded           = "Succeeded"
	ReasonSpecInvalid         = "SpecInvalid"
	ReasonPolicyViolation     = "PolicyViolation"
	ReasonBindingPending      = "BindingPending"
	ReasonBindingFailed       = "BindingFailed"
	ReasonProjectionError     = "ProjectionError"
	ReasonRuntimeSelecting    = "RuntimeSelecting"
	ReasonRuntimeProvisioning = "RuntimeProvisioning"
	ReasonRuntimeDegraded     = "RuntimeDegraded"
	ReasonQuotaExceeded       = "QuotaExceeded"
	ReasonPermissionDenied    = "PermissionDenied"
	ReasonNetworkUnavailable  = "NetworkUnavailable"
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
