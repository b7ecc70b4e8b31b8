package cluster

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
)

// redact returns obj without any kubeconfig: a Cluster or a ClusterList whose
// spec.kubeconfig is empty. It copies instead of changing obj in place, because objects from
// the watch cache are shared with every other reader, and the stored envelope must stay there.
// Other objects (a Status, a bookmark's object) pass unchanged. Watch events from the cache
// carry a caching wrapper around the object; it is unwrapped (GetObject returns a copy), since
// the wrapper would otherwise serialize the stored object as it is.
func redact(obj runtime.Object) runtime.Object {
	if cacheable, ok := obj.(runtime.CacheableObject); ok {
		obj = cacheable.GetObject()
	}
	switch o := obj.(type) {
	case *platform.Cluster:
		if o == nil {
			return obj
		}
		c := *o
		c.Spec.Kubeconfig = ""
		return &c
	case *platform.ClusterList:
		if o == nil {
			return obj
		}
		l := *o
		l.Items = make([]platform.Cluster, len(o.Items))
		for i := range o.Items {
			l.Items[i] = o.Items[i]
			l.Items[i].Spec.Kubeconfig = ""
		}
		return &l
	}
	return obj
}

func redacted(obj runtime.Object, err error) (runtime.Object, error) {
	if obj == nil {
		return nil, err
	}
	return redact(obj), err
}

func redactedWatch(w watch.Interface, err error) (watch.Interface, error) {
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		e.Object = redact(e.Object)
		return e, true
	}), nil
}
