package adoption

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// A VM must not look unmanaged to a cold ManagedVM cache, nor a candidate new to a cold
// PendingAdoption cache.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEvery(t, func(t *testing.T) (looptest.Controller, []looptest.Reads, func(<-chan struct{})) {
		plinth := fake.NewSimpleClientset()
		pf := informers.NewSharedInformerFactory(plinth, 0)
		gov, platform := pf.Governance().V1alpha1(), pf.Platform().V1alpha1()
		a, err := NewController(plinth.GovernanceV1alpha1(), events.NewFakeRecorder(10), gov.ManagedVMs(), gov.SystemServices(),
			gov.PendingAdoptions(), platform.Clusters(), nil, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return a, []looptest.Reads{
			{Fake: &plinth.Fake, Resource: "managedvms", Informer: gov.ManagedVMs().Informer()},
			{Fake: &plinth.Fake, Resource: "systemservices", Informer: gov.SystemServices().Informer()},
			{Fake: &plinth.Fake, Resource: "pendingadoptions", Informer: gov.PendingAdoptions().Informer()},
			{Fake: &plinth.Fake, Resource: "clusters", Informer: platform.Clusters().Informer()},
		}, pf.Start
	})
}
