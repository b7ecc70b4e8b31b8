package kubernetes

import (
	"context"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
)

var _ compute.Withdrawer = &Runtime{}

// Withdraw deletes the Deployment, the Service and the files Secret the runtime made for a plan
// that moved to another runtime class. An object counts as the runtime's when the plan controls
// it and, for the Service, which another runtime may keep under the same name, when it still
// selects the runtime's pods. Objects are read from the API server rather than the caches: a
// cache that has not seen an object yet must not make the withdrawal look done. It is done once
// every such object is gone or being deleted.
func (r *Runtime) Withdraw(ctx context.Context, plan *v1b1.WorkloadPlan) (bool, error) {
	core, apps := r.Client.CoreV1(), r.Client.AppsV1()
	deleteIf := func(obj metav1.Object, err error, ours bool, del func(metav1.DeleteOptions) error) error {
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case !ours || !metav1.IsControlledBy(obj, plan) || obj.GetDeletionTimestamp() != nil:
			return nil
		}
		// The preconditions keep a write that came after the read (another runtime taking the
		// object over) from being deleted with it.
		err = del(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(obj.GetUID()), ResourceVersion: ptr.To(obj.GetResourceVersion())}})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}

	d, err := apps.Deployments(plan.Namespace).Get(ctx, plan.Name, metav1.GetOptions{})
	if err := deleteIf(d, err, true, func(o metav1.DeleteOptions) error {
		return apps.Deployments(plan.Namespace).Delete(ctx, plan.Name, o)
	}); err != nil {
		return false, err
	}
	svc, err := core.Services(plan.Namespace).Get(ctx, plan.Name, metav1.GetOptions{})
	if err := deleteIf(svc, err, err == nil && maps.Equal(svc.Spec.Selector, podSelector(plan)), func(o metav1.DeleteOptions) error {
		return core.Services(plan.Namespace).Delete(ctx, plan.Name, o)
	}); err != nil {
		return false, err
	}
	files := filesSecretName(plan)
	s, err := core.Secrets(plan.Namespace).Get(ctx, files, metav1.GetOptions{})
	if err := deleteIf(s, err, true, func(o metav1.DeleteOptions) error {
		return core.Secrets(plan.Namespace).Delete(ctx, files, o)
	}); err != nil {
		return false, err
	}
	r.Release(plan.Namespace, plan.Name)
	return true, nil
}
