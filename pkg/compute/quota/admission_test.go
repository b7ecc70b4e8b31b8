package quota

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authentication/user"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
)

// The ResourceQuota plugin as plinth-apiserver configures it: it refuses a TenantCompute over
// the quota with 403 and charges an admitted one to the quota's status.used itself.
func TestResourceQuotaPlugin(t *testing.T) {
	hard := resources(ResourceCount, 2, ResourceCPU, 1000, ResourceMemory, 1024)
	rq := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "team-a", ResourceVersion: "1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: resources(ResourceCount, 1, ResourceCPU, 600, ResourceMemory, 256)},
	}
	kube := kubefake.NewClientset(rq)
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	stop := make(chan struct{})
	defer close(stop)

	plugin, err := resourcequota.NewResourceQuota(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	plugin.SetDrainedNotification(stop)
	plugin.SetExternalKubeClientSet(kube)
	plugin.SetExternalKubeInformerFactory(factory)
	plugin.SetQuotaConfiguration(NewConfiguration())
	if err := plugin.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	create := func(tc *compute.TenantCompute) error {
		a := admission.NewAttributesRecord(tc, nil, compute.Kind("TenantCompute").WithVersion(""), tc.Namespace, tc.Name,
			compute.Resource("tenantcomputes").WithVersion("v1alpha1"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
		return plugin.Validate(context.Background(), a, nil)
	}

	err = create(internalTenant("big", 500, 256))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: compute, requested: compute.plinth.dev/cpu=500, used: compute.plinth.dev/cpu=600, limited: compute.plinth.dev/cpu=1k") {
		t.Fatalf("over quota: %v, want 403 exceeded quota", err)
	}
	for _, action := range kube.Actions() {
		if action.GetVerb() == "update" {
			t.Fatalf("a refused create changed the quota: %v", action)
		}
	}

	if err := create(internalTenant("small", 400, 256)); err != nil {
		t.Fatalf("within quota: %v", err)
	}
	var charged *corev1.ResourceQuota
	for _, action := range kube.Actions() {
		if u, ok := action.(clienttesting.UpdateAction); ok && u.GetSubresource() == "status" && u.GetResource().Resource == "resourcequotas" {
			charged = u.GetObject().(*corev1.ResourceQuota)
		}
	}
	if charged == nil {
		t.Fatal("the admitted create was not charged to the quota's status")
	}
	if want := resources(ResourceCount, 2, ResourceCPU, 1000, ResourceMemory, 512); !quotav1.Equals(charged.Status.Used, want) {
		t.Errorf("status.used %v, want %v", charged.Status.Used, want)
	}
}
