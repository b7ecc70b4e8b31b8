package v1alpha1

import "github.com/plinth-dev/plinth/pkg/apis/common/conditions"

// Condition types of the gitops.plinth.dev kinds.
const (
	// ConditionReady is True when an OCIRegistry serves, when an OCIArtifact is pushed and
	// every target has applied it, and when a ReconciliationRequest succeeded.
	ConditionReady = "Ready"
	// ConditionPushed is True when the OCIArtifact's current version is in the registry.
	ConditionPushed = "Pushed"
	// ConditionDelivered is True when every target has applied the pushed version.
	ConditionDelivered = "Delivered"
	// ConditionTagMoved is True when the registry's tag of the pushed version was found
	// pointing to another manifest than status.digest — written by something other than
	// plinth-controller — and the pushed version was put back under it. It stays until
	// another version is pushed.
	ConditionTagMoved = "TagMoved"
)

// Reasons of an OCIRegistry's Ready condition, and of the events recorded when it changes.
const (
	// ReasonRunning: the registry's server answers on /v2/ and its data directory takes
	// writes (Ready True).
	ReasonRunning = "Running"
	// ReasonProvisioning: the registry's server is starting.
	ReasonProvisioning = "Provisioning"
	// ReasonRefused: the registry's storage path is outside the data roots, or another
	// registry uses it.
	ReasonRefused = "Refused"
	// ReasonSpecInvalid: the registry's endpoint is not localhost:<port>.
	ReasonSpecInvalid = "SpecInvalid"
	// ReasonProvisionFailed: the registry's server did not start (its port is taken, its
	// directory does not take writes).
	ReasonProvisionFailed = "ProvisionFailed"
	// ReasonNotRunning: a running registry server stopped serving, or its /v2/ did not answer
	// a probe.
	ReasonNotRunning = "NotRunning"
	// ReasonCheckFailed: the registry's data directory does not take writes (the disk is
	// full).
	ReasonCheckFailed = "CheckFailed"
)

// Reasons of an OCIArtifact's Pushed, Delivered, Ready and TagMoved conditions, and of the
// events recorded when they change.
const (
	// ReasonReady is the event of an OCIArtifact's Ready condition turning True (an event
	// only; the condition's reason is Delivered).
	ReasonReady = "Ready"
	// ReasonPushed: the version is in the registry.
	ReasonPushed = "Pushed"
	// ReasonInvalidManifests: the manifests (or the ConfigMap holding them) are missing or not
	// valid; nothing is pushed until they are.
	ReasonInvalidManifests = "InvalidManifests"
	// ReasonRegistryNotReady: the OCIRegistry does not exist or is not Running.
	ReasonRegistryNotReady = "RegistryNotReady"
	// ReasonRegistryUnavailable: the registry is Running but did not answer (it is
	// restarting); retried with backoff.
	ReasonRegistryUnavailable = "RegistryUnavailable"
	// ReasonVersionImmutable: the version's tag holds other content; a pushed version never
	// changes.
	ReasonVersionImmutable = "VersionImmutable"
	// ReasonPushFailed: the push failed; retried with backoff.
	ReasonPushFailed = "PushFailed"
	// ReasonDelivered: every target applied the pushed version.
	ReasonDelivered = "Delivered"
	// ReasonNoTargets: there is nothing to deliver to.
	ReasonNoTargets = "NoTargets"
	// ReasonDeliveryInProgress: a target has not applied the pushed version yet.
	ReasonDeliveryInProgress = "DeliveryInProgress"
	// ReasonClusterNotFound: a target names a Cluster that is not registered. An OCIArtifact
	// waits for its registration, which wakes it; a ReconciliationRequest fails.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonFluxNotAvailable: a target's Cluster has the GitOps engine Flux, but Flux has not
	// been detected there (not installed, not running, or not probed yet); Flux being
	// detected wakes the artifact.
	ReasonFluxNotAvailable = "FluxNotAvailable"
	// ReasonDeliveryFailed: a delivery to a target failed; retried with backoff, or looked at
	// again up to the target's Flux interval while Flux reports the failure and retries by
	// itself.
	ReasonDeliveryFailed = "DeliveryFailed"
	// ReasonDeleteFailed: the artifact is being deleted and its tag could not be deleted yet.
	ReasonDeleteFailed = "DeleteFailed"
	// ReasonLeftBehind: the artifact was deleted without removing everything it delivered or
	// pushed within its deletion bound; the event names what is left (an event only).
	ReasonLeftBehind = "LeftBehind"
	// ReasonAdopted: the version's tag already held the same content (pushed before the
	// status recorded it), which is kept rather than pushed again (an event only).
	ReasonAdopted = "Adopted"
	// ReasonTagMoved: the pushed version's tag pointed to another manifest than the one
	// pushed (the event of the TagMoved condition).
	ReasonTagMoved = "TagMoved"
	// ReasonRestored: the pushed manifest was put back under its moved tag, the same digest
	// (TagMoved's reason).
	ReasonRestored = "Restored"
	// ReasonPushedAgain: the registry no longer had the pushed manifest, so the version was
	// pushed again under its moved tag, as a new digest (TagMoved's reason).
	ReasonPushedAgain = "PushedAgain"
	// ReasonRestoreFailed: putting the pushed version back under its moved tag failed;
	// retried with backoff (TagMoved's reason).
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonPruneFailed: retention could not delete old versions (an event only).
	ReasonPruneFailed = "PruneFailed"
	// ReasonPruned: retention deleted old versions (an event only).
	ReasonPruned = "Pruned"
)

// Reasons of a ReconciliationRequest's Ready condition, also its events' reasons (and
// ReasonClusterNotFound, above).
const (
	// ReasonInProgress: the targets were asked to reconcile and have not all handled the
	// request, become Ready and reported the revision the request names yet (Ready Unknown).
	ReasonInProgress = "InProgress"
	// ReasonSucceeded: every target handled the request, is Ready and reports the revision the
	// request names, if any (Ready True).
	ReasonSucceeded = "Succeeded"
	// ReasonTargetNotFound: a target does not exist, an OCIArtifact target is not delivered to
	// the target's cluster, or a stored target's kind cannot be reconciled (Failed).
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonUnreachable: a target's cluster did not answer; the request keeps trying until its
	// timeout (Ready Unknown meanwhile). (Spelled ClusterUnreachable before; one idea, one
	// spelling across the API groups.)
	ReasonUnreachable = "Unreachable"
	// ReasonTargetUnavailable: reading or annotating a target failed with an error that may
	// pass (a server error, throttling, a timeout); the request keeps trying until its timeout
	// (Ready Unknown meanwhile).
	ReasonTargetUnavailable = "TargetUnavailable"
	// ReasonFluxNotInstalled: a Flux target's cluster does not serve Flux's kinds (Failed).
	ReasonFluxNotInstalled = "FluxNotInstalled"
	// ReasonForbidden: Plinth may not read or annotate a target (Failed).
	ReasonForbidden = "Forbidden"
	// ReasonReconciliationFailed: a target handled the request and its reconcile failed: it
	// reports Ready False (Failed).
	ReasonReconciliationFailed = "ReconciliationFailed"
	// ReasonSuperseded: an Automatic request's OCIArtifact pushed another revision, at a later
	// generation, before the targets reported the revision the request waits for; the newer
	// push's request follows the targets from there (Failed; a Normal event: new versions in
	// quick succession are no fault).
	ReasonSuperseded = "Superseded"
	// ReasonTimedOut: the targets were not all asked, or did not all handle the request,
	// become Ready and report the revision the request names, within spec.timeout of the
	// request's creation (Failed).
	ReasonTimedOut = "TimedOut"
)

// Reasons is every reason the gitops.plinth.dev kinds' conditions and events carry, and which
// of them need the owner's attention.
var Reasons = conditions.Declare(GroupName,
	conditions.Normal(
		// OCIRegistry
		ReasonRunning, ReasonProvisioning,
		// OCIArtifact
		ReasonReady, ReasonPushed, ReasonDelivered, ReasonNoTargets, ReasonDeliveryInProgress, ReasonAdopted,
		ReasonRestored, ReasonPushedAgain, ReasonPruned,
		// ReconciliationRequest
		ReasonInProgress, ReasonSucceeded, ReasonSuperseded,
	),
	conditions.Warning(
		// OCIRegistry
		ReasonRefused, ReasonSpecInvalid, ReasonProvisionFailed, ReasonNotRunning, ReasonCheckFailed,
		// OCIArtifact
		ReasonInvalidManifests, ReasonRegistryNotReady, ReasonRegistryUnavailable, ReasonVersionImmutable,
		ReasonPushFailed, ReasonClusterNotFound, ReasonFluxNotAvailable, ReasonDeliveryFailed, ReasonDeleteFailed,
		ReasonLeftBehind, ReasonTagMoved, ReasonRestoreFailed, ReasonPruneFailed,
		// ReconciliationRequest
		ReasonTargetNotFound, ReasonUnreachable, ReasonTargetUnavailable, ReasonFluxNotInstalled, ReasonForbidden,
		ReasonReconciliationFailed, ReasonTimedOut,
	),
)
