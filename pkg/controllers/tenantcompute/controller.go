// Package tenantcompute is the controller that provisions TenantComputes through the compute
// provider each names in spec.providerType, and is the only writer of their status.
//
// A tenant's phase follows the provider: Requested → Provisioning → Ready ⇄ Updating, Stopped
// while spec.suspended is set, Archived while spec.archived is set (the compute is destroyed,
// the object and its history kept), Deleting while the finalizer waits for the provider's
// Destroy. A provider error, or compute the provider reports failed, is retried with
// exponential backoff (1 s doubling to 5 min) at most five times in a row before the phase
// becomes Failed; a spec change, or a new compute.plinth.dev/reconcile-requested-at value,
// starts again. Ready and Stopped tenants are checked against their spec with the provider's
// Update every resync period, and at once when that annotation gets a new value.
//
// Tenants whose provider is not in the controller's registry are left alone: another
// controller (an external provider process) serves them.
//
// Status is written as plinth-tenantcompute through a statuswriter, with the reasons
// compute.plinth.dev declares. A provider error of kind errkind.Stalled fails the tenant at
// once; one of kind errkind.Waiting (a Destroy waiting for an approval) is no failure, and the
// tenant is looked at again when the provider asks.
//
// In memory the controller keeps, per tenant, when a Ready or Stopped tenant was last checked
// with the provider's Update, and its own last status write until its cache shows it. A restart
// loses both and nothing else: every tenant at rest is checked on its first reconcile (once per
// restart, not per resync), and a reconcile before the cache catches up with a write made
// before the restart meets a conflict and is retried from the newer object.
package tenantcompute

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/errkind"
	computeclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/compute/v1alpha1"
	computeinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/compute/v1alpha1"
	computelisters "github.com/plinth-dev/plinth/pkg/generated/listers/compute/v1alpha1"
)

// Name names the controller in logs, metrics and events.
const Name = "tenantcompute"

// FieldManager names the controller in the managedFields of the statuses it writes.
const FieldManager = "plinth-tenantcompute"

// DefaultPollInterval is how soon a tenant whose compute is on its way (starting, stopping,
// rolling out) is looked at again when Options leave it open. Providers that watch what they
// create (compute.Notifier) wake the tenant sooner; the poll covers an event missed across a
// leader change and providers that watch nothing.
const DefaultPollInterval = 5 * time.Second

// Registry is what the controller needs of the compute provider registry: the provider a
// tenant names, and every provider (to wait for and follow the informers of those that watch
// what they create).
type Registry interface {
	Provider(name string) (compute.Provider, bool)
	Providers() []compute.Provider
}

// Options tune the controller.
type Options struct {
	// ResyncPeriod is how often a Ready or Stopped tenant is checked against its spec with the
	// provider's Update (plinth-controller's --compute-resync-period). Required.
	ResyncPeriod time.Duration
	// PollInterval is how soon a tenant whose compute is on its way is looked at again;
	// zero means DefaultPollInterval.
	PollInterval time.Duration
	// Clock tells the time for backoff, resync and timestamps; nil means the real clock.
	Clock clock.Clock
}

// Controller provisions TenantComputes.
type Controller struct {
	*loop.Loop
	client    computeclient.TenantComputesGetter
	events    *transition.Recorder
	status    *statuswriter.Writer[*v1alpha1.TenantCompute]
	tenants   computelisters.TenantComputeLister
	providers Registry
	resync    time.Duration
	poll      time.Duration
	clock     clock.Clock

	// checked is when each Ready or Stopped tenant was last checked with Update in this
	// process. It is kept in memory on purpose: recording it in status would write every
	// tenant every resync period although nothing changed. A tenant not in it (after a start
	// or a leader change) is checked on its first reconcile.
	mu      sync.Mutex
	checked map[cache.ObjectName]time.Time
	// written is each tenant as the controller's last status write returned it, until the
	// cache shows that write.
	written loop.Written[*v1alpha1.TenantCompute]
}

// NewController returns the TenantCompute controller. It reads TenantComputes and, for every
// provider that is a compute.Notifier, that provider's informers: their caches are waited for
// before any reconcile, and a change to one of their objects wakes the tenant TenantFor names.
// TenantComputes wake it when added or deleted and when their generation, deletion timestamp
// or reconcile-requested annotation changes, not on its own status writes.
func NewController(client computeclient.TenantComputesGetter, recorder events.EventRecorder,
	tenants computeinformers.TenantComputeInformer, providers Registry, opts Options) (*Controller, error) {
	if opts.ResyncPeriod <= 0 {
		return nil, fmt.Errorf("%s: the resync period must be positive, not %s", Name, opts.ResyncPeriod)
	}
	c := &Controller{
		client: client, events: transition.New(recorder, v1alpha1.Reasons), tenants: tenants.Lister(), providers: providers,
		resync: opts.ResyncPeriod, poll: opts.PollInterval, clock: opts.Clock,
		checked: map[cache.ObjectName]time.Time{},
	}
	c.status = &statuswriter.Writer[*v1alpha1.TenantCompute]{
		FieldManager: FieldManager, Reasons: v1alpha1.Reasons,
		Conditions: func(tc *v1alpha1.TenantCompute) []metav1.Condition { return tc.Status.Conditions },
		Update: func(ctx context.Context, tc *v1alpha1.TenantCompute, opts metav1.UpdateOptions) (*v1alpha1.TenantCompute, error) {
			return c.client.TenantComputes(tc.Namespace).UpdateStatus(ctx, tc, opts)
		},
		// Events are recorded by recordTransition: a tenant's events follow its phase and
		// attempts as well as its Ready condition.
		Written: &c.written,
	}
	if c.poll <= 0 {
		c.poll = DefaultPollInterval
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	reads := []cache.SharedIndexInformer{tenants.Informer()}
	var notifiers []compute.Notifier
	for _, p := range providers.Providers() {
		if n, ok := p.(compute.Notifier); ok {
			notifiers = append(notifiers, n)
			reads = append(reads, n.Informers()...)
		}
	}
	c.Loop = loop.New(Name, c.reconcile, reads...)
	if err := c.WatchMappedIf(tenants.Informer(), loop.Self, wakesTenant); err != nil {
		return nil, err
	}
	for _, n := range notifiers {
		for _, informer := range n.Informers() {
			if err := c.WatchMapped(informer, tenantOf(n)); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// wakesTenant says whether an update of a TenantCompute asks for a reconcile: a spec change
// (generation), a deletion, or a new reconcile request. Status writes, the controller's own
// included, do not.
func wakesTenant(oldObj, obj interface{}) bool {
	o, ok1 := oldObj.(*v1alpha1.TenantCompute)
	n, ok2 := obj.(*v1alpha1.TenantCompute)
	return !ok1 || !ok2 || o.Generation != n.Generation || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
		o.Annotations[v1alpha1.ReconcileRequestedAnnotation] != n.Annotations[v1alpha1.ReconcileRequestedAnnotation]
}

// tenantOf maps an object a provider watches to the tenant it belongs to.
func tenantOf(n compute.Notifier) loop.KeysFunc {
	return func(obj interface{}) []cache.ObjectName {
		if key, ok := n.TenantFor(obj); ok {
			return []cache.ObjectName{key}
		}
		return nil
	}
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.tenants.TenantComputes(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	tc := c.written.Fresher(key, cached)
	p, ok := c.providers.Provider(tc.Spec.ProviderType)
	if !ok {
		// Served by another controller (an external provider process publishes its own
		// ComputeProvider), or by none: either way not plinth-controller's to touch.
		return nil
	}
	if tc.DeletionTimestamp != nil {
		return c.finalize(ctx, key, tc, p)
	}
	if !slices.Contains(tc.Finalizers, v1alpha1.Finalizer) {
		// Before the provider creates anything, so nothing can be left behind by a delete.
		updated := tc.DeepCopy()
		updated.Finalizers = append(updated.Finalizers, v1alpha1.Finalizer)
		if tc, err = c.client.TenantComputes(tc.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}

	ps := c.newPass(key, tc, p)
	ps.run(ctx)
	if ps.checked {
		c.markChecked(key, ps.now)
	}
	if _, err := c.writeStatus(ctx, tc, ps.status); err != nil {
		return err
	}
	if after := c.nextLook(key, ps); after > 0 {
		c.EnqueueAfter(key, after)
	}
	return nil
}

// nextLook is how soon the tenant is looked at again without an event: at its retry time, at
// the next resync when it is at rest, after the poll interval while its compute is on its way
// (or a Ready tenant's is not running); never when it is Failed or Archived.
func (c *Controller) nextLook(key cache.ObjectName, ps *pass) time.Duration {
	st := ps.status
	switch {
	case st.NextRetryTime != nil:
		return st.NextRetryTime.Sub(ps.now)
	case ps.recheck > 0:
		return ps.recheck
	case st.Phase == v1alpha1.PhaseFailed && computeFailed(st):
		// Compute that failed on its own may come back: looked at on the resync period, and
		// sooner on the provider's events.
		return c.resync
	case st.Phase == v1alpha1.PhaseFailed || st.Phase == v1alpha1.PhaseArchived:
		return 0
	case st.Phase == v1alpha1.PhaseStopped || st.Phase == v1alpha1.PhaseReady && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady):
		c.mu.Lock()
		defer c.mu.Unlock()
		if last, ok := c.checked[key]; ok {
			return max(last.Add(c.resync).Sub(ps.now), time.Second)
		}
		return c.resync
	default:
		return c.poll
	}
}

// finalize marks the tenant Deleting, has the provider destroy its compute and then lets the
// object go.
func (c *Controller) finalize(ctx context.Context, key cache.ObjectName, tc *v1alpha1.TenantCompute, p compute.Provider) error {
	if !slices.Contains(tc.Finalizers, v1alpha1.Finalizer) {
		return nil
	}
	now := metav1.NewTime(c.clock.Now())
	if tc.Status.Phase != v1alpha1.PhaseDeleting {
		st := tc.Status.DeepCopy()
		st.Phase, st.NextRetryTime = v1alpha1.PhaseDeleting, nil
		conditions.SetAt(&st.Conditions, tc.Generation, now, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDeleting,
			fmt.Sprintf("Provider %s is destroying the compute.", p.Name()))
		var err error
		if tc, err = c.writeStatus(ctx, tc, st); err != nil {
			return err
		}
	}
	if err := p.Destroy(ctx, tc); err != nil {
		return c.destroyNotDone(ctx, key, tc, p, now, err)
	}
	updated := tc.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == v1alpha1.Finalizer })
	if _, err := c.client.TenantComputes(tc.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Compute destroyed, finalizer removed", "provider", p.Name())
	c.forget(key)
	return nil
}

// destroyNotDone reports a Destroy that has not finished in the Ready condition and decides
// when to try again. One that has begun and waits on something outside the provider (an
// approval) is no failure: the loop looks again when the provider asks. Any other error is
// retried with the loop's backoff, even one the provider marks Stalled (a deletion an approver
// rejected: each Destroy asks for it again): a tenant being deleted has no Failed phase to end
// in, and its finalizer holds until the provider has destroyed the compute.
func (c *Controller) destroyNotDone(ctx context.Context, key cache.ObjectName, tc *v1alpha1.TenantCompute, p compute.Provider, now metav1.Time, err error) error {
	waiting := errkind.IsWaiting(err)
	reason, message := v1alpha1.ReasonDestroyFailed, fmt.Sprintf("Provider %s could not destroy the compute yet: %s", p.Name(), sentence(err))
	if waiting {
		reason, message = v1alpha1.ReasonDeleting, fmt.Sprintf("Provider %s is destroying the compute: %s", p.Name(), sentence(err))
	}
	st := tc.Status.DeepCopy()
	conditions.SetAt(&st.Conditions, tc.Generation, now, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
	if _, werr := c.writeStatus(ctx, tc, st); werr != nil {
		return werr
	}
	if waiting {
		return fmt.Errorf("destroying the compute of TenantCompute %s: %w", key, err)
	}
	return fmt.Errorf("destroying the compute of TenantCompute %s: %v", key, err)
}

// writeStatus writes st when it differs from the stored status in anything but lastUpdated
// (a reconcile that changes nothing writes nothing), records the transition and returns the
// object as stored.
func (c *Controller) writeStatus(ctx context.Context, tc *v1alpha1.TenantCompute, st *v1alpha1.TenantComputeStatus) (*v1alpha1.TenantCompute, error) {
	after := tc.DeepCopy()
	after.Status = *st.DeepCopy()
	if lastUpdatedOnly(&tc.Status, st) {
		after.Status.LastUpdated = tc.Status.LastUpdated
	}
	stored, wrote, err := c.status.Write(ctx, tc, after)
	if err != nil || !wrote {
		return stored, err
	}
	if tc.Status.Phase != st.Phase {
		klog.FromContext(ctx).V(2).Info("Phase changed", "from", tc.Status.Phase, "to", st.Phase)
	}
	c.recordTransition(tc, &tc.Status, st)
	return stored, nil
}

// lastUpdatedOnly says whether two statuses differ in lastUpdated alone: the time of a look
// that found nothing new is not worth a write.
func lastUpdatedOnly(stored, st *v1alpha1.TenantComputeStatus) bool {
	compared := st.DeepCopy()
	compared.LastUpdated = stored.LastUpdated
	return apiequality.Semantic.DeepEqual(compared, stored)
}

// recordTransition records one event when the phase changes, when the Ready condition changes
// status or reason, or when another attempt failed: each is a step the tenant should see in
// `kubectl events`. The event carries the Ready condition's reason and message.
func (c *Controller) recordTransition(tc *v1alpha1.TenantCompute, before, after *v1alpha1.TenantComputeStatus) {
	now := meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionReady)
	if now == nil {
		return
	}
	was := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReady)
	if before.Phase == after.Phase && after.Retries <= before.Retries && was != nil && was.Status == now.Status && was.Reason == now.Reason {
		return
	}
	c.events.Record(tc, now.Reason, "Reconcile", now.Message)
}

func (c *Controller) markChecked(key cache.ObjectName, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked[key] = at
}

// due says whether a tenant at rest is to be checked with Update now.
func (c *Controller) due(key cache.ObjectName, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.checked[key]
	return !ok || !now.Before(last.Add(c.resync))
}

// forget drops what is kept in memory of a tenant that is gone.
func (c *Controller) forget(key cache.ObjectName) {
	c.written.Forget(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.checked, key)
}
