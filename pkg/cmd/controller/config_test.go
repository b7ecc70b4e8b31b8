package controller

import (
	"context"
	"slices"
	"testing"

	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/controllers/clustergitops"
	"github.com/plinth-dev/plinth/pkg/controllers/clusterpack"
	"github.com/plinth-dev/plinth/pkg/controllers/computeprovider"
	"github.com/plinth-dev/plinth/pkg/controllers/ociartifact"
	"github.com/plinth-dev/plinth/pkg/controllers/ociregistry"
	"github.com/plinth-dev/plinth/pkg/controllers/packinstance"
	"github.com/plinth-dev/plinth/pkg/controllers/reconciliationrequest"
	"github.com/plinth-dev/plinth/pkg/controllers/tenantcompute"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// New builds every controller plinth-controller runs, tenant compute and the publication of
// its compute providers included, without contacting anything.
func TestNewBuildsEveryController(t *testing.T) {
	kube, plinth := kubefake.NewSimpleClientset(), fake.NewSimpleClientset()
	cfg := &Config{
		Options: NewOptions(), Kube: kube, Plinth: plinth,
		KubeInformers:   kubeinformers.NewSharedInformerFactory(kube, 0),
		PlinthInformers: informers.NewSharedInformerFactory(plinth, 0),
		TenantInformers: kubeinformers.NewSharedInformerFactory(kube, 0),
		Events:          events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()}),
	}
	controllers, err := cfg.Complete().New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range controllers {
		names = append(names, c.Name())
		// The tenant-compute controller runs with --compute-workers and the pack-instance
		// controller with --pack-workers, not --workers.
		want := map[string]int{tenantcompute.Name: cfg.Options.ComputeWorkers, packinstance.Name: cfg.Options.PackWorkers}
		if w, ok := c.(withWorkers); ok != (want[c.Name()] != 0) || ok && w.workers != want[c.Name()] {
			t.Errorf("controller %s: own worker count %v %d", c.Name(), ok, w.workers)
		}
	}
	for _, want := range []string{tenantcompute.Name, computeprovider.Name, ociregistry.Name, clustergitops.Name, reconciliationrequest.Name, ociartifact.Name, clusterpack.Name, packinstance.Name} {
		if !slices.Contains(names, want) {
			t.Errorf("controllers %v lack %s", names, want)
		}
	}
	if len(kube.Actions())+len(plinth.Actions()) != 0 {
		t.Errorf("building the controllers contacted the API: %v %v", kube.Actions(), plinth.Actions())
	}
}
