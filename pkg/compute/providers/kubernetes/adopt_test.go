package kubernetes

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/errkind"
)

// cachedRuntime is the runtime over a fake clientset holding objects, its informers synced.
func cachedRuntime(t *testing.T, objects ...runtime.Object) (*Runtime, *kubefake.Clientset) {
	t.Helper()
	kube := kubefake.NewClientset(objects...)
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	apps, core := factory.Apps().V1(), factory.Core().V1()
	rt := New(kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache of %v did not sync", typ)
		}
	}
	kube.ClearActions()
	return rt, kube
}

// controlledBy makes m controlled by a WorkloadPlan of name and uid.
func controlledBy(m metav1.ObjectMeta, name, uid string) metav1.ObjectMeta {
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "WorkloadPlan", Name: name,
		UID: k8stypes.UID("uid-" + uid), Controller: ptr.To(true)}}
	return m
}

// An object of one of the plan's names (its Deployment, its Service, its files Secret) that the
// plan does not control is not taken over: the workload is refused with one sentence naming
// it, nothing is applied, and the object is left as it was. Applying over it would make the
// plan its controller, and deleting the workload would have the garbage collector delete it.
func TestRuntimeTakesOverNothing(t *testing.T) {
	plan, bindings := runtimePlan()
	foreign := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: plan.Namespace, Name: name, Labels: map[string]string{"app": "legacy"}}
	}
	deployment := func(m metav1.ObjectMeta) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: m, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}}
	}
	for name, c := range map[string]struct {
		object runtime.Object
		reason string
		msg    string
	}{
		"someone's Deployment": {object: deployment(foreign("shop")), reason: v1b1.ReasonProjectionError,
			msg: `Deployment "shop" already exists and is not managed by this workload.`},
		"someone's Service": {object: &corev1.Service{ObjectMeta: foreign("shop")}, reason: v1b1.ReasonProjectionError,
			msg: `Service "shop" already exists and is not managed by this workload.`},
		"someone's files Secret": {object: &corev1.Secret{ObjectMeta: foreign("shop-files"), Data: map[string][]byte{"k": []byte("v")}},
			reason: v1b1.ReasonProjectionError, msg: `Secret "shop-files" already exists and is not managed by this workload.`},
		"another plan's Deployment": {object: deployment(controlledBy(foreign("shop"), "orders", "orders")), reason: v1b1.ReasonProjectionError,
			msg: `Deployment "shop" already exists and is not managed by this workload.`},
		"a Deployment another kind of owner controls": {object: deployment(func() metav1.ObjectMeta {
			m := foreign("shop")
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "WorkloadPlan", Name: "shop", UID: "x", Controller: ptr.To(true)}}
			return m
		}()), reason: v1b1.ReasonProjectionError, msg: `Deployment "shop" already exists and is not managed by this workload.`},
		// The workload was deleted and made again: the earlier plan's objects go with it.
		"an earlier plan's Deployment": {object: deployment(controlledBy(foreign("shop"), "shop", "earlier")), reason: v1b1.ReasonRuntimeProvisioning,
			msg: "The workload is being materialized."},
	} {
		t.Run(name, func(t *testing.T) {
			rt, kube := cachedRuntime(t, c.object)
			st, err := rt.Apply(context.Background(), plan, bindings)
			if err != nil || st.Ready || st.Reason != c.reason || st.Message != c.msg {
				t.Fatalf("Apply = %+v, %v; want %s %q", st, err, c.reason, c.msg)
			}
			for _, a := range kube.Actions() {
				if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
					t.Errorf("wrote %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
			m := c.object.(metav1.Object)
			var live runtime.Object
			switch c.object.(type) {
			case *appsv1.Deployment:
				live, err = kube.AppsV1().Deployments(m.GetNamespace()).Get(context.Background(), m.GetName(), metav1.GetOptions{})
			case *corev1.Service:
				live, err = kube.CoreV1().Services(m.GetNamespace()).Get(context.Background(), m.GetName(), metav1.GetOptions{})
			case *corev1.Secret:
				live, err = kube.CoreV1().Secrets(m.GetNamespace()).Get(context.Background(), m.GetName(), metav1.GetOptions{})
			}
			if err != nil || !reflect.DeepEqual(live, c.object) {
				t.Errorf("the object is now %+v, %v; want it unchanged", live, err)
			}
		})
	}
}

// What the plan controls is the runtime's: applied as usual.
func TestRuntimeAppliesWhatThePlanControls(t *testing.T) {
	plan, bindings := runtimePlan()
	rt, kube := cachedRuntime(t, &appsv1.Deployment{ObjectMeta: owned(plan, "shop", true)},
		&corev1.Service{ObjectMeta: owned(plan, "shop", true)}, &corev1.Secret{ObjectMeta: owned(plan, "shop-files", true)})
	if _, err := rt.Apply(context.Background(), plan, bindings); err != nil {
		t.Fatal(err)
	}
	if got := writes(kube); !reflect.DeepEqual(got, []string{"patch secrets", "patch deployments", "patch services"}) {
		t.Errorf("wrote %v, want the three applied", got)
	}
}

// The tenant-compute provider takes over nothing either: an object of one of the tenant's names
// in its namespace that the provider did not make for this TenantCompute (put there by the
// cluster's admins, invisible to the label-filtered informers) is a permanent error naming it,
// and is left as it is.
func TestProvisionTakesOverNothing(t *testing.T) {
	tc := tenantCompute()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-shop", Labels: ownLabels(tc)}}
	foreign := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "tenant-shop", Name: name, Labels: map[string]string{"app": "legacy"}}
	}
	for name, c := range map[string]struct {
		object runtime.Object
		err    string
	}{
		"a Deployment": {&appsv1.Deployment{ObjectMeta: foreign("shop"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}},
			"deployment tenant-shop/shop already exists and was not made by the kubernetes provider for this TenantCompute"},
		"a Service": {&corev1.Service{ObjectMeta: foreign("shop")},
			"service tenant-shop/shop already exists and was not made by the kubernetes provider for this TenantCompute"},
		"an Ingress": {&networkingv1.Ingress{ObjectMeta: foreign("shop")},
			"ingress tenant-shop/shop already exists and was not made by the kubernetes provider for this TenantCompute"},
		"the secret writers' Role": {&rbacv1.Role{ObjectMeta: foreign(secretWriters)},
			"role tenant-shop/plinth-tenant-secrets already exists and was not made by the kubernetes provider for this TenantCompute"},
		"another TenantCompute's Deployment": {&appsv1.Deployment{ObjectMeta: func() metav1.ObjectMeta {
			m := foreign("shop")
			m.Labels = tenantLabels(tenantCompute(func(o *v1alpha1.TenantCompute) { o.Name = "other" }))
			return m
		}()}, "deployment tenant-shop/shop already exists and was not made by the kubernetes provider for this TenantCompute"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil, ns, c.object)
			_, err := f.provider.Provision(context.Background(), tc)
			if !errkind.IsStalled(err) || err.Error() != c.err {
				t.Fatalf("Provision = %v, want the permanent %q", err, c.err)
			}
			m := c.object.(metav1.Object)
			resource, err := resourceOf(m)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range f.kube.Actions() {
				if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetResource().Resource == resource {
					t.Errorf("wrote %s %s", a.GetVerb(), resource)
				}
			}
			var live interface{}
			ctx := context.Background()
			switch c.object.(type) {
			case *appsv1.Deployment:
				live, err = f.kube.AppsV1().Deployments("tenant-shop").Get(ctx, m.GetName(), metav1.GetOptions{})
			case *corev1.Service:
				live, err = f.kube.CoreV1().Services("tenant-shop").Get(ctx, m.GetName(), metav1.GetOptions{})
			case *networkingv1.Ingress:
				live, err = f.kube.NetworkingV1().Ingresses("tenant-shop").Get(ctx, m.GetName(), metav1.GetOptions{})
			case *rbacv1.Role:
				live, err = f.kube.RbacV1().Roles("tenant-shop").Get(ctx, m.GetName(), metav1.GetOptions{})
			}
			if err != nil || !reflect.DeepEqual(live, c.object) {
				t.Errorf("the object is now %+v, %v; want it unchanged", live, err)
			}
		})
	}
}

// A Service or Ingress the tenant no longer needs is removed only when it is the provider's:
// on a named Cluster, read with direct requests, someone else's of that name is there to see.
func TestUpdateRemovesOnlyWhatItMade(t *testing.T) {
	tc := tenantCompute(withConfig(`{"cluster": "edge"}`), func(tc *v1alpha1.TenantCompute) {
		tc.Spec.Containers[0].Ports = nil
		tc.Spec.Networking = v1alpha1.NetworkConfig{}
	})
	foreign := metav1.ObjectMeta{Namespace: "tenant-shop", Name: "shop", Labels: map[string]string{"app": "legacy"}}
	edge := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-shop", Labels: ownLabels(tc)}},
		&corev1.Service{ObjectMeta: foreign}, &networkingv1.Ingress{ObjectMeta: foreign})
	f := newFixture(t, &fakeClusters{clusters: map[string]*kubefake.Clientset{"edge": edge}})
	if _, err := f.provider.Update(context.Background(), tc); err != nil {
		t.Fatal(err)
	}
	for _, a := range edge.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("deleted %s %v", a.GetResource().Resource, a)
		}
	}
}

// A first provision makes the namespace, so nothing else can be in it: the objects the
// informers lack are not asked for one by one.
func TestFirstProvisionSendsNoReads(t *testing.T) {
	f := newFixture(t, nil)
	provision(t, f.provider, tenantCompute())
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("Provision read %s", a.GetResource().Resource)
		}
	}
}
