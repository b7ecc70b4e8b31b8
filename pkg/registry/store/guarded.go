package store

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Writes replaces the create, update and delete of a kind's main resource, for kinds whose
// writes carry rules beyond one object (the governance approval flow, delete restrictions).
type Writes struct {
	Create func(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error)
	Update func(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
		updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error)
	Delete func(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error)
}

// GuardedREST is a main resource whose writes go through Writes (each defaults to the plain
// store). It has no delete-collection: a collection delete would skip the per-object rules,
// so clients (and the namespace controller) delete one object at a time.
type GuardedREST struct {
	*ReadOnlyREST
	main   *REST
	writes Writes
}

var (
	_ rest.Creater             = &GuardedREST{}
	_ rest.Updater             = &GuardedREST{}
	_ rest.GracefulDeleter     = &GuardedREST{}
	_ rest.ResetFieldsStrategy = &GuardedREST{}
)

// Guarded returns main with its writes replaced by w.
func Guarded(main *REST, w Writes) *GuardedREST {
	if w.Create == nil {
		w.Create = main.Create
	}
	if w.Update == nil {
		w.Update = main.Update
	}
	if w.Delete == nil {
		w.Delete = main.Delete
	}
	return &GuardedREST{ReadOnlyREST: ReadOnly(main), main: main, writes: w}
}

// Create stores a new object.
func (r *GuardedREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.writes.Create(ctx, obj, createValidation, options)
}

// Update changes an object; server-side apply (forceAllowCreate) may also create one.
func (r *GuardedREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.writes.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}

// Delete removes an object, or asks for its removal.
func (r *GuardedREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return r.writes.Delete(ctx, name, deleteValidation, options)
}

// GetResetFields lists the fields server-side apply must not take from a request.
func (r *GuardedREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.main.GetResetFields()
}
