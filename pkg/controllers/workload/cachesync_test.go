package workload

import (
	"context"
	"testing"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// The orchestrator reads Secrets (the keys of secret outputs) and Namespaces (the labels
// policies select on) without being woken by them; a reconcile before those caches fill would
// see outputs and policies that are not there.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEvery(t, func(t *testing.T) (looptest.Controller, []looptest.Reads, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewSimpleClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		score, core := pf.Score().V1b1(), kf.Core().V1()
		c, err := NewController(context.Background(), plinth, events.NewFakeRecorder(10), score.Workloads(), score.ResourceBindings(),
			score.WorkloadPlans(), score.PlatformPolicies(), core.ConfigMaps(), core.Secrets(), core.Namespaces(), "kubernetes")
		if err != nil {
			t.Fatal(err)
		}
		return c, []looptest.Reads{
			{Fake: &plinth.Fake, Resource: "workloads", Informer: score.Workloads().Informer()},
			{Fake: &plinth.Fake, Resource: "resourcebindings", Informer: score.ResourceBindings().Informer()},
			{Fake: &plinth.Fake, Resource: "workloadplans", Informer: score.WorkloadPlans().Informer()},
			{Fake: &plinth.Fake, Resource: "platformpolicies", Informer: score.PlatformPolicies().Informer()},
			{Fake: &kube.Fake, Resource: "configmaps", Informer: core.ConfigMaps().Informer()},
			{Fake: &kube.Fake, Resource: "secrets", Informer: core.Secrets().Informer()},
			{Fake: &kube.Fake, Resource: "namespaces", Informer: core.Namespaces().Informer()},
		}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
