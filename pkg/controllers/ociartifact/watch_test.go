package ociartifact

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	fluxdelivery "github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
)

var kustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}

// watchClients gives every Cluster the same fake dynamic client serving Kustomizations (or a
// mapper without them, or err), and counts the calls per Cluster.
type watchClients struct {
	client *dynamicfake.FakeDynamicClient
	served bool
	err    error

	mu    sync.Mutex
	calls map[string]int
}

func (f *watchClients) For(_ context.Context, cluster string) (dynamic.Interface, apimeta.RESTMapper, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[cluster]++
	m := apimeta.NewDefaultRESTMapper(nil)
	if f.served {
		m.AddSpecific(fluxdelivery.KustomizationKind, kustomizationGVR, kustomizationGVR.GroupVersion().WithResource("kustomization"), apimeta.RESTScopeNamespace)
	}
	return f.client, m, f.err
}

func (f *watchClients) callsFor(cluster string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[cluster]
}

// kustomization is the Flux engine's Kustomization of the artifact namespace/name on a target.
func kustomization(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	u.SetKind("Kustomization")
	u.SetNamespace("flux-system")
	u.SetName(namespace + "-" + name)
	u.SetLabels(map[string]string{gitopsv1alpha1.LabelArtifact: delivery.ArtifactLabel(namespace, name)})
	u.SetAnnotations(map[string]string{gitopsv1alpha1.AnnotationArtifact: delivery.ArtifactAnnotation(namespace, name)})
	return u
}

// watched is a harness whose controller watches Kustomizations through a fake target holding
// objects, and records what it enqueues at once and after a delay.
type watched struct {
	*harness
	clients *watchClients

	mu     sync.Mutex
	woken  []cache.ObjectName
	delays []time.Duration
}

func newWatched(t *testing.T, art *gitopsv1alpha1.OCIArtifact, objects ...runtime.Object) *watched {
	t.Helper()
	h := newHarness(t, art)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kustomizationGVR: "KustomizationList"}, objects...)
	w := &watched{harness: h, clients: &watchClients{client: client, served: true}}
	h.c.watches.clients = w.clients
	h.c.watches.enqueue = func(key cache.ObjectName) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.woken = append(w.woken, key)
	}
	h.c.after = func(_ cache.ObjectName, d time.Duration) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.delays = append(w.delays, d)
	}
	t.Cleanup(h.c.watches.stopAll)
	return w
}

// lastDelay is the delay of the last reconcile's "look again".
func (w *watched) lastDelay() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.delays[len(w.delays)-1]
}

func (w *watched) wokenKeys() []cache.ObjectName {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.woken)
}

// waitWoken waits until n keys were enqueued at once, well before any poll.
func (w *watched) waitWoken(n int) []cache.ObjectName {
	w.t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return len(w.wokenKeys()) >= n, nil
	}); err != nil {
		w.t.Fatalf("enqueued %v, want %d keys", w.wokenKeys(), n)
	}
	return w.wokenKeys()
}

func (w *watched) waitSynced(cluster string) {
	w.t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return w.c.watches.synced(cluster), nil
	}); err != nil {
		w.t.Fatalf("the watch of cluster %s did not sync", cluster)
	}
}

// watchOf is the running watch of a Cluster, or nil.
func (w *watched) watchOf(cluster string) *clusterWatch {
	w.c.watches.mu.Lock()
	defer w.c.watches.mu.Unlock()
	return w.c.watches.byCluster[cluster]
}

// update writes a Kustomization to the fake target, as Flux or the engine would.
func (w *watched) update(u *unstructured.Unstructured) {
	w.t.Helper()
	if _, err := w.clients.client.Resource(kustomizationGVR).Namespace(u.GetNamespace()).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// withStatus is u with Flux's status: Ready (True, False or Unknown) with revision applied.
func withStatus(u *unstructured.Unstructured, status metav1.ConditionStatus, revision string) *unstructured.Unstructured {
	u = u.DeepCopy()
	u.Object["status"] = map[string]interface{}{
		"lastAppliedRevision": revision,
		"conditions":          []interface{}{map[string]interface{}{"type": "Ready", "status": string(status), "reason": "Progressing"}},
	}
	return u
}

func waitClosed(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not stop", what)
	}
}

// A Flux target on its way: its Cluster's Kustomizations are watched (by the artifact label),
// and Flux's verdict on the Kustomization enqueues the artifact at once; the poll is stretched
// to the fallback once the watch has listed them. Neither the engine's own applies (no status
// change), Flux at work (Ready Unknown) nor the initial list wake it, nor a Kustomization of
// an artifact that does not exist or whose target is Ready with the reported revision.
func TestKustomizationStatusWakesItsArtifact(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "fluxy"}}
	own, other := kustomization("team-a", "app"), kustomization("team-b", "other")
	w := newWatched(t, art, own, other)
	w.flux.ready = false

	w.step()
	if w.watchOf("fluxy") == nil {
		t.Fatal("no watch of cluster fluxy after delivering to it")
	}
	w.waitSynced("fluxy")
	for _, a := range w.clients.client.Actions() {
		if l, ok := a.(clienttesting.ListAction); ok && l.GetListRestrictions().Labels.String() != gitopsv1alpha1.LabelArtifact {
			t.Errorf("%s with label selector %q, want %q", a.GetVerb(), l.GetListRestrictions().Labels, gitopsv1alpha1.LabelArtifact)
		}
	}
	w.step()
	if d := w.lastDelay(); d != DefaultWatchedPollInterval {
		t.Errorf("a watched target on its way is looked at again after %v, want %v", d, DefaultWatchedPollInterval)
	}

	spec := own.DeepCopy()
	spec.Object["spec"] = map[string]interface{}{"interval": "2m"}
	revision := w.get().Status.Revision
	w.update(spec)                                                      // the engine's apply: no status change
	w.update(withStatus(other, metav1.ConditionTrue, "1.0.0@sha256:1")) // team-b/other is no artifact of this Plinth
	w.update(withStatus(spec, metav1.ConditionUnknown, ""))             // Flux at work: no verdict yet
	w.update(withStatus(spec, metav1.ConditionTrue, revision))          // Flux applied it
	if got := w.waitWoken(1); !slices.Equal(got, []cache.ObjectName{appKey}) {
		t.Fatalf("enqueued %v, want only %v", got, appKey)
	}

	// Ready with that revision: further reports on a target at rest do not wake it.
	w.flux.ready = true
	at := w.step()
	w.update(withStatus(spec, metav1.ConditionFalse, at.Status.Targets[0].Revision))
	// Flux pinned to the digest reports the digest alone: the same revision.
	w.update(withStatus(spec, metav1.ConditionTrue, at.Status.Digest))
	// A report of another revision than the one the target is Ready with does, and so does a
	// failure.
	w.update(withStatus(spec, metav1.ConditionFalse, "2.0.0@sha256:2"))
	if got := w.waitWoken(2); len(got) != 2 {
		t.Fatalf("enqueued %v, want %v twice", got, appKey)
	}
	time.Sleep(50 * time.Millisecond)
	if got := w.wokenKeys(); len(got) != 2 {
		t.Errorf("enqueued %v, want %v twice", got, appKey)
	}
}

// Without Flux targets delivered to, no Cluster is watched and targets on their way are polled
// every poll interval: a Kubectl Cluster, a Flux Cluster without Flux (nothing applied there).
func TestNoWatchWithoutFluxTargets(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "noflux"}}
	w := newWatched(t, art)
	w.kubectl.ready = false
	w.step()
	if w.watchOf("east") != nil || w.watchOf("noflux") != nil || w.clients.callsFor("east") != 0 || w.clients.callsFor("noflux") != 0 {
		t.Errorf("watches %v, client calls %v", w.c.watches.byCluster, w.clients.calls)
	}
	if d := w.lastDelay(); d != DefaultPollInterval {
		t.Errorf("looked at again after %v, want %v", d, DefaultPollInterval)
	}
}

// A Flux target whose watch has not listed yet, or cannot start (the cluster does not serve
// Kustomizations, or has no clients), is polled every poll interval, and its watch is tried
// again on the next reconcile. So is a watched target when another target on its way is not
// watched.
func TestUnwatchedTargetsArePolled(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "fluxy"}}
	w := newWatched(t, art)
	w.flux.ready = false
	w.clients.served = false
	w.step()
	w.clients.served = true
	w.clients.err = errors.New("no kubeconfig")
	w.step()
	if w.watchOf("fluxy") != nil || w.clients.callsFor("fluxy") != 2 {
		t.Errorf("watch %v after %d calls, want none after 2", w.watchOf("fluxy"), w.clients.callsFor("fluxy"))
	}
	if d := w.lastDelay(); d != DefaultPollInterval {
		t.Errorf("looked at again after %v, want %v", d, DefaultPollInterval)
	}
	w.clients.err = nil
	w.step()
	w.waitSynced("fluxy")

	w.edit(true, func(a *gitopsv1alpha1.OCIArtifact) {
		a.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "fluxy"}, {Cluster: "east"}}
	})
	w.kubectl.ready = false
	w.step()
	if d := w.lastDelay(); d != DefaultPollInterval {
		t.Errorf("with a Kubectl target on its way, looked at again after %v, want %v", d, DefaultPollInterval)
	}
}

// A Cluster's watch runs while an artifact has a Flux target there: it stops when the last
// one goes (deleted, or its target dropped), and is started anew when the Cluster gets a new
// kubeconfig (generation) or is registered again (UID); a Cluster that is gone is not watched.
func TestWatchFollowsArtifactsAndCluster(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "fluxy"}}
	w := newWatched(t, art)
	w.flux.ready = false
	w.step()
	first := w.watchOf("fluxy")
	if first == nil {
		t.Fatal("no watch of cluster fluxy")
	}
	other := cache.NewObjectName("team-b", "other")
	w.c.watches.track(other, []string{"fluxy"})

	// A new kubeconfig: the watch's clients are stale.
	fluxy := cluster("fluxy", platformv1alpha1.GitOpsEngineFlux, &metav1.Condition{Type: platformv1alpha1.ConditionFluxAvailable, Status: metav1.ConditionTrue})
	fluxy.Generation = 2
	if err := w.clusters.Update(fluxy); err != nil {
		t.Fatal(err)
	}
	w.step()
	waitClosed(t, first.done, "the watch of the old kubeconfig")
	second := w.watchOf("fluxy")
	if second == nil || second == first || second.generation != 2 || w.clients.callsFor("fluxy") != 2 {
		t.Fatalf("watch %+v after %d client calls, want a new one for generation 2", second, w.clients.callsFor("fluxy"))
	}
	if !second.artifacts.Equal(sets.New(appKey, other)) {
		t.Errorf("the new watch is for %v, want both artifacts of the old one", second.artifacts.UnsortedList())
	}

	// The artifact goes; another one still has a Flux target there.
	if err := w.plinth.GitopsV1alpha1().OCIArtifacts("team-a").Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.refresh()
	w.step0()
	if w.watchOf("fluxy") != second {
		t.Fatal("the watch stopped while another artifact has a Flux target there")
	}
	w.c.watches.track(other, nil) // its target dropped
	if w.watchOf("fluxy") != nil {
		t.Fatal("the watch runs with no artifact left")
	}
	waitClosed(t, second.done, "the watch with no artifact left")

	// A Cluster deleted: its watch stops, and none starts.
	w.c.watches.track(other, []string{"fluxy"})
	third := w.watchOf("fluxy")
	if err := w.clusters.Delete(fluxy); err != nil {
		t.Fatal(err)
	}
	w.c.watches.track(other, []string{"fluxy"})
	if w.watchOf("fluxy") != nil {
		t.Fatal("a deleted Cluster is still watched")
	}
	waitClosed(t, third.done, "the watch of a deleted Cluster")
}

// step0 is a reconcile of an artifact that is gone.
func (w *watched) step0() {
	w.t.Helper()
	if err := w.c.reconcile(context.Background(), appKey); err != nil {
		w.t.Fatal(err)
	}
}

// Run stops every watch before it returns, and none starts after.
func TestRunStopsTheWatches(t *testing.T) {
	plinth, kube := fake.NewSimpleClientset(cluster("fluxy", platformv1alpha1.GitOpsEngineFlux, nil)), kubefake.NewSimpleClientset()
	pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
	gitops, platform, core := pf.Gitops().V1alpha1(), pf.Platform().V1alpha1(), kf.Core().V1()
	clients := &watchClients{client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kustomizationGVR: "KustomizationList"}), served: true}
	c, err := NewController(plinth, events.NewFakeRecorder(10), gitops.OCIArtifacts(), gitops.OCIRegistries(), platform.Clusters(),
		core.ConfigMaps(), map[platformv1alpha1.GitOpsEngine]delivery.Engine{}, Options{Clients: clients})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pf.Start(ctx.Done())
	kf.Start(ctx.Done())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_ = c.Run(ctx, 1)
	}()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		c.watches.mu.Lock()
		defer c.watches.mu.Unlock()
		return c.watches.ctx != context.Background(), nil
	}); err != nil {
		t.Fatal("Run did not hand its context to the watches")
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		t.Fatal("the caches did not sync")
	}
	c.watches.track(appKey, []string{"fluxy"})
	cw := c.watches.byCluster["fluxy"]
	if cw == nil {
		t.Fatal("no watch started")
	}
	cancel()
	<-ran // an error when its workers had not started yet: the watches stop all the same
	select {
	case <-cw.done:
	default:
		t.Error("Run returned before the watch stopped")
	}
	c.watches.track(appKey, []string{"fluxy"})
	if len(c.watches.byCluster) != 0 {
		t.Error("a watch started after Run returned")
	}
}
