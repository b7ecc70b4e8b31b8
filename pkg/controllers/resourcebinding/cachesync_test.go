package resourcebinding

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
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
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
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
		return c, []*clienttesting.Fake{&plinth.Fake, &kube.Fake}, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
	})
}
