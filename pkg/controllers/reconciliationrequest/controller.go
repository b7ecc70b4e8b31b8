// Package reconciliationrequest is plinth-controller's "reconcile now": for a
// ReconciliationRequest it sets Flux's reconcile.fluxcd.io/requestedAt annotation, with the
// request's time as the value, on each target (as flux reconcile does), then follows the
// targets until each reports that value as handled (status.lastHandledReconcileAt) and is
// Ready, and, for a target whose spec names a revision, reports that revision, and records the
// outcome per target and as a phase: Pending, InProgress, then Succeeded or Failed. Targets are Flux's OCIRepositories and Kustomizations on a Cluster
// (through the dynamic client of the Cluster) and OCIArtifacts in the request's namespace,
// whose controller honours the same annotation for its delivery to the Cluster, whatever the
// Cluster's engine. A finished request is a record and is never touched again.
package reconciliationrequest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	gitopsclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/gitops/v1alpha1"
	gitopsinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/gitops/v1alpha1"
	platforminformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/platform/v1alpha1"
	gitopslisters "github.com/plinth-dev/plinth/pkg/generated/listers/gitops/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
)

// Name names the controller in logs, metrics and events.
const Name = "reconciliationrequest"

// DefaultPollInterval is how often the targets of a request in progress are read unless
// Options say otherwise: Flux reconciles a source or a Kustomization within seconds.
const DefaultPollInterval = 2 * time.Second

// Reasons of the Ready condition, also the events' reasons.
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
	// ReasonClusterNotFound: a target's Cluster is not registered (Failed).
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterUnreachable: a target's cluster did not answer; the request keeps trying
	// until its timeout (Ready Unknown meanwhile).
	ReasonClusterUnreachable = "ClusterUnreachable"
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

// AnnotationArtifactGeneration is set by plinth-controller on the Automatic request it makes
// after a push: the generation of the OCIArtifact (its owner) that pushed the revision the
// request's targets name. Once the artifact's status describes a later generation with another
// pushed revision, the request is superseded: its revision will not reach the targets.
const AnnotationArtifactGeneration = "gitops.plinth.dev/artifact-generation"

// Options tune the controller.
type Options struct {
	// PollInterval is how often the targets of a request in progress are read; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Clock tells the time for timeouts and timestamps; nil means the real clock.
	Clock clock.PassiveClock
}

// Controller carries out ReconciliationRequests.
type Controller struct {
	*loop.Loop
	client    gitopsclient.GitopsV1alpha1Interface
	recorder  events.EventRecorder
	requests  gitopslisters.ReconciliationRequestLister
	artifacts gitopslisters.OCIArtifactLister
	clusters  platformlisters.ClusterLister
	clients   delivery.Clients
	poll      time.Duration
	clock     clock.PassiveClock
}

// NewController returns the controller. It is woken by requests being created (their spec
// is immutable; its own status writes do not wake it) and polls the targets of a request in
// progress every opts.PollInterval: Flux's objects live on other clusters, with no informer
// here. It reads OCIArtifacts and Clusters from their informers.
func NewController(client gitopsclient.GitopsV1alpha1Interface, recorder events.EventRecorder,
	requests gitopsinformers.ReconciliationRequestInformer, artifacts gitopsinformers.OCIArtifactInformer,
	clusters platforminformers.ClusterInformer, clients delivery.Clients, opts Options) (*Controller, error) {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Controller{
		client: client, recorder: recorder, clients: clients, poll: opts.PollInterval, clock: opts.Clock,
		requests: requests.Lister(), artifacts: artifacts.Lister(), clusters: clusters.Lister(),
	}
	c.Loop = loop.New(Name, c.reconcile, requests.Informer(), artifacts.Informer(), clusters.Informer())
	if err := c.WatchGenerations(requests.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// RequestValue is the reconcile.fluxcd.io/requestedAt value of a request: its
// spec.requestedAt (its creation time unless set) in RFC 3339 with as many fractional
// digits as it has, in UTC. Targets report it back in status.lastHandledReconcileAt.
func RequestValue(req *gitopsv1alpha1.ReconciliationRequest) string {
	at := req.CreationTimestamp.Time
	if req.Spec.RequestedAt != nil {
		at = req.Spec.RequestedAt.Time
	}
	return at.UTC().Format(time.RFC3339Nano)
}

// Finished says whether a request has ended: a finished request is a record, never changed.
func Finished(req *gitopsv1alpha1.ReconciliationRequest) bool {
	return req.Status.Phase == gitopsv1alpha1.ReconciliationSucceeded || req.Status.Phase == gitopsv1alpha1.ReconciliationFailed
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	req, err := c.requests.ReconciliationRequests(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if Finished(req) || req.DeletionTimestamp != nil {
		return nil
	}
	value := RequestValue(req)
	status := req.Status.DeepCopy()
	status.ObservedGeneration = req.Generation
	alignTargets(status, req.Spec.Targets)
	now := c.clock.Now()
	deadline := c.deadline(req)

	var failure *targetError
	// retrying are the problems that may pass (targetError.retry) met on this pass: the
	// request stays where it is and tries again until its deadline.
	var retrying []string
	retryReason := ""
	switch status.Phase {
	case "", gitopsv1alpha1.ReconciliationPending:
		status.Phase = gitopsv1alpha1.ReconciliationPending
		if now.After(deadline) {
			message := fmt.Sprintf("The request was not passed on before its timeout of %s.", timeout(req))
			if prev := apimeta.FindStatusCondition(req.Status.Conditions, gitopsv1alpha1.ConditionReady); prev != nil && prev.Reason != ReasonInProgress {
				message += " " + prev.Message // what kept it from being passed on
			}
			failure = &targetError{reason: ReasonTimedOut, message: message}
			break
		}
		for i := range req.Spec.Targets {
			err := c.request(ctx, req, i, value)
			var te *targetError
			if err != nil && !errors.As(err, &te) {
				return err
			}
			if te == nil {
				status.Targets[i].Message = "Asked to reconcile."
				continue
			}
			status.Targets[i].Message = te.message
			if !te.retry {
				failure = te
				break
			}
			retrying, retryReason = append(retrying, te.message), cmp.Or(retryReason, te.reason)
		}
		switch {
		case failure != nil:
		case len(retrying) > 0:
			c.setReady(status, req, metav1.ConditionUnknown, retryReason,
				fmt.Sprintf("%s Trying again until %s.", strings.Join(retrying, " "), deadline.UTC().Format(time.RFC3339)))
		default:
			status.Phase = gitopsv1alpha1.ReconciliationInProgress
			c.setReady(status, req, metav1.ConditionUnknown, ReasonInProgress, inProgressMessage(req, value))
		}
	case gitopsv1alpha1.ReconciliationInProgress:
		var waiting []string
		for i, t := range req.Spec.Targets {
			obs, err := c.observe(ctx, req, i)
			var te *targetError
			if err != nil && !errors.As(err, &te) {
				return err
			}
			if te != nil {
				status.Targets[i].Ready = false
				status.Targets[i].Message = te.message
				if !te.retry {
					failure = te
					break
				}
				retrying, retryReason = append(retrying, te.message), cmp.Or(retryReason, te.reason)
				waiting = append(waiting, fmt.Sprintf("%s (%s)", describe(t), strings.TrimSuffix(te.message, ".")))
				continue
			}
			record(&status.Targets[i], obs, value, t.Revision, now)
			switch {
			case obs.failed(value, t.Revision):
				failure = &targetError{reason: ReasonReconciliationFailed, message: fmt.Sprintf("%s handled the request and is not Ready: %s", describe(t), status.Targets[i].Message)}
			case !status.Targets[i].Ready && !obs.at(t.Revision):
				waiting = append(waiting, fmt.Sprintf("%s (%s)", describe(t), strings.TrimSuffix(reports(obs.revision, t.Revision), ".")))
			case !status.Targets[i].Ready:
				waiting = append(waiting, describe(t))
			}
			if failure != nil {
				break
			}
		}
		superseded := ""
		if failure == nil && len(waiting) > 0 {
			superseded = c.superseded(req)
		}
		switch {
		case failure != nil:
		case len(waiting) == 0:
			status.Phase = gitopsv1alpha1.ReconciliationSucceeded
			status.CompletionTime = &metav1.Time{Time: now}
			c.setReady(status, req, metav1.ConditionTrue, ReasonSucceeded,
				fmt.Sprintf("%s handled the request made at %s and %s Ready.", capitalize(count(len(req.Spec.Targets))), value, isAre(len(req.Spec.Targets))))
		case superseded != "":
			failure = &targetError{reason: ReasonSuperseded, message: superseded}
		case now.After(deadline):
			failure = &targetError{reason: ReasonTimedOut, message: fmt.Sprintf("Not handled and Ready within %s: %s.", timeout(req), strings.Join(waiting, "; "))}
		case len(retrying) > 0:
			c.setReady(status, req, metav1.ConditionUnknown, retryReason,
				fmt.Sprintf("%s Trying again until %s.", strings.Join(retrying, " "), deadline.UTC().Format(time.RFC3339)))
		default:
			c.setReady(status, req, metav1.ConditionUnknown, ReasonInProgress, inProgressMessage(req, value))
		}
	}
	if failure != nil {
		status.Phase = gitopsv1alpha1.ReconciliationFailed
		status.CompletionTime = &metav1.Time{Time: now}
		c.setReady(status, req, metav1.ConditionFalse, failure.reason, failure.message)
	}
	if err := c.writeStatus(ctx, req, status); err != nil {
		return err
	}
	if status.Phase == gitopsv1alpha1.ReconciliationPending || status.Phase == gitopsv1alpha1.ReconciliationInProgress {
		// Pending only while a target could not be asked yet, or in progress: poll, and not
		// later than the deadline, so that a request times out on time.
		c.EnqueueAfter(key, max(min(c.poll, deadline.Sub(now)), 0)+time.Millisecond)
	}
	return nil
}

// superseded says why an Automatic request will not see its revision reach the targets, or
// "": its OCIArtifact (the owner, the same object by UID) has a status for a later
// generation than the request's AnnotationArtifactGeneration and pushed another revision
// there. The generation orders the two pushes without comparing revisions or clocks; the
// artifact's status is read from the informer, which can only lag, never lead, so a lag
// keeps the request waiting rather than ending it early.
func (c *Controller) superseded(req *gitopsv1alpha1.ReconciliationRequest) string {
	if req.Spec.Mode != gitopsv1alpha1.ReconciliationModeAutomatic {
		return ""
	}
	generation, err := strconv.ParseInt(req.Annotations[AnnotationArtifactGeneration], 10, 64)
	if err != nil {
		return ""
	}
	i := slices.IndexFunc(req.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.Kind == "OCIArtifact" && o.APIVersion == gitopsv1alpha1.SchemeGroupVersion.String()
	})
	if i < 0 {
		return ""
	}
	art, err := c.artifacts.OCIArtifacts(req.Namespace).Get(req.OwnerReferences[i].Name)
	if err != nil || art.UID != req.OwnerReferences[i].UID || art.Status.ObservedGeneration <= generation || art.Status.Digest == "" {
		return ""
	}
	pushed := pushedRevision(art)
	for _, t := range req.Spec.Targets {
		if t.Revision != "" && t.Revision != pushed {
			return fmt.Sprintf("OCIArtifact %s pushed revision %s since; the targets will not get revision %s this request waited for.", art.Name, pushed, t.Revision)
		}
	}
	return ""
}

// pushedRevision is the revision an OCIArtifact pushed, as Flux names it: <tag>@<digest>, the
// tag from status.url (oci://<endpoint>/<repository>:<tag>).
func pushedRevision(art *gitopsv1alpha1.OCIArtifact) string {
	tag := art.Spec.Tag
	if _, _, pushed, ok := artifact.ParseURL(art.Status.URL); ok {
		tag = pushed
	}
	return delivery.Artifact{Tag: tag, Digest: art.Status.Digest}.Revision()
}

// deadline is when a request not finished fails: its timeout after its creation. The
// creation time is the server's; spec.requestedAt may come from a client's clock (within a few
// minutes of the server's) and only names the request to the targets.
func (c *Controller) deadline(req *gitopsv1alpha1.ReconciliationRequest) time.Time {
	return req.CreationTimestamp.Time.Add(timeout(req))
}

// inProgressMessage is the Ready condition's message while the targets work on the request.
func inProgressMessage(req *gitopsv1alpha1.ReconciliationRequest, value string) string {
	return fmt.Sprintf("Asked %s to reconcile at %s; waiting for %s to handle it and be Ready.", count(len(req.Spec.Targets)), value, them(len(req.Spec.Targets)))
}

func timeout(req *gitopsv1alpha1.ReconciliationRequest) time.Duration {
	if req.Spec.Timeout != nil && req.Spec.Timeout.Duration > 0 {
		return req.Spec.Timeout.Duration
	}
	return gitopsv1alpha1.DefaultReconciliationTimeout
}

// alignTargets gives status one entry per spec target, in spec order, keeping what an entry
// for the same target recorded.
func alignTargets(status *gitopsv1alpha1.ReconciliationRequestStatus, targets []gitopsv1alpha1.ReconciliationTarget) {
	aligned := make([]gitopsv1alpha1.ReconciliationTargetStatus, len(targets))
	for i, t := range targets {
		aligned[i] = gitopsv1alpha1.ReconciliationTargetStatus{Cluster: t.Cluster, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace}
		if i < len(status.Targets) {
			if s := status.Targets[i]; s.Cluster == t.Cluster && s.Kind == t.Kind && s.Name == t.Name && s.Namespace == t.Namespace {
				aligned[i] = s
			}
		}
	}
	status.Targets = aligned
}

// record writes what a target reported into its status entry: handledAt is when the
// controller first saw the request handled, and stays. A target is Ready once it handled the
// request, is Ready and reports the revision the request waits for (want, when set): after a
// push, a target can handle the request before its source has the new revision, and be
// Ready with the old one.
func record(s *gitopsv1alpha1.ReconciliationTargetStatus, obs observation, value, want string, now time.Time) {
	handled := obs.handled(value)
	if handled && s.HandledAt == nil {
		s.HandledAt = &metav1.Time{Time: now}
	}
	s.Ready = handled && obs.ready == metav1.ConditionTrue && obs.at(want)
	s.Revision = obs.revision
	switch {
	case handled && obs.ready == metav1.ConditionTrue && !obs.at(want):
		s.Message = "Handled the request; " + reports(obs.revision, want)
	case handled && obs.message != "":
		s.Message = obs.message
	case handled:
		s.Message = "Handled the request."
	case obs.lastHandled == "":
		s.Message = "Waiting for the request to be handled."
	default:
		s.Message = fmt.Sprintf("Waiting for the request to be handled; the last handled was made at %s.", obs.lastHandled)
	}
}

// reports says which revision a target reports while the request waits for want.
func reports(revision, want string) string {
	if revision == "" {
		return fmt.Sprintf("waiting for revision %s, it reports none yet.", want)
	}
	return fmt.Sprintf("waiting for revision %s, it reports %s.", want, revision)
}

func (c *Controller) setReady(status *gitopsv1alpha1.ReconciliationRequestStatus, req *gitopsv1alpha1.ReconciliationRequest,
	s metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: gitopsv1alpha1.ConditionReady, Status: s, Reason: reason, Message: message,
		ObservedGeneration: req.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now()),
	})
}

// writeStatus stores status when it changed and records the Ready condition's transitions as
// events.
func (c *Controller) writeStatus(ctx context.Context, req *gitopsv1alpha1.ReconciliationRequest, status *gitopsv1alpha1.ReconciliationRequestStatus) error {
	if apiequality.Semantic.DeepEqual(req.Status, *status) {
		return nil
	}
	updated := req.DeepCopy()
	updated.Status = *status
	if _, err := c.client.ReconciliationRequests(req.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if req.Status.Phase != status.Phase {
		klog.FromContext(ctx).V(2).Info("Reconciliation request phase changed", "request", klog.KObj(req), "from", req.Status.Phase, "to", status.Phase)
	}
	transition.Condition(c.recorder, updated, req.Status.Conditions, status.Conditions, gitopsv1alpha1.ConditionReady, ReasonSucceeded, "Reconcile")
	return nil
}

// describe names a target in messages: <Kind> <namespace>/<name> on cluster <cluster>.
func describe(t gitopsv1alpha1.ReconciliationTarget) string {
	name := t.Name
	if t.Namespace != "" {
		name = t.Namespace + "/" + t.Name
	}
	return fmt.Sprintf("%s %s on cluster %s", t.Kind, name, t.Cluster)
}

func count(n int) string {
	if n == 1 {
		return "1 target"
	}
	return fmt.Sprintf("%d targets", n)
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
