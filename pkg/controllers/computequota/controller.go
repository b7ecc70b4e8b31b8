// Package computequota is the controller that keeps the TenantCompute part of ResourceQuotas
// current. plinth-apiserver's ResourceQuota admission plugin only charges a quota's
// status.used for what it admits; nothing gives back what a deleted or shrunk tenant used, and
// kube-controller-manager's quota controller, which replenishes Pods and object counts, keeps
// resources it has no evaluator for (compute.plinth.dev/cpu and memory) as they were.
//
// For every ResourceQuota whose spec.hard names a compute resource (pkg/compute/quota's
// ResourceNames), the controller recomputes their usage from the namespace's TenantComputes
// with the evaluator admission charges with, and writes status.hard and status.used of those
// resources only, and only when they differ. It writes status.hard too because the admission
// plugin enforces what status.hard lists and kube-controller-manager, which copies spec.hard
// there, may not run its quota controller (the local platform does not); where it does, both
// write the same values. It is woken by quotas whose spec.hard changes and by every
// TenantCompute change that changes what the tenant uses.
package computequota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	computequota "github.com/plinth-dev/plinth/pkg/compute/quota"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	computeinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/compute/v1alpha1"
	computelisters "github.com/plinth-dev/plinth/pkg/generated/listers/compute/v1alpha1"
)

// Name names the controller in logs and metrics.
const Name = "computequota"

// fieldManager owns the compute resources in the quotas' status.
const fieldManager = "plinth-computequota"

// Controller recomputes the compute resources of ResourceQuotas.
type Controller struct {
	*loop.Loop
	kube    kubernetes.Interface
	quotas  corelisters.ResourceQuotaLister
	tenants computelisters.TenantComputeLister
}

// NewController returns the controller. It reads ResourceQuotas and TenantComputes and writes
// ResourceQuota status through kube.
func NewController(kube kubernetes.Interface, quotas coreinformers.ResourceQuotaInformer, tenants computeinformers.TenantComputeInformer) (*Controller, error) {
	c := &Controller{kube: kube, quotas: quotas.Lister(), tenants: tenants.Lister()}
	c.Loop = loop.New(Name, c.reconcile, quotas.Informer(), tenants.Informer())
	for _, err := range []error{
		// Status updates are the admission plugin's charges and this controller's own writes:
		// recomputing on them would race every charge with a count that may not see the
		// tenant being created yet.
		c.WatchMappedIf(quotas.Informer(), loop.Self, hardChanged),
		c.WatchMappedIf(tenants.Informer(), c.quotasOfTenant, usageChanged),
	} {
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// hardChanged is true when an update changes a quota's spec.hard.
func hardChanged(oldObj, obj interface{}) bool {
	old, ok1 := oldObj.(*corev1.ResourceQuota)
	rq, ok2 := obj.(*corev1.ResourceQuota)
	return !ok1 || !ok2 || !quotav1.Equals(old.Spec.Hard, rq.Spec.Hard)
}

// usageChanged is true when an update changes what a tenant uses.
func usageChanged(oldObj, obj interface{}) bool {
	old, ok1 := oldObj.(*computev1alpha1.TenantCompute)
	tc, ok2 := obj.(*computev1alpha1.TenantCompute)
	if !ok1 || !ok2 {
		return true
	}
	before, err1 := evaluator.Usage(old)
	after, err2 := evaluator.Usage(tc)
	return err1 != nil || err2 != nil || !quotav1.Equals(before, after)
}

// evaluator measures single tenants for usageChanged; it never lists.
var evaluator = computequota.NewEvaluator(nil)

// quotasOfTenant maps a TenantCompute to the quotas of its namespace that limit a compute
// resource.
func (c *Controller) quotasOfTenant(obj interface{}) []cache.ObjectName {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	quotas, err := c.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []cache.ObjectName
	for _, rq := range quotas {
		if limitsCompute(rq) {
			keys = append(keys, cache.NewObjectName(rq.Namespace, rq.Name))
		}
	}
	return keys
}

// limitsCompute is true for a quota whose spec.hard names a compute resource.
func limitsCompute(rq *corev1.ResourceQuota) bool {
	return len(quotav1.Intersection(quotav1.ResourceNames(rq.Spec.Hard), computequota.ResourceNames)) > 0
}

// hasCompute is true for a quota whose status names a compute resource.
func hasCompute(rq *corev1.ResourceQuota) bool {
	names := append(quotav1.ResourceNames(rq.Status.Hard), quotav1.ResourceNames(rq.Status.Used)...)
	return len(quotav1.Intersection(names, computequota.ResourceNames)) > 0
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	rq, err := c.quotas.ResourceQuotas(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !limitsCompute(rq) && !hasCompute(rq) {
		return nil
	}
	used, err := computequota.Used(rq, c.listTenants)
	if err != nil {
		return err
	}
	status := desiredStatus(rq, used)
	if quotav1.Equals(status.Hard, rq.Status.Hard) && quotav1.Equals(status.Used, rq.Status.Used) {
		return nil
	}
	updated := rq.DeepCopy()
	updated.Status = status
	// A conflict (the admission plugin charged the quota meanwhile) is retried from the
	// informer's newer copy.
	_, err = c.kube.CoreV1().ResourceQuotas(rq.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: fieldManager})
	return err
}

// listTenants lists a namespace's TenantComputes from the cache.
func (c *Controller) listTenants(namespace string) ([]runtime.Object, error) {
	tenants, err := c.tenants.TenantComputes(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(tenants))
	for _, tc := range tenants {
		out = append(out, tc)
	}
	return out, nil
}

// desiredStatus is rq's status with its compute resources set from spec.hard and used, and
// those no longer in spec.hard removed; every other resource is left to its owner.
func desiredStatus(rq *corev1.ResourceQuota, used corev1.ResourceList) corev1.ResourceQuotaStatus {
	status := *rq.Status.DeepCopy()
	if status.Hard == nil {
		status.Hard = corev1.ResourceList{}
	}
	if status.Used == nil {
		status.Used = corev1.ResourceList{}
	}
	for _, name := range computequota.ResourceNames {
		hard, limited := rq.Spec.Hard[name]
		if !limited {
			delete(status.Hard, name)
			delete(status.Used, name)
			continue
		}
		status.Hard[name] = hard
		status.Used[name] = used[name]
	}
	return status
}
