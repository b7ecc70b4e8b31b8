package kubernetes

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// appliedCache remembers, per object, the manifest this process last applied and the object
// that apply returned. A plan is reconciled many times while it rolls out (every binding,
// Deployment and poll event); when the manifest is unchanged and the live object (from the
// informer) is still the one the apply returned, applying again would change nothing, so the
// request is skipped.
//
// "Still the one" means: the same UID (a deleted and recreated object starts again at
// generation 1), the same generation (a spec edit by anyone moves it; status writes do not),
// or the same resourceVersion for kinds without a generation, and the labels, annotations and
// owner references the manifest sets still present (metadata edits do not move generation).
// A restarted controller starts empty and applies once.
type appliedCache struct {
	mu      sync.Mutex
	entries map[string]appliedEntry
}

type appliedEntry struct {
	manifest        [sha256.Size]byte
	uid             types.UID
	generation      int64
	resourceVersion string
	metadata        manifestMetadata
}

// manifestMetadata is the part of a manifest's metadata that edits can take away without
// moving the generation.
type manifestMetadata struct {
	Labels          map[string]string       `json:"labels"`
	Annotations     map[string]string       `json:"annotations"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
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
	if !ok || e.manifest != sha256.Sum256(manifest) || live.GetUID() != e.uid {
		return false
	}
	if e.generation > 0 {
		// Status writes move the resourceVersion of kinds that have a generation; only a spec
		// change moves the generation.
		if live.GetGeneration() != e.generation {
			return false
		}
	} else if live.GetResourceVersion() != e.resourceVersion {
		return false
	}
	return e.metadata.heldBy(live)
}

// heldBy reports whether live still carries every label, annotation and owner reference of
// the manifest. Other writers may add their own (the Deployment controller adds a revision
// annotation); only what the manifest sets matters.
func (m manifestMetadata) heldBy(live metav1.Object) bool {
	if !subset(m.Labels, live.GetLabels()) || !subset(m.Annotations, live.GetAnnotations()) {
		return false
	}
	for _, want := range m.OwnerReferences {
		found := false
		for _, have := range live.GetOwnerReferences() {
			if have.UID == want.UID {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// record notes a successful apply and the object it returned.
func (c *appliedCache) record(key string, manifest []byte, applied metav1.Object) {
	var doc struct {
		Metadata manifestMetadata `json:"metadata"`
	}
	if err := json.Unmarshal(manifest, &doc); err != nil {
		return // not cached: the next reconcile applies again
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = appliedEntry{manifest: sha256.Sum256(manifest), uid: applied.GetUID(),
		generation: applied.GetGeneration(), resourceVersion: applied.GetResourceVersion(), metadata: doc.Metadata}
}

// forget drops an entry, for objects that are gone.
func (c *appliedCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}
