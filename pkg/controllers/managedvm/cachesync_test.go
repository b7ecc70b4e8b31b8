package managedvm

import (
	"context"
	"testing"
	"time"

	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// The runtime reads revisions (the approved spec), tickets (through its index) and Clusters
// (their phase) besides the VMs: a reconcile before those caches fill would wait for a
// revision that exists or call a healthy cluster missing.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth := fake.NewSimpleClientset()
		pf := informers.NewSharedInformerFactory(plinth, 0)
		gov, platform := pf.Governance().V1alpha1(), pf.Platform().V1alpha1()
		c, err := NewController(context.Background(), plinth.GovernanceV1alpha1(), events.NewFakeRecorder(10), gov.ManagedVMs(), gov.VMRevisions(),
			gov.ApprovalTickets(), platform.Clusters(), nil, time.Second, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&plinth.Fake}, pf.Start
	})
}
