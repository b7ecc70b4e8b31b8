package drift

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// baselineRetention is how long a baseline no Check has used is kept. It bounds the cache when
// objects leave a pack without Forget: a pass interval longer than this only costs a dry-run
// per object again.
const baselineRetention = time.Hour

// objectKey names an object across API versions: group, kind, namespace and name.
type objectKey struct {
	group, kind, namespace, name string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	gvk := u.GroupVersionKind()
	return objectKey{group: gvk.Group, kind: gvk.Kind, namespace: u.GetNamespace(), name: u.GetName()}
}

// fingerprint is a digest of some bytes.
type fingerprint [sha256.Size]byte

// baseline is what an object looked like at its last clean check: the target object's UID,
// the digest of the object the pack applied, and the digest of the pack's Apply entry in its
// managedFields (API version and fieldsV1).
type baseline struct {
	uid     types.UID
	applied fingerprint
	owned   fingerprint
	used    time.Time
}

// baselines is the cache of clean checks, safe for concurrent use.
type baselines struct {
	mu      sync.Mutex
	entries map[objectKey]baseline
}

// clean says whether key's object still matches its baseline: same UID, same applied object,
// same fields owned by the pack. It marks the baseline used at now.
func (b *baselines) clean(key objectKey, uid types.UID, applied, owned fingerprint, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || e.uid != uid || e.applied != applied || e.owned != owned {
		return false
	}
	e.used = now
	b.entries[key] = e
	return true
}

// record keeps a baseline of a clean check.
func (b *baselines) record(key objectKey, e baseline) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = map[objectKey]baseline{}
	}
	b.entries[key] = e
}

// forget drops the baselines of keys.
func (b *baselines) forget(keys ...objectKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		delete(b.entries, k)
	}
}

// expire drops the baselines not used since before.
func (b *baselines) expire(before time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.entries {
		if e.used.Before(before) {
			delete(b.entries, k)
		}
	}
}

// len is how many baselines are kept.
func (b *baselines) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

// appliedFingerprint digests the object the pack applied. encoding/json writes map keys in
// order, so equal objects digest alike.
func appliedFingerprint(u *unstructured.Unstructured) (fingerprint, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return fingerprint{}, err
	}
	return sha256.Sum256(data), nil
}

// ownedFingerprint digests the pack's Apply entry: its API version and fieldsV1, which the
// server writes in a canonical order. No entry digests as the empty entry.
func ownedFingerprint(e *metav1.ManagedFieldsEntry) fingerprint {
	if e == nil {
		return sha256.Sum256(nil)
	}
	h := sha256.New()
	h.Write([]byte(e.APIVersion))
	h.Write([]byte{0})
	if e.FieldsV1 != nil {
		h.Write(e.FieldsV1.Raw)
	}
	var f fingerprint
	h.Sum(f[:0])
	return f
}
