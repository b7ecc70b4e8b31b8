// Package loop is the informer + rate-limited workqueue machinery every Plinth controller
// shares, after k8s.io/sample-controller: handlers enqueue cache.ObjectName keys, workers call
// the controller's reconcile function, failures are retried with backoff, and every reconcile is
// counted and timed for Prometheus.
//
// A controller builds its Loop in its constructor from every informer it reads, so Run waits
// for all of their caches — not only the ones whose events wake it — before any worker starts:
// a reconcile right after start or a leader change never acts on an empty cache.
package loop

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// Registers the workqueue metrics provider (depth, adds, latency, retries per queue).
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/errkind"
)

var (
	reconciles = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "plinth", Name: "reconcile_total",
		Help: "Reconciles by controller and result (success, error, conflict, stalled, waiting).",
	}, []string{"controller", "result"})
	reconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "plinth", Name: "reconcile_duration_seconds",
		Help:    "Time one reconcile takes, by controller.",
		Buckets: metrics.ExponentialBuckets(0.001, 2, 14),
	}, []string{"controller"})
)

func init() {
	legacyregistry.MustRegister(reconciles, reconcileDuration)
}

// rateLimiter retries a failing key with exponential backoff capped at 30 s — client-go's
// default cap of 1000 s would leave an object stale for a quarter of an hour after a burst of
// throttled requests — and limits the whole queue to 100 retries per second.
func rateLimiter() workqueue.TypedRateLimiter[cache.ObjectName] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, 30*time.Second),
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(100), 500)},
	)
}

// ReconcileFunc brings one object to its desired state. It must be idempotent: it runs again
// after any change and after any error. The kind of error it returns (pkg/errkind) decides
// what happens next: a Stalled error is not retried, a Waiting one is looked at again after
// the time it names, a conflict or any other error is retried with backoff.
type ReconcileFunc func(ctx context.Context, key cache.ObjectName) error

// KeysFunc maps an object an informer reports to the keys of the objects a controller
// reconciles (for example an owned object to its owner).
type KeysFunc func(obj interface{}) []cache.ObjectName

// Loop is one controller's queue and workers.
type Loop struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[cache.ObjectName]
	reconcile ReconcileFunc
	synced    []cache.InformerSynced
}

// New returns a loop named name (used in logs and metrics) that waits, before its workers
// start, for every informer in reads: pass all the informers the controller reads, through
// listers or indexers, whether or not their events wake it.
func New(name string, reconcile ReconcileFunc, reads ...cache.SharedIndexInformer) *Loop {
	l := &Loop{
		name:      name,
		reconcile: reconcile,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: name}),
	}
	for _, informer := range reads {
		l.synced = append(l.synced, informer.HasSynced)
	}
	return l
}

// Name is the loop's name.
func (l *Loop) Name() string { return l.name }

// Self maps an object to its own key.
func Self(obj interface{}) []cache.ObjectName {
	name, err := cache.ObjectToName(obj)
	if err != nil {
		return nil
	}
	return []cache.ObjectName{name}
}

// Watch enqueues the objects of an informer themselves.
func (l *Loop) Watch(informer cache.SharedIndexInformer) error {
	return l.WatchMapped(informer, Self)
}

// WatchMapped enqueues, for each event of an informer, the keys toKeys maps the object to.
func (l *Loop) WatchMapped(informer cache.SharedIndexInformer, toKeys KeysFunc) error {
	return l.WatchMappedIf(informer, toKeys, func(_, _ interface{}) bool { return true })
}

// WatchGenerations enqueues an informer's objects when they are added or deleted and when an
// update changes their generation or deletion timestamp — not on status-only updates, so a
// controller that writes status and polls on its own schedule does not wake itself up.
func (l *Loop) WatchGenerations(informer cache.SharedIndexInformer) error {
	return l.WatchMappedIf(informer, Self, SpecOrDeletionChanged)
}

// SpecOrDeletionChanged says whether an update changed an object's generation or deletion
// timestamp: whether it is more than a status write. Objects without metadata count as changed.
func SpecOrDeletionChanged(oldObj, obj interface{}) bool {
	o, err1 := meta.Accessor(oldObj)
	n, err2 := meta.Accessor(obj)
	return err1 != nil || err2 != nil || o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}

// SpecDeletionOrResync is SpecOrDeletionChanged, and also true for the informer's periodic
// resync, which replays every object with its resourceVersion unchanged. A controller that
// repairs objects it does not watch needs the resync to do it, but not the wake-up of its own
// status writes.
func SpecDeletionOrResync(oldObj, obj interface{}) bool {
	if SpecOrDeletionChanged(oldObj, obj) {
		return true
	}
	o, _ := meta.Accessor(oldObj)
	n, _ := meta.Accessor(obj)
	return o.GetResourceVersion() == n.GetResourceVersion()
}

// WatchMappedIf is WatchMapped that enqueues on updates only when changed says the update
// matters, for controllers that follow a few fields of a busy object. toKeys always gets the
// object itself: a deletion the informer saw only as a tombstone is unwrapped first.
//
// Run also waits until this handler has been given every object of the informer's initial
// list, so a worker never starts between the cache filling and the handler hearing of it.
func (l *Loop) WatchMappedIf(informer cache.SharedIndexInformer, toKeys KeysFunc, changed func(oldObj, obj interface{}) bool) error {
	enqueue := func(obj interface{}) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		for _, key := range toKeys(obj) {
			l.queue.Add(key)
		}
	}
	registration, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(oldObj, obj interface{}) {
			if changed(oldObj, obj) {
				enqueue(obj)
			}
		},
		DeleteFunc: enqueue,
	})
	if err != nil {
		return fmt.Errorf("%s: watching %T: %w", l.name, informer, err)
	}
	l.synced = append(l.synced, registration.HasSynced)
	return nil
}

// Enqueue adds a key directly.
func (l *Loop) Enqueue(key cache.ObjectName) { l.queue.Add(key) }

// EnqueueAfter adds a key after a delay, for polling what no informer reports.
func (l *Loop) EnqueueAfter(key cache.ObjectName, after time.Duration) { l.queue.AddAfter(key, after) }

// OwnerKeys maps an object to its owners of the given kind in the same namespace.
func OwnerKeys(apiVersion, kind string) KeysFunc {
	return func(obj interface{}) []cache.ObjectName {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		var keys []cache.ObjectName
		for _, ref := range m.GetOwnerReferences() {
			if ref.Kind == kind && ref.APIVersion == apiVersion {
				keys = append(keys, cache.NewObjectName(m.GetNamespace(), ref.Name))
			}
		}
		return keys
	}
}

// HasSynced says whether every cache the controller reads has synced and every handler has
// been given its informer's initial list: what Run waits for before its workers start.
func (l *Loop) HasSynced() bool {
	for _, synced := range l.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// Run waits for every cache the controller reads, then runs workers until ctx ends, and
// returns only once every worker has finished its reconcile: a leader that stops leading must
// not be mid-write when its successor starts.
func (l *Loop) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer l.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", l.name)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, l.synced...) {
		return fmt.Errorf("%s: caches did not sync", l.name)
	}
	var running sync.WaitGroup
	for i := 0; i < workers; i++ {
		running.Go(func() { wait.UntilWithContext(ctx, l.work, time.Second) })
	}
	<-ctx.Done()
	logger.Info("Stopping controller")
	l.queue.ShutDown()
	running.Wait()
	return nil
}

func (l *Loop) work(ctx context.Context) {
	for l.next(ctx) {
	}
}

func (l *Loop) next(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("key", key))
	start := time.Now()
	err := l.reconcile(ctx, key)
	reconcileDuration.WithLabelValues(l.name).Observe(time.Since(start).Seconds())
	if apierrors.IsConflict(err) {
		// A write based on a cache that had not caught up with the previous write: optimistic
		// concurrency working as meant, not a failure to report. The retry reads the newer object.
		reconciles.WithLabelValues(l.name, "conflict").Inc()
		klog.FromContext(ctx).V(4).Info("Conflict with a newer version, requeuing", "err", err)
		l.queue.AddRateLimited(key)
		return true
	}
	if errkind.IsStalled(err) {
		// Retrying cannot help: the status says why, and a change to anything the controller
		// watches wakes it again.
		reconciles.WithLabelValues(l.name, "stalled").Inc()
		klog.FromContext(ctx).V(2).Info("Stalled until something changes", "err", err)
		l.queue.Forget(key)
		return true
	}
	if after, waiting := errkind.WaitFor(err); waiting {
		// Work under way elsewhere: look again after the time asked for, not on a failure's
		// backoff, and without counting a failure.
		reconciles.WithLabelValues(l.name, "waiting").Inc()
		klog.FromContext(ctx).V(4).Info("Waiting", "after", after, "err", err)
		l.queue.Forget(key)
		l.queue.AddAfter(key, after)
		return true
	}
	if err != nil {
		reconciles.WithLabelValues(l.name, "error").Inc()
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed, requeuing")
		l.queue.AddRateLimited(key)
		return true
	}
	reconciles.WithLabelValues(l.name, "success").Inc()
	l.queue.Forget(key)
	return true
}
