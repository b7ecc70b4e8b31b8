package v1alpha1

import "github.com/plinth-dev/plinth/pkg/apis/common/conditions"

// Condition types of a ManagedVM.
const (
	// ConditionApproved says whether the latest request for the VM (its creation, a change, its
	// deletion) was approved. plinth-apiserver's approval workflow writes it.
	ConditionApproved = "Approved"
	// ConditionReady is True while the VM runs, ready, on its cluster. The VM runtime of
	// plinth-controller writes it.
	ConditionReady = "Ready"
)

// Reasons of a ManagedVM's Approved condition.
const (
	// ReasonPendingApproval: the latest request waits for an approver's decision.
	ReasonPendingApproval = "PendingApproval"
	// ReasonApproved: the latest request was approved.
	ReasonApproved = "Approved"
	// ReasonAdopted: the VM was found on a cluster and adopted; no request was needed.
	ReasonAdopted = "Adopted"
	// ReasonRejected: an approver rejected the latest request; the approved spec stands.
	ReasonRejected = "Rejected"
	// ReasonCancelled: the latest request was cancelled; the approved spec stands.
	ReasonCancelled = "Cancelled"
)

// Reasons of a ManagedVM's Ready condition: what the VM does on its cluster, or why it cannot
// be materialized there. The phase events of the VM runtime carry the first ones too.
const (
	// ReasonProvisioning: the cluster is creating the VM.
	ReasonProvisioning = "Provisioning"
	// ReasonStarting: the VM is starting.
	ReasonStarting = "Starting"
	// ReasonRunning: the VM runs.
	ReasonRunning = "Running"
	// ReasonStopping: the VM is stopping.
	ReasonStopping = "Stopping"
	// ReasonStopped: the VM is stopped.
	ReasonStopped = "Stopped"
	// ReasonFailed: the VM failed on its cluster.
	ReasonFailed = "Failed"
	// ReasonUnknown: the cluster does not say what the VM does.
	ReasonUnknown = "Unknown"
	// ReasonClusterNotFound: the cluster the VM was placed on is not registered.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterDegraded: the cluster the VM was placed on is not healthy; the VM waits.
	ReasonClusterDegraded = "ClusterDegraded"
	// ReasonRefused: the cluster refused the VM (invalid there, or not allowed).
	ReasonRefused = "Refused"
)

// Reasons of events only.
const (
	// ReasonCreated: the VM runtime created the VM on its cluster.
	ReasonCreated = "Created"
	// ReasonExecuted: the VM runtime saw an approved change take effect and ended its ticket in
	// SUCCESS.
	ReasonExecuted = "Executed"
	// ReasonExecutionFailed: an approved change did not take effect; its ticket ended FAILED.
	ReasonExecutionFailed = "ExecutionFailed"
	// ReasonFound: the adopter found an unmanaged VM on a cluster (a PendingAdoption).
	ReasonFound = "Found"
)

// Reasons is every reason governance.plinth.dev's conditions and events carry, and which need
// the owner's attention.
var Reasons = conditions.Declare(GroupName,
	conditions.Normal(
		ReasonPendingApproval, ReasonApproved, ReasonAdopted, ReasonCancelled,
		ReasonProvisioning, ReasonStarting, ReasonRunning, ReasonStopping, ReasonStopped, ReasonUnknown,
		ReasonCreated, ReasonExecuted, ReasonFound,
	),
	conditions.Warning(
		ReasonRejected, ReasonFailed, ReasonClusterNotFound, ReasonClusterDegraded, ReasonRefused, ReasonExecutionFailed,
	),
)
