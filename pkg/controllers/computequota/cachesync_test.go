package computequota

import (
	"testing"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// A recount before the TenantCompute cache fills would write a usage of zero into every
// quota, and let admission take more than the quota allows until the cache caught up.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEvery(t, func(t *testing.T) (looptest.Controller, []looptest.Reads, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		quotas, tenants := kf.Core().V1().ResourceQuotas(), pf.Compute().V1alpha1().TenantComputes()
		c, err := NewController(kube, quotas, tenants, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, []looptest.Reads{
			{Fake: &kube.Fake, Resource: "resourcequotas", Informer: quotas.Informer()},
			{Fake: &plinth.Fake, Resource: "tenantcomputes", Informer: tenants.Informer()},
		}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
