package resourcebinding

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// routeBinding is a route binding for workload shop's port 80.
func routeBinding(host string) *v1b1.ResourceBinding {
	b := binding(`{"host":"` + host + `","port":80}`)
	b.Name, b.Spec.Type, b.Spec.ResourceKey = "shop-route", "route", "route"
	return b
}

// A route applies its Ingress once: reconciles while the manifest and the live Ingress are
// unchanged send nothing; a changed manifest, an edited, relabelled or deleted Ingress are
// applied again.
func TestRouteAppliesItsIngressOnce(t *testing.T) {
	kube := kubefake.NewClientset()
	live := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	r := &route{env: Env{Client: kube, Ingresses: networkinglisters.NewIngressLister(live)}}
	applies := func() int {
		n := 0
		for _, a := range kube.Actions() {
			if a.GetResource().Resource == "ingresses" && a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	// provision reconciles the binding and lets the informer see the Ingress as stored.
	provision := func(step string, b *v1b1.ResourceBinding, want int) {
		t.Helper()
		res, err := r.Provision(context.Background(), b)
		if err != nil || !res.Ready {
			t.Fatalf("%s: %+v, %v", step, res, err)
		}
		if got := applies(); got != want {
			t.Errorf("%s: %d Ingress applies so far, want %d", step, got, want)
		}
		stored, err := kube.NetworkingV1().Ingresses("team-a").Get(context.Background(), b.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := live.Update(stored); err != nil {
			t.Fatal(err)
		}
	}
	b := routeBinding("shop.example.com")
	provision("first reconcile", b, 1)
	provision("nothing changed", b, 1)
	provision("nothing changed, again", b, 1)

	b = routeBinding("www.example.com")
	provision("host changed", b, 2)
	provision("nothing changed after the host", b, 2)

	edited, _, _ := live.GetByKey("team-a/shop-route")
	ing := edited.(*networkingv1.Ingress).DeepCopy()
	ing.Generation++
	if err := live.Update(ing); err != nil {
		t.Fatal(err)
	}
	provision("Ingress spec edited by someone else", b, 3)

	relabelled, _, _ := live.GetByKey("team-a/shop-route")
	ing = relabelled.(*networkingv1.Ingress).DeepCopy()
	delete(ing.Labels, "app.kubernetes.io/managed-by")
	if err := live.Update(ing); err != nil {
		t.Fatal(err)
	}
	provision("label removed", b, 4)

	if err := live.Delete(ing); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Provision(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got := applies(); got != 5 {
		t.Errorf("Ingress gone from the cache: %d applies, want 5", got)
	}

	r.forget(cache.NewObjectName("team-a", "shop-route"))
	provision("after the binding was forgotten", b, 6)
}

// A workload's arrival wakes only the bindings whose provisioner reads workloads: a template
// that reads the namespace's services, and the workload's own unbound bindings of a template
// that reads its metadata. Go provisioners (postgres, route) read none, bound or not.
func TestWorkloadEventsWakeOnlyBindingsThatReadWorkloads(t *testing.T) {
	bindings := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	add := func(name, typ, workload string, phase v1b1.BindingPhase) {
		b := binding("")
		b.Name, b.Spec.Type, b.Spec.WorkloadRef.Name, b.Status.Phase = name, typ, workload, phase
		if err := bindings.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	add("db", "postgres", "shop", v1b1.BindingPhaseBinding)
	add("route", "route", "shop", v1b1.BindingPhasePending)
	add("service", "service", "other", v1b1.BindingPhaseBound)
	add("labelled", "labelled", "shop", v1b1.BindingPhasePending)
	add("labelled-other", "labelled", "other", v1b1.BindingPhasePending)
	add("unknown", "no-such-type", "shop", v1b1.BindingPhasePending)
	provisionerObjects := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, spec := range []v1b1.ProvisionerSpec{
		{URI: "template://test/service", Type: "service", Outputs: `name: {{ (index .WorkloadServices "shop").ServiceName }}`},
		{URI: "template://test/labelled", Type: "labelled", Outputs: `team: {{ .WorkloadMetadata.name }}`},
	} {
		if err := provisionerObjects.Add(&v1b1.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: spec.Type}, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{bindings: listers.NewResourceBindingLister(bindings), builtins: Builtins(Env{}),
		templates: newTemplateSet(nil, listers.NewProvisionerLister(provisionerObjects))}
	c.templates.rebuild()
	got := map[string]bool{}
	for _, k := range c.bindingsWorkloadsConcern(&v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}}) {
		got[k.Name] = true
	}
	if len(got) != 2 || !got["service"] || !got["labelled"] {
		t.Errorf("woken: %v, want service and labelled", got)
	}
}

// A binding woken (by its StatefulSet, its Ingress) before its own status write reached the
// cache neither conflicts with that write nor writes again; its binding time stays.
func TestStaleCacheAfterOwnWrite(t *testing.T) {
	b := binding("")
	b.Name, b.Spec.Type, b.Spec.ResourceKey = "shop-dns", "dns", "dns"
	b.Spec.Params = &common.RawObject{Raw: []byte(`{}`)}
	plinth := fake.NewSimpleClientset(b)
	looptest.ResourceVersions(&plinth.Fake, plinth.Tracker(), v1b1.SchemeGroupVersion.WithResource("resourcebindings"))
	cached := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := cached.Add(b); err != nil {
		t.Fatal(err)
	}
	c := &Controller{bindings: listers.NewResourceBindingLister(cached),
		builtins: Builtins(Env{DNSDomain: "example.com"}), state: newStateStore(kubefake.NewClientset(), nil),
		templates: newTemplateSet(nil, listers.NewProvisionerLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})))}
	c.writeStatusWith(plinth, events.NewFakeRecorder(10))
	c.Loop = loop.New(Name, c.reconcile)
	key := cache.NewObjectName("team-a", "shop-dns")
	for i := 0; i < 3; i++ {
		if err := c.reconcile(context.Background(), key); err != nil {
			t.Fatalf("reconcile %d with a stale cache: %v", i, err)
		}
	}
	n := 0
	for _, a := range plinth.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d status writes for one change, want 1", n)
	}
}
