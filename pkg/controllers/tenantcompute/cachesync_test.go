package tenantcompute

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// deploymentTenant maps a Deployment to the tenant its labels name, as a provider would.
func deploymentTenant(obj interface{}) (cache.ObjectName, bool) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || d.Labels[v1alpha1.LabelTenantComputeName] == "" {
		return cache.ObjectName{}, false
	}
	return cache.NewObjectName(d.Labels[v1alpha1.LabelTenantComputeNamespace], d.Labels[v1alpha1.LabelTenantComputeName]), true
}

// A provider that watches what it creates reports from its caches: a reconcile before they
// fill would see the tenant's compute missing.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewSimpleClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		p := &notifyingProvider{fakeProvider: newFakeProvider(), informers: []cache.SharedIndexInformer{kf.Apps().V1().Deployments().Informer()}, tenantFor: deploymentTenant}
		c, err := NewController(plinth.ComputeV1alpha1(), events.NewFakeRecorder(10), pf.Compute().V1alpha1().TenantComputes(), registry{p}, Options{ResyncPeriod: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&plinth.Fake, &kube.Fake}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}

func TestProviderObjectsMapToTheirTenant(t *testing.T) {
	p := &notifyingProvider{fakeProvider: newFakeProvider(), tenantFor: deploymentTenant}
	mapped := tenantOf(p)(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-shop", Name: "shop", Labels: map[string]string{
		v1alpha1.LabelTenantComputeNamespace: "team-a", v1alpha1.LabelTenantComputeName: "shop",
	}}})
	if len(mapped) != 1 || mapped[0] != shop {
		t.Errorf("mapped to %v, want %v", mapped, shop)
	}
	if mapped := tenantOf(p)(&appsv1.Deployment{}); len(mapped) != 0 {
		t.Errorf("an object of no tenant mapped to %v", mapped)
	}
}
