package resourcebinding

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
)

// Another writer (a former leader) created the state Secret meanwhile: the write fails rather
// than overwrite it, and the retry renders from what that writer stored.
func TestStateWriteLosesToAnotherWriterAndRereads(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := newStateStore(client, nil)
	b := binding("")
	st, read, err := store.get(ctx, b)
	if err != nil || len(st) != 0 || read != nil {
		t.Fatalf("no state yet: %v %v %v", st, read, err)
	}
	// The former leader's write lands between our read and our write.
	if _, err := client.CoreV1().Secrets("team-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db.state", Namespace: "team-a"},
		Data: map[string][]byte{"state": []byte(`{"password":"theirs-1234"}`)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := store.put(ctx, b, map[string]interface{}{"password": "ours-5678"}, read); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("put over another writer's Secret: %v", err)
	}
	st, _, err = store.get(ctx, b)
	if err != nil || st["password"] != "theirs-1234" {
		t.Fatalf("the retry reads %v, %v; want the other writer's state", st, err)
	}
}

// The store reads the state Secret from the cache, and its own update before the cache shows
// it: rendering from the older state would draw a new password for a database that has one.
// Once the cache moves on (here: someone else's edit) the cache is read again.
func TestStateReadsItsOwnUpdateBeforeTheCacheDoes(t *testing.T) {
	ctx := context.Background()
	b := binding("")
	first := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: StateSecretName(b.Name), Namespace: "team-a", UID: "state-uid"},
		Data: map[string][]byte{"state": []byte(`{"password":"first-1234"}`)}}
	client := fake.NewClientset(first)
	looptest.ResourceVersions(&client.Fake, client.Tracker(), corev1.SchemeGroupVersion.WithResource("secrets"))
	stored, err := client.CoreV1().Secrets("team-a").Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cached := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := cached.Add(stored); err != nil {
		t.Fatal(err)
	}
	store := newStateStore(client, corelisters.NewSecretLister(cached))
	password := func() interface{} {
		t.Helper()
		st, _, err := store.get(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return st["password"]
	}

	_, read, err := store.get(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.put(ctx, b, map[string]interface{}{"password": "second-5678"}, read); err != nil {
		t.Fatal(err)
	}
	if got := password(); got != "second-5678" {
		t.Errorf("state before the cache has the update: %v, want the update's", got)
	}
	// The same state again is no write, and a write from the update's version is no conflict.
	updates := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" {
				n++
			}
		}
		return n
	}
	_, read, _ = store.get(ctx, b)
	if err := store.put(ctx, b, map[string]interface{}{"password": "second-5678"}, read); err != nil || updates() != 1 {
		t.Fatalf("the same state again: %v, %d updates", err, updates())
	}
	if err := store.put(ctx, b, map[string]interface{}{"password": "third-9012"}, read); err != nil {
		t.Fatalf("an update from the store's own last write: %v", err)
	}

	// The cache moves on (here: to the server's latest version).
	latest, err := client.CoreV1().Secrets("team-a").Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cached.Update(latest); err != nil {
		t.Fatal(err)
	}
	if got := password(); got != "third-9012" || store.written.Len() != 0 {
		t.Errorf("state once the cache caught up: %v with %d updates remembered", got, store.written.Len())
	}

	// A deleted binding's state Secret is forgotten.
	if err := store.put(ctx, b, map[string]interface{}{"password": "fourth-3456"}, latest); err != nil {
		t.Fatal(err)
	}
	store.forget(cache.MetaObjectToName(b))
	if store.written.Len() != 0 {
		t.Error("a deleted binding's state Secret is still remembered")
	}
}

// Shared state is written with the version it was read at: a conflict fails the reconcile,
// whose retry renders again from the other writer's shared state.
func TestSharedStateConflictFails(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := newStateStore(client, nil)
	if err := store.putShared(ctx, "team-a", map[string]interface{}{"n": 1}, sharedVersion{}); err != nil {
		t.Fatal(err)
	}
	_, version, err := store.shared(ctx, "team-a")
	if err != nil || !version.exists {
		t.Fatalf("shared: %v %+v", err, version)
	}
	client.PrependReactor("update", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, SharedStateSecret, nil)
	})
	if err := store.putShared(ctx, "team-a", map[string]interface{}{"n": 2}, version); !apierrors.IsConflict(err) {
		t.Fatalf("a conflicting write: %v", err)
	}
}
