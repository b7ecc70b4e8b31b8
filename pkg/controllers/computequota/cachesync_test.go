package computequota

import (
	"testing"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// A recount before the TenantCompute cache fills would write a usage of zero into every
// quota, and let admission take more than the quota allows until the cache caught up.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		c, err := NewController(kube, kf.Core().V1().ResourceQuotas(), pf.Compute().V1alpha1().TenantComputes(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&kube.Fake, &plinth.Fake}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
