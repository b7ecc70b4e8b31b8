package tenantcompute

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/errkind"
)

// MaxAttempts is how many times in a row a provider may fail before the phase becomes Failed.
const MaxAttempts = 5

// The backoff between attempts starts at firstRetry and doubles up to maxRetry.
const (
	firstRetry = time.Second
	maxRetry   = 5 * time.Minute
)

// verbs say what failed, by failure reason, in messages.
var verbs = map[string]string{
	v1alpha1.ReasonProvisionFailed: "provision", v1alpha1.ReasonUpdateFailed: "update", v1alpha1.ReasonArchiveFailed: "destroy", v1alpha1.ReasonComputeFailed: "run",
}

// pass is one reconcile of a tenant: the status it will write, built step by step.
type pass struct {
	c      *Controller
	key    cache.ObjectName
	tc     *v1alpha1.TenantCompute
	p      compute.Provider
	status *v1alpha1.TenantComputeStatus
	now    time.Time
	// specChanged says the generation moved since the status was written; requested, that
	// the reconcile-requested annotation carries a value not yet handled.
	specChanged, requested bool
	// atRest says the pass began with the tenant Ready or Stopped: it only checks compute that
	// was as the spec asked.
	atRest bool
	// broken says the provider reported the compute failed (as opposed to a call that failed).
	broken bool
	// checked says the provider's Update ran, or the tenant came to rest: the resync period
	// starts again.
	checked bool
	// fault is why this pass failed, for the Ready condition; nil when it did not.
	fault *fault
	// message is the provider's explanation of a state other than running.
	message string
	// stamp is now as a condition's transition time.
	stamp metav1.Time
	// recheck is how soon the provider asked for the tenant to be looked at again, when it
	// waits on something outside the provider; zero when it does not.
	recheck time.Duration
}

type fault struct{ reason, message string }

func (c *Controller) newPass(key cache.ObjectName, tc *v1alpha1.TenantCompute, p compute.Provider) *pass {
	now := c.clock.Now()
	return &pass{c: c, key: key, tc: tc, p: p, status: tc.Status.DeepCopy(), now: now, stamp: metav1.NewTime(now)}
}

// run decides what the provider is asked to do and what the status says afterwards.
func (ps *pass) run(ctx context.Context) {
	st, tc := ps.status, ps.tc
	request := tc.Annotations[v1alpha1.ReconcileRequestedAnnotation]
	ps.requested = request != "" && request != st.LastHandledReconcileAt
	ps.specChanged = tc.Generation != st.ObservedGeneration
	ps.atRest = st.Phase == v1alpha1.PhaseReady || st.Phase == v1alpha1.PhaseStopped
	switch {
	case ps.specChanged || ps.requested:
		// A new spec, or an explicit request, starts a fresh series of attempts.
		st.Retries = 0
	case st.Phase == v1alpha1.PhaseFailed && computeFailed(st):
		// The provider did its part and the compute broke on its own (crashing containers):
		// nothing is retried, but compute that comes back by itself brings the tenant back.
		if ps.recover(ctx) {
			ps.conclude()
		}
		return
	case st.Phase == v1alpha1.PhaseFailed, st.Phase == v1alpha1.PhaseArchived && tc.Spec.Archived:
		return // nothing to do until the spec changes or a reconcile is requested
	case st.NextRetryTime != nil && ps.now.Before(st.NextRetryTime.Time):
		return // waiting out the backoff
	}
	st.NextRetryTime = nil
	st.ObservedGeneration = tc.Generation
	if ps.requested {
		st.LastHandledReconcileAt = request
	}
	switch {
	case tc.Spec.Archived:
		ps.archive(ctx)
	case !provisioned(st):
		ps.provision(ctx)
	default:
		ps.update(ctx)
	}
	ps.conclude()
}

// provision validates the spec with the provider and has it create the compute.
func (ps *pass) provision(ctx context.Context) {
	st := ps.status
	if err := ps.p.Validate(ctx, ps.tc); err != nil {
		ps.refuse("provision", err)
		return
	}
	res, err := ps.p.Provision(ctx, ps.tc)
	if err == nil && res == nil {
		err = errors.New("the provider returned no provision result")
	}
	if err != nil {
		st.ProvisionResult = &v1alpha1.ProvisionResult{Status: v1alpha1.ProvisionStatusFailed, Message: sentence(err)}
		ps.failure(v1alpha1.ReasonProvisionFailed, v1alpha1.PhaseProvisioning, err)
		return
	}
	ps.recordProvision(res)
	switch res.Status {
	case v1alpha1.ProvisionStatusSuccess:
		conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionProvisioned, metav1.ConditionTrue, v1alpha1.ReasonProvisioned,
			fmt.Sprintf("Provider %s created the compute.", ps.p.Name()))
	case v1alpha1.ProvisionStatusInProgress:
		conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionProvisioned, metav1.ConditionFalse, v1alpha1.ReasonProvisioning,
			or(res.Message, fmt.Sprintf("Provider %s is creating the compute.", ps.p.Name())))
	default:
		ps.failure(v1alpha1.ReasonProvisionFailed, v1alpha1.PhaseProvisioning,
			errors.New(or(res.Message, fmt.Sprintf("the provider reported the provision as %q", res.Status))))
		return
	}
	ps.observe(ctx, v1alpha1.PhaseProvisioning, v1alpha1.ReasonProvisionFailed, v1alpha1.PhaseProvisioning)
}

// update brings provisioned compute to the spec when the spec changed, an update is under way,
// a reconcile was requested or the resync period is up; otherwise it only observes.
func (ps *pass) update(ctx context.Context) {
	st := ps.status
	// The compute the provider created is still there for this generation.
	prov := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProvisioned)
	conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, prov.Type, prov.Status, prov.Reason, prov.Message)
	repeat := st.Phase == v1alpha1.PhaseUpdating && !ps.specChanged && !ps.requested
	if !ps.specChanged && !ps.requested && st.Phase != v1alpha1.PhaseUpdating && !(ps.atRest && ps.c.due(ps.key, ps.now)) {
		// Between checks: a tenant still coming up after its provision, or one at rest.
		if st.Phase == v1alpha1.PhaseProvisioning {
			ps.observe(ctx, st.Phase, v1alpha1.ReasonProvisionFailed, v1alpha1.PhaseProvisioning)
		} else {
			ps.observe(ctx, st.Phase, v1alpha1.ReasonUpdateFailed, v1alpha1.PhaseUpdating)
		}
		return
	}
	if ps.specChanged {
		if err := ps.p.Validate(ctx, ps.tc); err != nil {
			ps.refuse("apply", err)
			return
		}
	}
	res, err := ps.p.Update(ctx, ps.tc)
	if err == nil && res == nil {
		err = errors.New("the provider returned no update result")
	}
	if err != nil {
		at := metav1.NewTime(ps.now)
		st.UpdateResult = &v1alpha1.UpdateResult{Status: v1alpha1.UpdateStatusFailed, Message: sentence(err), UpdatedAt: &at}
		ps.failure(v1alpha1.ReasonUpdateFailed, v1alpha1.PhaseUpdating, err)
		return
	}
	ps.checked = true
	ps.recordUpdate(res, repeat)
	switch res.Status {
	case v1alpha1.UpdateStatusSuccess, v1alpha1.UpdateStatusNoChanges, v1alpha1.UpdateStatusInProgress:
	default:
		ps.failure(v1alpha1.ReasonUpdateFailed, v1alpha1.PhaseUpdating,
			errors.New(or(res.Message, fmt.Sprintf("the provider reported the update as %q", res.Status))))
		return
	}
	// A check that found nothing to change leaves a tenant at rest where it is; anything else
	// is a rollout until the compute is back at rest.
	onTheWay := v1alpha1.PhaseUpdating
	if ps.atRest && !ps.specChanged && res.Status == v1alpha1.UpdateStatusNoChanges {
		onTheWay = st.Phase
	}
	ps.observe(ctx, onTheWay, v1alpha1.ReasonUpdateFailed, v1alpha1.PhaseUpdating)
}

// archive has the provider destroy the compute and keeps the object with its history.
func (ps *pass) archive(ctx context.Context) {
	st := ps.status
	if st.Phase == v1alpha1.PhaseArchived {
		return
	}
	if err := ps.p.Destroy(ctx, ps.tc); errkind.IsWaiting(err) {
		// Begun and waiting on something outside the provider: no attempt is counted, and the
		// tenant is looked at again when the provider asks.
		st.Phase, ps.message = v1alpha1.PhaseUpdating, fmt.Sprintf("Provider %s is destroying the compute: %s", ps.p.Name(), sentence(err))
		ps.recheck, _ = errkind.WaitFor(err)
		return
	} else if err != nil {
		ps.failure(v1alpha1.ReasonArchiveFailed, v1alpha1.PhaseUpdating, err)
		return
	}
	at := metav1.NewTime(ps.now)
	st.Phase, st.State, st.Health, st.Retries = v1alpha1.PhaseArchived, v1alpha1.ComputeStateStopped, v1alpha1.HealthStatusUnknown, 0
	st.Containers, st.Metadata, st.LastUpdated = nil, nil, &at
	conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionProvisioned, metav1.ConditionFalse, v1alpha1.ReasonArchived,
		"The compute was destroyed because spec.archived is set.")
	conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionHealthy, metav1.ConditionUnknown, v1alpha1.ReasonArchived,
		"Nothing runs while the tenant is archived.")
}

// observe copies the provider's report into the status and settles the phase: Ready or
// Stopped once the compute is as the spec asks, onTheWay until then. A report of failed
// compute, or no report, is a failure with failReason, retried in phase failPhase.
func (ps *pass) observe(ctx context.Context, onTheWay v1alpha1.TenantComputePhase, failReason string, failPhase v1alpha1.TenantComputePhase) {
	st := ps.status
	cs, err := ps.p.GetStatus(ctx, ps.tc)
	if err == nil && cs == nil {
		err = errors.New("the provider returned no status")
	}
	if err != nil {
		ps.failure(failReason, failPhase, err)
		return
	}
	at := metav1.NewTime(ps.now)
	st.State, st.Health, st.LastUpdated = cs.State, cs.Health, &at
	st.Containers, st.Metadata = slices.Clone(cs.Containers), maps.Clone(cs.Metadata)
	if len(cs.Endpoints) > 0 && st.ProvisionResult != nil {
		st.ProvisionResult.Endpoints = slices.Clone(cs.Endpoints)
	}
	ps.message = cs.Message
	switch cs.Health {
	case v1alpha1.HealthStatusHealthy:
		conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionHealthy, metav1.ConditionTrue, v1alpha1.ReasonHealthy,
			fmt.Sprintf("Provider %s reports the compute healthy.", ps.p.Name()))
	case v1alpha1.HealthStatusUnhealthy:
		conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionHealthy, metav1.ConditionFalse, v1alpha1.ReasonUnhealthy,
			or(cs.Message, fmt.Sprintf("Provider %s reports the compute unhealthy.", ps.p.Name())))
	default:
		conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionHealthy, metav1.ConditionUnknown, v1alpha1.ReasonHealthUnknown,
			fmt.Sprintf("Provider %s does not know the compute's health.", ps.p.Name()))
	}
	if cs.State == v1alpha1.ComputeStateFailed {
		ps.broken = true
		ps.failure(v1alpha1.ReasonComputeFailed, failPhase, errors.New(or(cs.Message, "the compute failed")))
		return
	}
	rest := v1alpha1.PhaseReady
	atRest := cs.State == v1alpha1.ComputeStateRunning && cs.Health != v1alpha1.HealthStatusUnhealthy
	if ps.tc.Spec.Suspended {
		rest, atRest = v1alpha1.PhaseStopped, cs.State == v1alpha1.ComputeStateStopped
	}
	if !atRest || !provisioned(st) {
		st.Phase = onTheWay
		return
	}
	if st.Phase != rest {
		ps.checked = true // just checked on the way here
	}
	st.Phase, st.Retries = rest, 0
}

// computeFailed says the tenant failed because its provider reported the compute failed (not
// because the provider could not do what was asked).
func computeFailed(st *v1alpha1.TenantComputeStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Reason == v1alpha1.ReasonComputeFailed
}

// recover looks at the compute of a tenant that failed on its own and, when the provider
// reports it running and not unhealthy again, settles the tenant at rest. It reports whether it
// changed anything; a look that finds the compute still broken (or cannot look) changes nothing,
// so it writes nothing.
func (ps *pass) recover(ctx context.Context) bool {
	cs, err := ps.p.GetStatus(ctx, ps.tc)
	if err != nil || cs == nil || cs.State != v1alpha1.ComputeStateRunning || cs.Health == v1alpha1.HealthStatusUnhealthy {
		return false
	}
	ps.status.Retries = 0
	ps.observe(ctx, v1alpha1.PhaseFailed, v1alpha1.ReasonComputeFailed, v1alpha1.PhaseFailed)
	return ps.status.Phase != v1alpha1.PhaseFailed
}

// failure counts a failed attempt: the phase becomes failPhase with the next attempt after the
// backoff, or Failed after MaxAttempts attempts or an error the provider marks Stalled.
func (ps *pass) failure(reason string, failPhase v1alpha1.TenantComputePhase, err error) {
	st := ps.status
	st.Retries++
	verb := verbs[reason]
	switch {
	case ps.atRest && !ps.specChanged && !ps.broken && !errkind.IsStalled(err):
		// A check of compute that ran as the spec asked (a resync, a requested reconcile, a
		// status read) failed: the provider or its cluster is unreachable, the compute is not
		// known to be broken. The tenant keeps its phase and is checked again after the
		// backoff, however long the outage lasts; Failed is for changes that cannot be made.
		next := metav1.NewTime(ps.now.Add(backoff(st.Retries)))
		st.NextRetryTime = &next
		ps.fault = &fault{v1alpha1.ReasonCheckFailed, fmt.Sprintf("Provider %s could not check the compute (attempt %d, next at %s): %s",
			ps.p.Name(), st.Retries, next.UTC().Format(time.RFC3339), sentence(err))}
		return
	case errkind.IsStalled(err):
		st.Phase = v1alpha1.PhaseFailed
		ps.fault = &fault{reason, fmt.Sprintf("Provider %s cannot %s the compute: %s", ps.p.Name(), verb, sentence(err))}
	case st.Retries >= MaxAttempts:
		st.Phase = v1alpha1.PhaseFailed
		ps.fault = &fault{reason, fmt.Sprintf("Provider %s failed to %s the compute %d times in a row: %s", ps.p.Name(), verb, st.Retries, sentence(err))}
	default:
		next := metav1.NewTime(ps.now.Add(backoff(st.Retries)))
		st.Phase, st.NextRetryTime = failPhase, &next
		ps.fault = &fault{reason, fmt.Sprintf("Provider %s failed to %s the compute (attempt %d of %d, next at %s): %s",
			ps.p.Name(), verb, st.Retries, MaxAttempts, next.UTC().Format(time.RFC3339), sentence(err))}
	}
	if !provisioned(st) {
		conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionProvisioned, metav1.ConditionFalse, reason,
			ps.fault.message)
	}
}

// refuse ends the tenant in Failed at once: the provider cannot honour the spec, and trying
// again without a change would fail the same way.
func (ps *pass) refuse(verb string, err error) {
	st := ps.status
	st.Phase, st.Retries = v1alpha1.PhaseFailed, 0
	ps.fault = &fault{v1alpha1.ReasonSpecInvalid, fmt.Sprintf("Provider %s cannot %s this spec: %s", ps.p.Name(), verb, sentence(err))}
	if !provisioned(st) {
		conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionProvisioned, metav1.ConditionFalse, v1alpha1.ReasonSpecInvalid,
			ps.fault.message)
	}
}

// conclude sets the Ready condition from the phase the pass ended in.
func (ps *pass) conclude() {
	st, name := ps.status, ps.p.Name()
	status, reason, message := metav1.ConditionFalse, "", ""
	switch {
	case ps.fault != nil:
		reason, message = ps.fault.reason, ps.fault.message
	case st.Phase == v1alpha1.PhaseReady && st.State == v1alpha1.ComputeStateRunning && st.Health != v1alpha1.HealthStatusUnhealthy:
		status, reason, message = metav1.ConditionTrue, v1alpha1.ReasonReady, "The compute runs as the spec asks."
	case st.Phase == v1alpha1.PhaseReady && st.Health == v1alpha1.HealthStatusUnhealthy:
		reason, message = v1alpha1.ReasonUnhealthy, or(ps.message, fmt.Sprintf("Provider %s reports the compute unhealthy.", name))
	case st.Phase == v1alpha1.PhaseReady:
		reason, message = v1alpha1.ReasonNotRunning, or(ps.message, fmt.Sprintf("The compute is %s.", or(string(st.State), string(v1alpha1.ComputeStateUnknown))))
	case st.Phase == v1alpha1.PhaseStopped:
		reason, message = v1alpha1.ReasonStopped, "The compute is stopped because spec.suspended is set."
	case st.Phase == v1alpha1.PhaseArchived:
		reason, message = v1alpha1.ReasonArchived, "The compute was destroyed because spec.archived is set; the object keeps its history."
	case st.Phase == v1alpha1.PhaseProvisioning:
		reason, message = v1alpha1.ReasonProvisioning, or(ps.message, fmt.Sprintf("Provider %s is creating the compute.", name))
	default:
		reason, message = v1alpha1.ReasonUpdating, or(ps.message, fmt.Sprintf("Provider %s is bringing the compute to the spec.", name))
	}
	conditions.SetAt(&ps.status.Conditions, ps.tc.Generation, ps.stamp, v1alpha1.ConditionReady, status, reason, message)
}

// recordProvision keeps a provision result; a repeat that differs only in its time keeps the
// stored one, so an idempotent Provision writes nothing.
func (ps *pass) recordProvision(res *v1alpha1.ProvisionResult) {
	got := res.DeepCopy()
	if got.Status == v1alpha1.ProvisionStatusSuccess && got.ProvisionedAt == nil {
		at := metav1.NewTime(ps.now)
		got.ProvisionedAt = &at
	}
	if stored := ps.status.ProvisionResult; stored != nil {
		a, b := stored.DeepCopy(), got.DeepCopy()
		a.ProvisionedAt, b.ProvisionedAt = nil, nil
		if apiequality.Semantic.DeepEqual(a, b) {
			return
		}
	}
	ps.status.ProvisionResult = got
}

// recordUpdate keeps an update result. A result that differs from the stored one only in its
// time keeps the stored one (an idle check writes nothing), and so does a no_changes from a
// repeated Update while a rollout completes: the rollout's changes stay visible.
func (ps *pass) recordUpdate(res *v1alpha1.UpdateResult, repeat bool) {
	got := res.DeepCopy()
	if got.UpdatedAt == nil {
		at := metav1.NewTime(ps.now)
		got.UpdatedAt = &at
	}
	if stored := ps.status.UpdateResult; stored != nil {
		a, b := stored.DeepCopy(), got.DeepCopy()
		a.UpdatedAt, b.UpdatedAt = nil, nil
		if apiequality.Semantic.DeepEqual(a, b) ||
			(repeat && got.Status == v1alpha1.UpdateStatusNoChanges && stored.Status == v1alpha1.UpdateStatusSuccess) {
			return
		}
	}
	ps.status.UpdateResult = got
}

// provisioned says whether the provider has created the compute (and it has not been archived
// since).
func provisioned(st *v1alpha1.TenantComputeStatus) bool {
	return meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionProvisioned)
}

// backoff is the wait after the given number of consecutive failures: 1 s, doubling, at most
// 5 min.
func backoff(failures int32) time.Duration {
	d := firstRetry
	for i := int32(1); i < failures && d < maxRetry; i++ {
		d *= 2
	}
	return min(d, maxRetry)
}

// sentence ends an error's text with one full stop.
func sentence(err error) string {
	return strings.TrimRight(err.Error(), ". ") + "."
}

func or(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}
