package workloadplan

import (
	"testing"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/compute"
	kubevirtruntime "github.com/plinth-dev/plinth/pkg/compute/providers/governedvm"
	kubernetesruntime "github.com/plinth-dev/plinth/pkg/compute/providers/kubernetes"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// The kubernetes runtime reads Services and Secrets to decide what to apply; a reconcile before
// those caches fill would re-apply everything (or miss a Secret a file needs). The kubevirt
// runtime reads ManagedVMs and SystemServices: before those fill it would ask for a VM again.
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewSimpleClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		score, core, apps := pf.Score().V1b1(), kf.Core().V1(), kf.Apps().V1()
		runtimes := compute.NewRegistry()
		rt := kubernetesruntime.New(kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister())
		gov := pf.Governance().V1alpha1()
		vmRuntime := kubevirtruntime.NewRuntime(plinth, kube, gov.ManagedVMs(), gov.SystemServices(), core.Services().Lister())
		for _, e := range []compute.Entry{{Name: rt.Name(), Runtime: rt}, {Name: vmRuntime.Name(), Runtime: vmRuntime}} {
			if err := runtimes.Register(e); err != nil {
				t.Fatal(err)
			}
		}
		c, err := New(plinth, events.NewFakeRecorder(10), runtimes, score.WorkloadPlans(), score.ResourceBindings(),
			apps.Deployments(), core.Services(), core.Secrets())
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&plinth.Fake, &kube.Fake}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
