package resourcebinding

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// The provisioners read Secrets and Services, and template provisioners the Provisioner objects
// and the namespace's Workloads, to decide whether to create them; a reconcile
// before those caches fill would try to create what exists (and a datastore's password Secret
// would be generated anew).
func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEvery(t, func(t *testing.T) (looptest.Controller, []looptest.Reads, func(<-chan struct{})) {
		plinth, kube := fake.NewSimpleClientset(), kubefake.NewSimpleClientset()
		pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
		bindings, core, apps := pf.Score().V1b1().ResourceBindings(), kf.Core().V1(), kf.Apps().V1()
		provisionerObjects, workloads := pf.Score().V1b1().Provisioners(), pf.Score().V1b1().Workloads()
		c, err := NewController(plinth, kube, dynamicfake.NewSimpleDynamicClient(scheme.Scheme), meta.NewDefaultRESTMapper(nil),
			events.NewFakeRecorder(10), bindings, provisionerObjects, workloads, core.Secrets(), core.Services(), apps.StatefulSets(), apps.Deployments(),
			kf.Networking().V1().Ingresses(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, []looptest.Reads{
			{Fake: &plinth.Fake, Resource: "resourcebindings", Informer: bindings.Informer()},
			{Fake: &plinth.Fake, Resource: "provisioners", Informer: provisionerObjects.Informer()},
			{Fake: &plinth.Fake, Resource: "workloads", Informer: workloads.Informer()},
			{Fake: &kube.Fake, Resource: "secrets", Informer: core.Secrets().Informer()},
			{Fake: &kube.Fake, Resource: "services", Informer: core.Services().Informer()},
			{Fake: &kube.Fake, Resource: "statefulsets", Informer: apps.StatefulSets().Informer()},
			{Fake: &kube.Fake, Resource: "deployments", Informer: apps.Deployments().Informer()},
			{Fake: &kube.Fake, Resource: "ingresses", Informer: kf.Networking().V1().Ingresses().Informer()},
		}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
