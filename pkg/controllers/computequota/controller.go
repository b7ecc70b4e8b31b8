// Package computequota is the controller that keeps the TenantCompute part of ResourceQuotas
// current. plinth-apiserver's ResourceQuota admission plugin only charges a quota's
// status.used for what it admits; nothing gives back what a deleted or shrunk tenant used, and
// kube-controller-manager's quota controller, which replenishes Pods and object counts, keeps
// resources it has no evaluator for (compute.plinth.dev/cpu and memory) as they were.
//
// For every ResourceQuota whose spec.hard names a compute resource (pkg/compute/quota's
// ResourceNames), the controller recomputes their usage from the namespace's TenantComputes
// with the evaluator admission charges with, and writes status.hard and status.used of those
// resources only, and only when they differ. It writes status.hard too because the admission
// plugin enforces what status.hard lists and kube-controller-manager, which copies spec.hard
// there, may not run its quota controller (the local platform does not); where it does, both
// write the same values. It is woken by quotas whose spec.hard changes and by every
// TenantCompute change that changes what the tenant uses.
//
// Admission charges status.used before the create is stored, and a create refused after
// admission (a duplicate tenant ID, a name that exists) leaves its charge behind, with no
// TenantCompute change to wake the controller. As kube-controller-manager's quota controller
// does, it therefore also recounts every quota that limits a compute resource once per resync
// period, and a quota the charge delay after admission charged it. A recount must not give back
// the charge of a tenant that is being stored but is not in the cache yet (admission would then
// let in more than the quota allows): for the charge delay after a charge, a recount keeps what
// status.used says where that is more than it counts. By then the tenant of a charge that was
// stored is in the cache and counted, and the charge of one that was refused is given back.
//
// Status is written as plinth-computequota through a statuswriter (a ResourceQuota has no
// conditions; its events, had it any, would carry compute.plinth.dev's reasons).
//
// In memory the controller keeps, per quota, when admission last charged it, and its own last
// write of the quota until its cache shows it (loop.Written), which also tells its own writes
// from admission's charges. A restart loses both: a charge made just before it is not held by
// the new process's first recount, which may give it back until the tenant, once in the cache,
// is counted again (admission may let in more than the quota allows for that moment), and the
// first write of the new process from a cache behind the old one's last write meets a conflict
// and is retried.
package computequota

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	computequota "github.com/plinth-dev/plinth/pkg/compute/quota"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	computeinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/compute/v1alpha1"
	computelisters "github.com/plinth-dev/plinth/pkg/generated/listers/compute/v1alpha1"
)

// Name names the controller in logs and metrics.
const Name = "computequota"

// FieldManager owns the compute resources in the quotas' status.
const FieldManager = "plinth-computequota"

// DefaultResyncPeriod is how often every quota is recounted unless Options say otherwise:
// kube-controller-manager's --resource-quota-sync-period.
const DefaultResyncPeriod = 5 * time.Minute

// DefaultChargeDelay is how long after a charge its quotas are recounted unless Options say
// otherwise.
const DefaultChargeDelay = 2 * time.Second

// Options tune the controller.
type Options struct {
	// ResyncPeriod is how often each quota that limits a compute resource is recounted although
	// nothing woke it (plinth-controller's --compute-quota-resync-period); zero means
	// DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// ChargeDelay is how long a charge by admission is kept by recounts, and when its quota is
	// recounted; zero means DefaultChargeDelay. It must exceed the time a stored TenantCompute
	// takes to reach the cache, or the recount gives back the charge of a tenant that exists
	// (until the tenant's add event charges it again).
	ChargeDelay time.Duration
	// Clock tells the time of charges; nil means the real clock.
	Clock clock.PassiveClock
}

// Controller recomputes the compute resources of ResourceQuotas.
type Controller struct {
	*loop.Loop
	status      *statuswriter.Writer[*corev1.ResourceQuota]
	quotas      corelisters.ResourceQuotaLister
	tenants     computelisters.TenantComputeLister
	resync      time.Duration
	chargeDelay time.Duration
	clock       clock.PassiveClock

	mu sync.Mutex
	// charged is when each quota was last seen charged by someone else than this controller.
	charged map[cache.ObjectName]time.Time
	// written is each quota as this controller last wrote it, until the cache shows it: the
	// quota to recount from meanwhile, and what tells its own writes from admission's charges.
	written loop.Written[*corev1.ResourceQuota]
}

// NewController returns the controller. It reads ResourceQuotas and TenantComputes and writes
// ResourceQuota status through kube.
func NewController(kube kubernetes.Interface, quotas coreinformers.ResourceQuotaInformer, tenants computeinformers.TenantComputeInformer,
	opts Options) (*Controller, error) {
	if opts.ResyncPeriod < 0 || opts.ChargeDelay < 0 {
		return nil, fmt.Errorf("%s: the resync period and the charge delay must not be negative, not %s and %s", Name, opts.ResyncPeriod, opts.ChargeDelay)
	}
	c := &Controller{
		quotas: quotas.Lister(), tenants: tenants.Lister(),
		resync: opts.ResyncPeriod, chargeDelay: opts.ChargeDelay, clock: opts.Clock,
		charged: map[cache.ObjectName]time.Time{},
	}
	c.status = &statuswriter.Writer[*corev1.ResourceQuota]{
		FieldManager: FieldManager, Reasons: computev1alpha1.Reasons,
		Conditions: func(*corev1.ResourceQuota) []metav1.Condition { return nil },
		// A conflict (the admission plugin charged the quota meanwhile) is retried from the
		// informer's newer copy.
		Update: func(ctx context.Context, rq *corev1.ResourceQuota, opts metav1.UpdateOptions) (*corev1.ResourceQuota, error) {
			return kube.CoreV1().ResourceQuotas(rq.Namespace).UpdateStatus(ctx, rq, opts)
		},
		Written: &c.written,
	}
	if c.resync == 0 {
		c.resync = DefaultResyncPeriod
	}
	if c.chargeDelay == 0 {
		c.chargeDelay = DefaultChargeDelay
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Loop = loop.New(Name, c.reconcile, quotas.Informer(), tenants.Informer())
	for _, err := range []error{
		// Status updates are the admission plugin's charges and this controller's own writes:
		// a charge is recounted after the charge delay instead (below).
		c.WatchMappedIf(quotas.Informer(), loop.Self, hardChanged),
		c.WatchMappedIf(tenants.Informer(), c.quotasOfNamespace, usageChanged),
	} {
		if err != nil {
			return nil, err
		}
	}
	// Updates only: the informer's initial list reaches the handler above, so Run need not
	// wait for this one.
	if _, err := quotas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: c.observeCharge}); err != nil {
		return nil, fmt.Errorf("%s: watching the charges of ResourceQuotas: %w", Name, err)
	}
	return c, nil
}

// observeCharge notes a quota's compute usage changed in status by someone else than this
// controller (admission charging a create or update), and has the quota recounted once the
// charge delay has passed. Admission charges every quota of the namespace that limits what the
// tenant uses, so each of them is noted by its own update.
func (c *Controller) observeCharge(oldObj, obj interface{}) {
	old, ok1 := oldObj.(*corev1.ResourceQuota)
	rq, ok2 := obj.(*corev1.ResourceQuota)
	if !ok1 || !ok2 || !computeUsedChanged(oldObj, obj) {
		return
	}
	key := cache.NewObjectName(rq.Namespace, rq.Name)
	if c.ownWrite(key, old, rq) {
		return
	}
	c.mu.Lock()
	c.charged[key] = c.clock.Now()
	c.mu.Unlock()
	c.EnqueueAfter(key, c.chargeDelay)
}

// ownWrite says whether an update the informer reports, from old to rq, is this controller's
// own last write: had the cache still shown old, the controller would have recounted from what
// its write returned (not old itself), and that is rq. An own write seen before the write has
// been remembered counts as a charge: its quota is only recounted once more, later.
func (c *Controller) ownWrite(key cache.ObjectName, old, rq *corev1.ResourceQuota) bool {
	written := c.written.Fresher(key, old)
	return written != old && written.ResourceVersion == rq.ResourceVersion
}

// heldUntil is when the last charge of a quota stops being kept; ok is false when none is.
func (c *Controller) heldUntil(key cache.ObjectName) (until time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, charged := c.charged[key]
	if !charged {
		return time.Time{}, false
	}
	until = at.Add(c.chargeDelay)
	if !c.clock.Now().Before(until) {
		delete(c.charged, key)
		return time.Time{}, false
	}
	return until, true
}

// forget drops what is known of a deleted quota.
func (c *Controller) forget(key cache.ObjectName) {
	c.written.Forget(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.charged, key)
}

// computeUsedChanged is true when an update changes a quota's status.used of a compute
// resource: a charge by admission, or this controller's write.
func computeUsedChanged(oldObj, obj interface{}) bool {
	old, ok1 := oldObj.(*corev1.ResourceQuota)
	rq, ok2 := obj.(*corev1.ResourceQuota)
	if !ok1 || !ok2 {
		return false
	}
	return !quotav1.Equals(quotav1.Mask(old.Status.Used, computequota.ResourceNames), quotav1.Mask(rq.Status.Used, computequota.ResourceNames))
}

// hardChanged is true when an update changes a quota's spec.hard.
func hardChanged(oldObj, obj interface{}) bool {
	old, ok1 := oldObj.(*corev1.ResourceQuota)
	rq, ok2 := obj.(*corev1.ResourceQuota)
	return !ok1 || !ok2 || !quotav1.Equals(old.Spec.Hard, rq.Spec.Hard)
}

// usageChanged is true when an update changes what a tenant uses.
func usageChanged(oldObj, obj interface{}) bool {
	old, ok1 := oldObj.(*computev1alpha1.TenantCompute)
	tc, ok2 := obj.(*computev1alpha1.TenantCompute)
	if !ok1 || !ok2 {
		return true
	}
	before, err1 := evaluator.Usage(old)
	after, err2 := evaluator.Usage(tc)
	return err1 != nil || err2 != nil || !quotav1.Equals(before, after)
}

// evaluator measures single tenants for usageChanged; it never lists.
var evaluator = computequota.NewEvaluator(nil)

// quotasOfNamespace maps an object (a TenantCompute, or a quota admission charged) to the
// quotas of its namespace that limit a compute resource.
func (c *Controller) quotasOfNamespace(obj interface{}) []cache.ObjectName {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	quotas, err := c.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []cache.ObjectName
	for _, rq := range quotas {
		if limitsCompute(rq) {
			keys = append(keys, cache.NewObjectName(rq.Namespace, rq.Name))
		}
	}
	return keys
}

// limitsCompute is true for a quota whose spec.hard names a compute resource.
func limitsCompute(rq *corev1.ResourceQuota) bool {
	return len(quotav1.Intersection(quotav1.ResourceNames(rq.Spec.Hard), computequota.ResourceNames)) > 0
}

// hasCompute is true for a quota whose status names a compute resource.
func hasCompute(rq *corev1.ResourceQuota) bool {
	names := append(quotav1.ResourceNames(rq.Status.Hard), quotav1.ResourceNames(rq.Status.Used)...)
	return len(quotav1.Intersection(names, computequota.ResourceNames)) > 0
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.quotas.ResourceQuotas(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	rq := c.written.Fresher(key, cached)
	limits := limitsCompute(rq)
	if !limits && !hasCompute(rq) {
		return nil
	}
	if limits {
		// The periodic recount, scheduled whatever this one ends in: the queue keeps only the
		// earliest of a key's delayed adds, so each quota waits for one however often it is
		// reconciled meanwhile.
		defer c.EnqueueAfter(key, c.resync)
	}
	used, err := computequota.Used(rq, c.listTenants)
	if err != nil {
		return err
	}
	if until, held := c.heldUntil(key); held {
		// Charged less than the charge delay ago, maybe for a tenant being stored that the
		// cache has not seen: what the quota says it uses is kept where it is more than the
		// count, until the key is recounted after the delay.
		used = quotav1.Max(used, quotav1.Mask(rq.Status.Used, computequota.ResourceNames))
		defer c.EnqueueAfter(key, until.Sub(c.clock.Now()))
	}
	updated := rq.DeepCopy()
	updated.Status = desiredStatus(rq, used)
	_, _, err = c.status.Write(ctx, rq, updated)
	return err
}

// listTenants lists a namespace's TenantComputes from the cache.
func (c *Controller) listTenants(namespace string) ([]runtime.Object, error) {
	tenants, err := c.tenants.TenantComputes(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(tenants))
	for _, tc := range tenants {
		out = append(out, tc)
	}
	return out, nil
}

// desiredStatus is rq's status with its compute resources set from spec.hard and used, and
// those no longer in spec.hard removed; every other resource is left to its owner.
func desiredStatus(rq *corev1.ResourceQuota, used corev1.ResourceList) corev1.ResourceQuotaStatus {
	status := *rq.Status.DeepCopy()
	if status.Hard == nil {
		status.Hard = corev1.ResourceList{}
	}
	if status.Used == nil {
		status.Used = corev1.ResourceList{}
	}
	for _, name := range computequota.ResourceNames {
		hard, limited := rq.Spec.Hard[name]
		if !limited {
			delete(status.Hard, name)
			delete(status.Used, name)
			continue
		}
		status.Hard[name] = hard
		status.Used[name] = used[name]
	}
	return status
}
