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
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// Another writer (a former leader) created the state Secret meanwhile: the write fails rather
// than overwrite it, and the retry renders from what that writer stored.
func TestStateWriteLosesToAnotherWriterAndRereads(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := newStateStore(client)
	b := binding("")
	if st, err := store.get(ctx, b); err != nil || len(st) != 0 {
		t.Fatalf("no state yet: %v %v", st, err)
	}
	// The former leader's write lands between our read and our write.
	if _, err := client.CoreV1().Secrets("team-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db.state", Namespace: "team-a"},
		Data: map[string][]byte{"state": []byte(`{"password":"theirs-1234"}`)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := store.put(ctx, b, map[string]interface{}{"password": "ours-5678"}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("put over another writer's Secret: %v", err)
	}
	st, err := store.get(ctx, b)
	if err != nil || st["password"] != "theirs-1234" {
		t.Fatalf("the retry reads %v, %v; want the other writer's state", st, err)
	}
}

// A binding made again under the same name starts from the API, not from the record of the
// binding that had the name before; a deleted binding's record is forgotten.
func TestStateRecordIsPerBindingUID(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := newStateStore(client)
	b := binding("")
	if err := store.put(ctx, b, map[string]interface{}{"password": "first-1234"}); err != nil {
		t.Fatal(err)
	}
	again := binding("")
	again.UID = "1a2b3c4d-0000-4000-8000-000000000002"
	if _, ok := store.lookup(again); ok {
		t.Error("a new binding of the same name sees the old one's record")
	}
	store.forget(cache.MetaObjectToName(b))
	if _, ok := store.lookup(b); ok {
		t.Error("a forgotten binding is still remembered")
	}
}

// Shared state is written with the version it was read at: a conflict fails the reconcile,
// whose retry renders again from the other writer's shared state.
func TestSharedStateConflictFails(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := newStateStore(client)
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
