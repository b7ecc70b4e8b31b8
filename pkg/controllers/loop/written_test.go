package loop

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func configMap(uid, rv, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", UID: types.UID("uid-" + uid), ResourceVersion: rv},
		Data: map[string]string{"v": value}}
}

func TestWrittenFresher(t *testing.T) {
	key := cache.NewObjectName("n", "a")
	var w Written[*corev1.ConfigMap]
	base := configMap("1", "10", "old")
	if got := w.Fresher(key, base); got != base {
		t.Fatal("no write recorded: want the cached object")
	}
	written := configMap("1", "11", "new")
	w.Record(key, base, written)

	// The cache has not caught up: it still shows the version the write replaced.
	if got := w.Fresher(key, configMap("1", "10", "old")); got != written {
		t.Fatalf("stale cache: got %v, want the written object", got.Data)
	}
	if w.Len() != 1 {
		t.Fatal("the entry must stand until the cache moves on")
	}
	// The cache caught up (or moved past, by another writer): the cached object wins and the
	// entry goes.
	caught := configMap("1", "12", "theirs")
	if got := w.Fresher(key, caught); got != caught || w.Len() != 0 {
		t.Fatalf("cache moved on: got %v, %d entries", got.Data, w.Len())
	}
	// Gone entry: the stale version no longer maps to the write.
	stale := configMap("1", "10", "old")
	if got := w.Fresher(key, stale); got != stale {
		t.Fatal("a dropped entry was used")
	}
}

func TestWrittenOtherObjectOfTheSameName(t *testing.T) {
	key := cache.NewObjectName("n", "a")
	var w Written[*corev1.ConfigMap]
	w.Record(key, configMap("1", "10", "old"), configMap("1", "11", "new"))
	// Deleted and recreated under the same name: another UID, whatever its version.
	recreated := configMap("2", "10", "fresh")
	if got := w.Fresher(key, recreated); got != recreated || w.Len() != 0 {
		t.Fatal("a write to the deleted object was used for its successor")
	}
	w.Record(key, configMap("1", "10", "old"), configMap("1", "11", "new"))
	w.Forget(key)
	if w.Len() != 0 {
		t.Fatal("Forget left the entry")
	}
}

// A finalizer write, then a status write made from its result: a cache behind both, or behind
// the second only, is stale, and the reconcile works from the second write.
func TestWrittenChainsConsecutiveWrites(t *testing.T) {
	key := cache.NewObjectName("n", "a")
	var w Written[*corev1.ConfigMap]
	base, first, second := configMap("1", "10", "old"), configMap("1", "11", "finalizer"), configMap("1", "12", "status")
	w.Record(key, base, first)
	w.Record(key, w.Fresher(key, base), second)
	for _, cached := range []*corev1.ConfigMap{configMap("1", "10", "old"), configMap("1", "11", "finalizer")} {
		if got := w.Fresher(key, cached); got != second {
			t.Fatalf("cache at version %s: got %v, want the second write", cached.ResourceVersion, got.Data)
		}
	}
	if got := w.Fresher(key, second); got != second || w.Len() != 0 {
		t.Fatalf("cache caught up: %d entries left", w.Len())
	}
	// A write not based on the last recorded one starts a new chain: the versions before it
	// are no longer ours to skip.
	w.Record(key, base, first)
	w.Record(key, configMap("1", "20", "theirs"), configMap("1", "21", "ours"))
	if cached := configMap("1", "10", "old"); w.Fresher(key, cached) != cached {
		t.Fatal("an old chain survived a write based on another version")
	}
}
