package computeprovider

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

var start = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// provider is a compute provider that only describes itself.
type provider struct {
	compute.Provider // never called
	name             string
	descriptor       compute.Descriptor
}

func (p provider) Name() string                   { return p.name }
func (p provider) Descriptor() compute.Descriptor { return p.descriptor }

type registry []compute.Provider

func (r registry) Providers() []compute.Provider { return r }

var kubernetesProvider = provider{name: "kubernetes", descriptor: compute.Descriptor{
	Description:    "Runs a tenant's containers as a Deployment and a Service on a Kubernetes cluster.",
	ConfigSchema:   []byte(`{"type":"object","properties":{"replicas":{"type":"integer","minimum":1},"cluster":{"type":"string"}}}`),
	ConfigDefaults: []byte(`{"replicas":1}`),
	SecretSources:  []string{v1alpha1.SecretSourceKubernetes},
	HealthChecks:   []string{v1alpha1.HealthCheckHTTP, v1alpha1.HealthCheckTCP, v1alpha1.HealthCheckExec},
	PublicIP:       true,
}}

type harness struct {
	t        *testing.T
	client   *fake.Clientset
	indexer  cache.Indexer
	recorder *events.FakeRecorder
	c        *Controller
}

func newHarness(t *testing.T, objects ...*v1alpha1.ComputeProvider) *harness {
	t.Helper()
	client := fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	providers := factory.Compute().V1alpha1().ComputeProviders()
	h := &harness{t: t, client: client, indexer: providers.Informer().GetIndexer(), recorder: events.NewFakeRecorder(10)}
	for _, cp := range objects {
		if err := client.Tracker().Add(cp); err != nil {
			t.Fatal(err)
		}
		if err := h.indexer.Add(cp); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewController(client.ComputeV1alpha1(), h.recorder, providers, registry{kubernetesProvider}, PlinthController)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return start }
	h.c = c
	return h
}

// step reconciles the kubernetes provider and refreshes the cache from the clientset.
func (h *harness) step() {
	h.t.Helper()
	if err := h.c.reconcile(context.Background(), cache.NewObjectName("", "kubernetes")); err != nil {
		h.t.Fatal(err)
	}
	cp, err := h.client.ComputeV1alpha1().ComputeProviders().Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.indexer.Update(cp); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get() *v1alpha1.ComputeProvider {
	h.t.Helper()
	cp, err := h.client.ComputeV1alpha1().ComputeProviders().Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return cp
}

// writes lists the writes since the last call ("verb" or "verb/subresource"); each status
// write must name the controller's field manager.
func (h *harness) writes() []string {
	h.t.Helper()
	var out []string
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		w := a.GetVerb()
		if a.GetSubresource() != "" {
			w += "/" + a.GetSubresource()
		}
		if u, ok := a.(clienttesting.UpdateActionImpl); ok && a.GetSubresource() == "status" && u.GetUpdateOptions().FieldManager != FieldManager {
			h.t.Errorf("a status write by field manager %q, want %q", u.GetUpdateOptions().FieldManager, FieldManager)
		}
		out = append(out, w)
	}
	h.client.ClearActions()
	return out
}

func (h *harness) events() []string {
	var out []string
	for len(h.recorder.Events) > 0 {
		out = append(out, <-h.recorder.Events)
	}
	return out
}

func expectPublished(t *testing.T, cp *v1alpha1.ComputeProvider) {
	t.Helper()
	want := v1alpha1.ComputeProviderStatus{
		ConfigSchema:           &common.RawObject{Raw: kubernetesProvider.descriptor.ConfigSchema},
		ConfigDefaults:         &common.RawObject{Raw: kubernetesProvider.descriptor.ConfigDefaults},
		SupportedSecretSources: []string{"kubernetes-secret"},
		SupportedHealthChecks:  []string{"http", "tcp", "exec"},
		PublicIP:               true,
		ObservedGeneration:     cp.Generation,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Registered",
			Message: "plinth.dev/plinth-controller serves this provider.", ObservedGeneration: cp.Generation, LastTransitionTime: metav1.NewTime(start)}},
	}
	if diff := cmp.Diff(want, cp.Status, cmp.Comparer(func(a, b *common.RawObject) bool { return sameJSON(a, b) })); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	wantSpec := v1alpha1.ComputeProviderSpec{Controller: PlinthController, Description: kubernetesProvider.descriptor.Description}
	if cp.Spec != wantSpec {
		t.Errorf("spec %+v, want %+v", cp.Spec, wantSpec)
	}
}

func TestCreatesAMissingProvider(t *testing.T) {
	h := newHarness(t)
	h.step()
	expectPublished(t, h.get())
	if diff := cmp.Diff([]string{"create", "update/status"}, h.writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Normal Registered plinth.dev/plinth-controller registered provider kubernetes."}, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	h.step() // published: nothing to write
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes for a published provider: %v", w)
	}
}

func TestRecreatesADeletedProvider(t *testing.T) {
	h := newHarness(t)
	h.step()
	if err := h.client.ComputeV1alpha1().ComputeProviders().Delete(context.Background(), "kubernetes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.indexer.Delete(&v1alpha1.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}}); err != nil {
		t.Fatal(err)
	}
	h.writes()
	h.step()
	expectPublished(t, h.get())
	if diff := cmp.Diff([]string{"create", "update/status"}, h.writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	// The deletion event wakes the controller for a name it publishes, not for others.
	if keys := h.c.owned(&v1alpha1.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}}); len(keys) != 1 {
		t.Errorf("the kubernetes provider maps to %v", keys)
	}
	if keys := h.c.owned(&v1alpha1.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: "ecs"}}); len(keys) != 0 {
		t.Errorf("a provider of another controller maps to %v", keys)
	}
}

func TestRestoresAChangedStatusAndDescription(t *testing.T) {
	h := newHarness(t)
	h.step()
	cp := h.get()
	cp.Spec.Description = "Something else."
	cp.Generation = 2
	cp.Status.SupportedSecretSources = []string{"vault"}
	cp.Status.PublicIP = false
	cp.Status.Conditions = append(cp.Status.Conditions, metav1.Condition{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "Edited"})
	cp.Status.Conditions[0].Status = metav1.ConditionFalse
	if _, err := h.client.ComputeV1alpha1().ComputeProviders().Update(context.Background(), cp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.indexer.Update(cp); err != nil {
		t.Fatal(err)
	}
	h.writes()
	h.step()
	expectPublished(t, h.get())
	if diff := cmp.Diff([]string{"update", "update/status"}, h.writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// The API server stores the schema as it decoded it: the same JSON in another layout is not a
// change to restore.
func TestReformattedSchemaIsNotAChange(t *testing.T) {
	h := newHarness(t)
	h.step()
	cp := h.get()
	cp.Status.ConfigSchema = &common.RawObject{Raw: []byte(`{ "properties": {"cluster": {"type": "string"}, "replicas": {"minimum": 1, "type": "integer"}}, "type": "object" }`)}
	if _, err := h.client.ComputeV1alpha1().ComputeProviders().UpdateStatus(context.Background(), cp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.indexer.Update(cp); err != nil {
		t.Fatal(err)
	}
	h.client.ClearActions() // the test's own write
	h.step()
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes for a reformatted schema: %v", w)
	}
}

func TestLeavesAProviderOfAnotherControllerAlone(t *testing.T) {
	theirs := &v1alpha1.ComputeProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", UID: "uid-theirs"},
		Spec:       v1alpha1.ComputeProviderSpec{Controller: "example.com/k8s-tenants", Description: "Theirs."},
	}
	h := newHarness(t, theirs)
	h.step()
	h.step()
	if w := h.writes(); len(w) != 0 {
		t.Errorf("wrote another controller's provider: %v", w)
	}
	if got := h.get(); got.Spec != theirs.Spec || len(got.Status.Conditions) != 0 {
		t.Errorf("changed: %+v", got)
	}
	want := []string{"Warning ProviderConflict Provider kubernetes is registered by example.com/k8s-tenants; plinth.dev/plinth-controller does not publish its own provider of that name."}
	if diff := cmp.Diff(want, h.events()); diff != "" {
		t.Errorf("events, once for the conflict (-want +got):\n%s", diff)
	}
}

func TestRefusesADescriptorThatIsNotJSONObjects(t *testing.T) {
	client := fake.NewSimpleClientset()
	providers := informers.NewSharedInformerFactory(client, 0).Compute().V1alpha1().ComputeProviders()
	for _, d := range []compute.Descriptor{{ConfigSchema: []byte(`[1]`)}, {ConfigDefaults: []byte(`{"replicas":`)}} {
		_, err := NewController(client.ComputeV1alpha1(), events.NewFakeRecorder(1), providers, registry{provider{name: "bad", descriptor: d}}, PlinthController)
		if err == nil {
			t.Errorf("descriptor %+v accepted", d)
		}
	}
}

// Run publishes every provider of the registry, though no informer event names it.
func TestRunPublishesEveryProvider(t *testing.T) {
	client := fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	kubevirt := provider{name: "kubevirt", descriptor: compute.Descriptor{Description: "VMs."}}
	c, err := NewController(client.ComputeV1alpha1(), events.NewFakeRecorder(10), factory.Compute().V1alpha1().ComputeProviders(),
		registry{kubernetesProvider, kubevirt}, PlinthController)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx, 1) }()
	defer func() { cancel(); <-done }()
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"kubernetes", "kubevirt"} {
			cp, err := client.ComputeV1alpha1().ComputeProviders().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || err == nil && len(cp.Status.Conditions) == 0 {
				return false, nil
			}
			if err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("providers not published: %v", err)
	}
}

func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		client := fake.NewSimpleClientset()
		factory := informers.NewSharedInformerFactory(client, 0)
		c, err := NewController(client.ComputeV1alpha1(), events.NewFakeRecorder(10), factory.Compute().V1alpha1().ComputeProviders(),
			registry{kubernetesProvider}, PlinthController)
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&client.Fake}, factory.Start
	})
}

// A provider this controller registered but no longer serves turns not Ready (so admission
// stops accepting tenants for it), once; another controller's provider of a name this
// controller does not serve is left alone.
func TestRetiresAProviderItNoLongerServes(t *testing.T) {
	ready := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.NewTime(start)}}
	gone := &v1alpha1.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: "docker"},
		Spec: v1alpha1.ComputeProviderSpec{Controller: PlinthController}, Status: v1alpha1.ComputeProviderStatus{Conditions: ready}}
	theirs := &v1alpha1.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: "ecs"},
		Spec: v1alpha1.ComputeProviderSpec{Controller: "example.com/ecs"}, Status: v1alpha1.ComputeProviderStatus{Conditions: ready}}
	h := newHarness(t, gone, theirs)
	if keys := h.c.owned(gone); len(keys) != 1 {
		t.Errorf("a retired provider of ours does not wake the controller: %v", keys)
	}
	if keys := h.c.owned(theirs); len(keys) != 0 {
		t.Errorf("another controller's provider wakes the controller: %v", keys)
	}
	for _, name := range []string{"docker", "ecs"} {
		if err := h.c.reconcile(context.Background(), cache.NewObjectName("", name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.client.ComputeV1alpha1().ComputeProviders().Get(context.Background(), "docker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "NotServed" {
		t.Errorf("Ready condition of a provider no longer served: %+v", c)
	}
	if w := h.writes(); len(w) != 1 || w[0] != "update/status" {
		t.Errorf("writes %v, want one status update (ecs untouched)", w)
	}
	if err := h.indexer.Update(got); err != nil {
		t.Fatal(err)
	}
	if err := h.c.reconcile(context.Background(), cache.NewObjectName("", "docker")); err != nil {
		t.Fatal(err)
	}
	if w := h.writes(); len(w) != 0 {
		t.Errorf("retired twice: %v", w)
	}
}
