// Package loop is the informer + rate-limited workqueue machinery every Plinth controller
// shares, after k8s.io/sample-controller: handlers enqueue namespace/name keys, workers call the
// controller's reconcile function, failures are retried with backoff, and every reconcile is
// counted and timed for Prometheus.
package loop

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
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
)

var (
	reconciles = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "plinth", Name: "reconcile_total",
		Help: "Reconciles by controller and result (success, error).",
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
func rateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 30*time.Second),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(100), 500)},
	)
}

// ReconcileFunc brings one object, named by its namespace/name key, to its desired state. It must
// be idempotent: it runs again after any change and after any error.
type ReconcileFunc func(ctx context.Context, namespace, name string) error

// Loop is one controller's queue and workers.
type Loop struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile ReconcileFunc
	synced    []cache.InformerSynced
}

// New returns a loop named name (used in logs and metrics).
func New(name string, reconcile ReconcileFunc) *Loop {
	return &Loop{
		name:      name,
		reconcile: reconcile,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
	}
}

// Watch enqueues the objects of an informer themselves, and waits for it to sync before work starts.
func (l *Loop) Watch(informer cache.SharedIndexInformer) error {
	return l.WatchMapped(informer, func(obj interface{}) []string {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return nil
		}
		return []string{key}
	})
}

// WatchMapped enqueues, for each event of an informer, the keys toKeys maps the object to (for
// example the owner of an owned object).
func (l *Loop) WatchMapped(informer cache.SharedIndexInformer, toKeys func(obj interface{}) []string) error {
	return l.WatchMappedIf(informer, toKeys, func(_, _ interface{}) bool { return true })
}

// Enqueue adds a key directly.
func (l *Loop) Enqueue(namespace, name string) {
	if namespace == "" {
		l.queue.Add(name)
		return
	}
	l.queue.Add(namespace + "/" + name)
}

// EnqueueAfter adds a key after a delay, for polling what no informer reports.
func (l *Loop) EnqueueAfter(namespace, name string, after time.Duration) {
	if namespace == "" {
		l.queue.AddAfter(name, after)
		return
	}
	l.queue.AddAfter(namespace+"/"+name, after)
}

// WaitFor makes the workers wait for informers the controller reads through listers without
// watching them, so that no reconcile sees a half-filled cache.
func (l *Loop) WaitFor(informers ...cache.SharedIndexInformer) {
	for _, i := range informers {
		l.synced = append(l.synced, i.HasSynced)
	}
}

// WatchGenerations enqueues an informer's objects when they are added or deleted and when an
// update changes their generation or deletion timestamp — not on status-only updates, so a
// controller that writes status and polls on its own schedule does not wake itself up.
func (l *Loop) WatchGenerations(informer cache.SharedIndexInformer) error {
	self := func(obj interface{}) []string {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return nil
		}
		return []string{key}
	}
	return l.WatchMappedIf(informer, self, func(oldObj, obj interface{}) bool {
		o, err1 := meta.Accessor(oldObj)
		n, err2 := meta.Accessor(obj)
		return err1 != nil || err2 != nil || o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	})
}

// WatchMappedIf is WatchMapped that enqueues on updates only when changed says the update
// matters, for controllers that follow a few fields of a busy object. toKeys always gets the
// object itself: a deletion the informer saw only as a tombstone is unwrapped first.
func (l *Loop) WatchMappedIf(informer cache.SharedIndexInformer, toKeys func(obj interface{}) []string, changed func(oldObj, obj interface{}) bool) error {
	enqueue := func(obj interface{}) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		for _, key := range toKeys(obj) {
			l.queue.Add(key)
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(oldObj, obj interface{}) {
			if changed(oldObj, obj) {
				enqueue(obj)
			}
		},
		DeleteFunc: enqueue,
	})
	l.synced = append(l.synced, informer.HasSynced)
	return err
}

// OwnerKeys maps an object to its owners of the given kind in the same namespace.
func OwnerKeys(apiVersion, kind string) func(obj interface{}) []string {
	return func(obj interface{}) []string {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		var keys []string
		for _, ref := range m.GetOwnerReferences() {
			if ref.Kind == kind && ref.APIVersion == apiVersion {
				keys = append(keys, m.GetNamespace()+"/"+ref.Name)
			}
		}
		return keys
	}
}

// Run waits for the informers, then runs workers until ctx ends, then drains.
func (l *Loop) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer l.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", l.name)
	logger.Info("Starting controller")
	if !cache.WaitForNamedCacheSync(l.name, ctx.Done(), l.synced...) {
		return fmt.Errorf("%s: caches did not sync", l.name)
	}
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, l.work, time.Second)
	}
	<-ctx.Done()
	logger.Info("Stopping controller")
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
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		l.queue.Forget(key)
		return true
	}
	start := time.Now()
	err = l.reconcile(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", l.name, "key", key)), namespace, name)
	reconcileDuration.WithLabelValues(l.name).Observe(time.Since(start).Seconds())
	if err != nil {
		reconciles.WithLabelValues(l.name, "error").Inc()
		klog.FromContext(ctx).Info("Reconcile failed, retrying", "controller", l.name, "key", key, "err", err.Error())
		l.queue.AddRateLimited(key)
		return true
	}
	reconciles.WithLabelValues(l.name, "success").Inc()
	l.queue.Forget(key)
	return true
}
