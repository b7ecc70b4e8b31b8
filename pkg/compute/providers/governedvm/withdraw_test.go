package governedvm

import (
	"context"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

// planVM is a ManagedVM of the plan's name; controlled says whether the plan controls it.
func planVM(controlled bool) *gov.ManagedVM {
	vm := &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", UID: "vm-uid"}}
	if controlled {
		vm.OwnerReferences = []metav1.OwnerReference{planOwner(workloadPlan())}
	}
	return vm
}

// planService is a Service of the plan's name, controlled by the plan, selecting selector.
func planService(selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", UID: "svc-uid", ResourceVersion: "7",
		OwnerReferences: []metav1.OwnerReference{planOwner(workloadPlan())}}, Spec: corev1.ServiceSpec{Selector: selector}}
}

// withdraw runs Withdraw and returns done and the deletes it sent, as "resource/name".
func (f *runtimeFixture) withdraw() (bool, []string) {
	f.t.Helper()
	f.client.ClearActions()
	f.kube.ClearActions()
	done, err := f.rt.Withdraw(context.Background(), workloadPlan())
	if err != nil {
		f.t.Fatal(err)
	}
	var deletes []string
	for _, a := range append(f.client.Actions(), f.kube.Actions()...) {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			deletes = append(deletes, d.GetResource().Resource+"/"+d.GetName())
		}
	}
	sort.Strings(deletes)
	return done, deletes
}

// A plan that moved to another runtime class has its VM deleted (through the approval flow)
// and the Service in front of the VM; the withdrawal is done once the deletion is accepted,
// and asking again deletes nothing more.
func TestWithdrawDeletesTheVMAndItsService(t *testing.T) {
	f := newRuntimeFixture(t, planVM(true), planService(map[string]string{instanceLabel: "team-a-workloads-shop-01"}))
	done, deletes := f.withdraw()
	if !done || len(deletes) != 2 || deletes[0] != "managedvms/shop" || deletes[1] != "services/shop" {
		t.Fatalf("done %v, deletes %v; want the Service and the VM deleted", done, deletes)
	}
	if _, err := f.client.GovernanceV1alpha1().ManagedVMs("team-a").Get(context.Background(), "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the VM is still there: %v", err)
	}
	if done, deletes := f.withdraw(); !done || len(deletes) != 0 {
		t.Errorf("again: done %v, deletes %v; want done, nothing deleted", done, deletes)
	}
}

// What is not the runtime's is left alone: a Service the new runtime took over (it selects
// the Deployment's pods), a VM of the name the plan does not control; a VM being deleted is
// not asked for again.
func TestWithdrawLeavesWhatIsNotItsOwn(t *testing.T) {
	deleting := planVM(true)
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"governance.plinth.dev/delete-approval"}
	for name, objects := range map[string][]runtime.Object{
		"taken-over service":  {planService(map[string]string{"app.kubernetes.io/name": "shop"})},
		"another's VM":        {planVM(false)},
		"a VM being deleted":  {deleting},
		"nothing of the plan": nil,
	} {
		t.Run(name, func(t *testing.T) {
			f := newRuntimeFixture(t, objects...)
			if done, deletes := f.withdraw(); !done || len(deletes) != 0 {
				t.Errorf("done %v, deletes %v; want done, nothing deleted", done, deletes)
			}
		})
	}
}

// While another request of the VM waits for its decision the delete is refused; the
// withdrawal is not done and asks again later. Any other error is returned.
func TestWithdrawWaitsForAPendingRequest(t *testing.T) {
	f := newRuntimeFixture(t, planVM(true))
	f.client.PrependReactor("delete", "managedvms", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apperror.New(apperror.PendingRequestExists, gov.Resource("managedvms"), "shop", apperror.Params{"vm": "shop", "ticket": "tkt-1", "operation": "modify"},
			"ManagedVM \"shop\" has a pending modify request in ticket tkt-1; it must be decided or cancelled first.")
	})
	if done, deletes := f.withdraw(); done || len(deletes) != 1 {
		t.Errorf("done %v, deletes %v; want not done after one delete", done, deletes)
	}

	g := newRuntimeFixture(t, planVM(true))
	g.client.PrependReactor("delete", "managedvms", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	if done, err := g.rt.Withdraw(context.Background(), workloadPlan()); done || err == nil {
		t.Errorf("Withdraw = %v, %v; want the error", done, err)
	}
}
