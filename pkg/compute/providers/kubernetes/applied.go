package kubernetes

import (
	"crypto/sha256"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// appliedCache remembers, per object, the manifest this process last applied and the object's
// generation and resourceVersion right after that apply. A plan is reconciled many times while
// it rolls out (every binding, Deployment and poll event); when the manifest is unchanged and
// the live object (from the informer) is still the one the apply returned, applying again would
// change nothing, so the request is skipped. Anything that edits the object's spec moves its
// generation (or, for kinds without one, its resourceVersion) and the next reconcile applies
// again; a restarted controller starts empty and applies once.
type appliedCache struct {
	mu      sync.Mutex
	entries map[string]appliedEntry
}

type appliedEntry struct {
	manifest        [sha256.Size]byte
	generation      int64
	resourceVersion string
}

func newAppliedCache() *appliedCache { return &appliedCache{entries: map[string]appliedEntry{}} }

// upToDate reports whether manifest was the last one applied to key and live has not changed
// since. live may be nil (not in the informer yet).
func (c *appliedCache) upToDate(key string, manifest []byte, live metav1.Object) bool {
	if live == nil {
		return false
	}
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || e.manifest != sha256.Sum256(manifest) {
		return false
	}
	if e.generation > 0 {
		// Status writes move the resourceVersion of kinds that have a generation; only a spec
		// change moves the generation.
		return live.GetGeneration() == e.generation
	}
	return live.GetResourceVersion() == e.resourceVersion
}

// record notes a successful apply and the object it returned.
func (c *appliedCache) record(key string, manifest []byte, applied metav1.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = appliedEntry{manifest: sha256.Sum256(manifest), generation: applied.GetGeneration(), resourceVersion: applied.GetResourceVersion()}
}

// forget drops an entry, for objects that are gone.
func (c *appliedCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}
