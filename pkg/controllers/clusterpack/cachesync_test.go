package clusterpack

import (
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

// A reconcile before the instance or Cluster caches fill would create instances that exist,
// or delete those of clusters it has not seen yet.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewClientset()
		pf := informers.NewSharedInformerFactory(plinth, 0)
		infra, platform := pf.Infrastructure().V1alpha1(), pf.Platform().V1alpha1()
		c, err := NewController(plinth, kube, events.NewFakeRecorder(10), infra.InfrastructureClusterPacks(), infra.InfrastructurePackInstances(),
			platform.Clusters(), &fakeRenderer{}, revisions.NewStore(kube), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&plinth.Fake}, func(stop <-chan struct{}) { pf.Start(stop) }
	})
}
