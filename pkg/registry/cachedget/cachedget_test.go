package cachedget

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// recorder is a storage that records the resourceVersion each Get was asked at and answers,
// as the watch cache does, with a shallow copy of the object it holds; the other methods are
// not called by these tests.
type recorder struct {
	storage.Interface
	current    uint64
	currentErr error
	// tooLarge makes a Get with a resourceVersion time out as a cache that did not catch up.
	tooLarge bool
	held     metav1.PartialObjectMetadata
	asked    []string
}

func (r *recorder) GetCurrentResourceVersion(context.Context) (uint64, error) {
	return r.current, r.currentErr
}

func (r *recorder) Get(_ context.Context, _ string, opts storage.GetOptions, out runtime.Object) error {
	r.asked = append(r.asked, opts.ResourceVersion)
	if r.tooLarge && opts.ResourceVersion != "" {
		return storage.NewTooLargeResourceVersionError(r.current, r.current-1, 1)
	}
	*out.(*metav1.PartialObjectMetadata) = r.held
	return nil
}

// clientGetContext is the context of a client's GET, as the request's handler chain makes it.
func clientGetContext(verb string) context.Context {
	return request.WithRequestInfo(context.Background(), &request.RequestInfo{IsResourceRequest: true, Verb: verb, Resource: "workloads"})
}

func withConsistentReads(t *testing.T, supported bool) {
	saved := consistentReadSupported
	consistentReadSupported = func() bool { return supported }
	t.Cleanup(func() { consistentReadSupported = saved })
}

func TestAClientsGetWithoutResourceVersionIsAskedAtEtcdsCurrentRevision(t *testing.T) {
	withConsistentReads(t, true)
	r := &recorder{current: 4711}
	s := Storage(r)
	for _, rv := range []string{"", "0", "12"} {
		if err := s.Get(clientGetContext("get"), "/k", storage.GetOptions{ResourceVersion: rv}, &metav1.PartialObjectMetadata{}); err != nil {
			t.Fatal(err)
		}
	}
	// Only the consistent GET changes; "0" (any version) and an exact floor pass through.
	if got, want := r.asked, []string{"4711", "0", "12"}; !slices.Equal(got, want) {
		t.Errorf("asked at %q, want %q", got, want)
	}
}

// The storage's other readers read to change: an update, a patch, a delete or a dry run (whose
// strategy may set a condition in place on what it read) keeps reading from etcd, so nothing
// it changes can reach the objects the cache holds.
func TestOnlyAClientsGetIsAnsweredFromTheCache(t *testing.T) {
	withConsistentReads(t, true)
	for _, ctx := range []context.Context{context.Background(), clientGetContext("update"), clientGetContext("patch"), clientGetContext("delete"), clientGetContext("list")} {
		r := &recorder{current: 4711}
		if err := Storage(r).Get(ctx, "/k", storage.GetOptions{}, &metav1.PartialObjectMetadata{}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.asked, []string{""}) {
			info, _ := request.RequestInfoFrom(ctx)
			t.Errorf("a read within %+v was asked at %q, want one read from etcd", info, r.asked)
		}
	}
}

// The answer is the caller's own: changing it leaves the cached object as it was.
func TestTheAnswerIsACopy(t *testing.T) {
	withConsistentReads(t, true)
	r := &recorder{current: 4711, held: metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "a"}}}}
	var out metav1.PartialObjectMetadata
	if err := Storage(r).Get(clientGetContext("get"), "/k", storage.GetOptions{}, &out); err != nil {
		t.Fatal(err)
	}
	out.Labels["team"] = "changed"
	if r.held.Labels["team"] != "a" {
		t.Errorf("changing the answer changed the cached object: %v", r.held.Labels)
	}
}

// A cache that does not catch up within its wait answers with a timeout; etcd answers instead.
func TestACacheThatDoesNotCatchUpFallsBackToEtcd(t *testing.T) {
	withConsistentReads(t, true)
	r := &recorder{current: 4711, tooLarge: true}
	if err := Storage(r).Get(clientGetContext("get"), "/k", storage.GetOptions{}, &metav1.PartialObjectMetadata{}); err != nil {
		t.Fatalf("the GET failed instead of falling back to etcd: %v", err)
	}
	if want := []string{"4711", ""}; !slices.Equal(r.asked, want) {
		t.Errorf("asked at %q, want %q", r.asked, want)
	}
}

// Without progress requests (an etcd older than 3.5.13), a cache behind etcd's revision would
// wait for its own kind's next event: every GET goes to etcd.
func TestWithoutProgressRequestsEveryGetGoesToEtcd(t *testing.T) {
	withConsistentReads(t, false)
	r := &recorder{current: 4711}
	if err := Storage(r).Get(clientGetContext("get"), "/k", storage.GetOptions{}, &metav1.PartialObjectMetadata{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.asked, []string{""}) {
		t.Errorf("asked at %q, want one read from etcd", r.asked)
	}
}

// When etcd does not answer the revision question, the GET goes to etcd as it would without
// the cache, rather than being answered from a cache of unknown freshness.
func TestWithoutEtcdsRevisionTheGetIsNotAnsweredFromTheCache(t *testing.T) {
	withConsistentReads(t, true)
	r := &recorder{currentErr: errors.New("etcdserver: request timed out")}
	if err := Storage(r).Get(clientGetContext("get"), "/k", storage.GetOptions{}, &metav1.PartialObjectMetadata{}); err != nil {
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
