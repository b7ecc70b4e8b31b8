package v1alpha1

import "github.com/plinth-dev/plinth/pkg/apis/common/conditions"

// Condition types of the infrastructure.ontai.dev kinds.
const (
	// ConditionReady is True on an instance whose cluster runs the delivered revision, and on
	// a pack that every target cluster runs.
	ConditionReady = "Ready"
	// ConditionProgressing is True while a delivery is under way.
	ConditionProgressing = "Progressing"
	// ConditionDrifted is True when delivered objects were changed or deleted on the cluster.
	ConditionDrifted = "Drifted"
	// ConditionDependencyBlocked is True on an instance held because a dependency drifted and
	// its onDrift policy is Block.
	ConditionDependencyBlocked = "DependencyBlocked"
	// ConditionRendered is True on a pack whose spec rendered; False names the template and
	// line that failed.
	ConditionRendered = "Rendered"
)

// Reasons of an InfrastructureClusterPack's Rendered and Ready conditions, and of the events
// recorded when they change.
const (
	// ReasonReady is the event of a pack's Ready condition turning True (an event only; the
	// condition's reason is Delivered).
	ReasonReady = "Ready"
	// ReasonRendered: the spec rendered, or a kept revision was chosen (Rendered True); also
	// the event of a new revision.
	ReasonRendered = "Rendered"
	// ReasonRenderFailed: the pack's content does not render (a template that fails, a chart
	// version that does not exist, a kustomize source that is missing); rendered again after a
	// minute, or when the spec changes.
	ReasonRenderFailed = "RenderFailed"
	// ReasonFetchFailed: fetching the chart failed; retried with backoff.
	ReasonFetchFailed = "FetchFailed"
	// ReasonRevisionNotFound: rollbackToRevision names a revision the pack does not keep;
	// only a new spec fixes it.
	ReasonRevisionNotFound = "RevisionNotFound"
	// ReasonNotDelivered: the current revision does not run on every target cluster yet, or
	// there is no revision (Ready False).
	ReasonNotDelivered = "NotDelivered"
	// ReasonDeleting: the pack is being deleted and its instances are being removed from
	// their clusters (Ready False).
	ReasonDeleting = "Deleting"
)

// Reasons of an InfrastructurePackInstance's Ready, Progressing, Drifted and
// DependencyBlocked conditions, and of the events recorded when they change.
const (
	// ReasonDelivered: the revision runs on the cluster (Ready True, Progressing False); on a
	// pack, every target cluster runs the current revision (Ready True).
	ReasonDelivered = "Delivered"
	// ReasonDelivering: a delivery of the revision is under way (Progressing True).
	ReasonDelivering = "Delivering"
	// ReasonWaitingForDependencies: an instance it depends on is not Ready yet; nothing is
	// delivered until it is.
	ReasonWaitingForDependencies = "WaitingForDependencies"
	// ReasonDependencyBlocked: a dependency drifted and onDrift is Block; deliveries are held.
	ReasonDependencyBlocked = "DependencyBlocked"
	// ReasonDependenciesReady: no dependency blocks the instance (DependencyBlocked False).
	ReasonDependenciesReady = "DependenciesReady"
	// ReasonDrifted: delivered objects were changed or deleted on the cluster (Drifted True).
	ReasonDrifted = "Drifted"
	// ReasonNoDrift: the delivered objects match what was applied (Drifted False).
	ReasonNoDrift = "NoDrift"
	// ReasonDriftCorrected: drift was found and the revision applied again, under driftPolicy
	// Correct (Drifted False, and its event).
	ReasonDriftCorrected = "DriftCorrected"
	// ReasonDriftCheckFailed: comparing the delivered objects with the cluster failed for
	// another reason than the cluster not answering (an event only; Drifted keeps its last
	// verdict).
	ReasonDriftCheckFailed = "DriftCheckFailed"
	// ReasonClusterNotFound: the instance's target Cluster is not registered.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonRevisionUnavailable: the pack's current revision cannot be read; retried with
	// backoff.
	ReasonRevisionUnavailable = "RevisionUnavailable"
	// ReasonUnreachable: the cluster did not answer (refused, timed out, no route, TLS
	// handshake failed); retried with backoff. The pack's summary counts it apart.
	ReasonUnreachable = "Unreachable"
	// ReasonDeliveryFailed: the cluster answered and refused the delivery, or removing what
	// was delivered failed; retried with backoff. The pack's summary counts it apart.
	ReasonDeliveryFailed = "DeliveryFailed"
)

// Reasons is every reason the conditions and events of the infrastructure.ontai.dev kinds
// may carry, and which of them need the owner's attention.
var Reasons = conditions.Declare(GroupName,
	conditions.Normal(
		ReasonReady, ReasonRendered, ReasonNotDelivered, ReasonDeleting,
		ReasonDelivered, ReasonDelivering, ReasonWaitingForDependencies, ReasonDependenciesReady,
		ReasonNoDrift, ReasonDriftCorrected,
	),
	conditions.Warning(
		ReasonRenderFailed, ReasonFetchFailed, ReasonRevisionNotFound,
		ReasonDependencyBlocked, ReasonDrifted, ReasonDriftCheckFailed, ReasonClusterNotFound,
		ReasonRevisionUnavailable, ReasonUnreachable, ReasonDeliveryFailed,
	),
)
