// Package cachedget serves consistent GETs from the watch cache: a client's GET without a
// resourceVersion asks etcd for its current revision (a read of a key that does not exist, so
// no object travels) and is answered from the watch cache once the cache has caught up with
// that revision. The answer is as fresh as a read from etcd, which is what a GET without a
// resourceVersion promises, but the object is not fetched and decoded again.
//
// k8s.io/apiserver does this for lists (ConsistentListFromCache) but sends every GET without
// a resourceVersion to etcd. Whether serving them from the cache pays is measured in
// docs/benchmarks.md; plinth-apiserver does it only with --consistent-get-from-cache.
package cachedget

import (
	"context"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/cacher/delegator"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// RESTOptionsGetter wraps getter so that every resource it serves with a watch cache answers
// GETs without a resourceVersion from the cache; resources without one are left as they are.
func RESTOptionsGetter(getter generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	return optionsGetter{getter}
}

type optionsGetter struct{ generic.RESTOptionsGetter }

func (g optionsGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || opts.Decorator == nil {
		return opts, err
	}
	decorate := opts.Decorator
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(obj runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
		if err != nil {
			return s, destroy, err
		}
		// Only the watch cache answers a GET with a resourceVersion without asking etcd again;
		// etcd's own store would pay two round trips instead of one.
		if _, cached := s.(*cacher.CacheDelegator); !cached {
			return s, destroy, nil
		}
		return Storage(s), destroy, nil
	}
	return opts, nil
}

// Storage answers clients' GETs without a resourceVersion from s at etcd's current revision.
// s must serve a GET with a resourceVersion from a cache that waits until it is that fresh.
func Storage(s storage.Interface) storage.Interface { return cachedGet{s} }

type cachedGet struct{ storage.Interface }

// consistentReadSupported tells whether etcd answers progress requests, without which a cache
// behind etcd's revision waits for the next event of its own kind; tests replace it.
var consistentReadSupported = delegator.ConsistentReadSupported

func (s cachedGet) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if opts.ResourceVersion != "" || !clientGet(ctx) || !consistentReadSupported() {
		return s.Interface.Get(ctx, key, opts, out)
	}
	rv, err := s.Interface.GetCurrentResourceVersion(ctx)
	if err != nil {
		// etcd did not answer the small question: the read asks it the whole one, and its error
		// is the one the client sees.
		return s.Interface.Get(ctx, key, opts, out)
	}
	cached := opts
	cached.ResourceVersion = strconv.FormatUint(rv, 10)
	err = s.Interface.Get(ctx, key, cached, out)
	if storage.IsTooLargeResourceVersion(err) {
		// The cache did not catch up within its wait (3 s): etcd answers instead, as it does
		// for a consistent list.
		return s.Interface.Get(ctx, key, opts, out)
	}
	if err != nil {
		return err
	}
	// The cache hands out its own object's maps and slices; the copy keeps whatever handles
	// the answer from changing what the cache holds.
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(out.DeepCopyObject()).Elem())
	return nil
}

// clientGet tells whether ctx is a client's GET of an object or its subresource. The storage's
// other readers (the update, patch and delete paths, dry runs) read the object to change it:
// they keep reading from etcd, so no change they make in place can reach the cache.
func clientGet(ctx context.Context) bool {
	info, ok := request.RequestInfoFrom(ctx)
	return ok && info.IsResourceRequest && info.Verb == "get"
}
