package kubernetes

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
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
