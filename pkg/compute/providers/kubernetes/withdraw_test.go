package kubernetes

import (
	"context"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// withdrawRuntime is the runtime over a fake clientset holding objects.
func withdrawRuntime(objects ...runtime.Object) (*Runtime, *kubefake.Clientset) {
	kube := kubefake.NewClientset(objects...)
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	apps, core := factory.Apps().V1(), factory.Core().V1()
	return New(kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister()), kube
}

// withdraw runs Withdraw for plan and returns the deletes it sent, as "resource/name", sorted.
func withdraw(t *testing.T, rt *Runtime, kube *kubefake.Clientset, plan *v1b1.WorkloadPlan) []string {
	t.Helper()
	kube.ClearActions()
	done, err := rt.Withdraw(context.Background(), plan)
	if err != nil || !done {
		t.Fatalf("Withdraw = %v, %v; want done", done, err)
	}
	var deletes []string
	for _, a := range kube.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deletes = append(deletes, d.GetResource().Resource+"/"+d.GetName())
		}
	}
	sort.Strings(deletes)
	return deletes
}

// owned is object metadata of name in the plan's namespace, controlled by the plan when
// controlled is set.
func owned(plan *v1b1.WorkloadPlan, name string, controlled bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: plan.Namespace, UID: types.UID("uid-" + name), ResourceVersion: "3"}
	if controlled {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "WorkloadPlan", Name: plan.Name, UID: plan.UID, Controller: ptr.To(true)}}
	}
	return m
}

// A plan that moved to another runtime class has the Deployment, Service and files Secret the
// runtime applied for it deleted; asking again deletes nothing more, and the runtime applies
// them anew if the plan comes back.
func TestWithdrawDeletesWhatTheRuntimeApplied(t *testing.T) {
	plan, bindings := runtimePlan()
	rt, kube := withdrawRuntime()
	if _, err := rt.Apply(context.Background(), plan, bindings); err != nil {
		t.Fatal(err)
	}
	got := withdraw(t, rt, kube, plan)
	want := []string{"deployments/shop", "secrets/shop-files", "services/shop"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("deletes %v; want %v", got, want)
	}
	if _, err := kube.AppsV1().Deployments("team-a").Get(context.Background(), "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment is still there: %v", err)
	}
	if got := withdraw(t, rt, kube, plan); len(got) != 0 {
		t.Errorf("again: deletes %v; want none", got)
	}
	if n := len(rt.applier.cache.entries); n != 0 {
		t.Errorf("the applied cache holds %d entries; want none, so that a plan coming back is applied", n)
	}
}

// What is not the runtime's is left alone: objects of the plan's names the plan does not
// control, a Service another runtime took over (it selects a VM instance), objects being
// deleted.
func TestWithdrawLeavesWhatIsNotItsOwn(t *testing.T) {
	plan, _ := runtimePlan()
	deleting := owned(plan, "shop-files", true)
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"foregroundDeletion"}
	rt, kube := withdrawRuntime(
		&appsv1.Deployment{ObjectMeta: owned(plan, "shop", false)},
		&corev1.Secret{ObjectMeta: deleting},
		&corev1.Service{ObjectMeta: owned(plan, "shop", true), Spec: corev1.ServiceSpec{Selector: map[string]string{"vmi.kubevirt.io/id": "team-a-workloads-shop-01"}}},
	)
	if got := withdraw(t, rt, kube, plan); len(got) != 0 {
		t.Errorf("deletes %v; want none", got)
	}
}
