package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// applier server-side applies typed objects as one field manager, and skips an apply when the
// object is unchanged since this process last applied it (appliedCache). The runtime and the
// provider each have one.
type applier struct {
	fieldManager string
	cache        *appliedCache
}

func newApplier(fieldManager string) *applier {
	return &applier{fieldManager: fieldManager, cache: newAppliedCache()}
}

// resourceOf is the resource an object of one of the kinds the applier knows is applied as.
func resourceOf(obj metav1.Object) (string, error) {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "deployments", nil
	case *corev1.Service:
		return "services", nil
	case *corev1.Secret:
		return "secrets", nil
	case *corev1.Namespace:
		return "namespaces", nil
	case *networkingv1.Ingress:
		return "ingresses", nil
	case *rbacv1.Role:
		return "roles", nil
	case *rbacv1.RoleBinding:
		return "rolebindings", nil
	}
	return "", fmt.Errorf("cannot apply a %T", obj)
}

// cacheKey names an object in the applied cache. cluster is "" for the cluster the client of
// the runtime reaches, and a Cluster's name for the provider's target clusters: the same
// namespace and name on two clusters are two objects.
func cacheKey(cluster, resource, namespace, name string) string {
	return cluster + "|" + resource + "/" + namespace + "/" + name
}

// apply applies obj on the cluster client reaches unless live (the object as a cache has it,
// nil when the cache has none) shows that the same manifest's last apply is still in place.
// It reports whether it sent the apply.
func (a *applier) apply(ctx context.Context, client kubernetes.Interface, cluster string, obj, live metav1.Object) (bool, error) {
	resource, err := resourceOf(obj)
	if err != nil {
		return false, err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return false, err
	}
	namespace, name := obj.GetNamespace(), obj.GetName()
	key := cacheKey(cluster, resource, namespace, name)
	if live != nil && a.cache.upToDate(key, data, live) {
		return false, nil
	}
	opts := metav1.PatchOptions{FieldManager: a.fieldManager, Force: ptr.To(true)}
	var applied metav1.Object
	switch resource {
	case "deployments":
		applied, err = client.AppsV1().Deployments(namespace).Patch(ctx, name, types.ApplyPatchType, data, opts)
	case "services":
		applied, err = client.CoreV1().Services(namespace).Patch(ctx, name, types.ApplyPatchType, data, opts)
	case "secrets":
		applied, err = client.CoreV1().Secrets(namespace).Patch(ctx, name, types.ApplyPatchType, data, opts)
	case "namespaces":
		applied, err = client.CoreV1().Namespaces().Patch(ctx, name, types.ApplyPatchType, data, opts)
	case "ingresses":
		applied, err = client.NetworkingV1().Ingresses(namespace).Patch(ctx, name, types.ApplyPatchType, data, opts)
	case "roles":
		applied, err = client.RbacV1().Roles(namespace).Patch(ctx, name, types.ApplyPatchType, data, opts)
	case "rolebindings":
		applied, err = client.RbacV1().RoleBindings(namespace).Patch(ctx, name, types.ApplyPatchType, data, opts)
	}
	if err != nil {
		return false, err
	}
	a.cache.record(key, data, applied)
	return true, nil
}

// forget drops what was applied to an object that is gone.
func (a *applier) forget(cluster, resource, namespace, name string) {
	a.cache.forget(cacheKey(cluster, resource, namespace, name))
}
