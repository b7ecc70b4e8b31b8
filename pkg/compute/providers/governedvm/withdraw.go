package governedvm

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

var _ compute.Withdrawer = &Runtime{}

// Withdraw deletes what the runtime made for a plan that moved to another runtime class: the
// plan's ManagedVM, whose deletion goes through the approval flow as for a deleted workload (the
// VM owns its SystemService, which the garbage collector removes once the VM is gone), and the
// endpoint Service when it is still the runtime's (it selects a VM instance; the new runtime may
// have taken the name over). Both are read from the API server, not the caches, so that an object
// a cache has not seen yet cannot make the withdrawal look done. It is done once the VM is gone
// or its deletion accepted; while another request of the VM waits for a decision it is not, and
// the VM's next change brings the plan back (compute.PlanNotifier).
func (r *Runtime) Withdraw(ctx context.Context, plan *v1b1.WorkloadPlan) (bool, error) {
	services := r.kube.CoreV1().Services(plan.Namespace)
	svc, err := services.Get(ctx, plan.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, err
	case metav1.IsControlledBy(svc, plan) && svc.Spec.Selector[instanceLabel] != "" && svc.DeletionTimestamp == nil:
		// The preconditions keep a takeover written after the read from being deleted with it.
		err := services.Delete(ctx, svc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(svc.UID), ResourceVersion: ptr.To(svc.ResourceVersion)}})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}

	vms := r.client.ManagedVMs(plan.Namespace)
	vm, err := vms.Get(ctx, plan.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	case !metav1.IsControlledBy(vm, plan) || vm.DeletionTimestamp != nil:
		return true, nil
	}
	err = vms.Delete(ctx, vm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(vm.UID)}})
	switch code := apperror.CodeOf(err); {
	case err == nil || apierrors.IsNotFound(err):
		return true, nil
	case code == apperror.PendingRequestExists || code == apperror.DuplicatePendingRequest:
		// Another request of the VM waits for its decision; the delete is asked for after it.
		return false, nil
	}
	return false, err
}
