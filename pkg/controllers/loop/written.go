package loop

import (
	"slices"
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
// while the cache still shows a version the controller's own writes replaced. Writes made one
// from another's result (a finalizer, then the status) chain: the entry stands while the cache
// shows any version of that chain but the last. Any other cached version is the last write
// itself or something after it, and the cache is used again.
//
// The zero value is ready to use; it is safe for concurrent use.
type Written[T metav1.Object] struct {
	mu      sync.Mutex
	entries map[cache.ObjectName]writtenEntry[T]
}

type writtenEntry[T metav1.Object] struct {
	// replaced are the resourceVersions the chain of writes replaced, oldest first.
	replaced []string
	written  T
}

// Record keeps what a write of key returned; base is the object the write was made from (the
// one Fresher returned), whose resourceVersion the write replaced. A write based on the last
// one recorded extends its chain.
func (w *Written[T]) Record(key cache.ObjectName, base, written T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.entries == nil {
		w.entries = map[cache.ObjectName]writtenEntry[T]{}
	}
	var replaced []string
	if e, ok := w.entries[key]; ok && e.written.GetUID() == base.GetUID() && e.written.GetResourceVersion() == base.GetResourceVersion() {
		replaced = e.replaced
	}
	w.entries[key] = writtenEntry[T]{replaced: append(slices.Clip(replaced), base.GetResourceVersion()), written: written}
}

// Fresher is the object to reconcile key from: the last written one while cached is still a
// version its chain of writes replaced (same UID), else cached, and the entry is dropped.
func (w *Written[T]) Fresher(key cache.ObjectName, cached T) T {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.entries[key]
	if !ok {
		return cached
	}
	if e.written.GetUID() == cached.GetUID() && slices.Contains(e.replaced, cached.GetResourceVersion()) {
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
