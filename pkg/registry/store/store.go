// Package store builds the etcd-backed REST storage of one kind: the main resource (with short
// names and categories for kubectl) and its status subresource.
package store

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/plinth-dev/plinth/pkg/registry/strategy"
)

// Options describe one kind's storage.
type Options[T strategy.Object] struct {
	// Resource is the plural, group-qualified resource, for example workloads.score.dev.
	Resource schema.GroupResource
	// Singular is the singular resource name, for example workload.
	Singular string
	// NewFunc and NewListFunc allocate the internal object and list.
	NewFunc     func() T
	NewListFunc func() runtime.Object
	// Definition is the kind's validation for the generic strategies.
	Definition strategy.Definition[T]
	// SelectableFields returns the kind's field-selector values beyond metadata.name and
	// metadata.namespace. The same names must be registered as field label conversions.
	SelectableFields func(obj T) fields.Set
	// Table prints the kind for kubectl get.
	Table rest.TableConvertor
	// ShortNames and Categories are advertised in discovery.
	ShortNames []string
	Categories []string
	// WrapStorage, when set, wraps the kind's storage above the watch cache, for kinds that
	// transform objects on their way into storage (Clusters seal their kubeconfig). The main
	// resource and the status subresource both write through the wrapper.
	WrapStorage func(storage.Interface) storage.Interface
}

// REST is the main resource.
type REST struct {
	*genericregistry.Store
	shortNames []string
	categories []string
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets kubectl accept abbreviations such as wl.
func (r *REST) ShortNames() []string { return r.shortNames }

// Categories lets kubectl get <category> list the kind with its peers.
func (r *REST) Categories() []string { return r.categories }

// StatusREST is the status subresource: get and update of status only.
type StatusREST struct {
	store *genericregistry.Store
}

var _ rest.Patcher = &StatusREST{}

// New allocates an empty object.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main resource owns the shared storage.
func (r *StatusREST) Destroy() {}

// Get returns the whole object, as status subresources do.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update changes status only; the object must already exist.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// forceAllowCreate is false: a status update never creates an object.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields lists the fields a status apply must not change.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the object like the main resource.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// New builds the storage of one kind.
func New[T strategy.Object](scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, o Options[T]) (*REST, *StatusREST, error) {
	mainStrategy := strategy.New(scheme, o.Definition)
	statusStrategy := strategy.NewStatus(scheme, o.Definition)
	getAttrs := func(obj runtime.Object) (labels.Set, fields.Set, error) {
		typed, ok := obj.(T)
		if !ok {
			return nil, nil, fmt.Errorf("%s: unexpected object type %T", o.Resource, obj)
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, err
		}
		fieldSet := fields.Set{"metadata.name": m.GetName()}
		if o.Definition.NamespaceScoped {
			fieldSet["metadata.namespace"] = m.GetNamespace()
		}
		if o.SelectableFields != nil {
			fieldSet = generic.MergeFieldsSets(fieldSet, o.SelectableFields(typed))
		}
		return labels.Set(m.GetLabels()), fieldSet, nil
	}
	s := &genericregistry.Store{
		NewFunc:     func() runtime.Object { return o.NewFunc() },
		NewListFunc: o.NewListFunc,
		PredicateFunc: func(l labels.Selector, f fields.Selector) storage.SelectionPredicate {
			return storage.SelectionPredicate{Label: l, Field: f, GetAttrs: getAttrs}
		},
		DefaultQualifiedResource:  o.Resource,
		SingularQualifiedResource: schema.GroupResource{Group: o.Resource.Group, Resource: o.Singular},
		CreateStrategy:            mainStrategy,
		UpdateStrategy:            mainStrategy,
		DeleteStrategy:            mainStrategy,
		ResetFieldsStrategy:       mainStrategy,
		TableConvertor:            o.Table,
	}
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: getAttrs}); err != nil {
		return nil, nil, err
	}
	if o.WrapStorage != nil {
		s.Storage.Storage = o.WrapStorage(s.Storage.Storage)
	}
	statusStore := *s
	statusStore.UpdateStrategy = statusStrategy
	statusStore.ResetFieldsStrategy = statusStrategy
	return &REST{Store: s, shortNames: o.ShortNames, categories: o.Categories}, &StatusREST{store: &statusStore}, nil
}

// Store is the status subresource's underlying store: its updates change status only. The
// governance approval flow writes status through it.
func (r *StatusREST) Store() *genericregistry.Store { return r.store }

// ReadOnlyREST serves get, list and watch of a kind whose objects only the server writes:
// audit records, revisions, tickets. Without create, update or delete handlers, no client —
// whatever RBAC grants — can change them through the API.
type ReadOnlyREST struct {
	store      *genericregistry.Store
	shortNames []string
	categories []string
}

var (
	_ rest.Getter               = &ReadOnlyREST{}
	_ rest.Lister               = &ReadOnlyREST{}
	_ rest.Watcher              = &ReadOnlyREST{}
	_ rest.Scoper               = &ReadOnlyREST{}
	_ rest.SingularNameProvider = &ReadOnlyREST{}
	_ rest.ShortNamesProvider   = &ReadOnlyREST{}
	_ rest.CategoriesProvider   = &ReadOnlyREST{}
)

// ReadOnly returns the read-only face of a kind's storage.
func ReadOnly(r *REST) *ReadOnlyREST {
	return &ReadOnlyREST{store: r.Store, shortNames: r.shortNames, categories: r.categories}
}

// New allocates an empty object.
func (r *ReadOnlyREST) New() runtime.Object { return r.store.New() }

// NewList allocates an empty list.
func (r *ReadOnlyREST) NewList() runtime.Object { return r.store.NewList() }

// Destroy releases the storage.
func (r *ReadOnlyREST) Destroy() { r.store.Destroy() }

// NamespaceScoped tells the installer whether objects live in namespaces.
func (r *ReadOnlyREST) NamespaceScoped() bool { return r.store.NamespaceScoped() }

// GetSingularName returns the singular resource name.
func (r *ReadOnlyREST) GetSingularName() string { return r.store.GetSingularName() }

// ShortNames lets kubectl accept abbreviations.
func (r *ReadOnlyREST) ShortNames() []string { return r.shortNames }

// Categories lets kubectl get <category> list the kind with its peers.
func (r *ReadOnlyREST) Categories() []string { return r.categories }

// Get returns one object.
func (r *ReadOnlyREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// List returns the objects matching options.
func (r *ReadOnlyREST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.store.List(ctx, options)
}

// Watch streams changes of the objects matching options.
func (r *ReadOnlyREST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	return r.store.Watch(ctx, options)
}

// ConvertToTable prints objects for kubectl get.
func (r *ReadOnlyREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
