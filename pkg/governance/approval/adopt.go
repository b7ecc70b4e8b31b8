package approval

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

// Adoption's audit action and domain event.
const (
	ActionVMAdopt  = "vm.adopt"
	EventVMAdopted = "VMAdopted"
)

var adoptionResource = governance.Resource("pendingadoptions")

// Adopt turns a PendingAdoption into a ManagedVM: the VM keeps its instance number and its
// shape becomes revision 1; the service's counter moves past the number so that it is never
// given again; the candidate is removed. The adopter's decision stands for the approval a
// create would need (the subresource needs its own RBAC grant). createValidation is the
// request's validating admission; a dry run makes every check and writes nothing, and answers
// with the ManagedVM that would be created.
func (f *Flow) Adopt(ctx context.Context, name string, req *governance.AdoptionRequest, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (*governance.ManagedVM, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	if err := matchURLName("AdoptionRequest", &req.ObjectMeta, name); err != nil {
		return nil, err
	}
	if errs := validation.ValidateAdoptionRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(governance.Kind("AdoptionRequest"), name, errs)
	}
	if err := admit(ctx, createValidation, req); err != nil {
		return nil, err
	}
	ctx = withDryRun(ctx, opts.DryRun)
	obj, err := f.stores.Adoptions.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pa := obj.(*governance.PendingAdoption)
	vmName := req.VMName
	if vmName == "" {
		vmName = pa.Spec.VMName
	}
	svc, sys, err := f.lineage(ctx, ns, vmName, pa.Spec.SystemServiceRef.Name)
	if err != nil {
		return nil, err
	}
	list, err := f.stores.VMs.List(inNamespace(ctx, ns), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, vm := range list.(*governance.ManagedVMList).Items {
		if vm.Status.InstanceName == pa.Spec.VMName || (vm.Spec.SystemServiceRef.Name == svc.Name && vm.Status.Instance == pa.Spec.Instance) {
			return nil, apperror.New(apperror.AlreadyManaged, adoptionResource, name, apperror.Params{"vm": vm.Name, "instanceName": pa.Spec.VMName},
				"VM %s is already managed as ManagedVM %q.", pa.Spec.VMName, vm.Name)
		}
	}
	if _, err := update(ctx, f.stores.ServiceStatus, ns, svc.Name, func(obj runtime.Object) error {
		s := obj.(*governance.SystemService)
		s.Status.NextInstanceIndex = max(s.Status.NextInstanceIndex, pa.Spec.Instance+1)
		return nil
	}); err != nil {
		return nil, err
	}
	user := userName(ctx)
	vm := &governance.ManagedVM{
		ObjectMeta: metav1.ObjectMeta{
			Name: vmName, Namespace: ns,
			Labels: map[string]string{
				v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue, v1alpha1.LabelSystem: sys.Name,
				v1alpha1.LabelService: svc.Name, v1alpha1.LabelInstance: v1alpha1.InstanceLabelValue(pa.Spec.Instance),
			},
			Finalizers: []string{v1alpha1.FinalizerDeleteApproval},
		},
		Spec: pa.Spec.VMSpec,
	}
	adopted := withMutation(ctx, func(v *governance.ManagedVM) {
		v.Status.Instance, v.Status.InstanceName, v.Status.Hostname = pa.Spec.Instance, pa.Spec.VMName, pa.Spec.VMName
		v.Status.Cluster = pa.Spec.Cluster
		v.Status.Phase = governance.VMPhaseCreating
		v.Status.ApprovedRevision = 1
		setCondition(v, metav1.ConditionTrue, "Adopted", fmt.Sprintf("Adopted by %s from cluster %s.", user, pa.Spec.Cluster))
	})
	if err := f.recordRevision(ctx, vm, 1, governance.OperationCreate, "", []string{user}, vm.Spec); err != nil {
		return nil, err
	}
	obj, err = f.stores.VMs.Create(adopted, vm, rest.ValidateAllObjectFunc, createOptions(ctx))
	if err != nil {
		return nil, err
	}
	created := obj.(*governance.ManagedVM)
	if err := f.audit(ctx, ns, user, ActionVMAdopt, vmTarget(created), map[string]string{
		"cluster": pa.Spec.Cluster, "instanceName": pa.Spec.VMName, "reason": req.Reason,
	}); err != nil {
		return nil, err
	}
	f.event(ctx, ns, EventVMAdopted, vmTarget(created), map[string]any{"cluster": pa.Spec.Cluster, "instance": pa.Spec.Instance, "instanceName": pa.Spec.VMName, "by": user})
	if _, _, err := f.stores.Adoptions.Delete(ctx, name, rest.ValidateAllObjectFunc, deleteOptions(ctx)); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	return created, nil
}
