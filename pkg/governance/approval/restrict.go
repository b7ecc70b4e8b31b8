package approval

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

// DeleteSystem deletes a System that has no SystemServices; otherwise DELETE_RESTRICTED.
func (f *Flow) DeleteSystem(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if err := f.restrict(ctx, f.stores.Services, "spec.systemRef.name", name, governance.Resource("systems"), "System", "SystemServices"); err != nil {
		return nil, false, err
	}
	return f.stores.Systems.Delete(ctx, name, deleteValidation, opts)
}

// DeleteService deletes a SystemService that has no ManagedVMs; otherwise DELETE_RESTRICTED.
// Its instance counter goes with it: a service recreated under the same name starts at 1
// again, which cannot clash because no VM of the old one is left.
func (f *Flow) DeleteService(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if err := f.restrict(ctx, f.stores.VMs, "spec.systemServiceRef.name", name, governance.Resource("systemservices"), "SystemService", "ManagedVMs"); err != nil {
		return nil, false, err
	}
	return f.stores.Services.Delete(ctx, name, deleteValidation, opts)
}

// restrict fails when children of store select the parent by field.
func (f *Flow) restrict(ctx context.Context, children *genericregistry.Store, field, parent string, parentResource schema.GroupResource, parentKind, childKind string) error {
	ns := genericapirequest.NamespaceValue(ctx)
	list, err := children.List(inNamespace(ctx, ns), &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector(field, parent)})
	if err != nil {
		return err
	}
	n := meta.LenList(list)
	if n == 0 {
		return nil
	}
	return apperror.New(apperror.DeleteRestricted, parentResource, parent,
		apperror.Params{"name": parent, "namespace": ns, "dependents": childKind},
		"%s %q still has %d %s; delete them first.", parentKind, parent, n, childKind)
}

// CreateService stores a SystemService whose System exists; otherwise SYSTEM_NOT_FOUND.
func (f *Flow) CreateService(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	svc := obj.(*governance.SystemService)
	ns := genericapirequest.NamespaceValue(ctx)
	if system := svc.Spec.SystemRef.Name; system != "" {
		_, err := f.stores.Systems.Get(inNamespace(ctx, ns), system, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, apperror.New(apperror.SystemNotFound, governance.Resource("systemservices"), svc.Name,
				apperror.Params{"system": system, "namespace": ns}, "System %q does not exist in namespace %q.", system, ns)
		}
		if err != nil {
			return nil, err
		}
	}
	return f.stores.Services.Create(ctx, obj, createValidation, opts)
}
