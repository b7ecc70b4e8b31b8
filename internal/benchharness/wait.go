package benchharness

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Source lists and watches the objects WaitReady counts; cache.ListWatch's functions, so
// that any typed client fits.
type Source struct {
	List  cache.ListWithContextFunc
	Watch cache.WatchFuncWithContext
}

// Lister is what SourceOf needs of a typed client: its List and Watch.
type Lister[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// SourceOf is the Source of a typed client, every list and watch selecting with selector
// (empty: everything).
func SourceOf[L runtime.Object](c Lister[L], selector string) Source {
	selected := func(opts metav1.ListOptions) metav1.ListOptions {
		if selector != "" {
			opts.LabelSelector = selector
		}
		return opts
	}
	return Source{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, selected(opts))
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, selected(opts))
		},
	}
}

// WaitReady returns once at least n of the objects src lists and watches are ready and
// selected. Readiness is watched, not polled: listing hundreds of objects several times a
// second would load the servers being measured. After a watch error (a resourceVersion too
// old) it lists again. When ctx ends first, the error says how many were ready.
func WaitReady[T runtime.Object](ctx context.Context, src Source, n int, ready func(T) bool) error {
	readySet := sets.New[string]()
	observe := func(obj runtime.Object, deleted bool) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		key := m.GetNamespace() + "/" + m.GetName()
		if typed, ok := obj.(T); ok && !deleted && ready(typed) {
			readySet.Insert(key)
		} else {
			readySet.Delete(key)
		}
	}
	ended := func() error {
		return fmt.Errorf("%d of %d ready: %w", readySet.Len(), n, context.Cause(ctx))
	}
	rv, relist := "", true
	for {
		if relist {
			list, err := src.List(ctx, metav1.ListOptions{})
			if err != nil {
				if ctx.Err() != nil {
					return ended()
				}
				return err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return err
			}
			readySet.Clear()
			for _, item := range items {
				observe(item, false)
			}
			listMeta, err := meta.ListAccessor(list)
			if err != nil {
				return err
			}
			rv, relist = listMeta.GetResourceVersion(), false
		}
		if readySet.Len() >= n {
			return nil
		}
		w, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return ended()
			}
			return err
		}
		for event := range w.ResultChan() {
			if event.Type == watch.Error {
				relist = true
				break
			}
			if m, err := meta.Accessor(event.Object); err == nil {
				rv = m.GetResourceVersion()
			}
			if event.Type != watch.Bookmark {
				observe(event.Object, event.Type == watch.Deleted)
			}
			if readySet.Len() >= n {
				break
			}
		}
		w.Stop()
		if readySet.Len() >= n {
			return nil
		}
		if ctx.Err() != nil {
			return ended()
		}
	}
}
