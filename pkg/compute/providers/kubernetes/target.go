package kubernetes

import (
	"context"
	"fmt"

	"github.com/plinth-dev/plinth/pkg/errkind"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/rest"
)

// target is a cluster the provider runs tenants on, and how it reads what is there.
type target struct {
	// cluster is the Cluster's name, "" for the cluster Plinth serves.
	cluster string
	client  kubernetes.Interface
	read    reader
	// direct reads with requests when read is a label-filtered cache, which never holds an
	// object without the provider's labels; nil when read sends requests itself.
	direct reader
}

// reader reads the objects the provider makes on one cluster. An object that is not there is
// nil with no error.
type reader interface {
	namespace(ctx context.Context, name string) (*corev1.Namespace, error)
	deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
	service(ctx context.Context, namespace, name string) (*corev1.Service, error)
	ingress(ctx context.Context, namespace, name string) (*networkingv1.Ingress, error)
	pods(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error)
	role(ctx context.Context, namespace, name string) (*rbacv1.Role, error)
	roleBinding(ctx context.Context, namespace, name string) (*rbacv1.RoleBinding, error)
	// roleBindings are all the RoleBindings of a namespace, not only the provider's.
	roleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error)
}

// found turns a NotFound into nothing.
func found[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// listerReader reads from the label-filtered informers of the cluster Plinth serves, and
// RoleBindings from an informer on all of them.
type listerReader struct {
	namespaces  corelisters.NamespaceLister
	deployments appslisters.DeploymentLister
	services    corelisters.ServiceLister
	ingresses   networkinglisters.IngressLister
	podLister   corelisters.PodLister
	roles       rbaclisters.RoleLister
	bindings    rbaclisters.RoleBindingLister
}

func newListerReader(f informers.SharedInformerFactory, roleBindings rbacinformers.RoleBindingInformer) *listerReader {
	return &listerReader{
		namespaces:  f.Core().V1().Namespaces().Lister(),
		deployments: f.Apps().V1().Deployments().Lister(),
		services:    f.Core().V1().Services().Lister(),
		ingresses:   f.Networking().V1().Ingresses().Lister(),
		podLister:   f.Core().V1().Pods().Lister(),
		roles:       f.Rbac().V1().Roles().Lister(),
		bindings:    roleBindings.Lister(),
	}
}

func (r *listerReader) namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	return found(r.namespaces.Get(name))
}

func (r *listerReader) deployment(_ context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return found(r.deployments.Deployments(namespace).Get(name))
}

func (r *listerReader) service(_ context.Context, namespace, name string) (*corev1.Service, error) {
	return found(r.services.Services(namespace).Get(name))
}

func (r *listerReader) ingress(_ context.Context, namespace, name string) (*networkingv1.Ingress, error) {
	return found(r.ingresses.Ingresses(namespace).Get(name))
}

func (r *listerReader) pods(_ context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	return r.podLister.Pods(namespace).List(selector)
}

func (r *listerReader) role(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	return found(r.roles.Roles(namespace).Get(name))
}

func (r *listerReader) roleBinding(_ context.Context, namespace, name string) (*rbacv1.RoleBinding, error) {
	return found(r.bindings.RoleBindings(namespace).Get(name))
}

func (r *listerReader) roleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	return r.bindings.RoleBindings(namespace).List(labels.Everything())
}

// clientReader reads with direct requests, for clusters the provider keeps no informers on.
type clientReader struct{ client kubernetes.Interface }

func (r clientReader) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return found(r.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}))
}

func (r clientReader) deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return found(r.client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}))
}

func (r clientReader) service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return found(r.client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{}))
}

func (r clientReader) ingress(ctx context.Context, namespace, name string) (*networkingv1.Ingress, error) {
	return found(r.client.NetworkingV1().Ingresses(namespace).Get(ctx, name, metav1.GetOptions{}))
}

func (r clientReader) pods(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	list, err := r.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (r clientReader) role(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	return found(r.client.RbacV1().Roles(namespace).Get(ctx, name, metav1.GetOptions{}))
}

func (r clientReader) roleBinding(ctx context.Context, namespace, name string) (*rbacv1.RoleBinding, error) {
	return found(r.client.RbacV1().RoleBindings(namespace).Get(ctx, name, metav1.GetOptions{}))
}

func (r clientReader) roleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	list, err := r.client.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*rbacv1.RoleBinding, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// unservedCluster is a cluster a tenant names that the provider cannot run anything on: not
// registered, or any other than the one Plinth serves when the provider runs tenants only
// there. Nothing of a tenant can be left on it.
type unservedCluster struct{ message string }

func (e *unservedCluster) Error() string { return e.message }

// target returns the cluster a tenant runs on: the one Plinth serves, or a registered Cluster
// reached with the credentials plinth-controller holds for it. A cluster it cannot run
// anything on is an unservedCluster, Stalled: only a change of the spec helps.
func (p *Provider) target(ctx context.Context, cluster string) (*target, error) {
	if cluster == "" {
		return p.local, nil
	}
	if p.clusters == nil {
		return nil, errkind.Stalled(&unservedCluster{fmt.Sprintf("spec.providerConfig.cluster: this plinth-controller runs tenants only on the cluster Plinth serves, not on cluster %q", cluster)})
	}
	cfg, err := p.clusters.GetRESTConfig(ctx, cluster)
	if apierrors.IsNotFound(err) {
		return nil, errkind.Stalled(&unservedCluster{fmt.Sprintf("spec.providerConfig.cluster: cluster %q is not registered", cluster)})
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	client, err := p.newClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	return &target{cluster: cluster, client: client, read: clientReader{client}}, nil
}

// newClientset builds a client for a target cluster. client-go shares TLS transports between
// identical configs, so building one per call costs no new connections.
func newClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(cfg)
}
