// Package reconciliationrequest is plinth-controller's "reconcile now": for a
// ReconciliationRequest it sets Flux's reconcile.fluxcd.io/requestedAt annotation, with the
// request's time as the value, on each target (as flux reconcile does), then follows the
// targets until each reports that value as handled (status.lastHandledReconcileAt) and is
// Ready, and, for a target whose spec names a revision, reports that revision, and records the
// outcome per target and as a phase: Pending, InProgress, then Succeeded or Failed. Targets
// are Flux's OCIRepositories and Kustomizations on a Cluster (through the dynamic client of the
// Cluster) and OCIArtifacts in the request's namespace, whose controller honours the same
// annotation for its delivery to the Cluster, whatever the Cluster's engine. A finished request
// is a record and is never touched again.
//
// A reconcile is one of two phases, by the request's phase: passOn asks the targets (Pending),
// follow reads what they report (InProgress). A problem with a target is either one only a
// person can fix (errkind.Stalled: the request fails at once) or one that may pass
// (errkind.Waiting: the request tries again at each poll until its deadline).
//
// In memory it keeps only the status write of each request until its informer shows it
// (loop.Written); everything else is in the request's status, so a restart loses nothing.
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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/errkind"
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

// FieldManager is the field manager of the controller's status writes.
const FieldManager = "plinth-reconciliationrequest"

// DefaultPollInterval is how often the targets of a request in progress are read unless
// Options say otherwise: Flux reconciles a source or a Kustomization within seconds.
const DefaultPollInterval = 2 * time.Second

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
	requests  gitopslisters.ReconciliationRequestLister
	artifacts gitopslisters.OCIArtifactLister
	clusters  platformlisters.ClusterLister
	clients   delivery.Clients
	poll      time.Duration
	clock     clock.PassiveClock
	// status writes the requests' status and records the Ready condition's transitions.
	status *statuswriter.Writer[*gitopsv1alpha1.ReconciliationRequest]
	// written is each request's last status write until the informer shows it.
	written loop.Written[*gitopsv1alpha1.ReconciliationRequest]
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
		client: client, clients: clients, poll: opts.PollInterval, clock: opts.Clock,
		requests: requests.Lister(), artifacts: artifacts.Lister(), clusters: clusters.Lister(),
	}
	c.status = &statuswriter.Writer[*gitopsv1alpha1.ReconciliationRequest]{
		FieldManager: FieldManager,
		Reasons:      gitopsv1alpha1.Reasons,
		Conditions:   func(r *gitopsv1alpha1.ReconciliationRequest) []metav1.Condition { return r.Status.Conditions },
		Update: func(ctx context.Context, r *gitopsv1alpha1.ReconciliationRequest, opts metav1.UpdateOptions) (*gitopsv1alpha1.ReconciliationRequest, error) {
			return client.ReconciliationRequests(r.Namespace).UpdateStatus(ctx, r, opts)
		},
		Events:  transition.New(recorder, gitopsv1alpha1.Reasons),
		Rules:   []transition.Rule{{Condition: gitopsv1alpha1.ConditionReady, ReadyReason: gitopsv1alpha1.ReasonSucceeded, Action: "Reconcile"}},
		Written: &c.written,
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
func Finished(req *gitopsv1alpha1.ReconciliationRequest) bool { return finished(req.Status.Phase) }

func finished(phase gitopsv1alpha1.ReconciliationPhase) bool {
	return phase == gitopsv1alpha1.ReconciliationSucceeded || phase == gitopsv1alpha1.ReconciliationFailed
}

// pass is one reconcile of a request: what it read and the status it builds.
type pass struct {
	req    *gitopsv1alpha1.ReconciliationRequest
	status *gitopsv1alpha1.ReconciliationRequestStatus
	// value is the request's reconcile.fluxcd.io/requestedAt value.
	value         string
	now, deadline time.Time
	// retrying are the messages of the problems that may pass met on this pass, and
	// retryReason the first one's reason: the request stays where it is and tries again until
	// its deadline.
	retrying    []string
	retryReason string
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	req, err := c.requests.ReconciliationRequests(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.written.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	req = c.written.Fresher(key, req)
	if Finished(req) || req.DeletionTimestamp != nil {
		return nil
	}
	p := c.newPass(req)
	switch p.status.Phase {
	case "", gitopsv1alpha1.ReconciliationPending:
		err = c.passOn(ctx, p)
	case gitopsv1alpha1.ReconciliationInProgress:
		err = c.follow(ctx, p)
	}
	if err != nil {
		// Neither a target's problem nor its verdict: the controller's own (a cache read
		// failed), retried with backoff.
		return err
	}
	if err := c.writeStatus(ctx, req, p.status); err != nil {
		return err
	}
	if !p.ended() {
		// Pending only while a target could not be asked yet, or in progress: poll, and not
		// later than the deadline, so that a request times out on time.
		c.EnqueueAfter(key, max(min(c.poll, p.deadline.Sub(p.now)), 0)+time.Millisecond)
	}
	return nil
}

func (c *Controller) newPass(req *gitopsv1alpha1.ReconciliationRequest) *pass {
	status := req.Status.DeepCopy()
	status.ObservedGeneration = req.Generation
	alignTargets(status, req.Spec.Targets)
	return &pass{req: req, status: status, value: RequestValue(req), now: c.clock.Now(), deadline: c.deadline(req)}
}

// passOn asks every target to reconcile (phase Pending). The request goes InProgress once all
// were asked, stays Pending while a target could not be asked for a reason that may pass, and
// fails on a problem only a person can fix or once its deadline passed.
func (c *Controller) passOn(ctx context.Context, p *pass) error {
	p.status.Phase = gitopsv1alpha1.ReconciliationPending
	if p.now.After(p.deadline) {
		p.fail(gitopsv1alpha1.ReasonTimedOut, p.notPassedOn())
		return nil
	}
	for i := range p.req.Spec.Targets {
		problem, stalled, err := targetProblemOf(c.request(ctx, p.req, i, p.value))
		switch {
		case err != nil:
			return err
		case problem == nil:
			p.status.Targets[i].Message = "Asked to reconcile."
			continue
		}
		p.status.Targets[i].Message = problem.message
		if stalled {
			p.fail(problem.reason, problem.message)
			return nil
		}
		p.retry(problem)
	}
	if p.keepTrying() {
		return nil
	}
	p.status.Phase = gitopsv1alpha1.ReconciliationInProgress
	p.setReady(metav1.ConditionUnknown, gitopsv1alpha1.ReasonInProgress, inProgressMessage(p.req, p.value))
	return nil
}

// notPassedOn is the message of a request that timed out before every target was asked: what
// kept it from being passed on, when its Ready condition said.
func (p *pass) notPassedOn() string {
	message := fmt.Sprintf("The request was not passed on before its timeout of %s.", timeout(p.req))
	if prev := apimeta.FindStatusCondition(p.req.Status.Conditions, gitopsv1alpha1.ConditionReady); prev != nil && prev.Reason != gitopsv1alpha1.ReasonInProgress {
		message += " " + prev.Message
	}
	return message
}

// follow reads what every target reports (phase InProgress) and decides the request: it
// succeeds once every target handled it, is Ready and reports the revision it names; it fails
// when a target's reconcile failed, a newer push superseded it, or its deadline passed; it
// stays InProgress otherwise.
func (c *Controller) follow(ctx context.Context, p *pass) error {
	waiting, err := c.observeTargets(ctx, p)
	if err != nil || p.ended() {
		return err
	}
	if len(waiting) == 0 {
		n := len(p.req.Spec.Targets)
		p.succeed(fmt.Sprintf("%s handled the request made at %s and %s Ready.", capitalize(count(n)), p.value, isAre(n)))
		return nil
	}
	if superseded := c.superseded(p.req); superseded != "" {
		p.fail(gitopsv1alpha1.ReasonSuperseded, superseded)
		return nil
	}
	if p.now.After(p.deadline) {
		p.fail(gitopsv1alpha1.ReasonTimedOut, fmt.Sprintf("Not handled and Ready within %s: %s.", timeout(p.req), strings.Join(waiting, "; ")))
		return nil
	}
	if p.keepTrying() {
		return nil
	}
	p.setReady(metav1.ConditionUnknown, gitopsv1alpha1.ReasonInProgress, inProgressMessage(p.req, p.value))
	return nil
}

// observeTargets records what each target reports in its status entry and returns the
// targets still waited for, described for a message. It stops at the first target whose
// problem or failed reconcile fails the request.
func (c *Controller) observeTargets(ctx context.Context, p *pass) ([]string, error) {
	var waiting []string
	for i, t := range p.req.Spec.Targets {
		obs, err := c.observe(ctx, p.req, i)
		problem, stalled, err := targetProblemOf(err)
		if err != nil {
			return nil, err
		}
		entry := &p.status.Targets[i]
		if problem != nil {
			entry.Ready, entry.Message = false, problem.message
			if stalled {
				p.fail(problem.reason, problem.message)
				return nil, nil
			}
			p.retry(problem)
			waiting = append(waiting, fmt.Sprintf("%s (%s)", describe(t), strings.TrimSuffix(problem.message, ".")))
			continue
		}
		record(entry, obs, p.value, t.Revision, p.now)
		if obs.failed(p.value, t.Revision) {
			p.fail(gitopsv1alpha1.ReasonReconciliationFailed, fmt.Sprintf("%s handled the request and is not Ready: %s", describe(t), entry.Message))
			return nil, nil
		}
		if w := stillWaitingFor(t, entry, obs); w != "" {
			waiting = append(waiting, w)
		}
	}
	return waiting, nil
}

// stillWaitingFor describes a target that is not Ready yet for a message, or is "" for a Ready
// one: with the revision it reports when that is not the one the request waits for.
func stillWaitingFor(t gitopsv1alpha1.ReconciliationTarget, entry *gitopsv1alpha1.ReconciliationTargetStatus, obs observation) string {
	switch {
	case entry.Ready:
		return ""
	case !obs.at(t.Revision):
		return fmt.Sprintf("%s (%s)", describe(t), strings.TrimSuffix(reports(obs.revision, t.Revision), "."))
	default:
		return describe(t)
	}
}

// retry notes a problem that may pass: the request tries again at the next poll.
func (p *pass) retry(problem *targetProblem) {
	p.retrying = append(p.retrying, problem.message)
	p.retryReason = cmp.Or(p.retryReason, problem.reason)
}

// keepTrying says whether the pass met problems that may pass, and if so says in the Ready
// condition that the request tries again until its deadline.
func (p *pass) keepTrying() bool {
	if len(p.retrying) == 0 {
		return false
	}
	p.setReady(metav1.ConditionUnknown, p.retryReason,
		fmt.Sprintf("%s Trying again until %s.", strings.Join(p.retrying, " "), p.deadline.UTC().Format(time.RFC3339)))
	return true
}

// ended says whether the pass finished the request.
func (p *pass) ended() bool { return finished(p.status.Phase) }

// succeed ends the request as Succeeded.
func (p *pass) succeed(message string) {
	p.status.Phase = gitopsv1alpha1.ReconciliationSucceeded
	p.status.CompletionTime = &metav1.Time{Time: p.now}
	p.setReady(metav1.ConditionTrue, gitopsv1alpha1.ReasonSucceeded, message)
}

// fail ends the request as Failed, for reason.
func (p *pass) fail(reason, message string) {
	p.status.Phase = gitopsv1alpha1.ReconciliationFailed
	p.status.CompletionTime = &metav1.Time{Time: p.now}
	p.setReady(metav1.ConditionFalse, reason, message)
}

func (p *pass) setReady(status metav1.ConditionStatus, reason, message string) {
	conditions.SetAt(&p.status.Conditions, p.req.Generation, metav1.NewTime(p.now), gitopsv1alpha1.ConditionReady, status, reason, message)
}

// targetProblemOf splits what asking or reading a target returned: nothing, a problem with the
// target (stalled when only a person can fix it), or an error of the controller's own.
func targetProblemOf(err error) (problem *targetProblem, stalled bool, other error) {
	if err == nil {
		return nil, false, nil
	}
	if !errors.As(err, &problem) {
		return nil, false, err
	}
	return problem, errkind.IsStalled(err), nil
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

// writeStatus stores status when it changed and records the Ready condition's transitions as
// events. A request deleted meanwhile needs nothing written.
func (c *Controller) writeStatus(ctx context.Context, req *gitopsv1alpha1.ReconciliationRequest, status *gitopsv1alpha1.ReconciliationRequestStatus) error {
	updated := req.DeepCopy()
	updated.Status = *status
	_, wrote, err := c.status.Write(ctx, req, updated)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if wrote && req.Status.Phase != status.Phase {
		klog.FromContext(ctx).V(2).Info("Reconciliation request phase changed", "request", klog.KObj(req), "from", req.Status.Phase, "to", status.Phase)
	}
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
