package adoption

import (
	"testing"
	"time"

	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// A VM must not look unmanaged to a cold ManagedVM cache, nor a candidate new to a cold
// PendingAdoption cache.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth := fake.NewSimpleClientset()
		pf := informers.NewSharedInformerFactory(plinth, 0)
		gov, platform := pf.Governance().V1alpha1(), pf.Platform().V1alpha1()
		a, err := NewController(plinth.GovernanceV1alpha1(), events.NewFakeRecorder(10), gov.ManagedVMs(), gov.SystemServices(),
			gov.PendingAdoptions(), platform.Clusters(), nil, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return a, []*clienttesting.Fake{&plinth.Fake}, pf.Start
	})
}
