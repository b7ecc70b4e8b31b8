package cachedget

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// recorder is a storage that records the resourceVersion each Get was asked at; the other
// methods are not called by these tests.
type recorder struct {
	storage.Interface
	current    uint64
	currentErr error
	asked      []string
}

func (r *recorder) GetCurrentResourceVersion(context.Context) (uint64, error) {
	return r.current, r.currentErr
}

func (r *recorder) Get(_ context.Context, _ string, opts storage.GetOptions, _ runtime.Object) error {
	r.asked = append(r.asked, opts.ResourceVersion)
	return nil
}

func TestAGetWithoutResourceVersionIsAskedAtEtcdsCurrentRevision(t *testing.T) {
	r := &recorder{current: 4711}
	s := Storage(r)
	for _, rv := range []string{"", "0", "12"} {
		if err := s.Get(context.Background(), "/k", storage.GetOptions{ResourceVersion: rv}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Only the consistent GET changes; "0" (any version) and an exact floor pass through.
	if got, want := r.asked, []string{"4711", "0", "12"}; !slices.Equal(got, want) {
		t.Errorf("asked at %q, want %q", got, want)
	}
}

// When etcd does not answer the revision question, the GET goes to etcd as it would without
// the cache, rather than being answered from a cache of unknown freshness.
func TestWithoutEtcdsRevisionTheGetIsNotAnsweredFromTheCache(t *testing.T) {
	r := &recorder{currentErr: errors.New("etcdserver: request timed out")}
	if err := Storage(r).Get(context.Background(), "/k", storage.GetOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.asked; !slices.Equal(got, []string{""}) {
		t.Errorf("asked at %q, want one GET without a resourceVersion", got)
	}
}

// A resource whose storage is not the watch cache (the decorator is UndecoratedStorage, or
// the cache is off) keeps its storage as it is: etcd's store would read twice.
func TestOnlyTheWatchCacheIsWrapped(t *testing.T) {
	plain := &recorder{}
	getter := RESTOptionsGetter(fixedGetter{decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error),
		func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		return plain, func() {}, nil
	}})
	opts, err := getter.GetRESTOptions(schema.GroupResource{Group: "score.dev", Resource: "workloads"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := opts.Decorator(nil, "", nil, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s != storage.Interface(plain) {
		t.Errorf("a storage without a watch cache was wrapped: %T", s)
	}
}

type fixedGetter struct{ decorator generic.StorageDecorator }

func (g fixedGetter) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{Decorator: g.decorator}, nil
}
