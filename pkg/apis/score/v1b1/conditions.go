package v1b1

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
