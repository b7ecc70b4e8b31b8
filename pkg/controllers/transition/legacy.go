package transition

// This file keeps the functions controllers used before each API group declared its reasons,
// while the controllers move to Recorder. It goes once none calls it.

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
)

// warnings are the reasons that tell the owner something needs their attention; every other
// reason is progress, reported as Normal.
var warnings = sets.New(
	"SpecInvalid", "PolicyViolation", "BindingFailed", "ProjectionError", "RuntimeDegraded", "QuotaExceeded",
	"PermissionDenied", "NetworkUnavailable", "Failed", "Refused", "ExecutionFailed", "ClusterNotFound",
	"ClusterDegraded", "Unreachable", "Unhealthy", "CredentialsInvalid", "UnknownEncryptionKey",
	"ProvisionFailed", "UpdateFailed", "ArchiveFailed", "DestroyFailed", "CheckFailed", "ComputeFailed", "NotRunning", "ProviderConflict",
	"FluxNotInstalled", "FluxNotRunning", "ClusterUnreachable", "Forbidden", "RegistryConflict",
	"TargetNotFound", "TimedOut", "ReconciliationFailed", "TargetUnavailable",
	"InvalidManifests", "RegistryNotReady", "RegistryUnavailable", "VersionImmutable", "PushFailed", "PruneFailed",
	"DeliveryFailed", "DeleteFailed", "FluxNotAvailable", "LeftBehind", "FluxInstallFailed", "FluxInstallUnavailable",
	"RenderFailed", "FetchFailed", "RevisionNotFound", "RevisionUnavailable", "Drifted", "DependencyBlocked", "DriftCheckFailed",
	"TagMoved",
)

// Type is the event type of a reason: Warning for the reasons that need attention.
func Type(reason string) string {
	if warnings.Has(reason) {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// Record records one event on obj with the given reason and message (one neutral sentence).
// action says what the controller was doing (for example "Reconcile", "Probe").
func Record(recorder events.EventRecorder, obj runtime.Object, reason, action, message string) {
	recorder.Eventf(obj, nil, Type(reason), reason, action, "%s", message)
}

// Condition records an event when the condition of type condType differs between before and
// after in status or reason (its message alone changing is not a transition). The event's
// reason is the condition's, or readyReason when the condition became True (so a Ready
// condition whose reason is "Succeeded" shows as "Ready").
func Condition(recorder events.EventRecorder, obj runtime.Object, before, after []metav1.Condition, condType, readyReason, action string) {
	now := meta.FindStatusCondition(after, condType)
	if now == nil {
		return
	}
	if was := meta.FindStatusCondition(before, condType); was != nil && was.Status == now.Status && was.Reason == now.Reason {
		return
	}
	reason := now.Reason
	if now.Status == metav1.ConditionTrue && readyReason != "" {
		reason = readyReason
	}
	Record(recorder, obj, reason, action, now.Message)
}

// Outcome is Condition for the platform's internal objects (bindings, plans), which tenants do
// not read and which pass through several progress states on the way: it records only the
// transitions an operator looks for — the condition turning True, or a reason that needs
// attention — and leaves progress (pending, provisioning) to the status. Each event is a
// write to the cluster's API server; a Workload's way to Ready would otherwise cost twice as
// many.
func Outcome(recorder events.EventRecorder, obj runtime.Object, before, after []metav1.Condition, condType, readyReason, action string) {
	now := meta.FindStatusCondition(after, condType)
	if now == nil || (now.Status != metav1.ConditionTrue && Type(now.Reason) != corev1.EventTypeWarning) {
		return
	}
	Condition(recorder, obj, before, after, condType, readyReason, action)
}
