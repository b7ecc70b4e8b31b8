package workload

import (
	"context"
	"testing"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// The orchestrator reads Secrets (the keys of secret outputs) and Namespaces (the labels
// policies select on) without being woken by them; a reconcile before those caches fill would
// see outputs and policies that are not there.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewSimpleClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		score, core := pf.Score().V1b1(), kf.Core().V1()
		c, err := NewController(context.Background(), plinth, events.NewFakeRecorder(10), score.Workloads(), score.ResourceBindings(),
			score.WorkloadPlans(), score.PlatformPolicies(), core.ConfigMaps(), core.Secrets(), core.Namespaces(), "kubernetes")
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&plinth.Fake, &kube.Fake}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
