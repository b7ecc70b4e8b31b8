package loop

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Written remembers, per key, the object a controller's own last write returned, until its
// informer has caught up. A reconcile woken by another object's event (a binding, a plan, a
// Deployment) right after a status write reads a cached copy that does not hold that write yet:
// writing from it conflicts (409), and the retry writes again. With Fresher the reconcile works
// from the object its write returned instead, so it neither conflicts nor repeats the write.
//
// Freshness is decided without ordering resourceVersions, which are opaque: an entry stands
// while the cache still shows the exact version the write replaced. Any other cached version is
// the write itself or something after it, and the cache is used again.
//
// The zero value is ready to use; it is safe for concurrent use.
type Written[T metav1.Object] struct {
	mu      sync.Mutex
	entries map[cache.ObjectName]writtenEntry[T]
}

type writtenEntry[T metav1.Object] struct {
	// replaced is the resourceVersion of the object the write was based on.
	replaced string
	written  T
}

// Record keeps what a write of key returned; base is the object the write was made from (the
// one Fresher returned), whose resourceVersion the write replaced.
func (w *Written[T]) Record(key cache.ObjectName, base, written T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.entries == nil {
		w.entries = map[cache.ObjectName]writtenEntry[T]{}
	}
	w.entries[key] = writtenEntry[T]{replaced: base.GetResourceVersion(), written: written}
}

// Fresher is the object to reconcile key from: the last written one while cached is still the
// version that write replaced (same UID), else cached, and the entry is dropped.
func (w *Written[T]) Fresher(key cache.ObjectName, cached T) T {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.entries[key]
	if !ok {
		return cached
	}
	if e.written.GetUID() == cached.GetUID() && e.replaced == cached.GetResourceVersion() {
		return e.written
	}
	delete(w.entries, key)
	return cached
}

// Forget drops the entry of key, for an object that is gone.
func (w *Written[T]) Forget(key cache.ObjectName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.entries, key)
}

// Len is the number of entries held: the writes the cache has not been seen to catch up with.
func (w *Written[T]) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries)
}
