package packinstance

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

// A reconcile before the pack, Cluster, dependency or OCIArtifact caches fill would see no
// revision to deliver, a missing cluster, dependencies not Ready or an artifact to create.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth := fake.NewSimpleClientset()
		pf := informers.NewSharedInformerFactory(plinth, 0)
		infra, platform, gitops := pf.Infrastructure().V1alpha1(), pf.Platform().V1alpha1(), pf.Gitops().V1alpha1()
		c, err := NewController(plinth, events.NewFakeRecorder(10), infra.InfrastructurePackInstances(), infra.InfrastructureClusterPacks(),
			platform.Clusters(), gitops.OCIArtifacts(), &fakeClients{}, revisions.NewStore(kubefake.NewClientset()), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&plinth.Fake}, func(stop <-chan struct{}) { pf.Start(stop) }
	})
}
