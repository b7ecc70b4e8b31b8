// Package storetest holds what the REST storage tests of every group share: typed calls of a
// store's verbs through k8s.io/apiserver's rest interfaces, as a request handler makes them.
package storetest

import (
	"testing"

	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Update reads name through r, applies mutate to a copy and writes it back with validation,
// as an update request does; it returns what was stored.
func Update[T runtime.Object](ctx context.Context, r rest.Updater, name string, mutate func(T)) (T, error) {
	out, _, err := r.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		obj := old.DeepCopyObject().(T)
		mutate(obj)
		return obj, nil
	}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		var zero T
		return zero, err
	}
	return out.(T), nil
}

// Create creates obj through r with validation, as a create request does, and fails the test
// if it is refused.
func Create[T runtime.Object](t testing.TB, ctx context.Context, r rest.Creater, obj runtime.Object) T {
	t.Helper()
	out, err := r.Create(ctx, obj, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating: %v", err)
	}
	return out.(T)
}

// Get reads name through r and fails the test if it cannot.
func Get[T runtime.Object](t testing.TB, ctx context.Context, r rest.Getter, name string) T {
	t.Helper()
	out, err := r.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return out.(T)
}
