package workloadplan

import (
	"testing"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/compute"
	kubernetesruntime "github.com/plinth-dev/plinth/pkg/compute/providers/kubernetes"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// The kubernetes runtime reads Services and Secrets to decide what to apply; a reconcile before
// those caches fill would re-apply everything (or miss a Secret a file needs).
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEvery(t, func(t *testing.T) (looptest.Controller, []looptest.Reads, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewSimpleClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		score, core, apps := pf.Score().V1b1(), kf.Core().V1(), kf.Apps().V1()
		runtimes := compute.NewRegistry()
		rt := kubernetesruntime.New(kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister())
		if err := runtimes.Register(compute.Entry{Name: rt.Name(), Runtime: rt}); err != nil {
			t.Fatal(err)
		}
		c, err := New(plinth, events.NewFakeRecorder(10), runtimes, score.WorkloadPlans(), score.ResourceBindings(),
			apps.Deployments(), core.Services(), core.Secrets())
		if err != nil {
			t.Fatal(err)
		}
		return c, []looptest.Reads{
			{Fake: &plinth.Fake, Resource: "workloadplans", Informer: score.WorkloadPlans().Informer()},
			{Fake: &plinth.Fake, Resource: "resourcebindings", Informer: score.ResourceBindings().Informer()},
			{Fake: &kube.Fake, Resource: "deployments", Informer: apps.Deployments().Informer()},
			{Fake: &kube.Fake, Resource: "services", Informer: core.Services().Informer()},
			{Fake: &kube.Fake, Resource: "secrets", Informer: core.Secrets().Informer()},
		}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
