package clustergitops

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/cluster"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter/applytest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// fakeClients gives every cluster the same dynamic client, or an error.
type fakeClients struct {
	dyn dynamic.Interface
	err error
}

func (c *fakeClients) For(context.Context, string) (dynamic.Interface, apimeta.RESTMapper, error) {
	return c.dyn, nil, c.err
}

func newCluster(name string, gitOps platformv1alpha1.ClusterGitOps) *platformv1alpha1.Cluster {
	return &platformv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), Generation: 2, ResourceVersion: "1"},
		Spec:       platformv1alpha1.ClusterSpec{GitOps: gitOps},
	}
}

type fixture struct {
	t        *testing.T
	c        *Controller
	client   *fake.Clientset
	clusters cache.Indexer
	regs     cache.Indexer
	recorder *events.FakeRecorder
	clients  *fakeClients
}

func setup(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, recorder: events.NewFakeRecorder(50), clients: &fakeClients{dyn: newDynamic()}}
	f.client = applytest.Clientset(t, objs...)
	factory := informers.NewSharedInformerFactory(f.client, 0)
	clusters, regs := factory.Platform().V1alpha1().Clusters(), factory.Gitops().V1alpha1().OCIRegistries()
	f.clusters, f.regs = clusters.Informer().GetIndexer(), regs.Informer().GetIndexer()
	c, err := NewController(f.client, f.recorder, clusters, regs, f.clients, Options{ProbeInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return now }
	f.c = c
	f.refresh()
	return f
}

// refresh copies the clientset's objects into the informers' caches, as watches would.
func (f *fixture) refresh() {
	f.t.Helper()
	clusters, err := f.client.PlatformV1alpha1().Clusters().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	regs, err := f.client.GitopsV1alpha1().OCIRegistries("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var cs, rs []interface{}
	for i := range clusters.Items {
		cs = append(cs, &clusters.Items[i])
	}
	for i := range regs.Items {
		rs = append(rs, &regs.Items[i])
	}
	if err := f.clusters.Replace(cs, ""); err != nil {
		f.t.Fatal(err)
	}
	if err := f.regs.Replace(rs, ""); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) reconcile(name string) {
	f.t.Helper()
	if err := f.c.reconcile(context.Background(), cache.NewObjectName("", name)); err != nil {
		f.t.Fatalf("reconcile %s: %v", name, err)
	}
	f.refresh()
}

func (f *fixture) cluster(name string) *platformv1alpha1.Cluster {
	f.t.Helper()
	cl, err := f.client.PlatformV1alpha1().Clusters().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return cl
}

func (f *fixture) registries() []gitopsv1alpha1.OCIRegistry {
	f.t.Helper()
	list, err := f.client.GitopsV1alpha1().OCIRegistries("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// updateSpec changes a Cluster's spec.gitOps as a platform admin would.
func (f *fixture) updateSpec(name string, gitOps platformv1alpha1.ClusterGitOps) {
	f.t.Helper()
	cl := f.cluster(name)
	cl.Spec.GitOps, cl.Generation = gitOps, cl.Generation+1
	if _, err := f.client.PlatformV1alpha1().Clusters().Update(context.Background(), cl, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	var got []string
	for len(f.recorder.Events) > 0 {
		e := strings.Fields(<-f.recorder.Events)
		got = append(got, e[0]+" "+e[1])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		f.t.Errorf("events (-want +got):\n%s", diff)
	}
}

func fluxAvailable(t *testing.T, cl *platformv1alpha1.Cluster) *metav1.Condition {
	t.Helper()
	return apimeta.FindStatusCondition(cl.Status.Conditions, platformv1alpha1.ConditionFluxAvailable)
}

var flux = platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineFlux}

func TestFluxAbsent(t *testing.T) {
	f := setup(t, newCluster("local", flux))
	f.reconcile("local")
	cl := f.cluster("local")
	cond := fluxAvailable(t, cl)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != platformv1alpha1.ReasonFluxNotInstalled || cond.ObservedGeneration != 2 {
		t.Fatalf("FluxAvailable: %+v", cond)
	}
	if cl.Status.GitOps != nil {
		t.Errorf("gitOps status without components or registry: %+v", cl.Status.GitOps)
	}
	f.expectEvents("Warning FluxNotInstalled")
	// Found the same again: nothing written, nothing recorded.
	rv := cl.ResourceVersion
	f.reconcile("local")
	if f.cluster("local").ResourceVersion != rv {
		t.Error("a detection that found nothing new wrote the status")
	}
	f.expectEvents()
}

func TestFluxPresentThroughDeployments(t *testing.T) {
	f := setup(t, newCluster("local", flux))
	f.clients.dyn = newDynamic(append(fluxCRDs("v2.7.0"),
		deployment("flux-system", "source-controller", "ghcr.io/fluxcd/source-controller:v1.6.2", true),
		deployment("flux-system", "kustomize-controller", "ghcr.io/fluxcd/kustomize-controller:v1.6.1", true))...)
	f.reconcile("local")
	cl := f.cluster("local")
	if cond := fluxAvailable(t, cl); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != platformv1alpha1.ReasonFluxRunning {
		t.Fatalf("FluxAvailable: %+v", cond)
	}
	want := []platformv1alpha1.FluxComponent{{Name: "source-controller", Version: "v1.6.2"}, {Name: "kustomize-controller", Version: "v1.6.1"}}
	if diff := cmp.Diff(want, cl.Status.GitOps.FluxComponents); diff != "" {
		t.Errorf("components (-want +got):\n%s", diff)
	}
	f.expectEvents("Normal FluxRunning")
}

func TestFluxThroughLeasesAndALeaseGoingStale(t *testing.T) {
	f := setup(t, newCluster("local", flux))
	renewed := now.Add(-2 * time.Second)
	f.clients.dyn = newDynamic(append(fluxCRDs("v1.9.6"),
		lease("flux-system", "source-controller-leader-election", "host_a", renewed, 35),
		lease("flux-system", "kustomize-controller-leader-election", "host_b", renewed, 35))...)
	f.reconcile("local")
	cl := f.cluster("local")
	if cond := fluxAvailable(t, cl); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("FluxAvailable: %+v", cond)
	}
	if len(cl.Status.GitOps.FluxComponents) != 2 || cl.Status.GitOps.FluxComponents[0].Version != "v1.9.6" {
		t.Errorf("components: %+v", cl.Status.GitOps.FluxComponents)
	}

	// The controllers stopped renewing: a minute later the Leases are stale.
	f.c.now = func() time.Time { return now.Add(time.Minute) }
	f.reconcile("local")
	cl = f.cluster("local")
	if cond := fluxAvailable(t, cl); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != platformv1alpha1.ReasonFluxNotRunning {
		t.Fatalf("FluxAvailable: %+v", cond)
	}
	if cl.Status.GitOps != nil && len(cl.Status.GitOps.FluxComponents) != 0 {
		t.Errorf("components still listed: %+v", cl.Status.GitOps.FluxComponents)
	}
	f.expectEvents("Normal FluxRunning", "Warning FluxNotRunning")
}

// TestLeasesOfASkewedClock: a cluster whose clock is far behind plinth-controller's writes
// renewTimes that look stale; once a probe sees them change, Flux counts as running, and stops
// counting once they stop changing for the lease duration.
func TestLeasesOfASkewedClock(t *testing.T) {
	f := setup(t, newCluster("local", flux))
	behind := now.Add(-5 * time.Minute)
	leases := func(renewed time.Time) {
		f.clients.dyn = newDynamic(append(fluxCRDs("v1.9.6"),
			lease("flux-system", "source-controller-leader-election", "host_a", renewed, 35),
			lease("flux-system", "kustomize-controller-leader-election", "host_b", renewed, 35))...)
	}
	leases(behind)
	f.reconcile("local")
	if cond := fluxAvailable(t, f.cluster("local")); cond == nil || cond.Reason != platformv1alpha1.ReasonFluxNotRunning {
		t.Fatalf("first probe, renewTimes 5 minutes off: %+v", cond)
	}
	leases(behind.Add(30 * time.Second))
	f.c.now = func() time.Time { return now.Add(30 * time.Second) }
	f.reconcile("local")
	if cond := fluxAvailable(t, f.cluster("local")); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("renewed since the previous probe: %+v", cond)
	}
	f.c.now = func() time.Time { return now.Add(30*time.Second + 35*time.Second) }
	f.reconcile("local")
	if cond := fluxAvailable(t, f.cluster("local")); cond == nil || cond.Reason != platformv1alpha1.ReasonFluxNotRunning {
		t.Fatalf("not renewed for the lease duration: %+v", cond)
	}
	f.expectEvents("Warning FluxNotRunning", "Normal FluxRunning", "Warning FluxNotRunning")
}

func TestUnreachableKeepsWhatWasFound(t *testing.T) {
	f := setup(t, newCluster("local", flux))
	f.clients.dyn = newDynamic(append(fluxCRDs("v2.7.0"),
		deployment("flux-system", "source-controller", "ghcr.io/fluxcd/source-controller:v1.6.2", true),
		deployment("flux-system", "kustomize-controller", "ghcr.io/fluxcd/kustomize-controller:v1.6.1", true))...)
	f.reconcile("local")
	f.clients.err = errors.New("cluster local is not registered")
	f.reconcile("local")
	cl := f.cluster("local")
	cond := fluxAvailable(t, cl)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != platformv1alpha1.ReasonUnreachable ||
		cond.Message != "The cluster could not be asked whether Flux runs on it: cluster local is not registered." {
		t.Fatalf("FluxAvailable: %+v", cond)
	}
	if len(cl.Status.GitOps.FluxComponents) != 2 {
		t.Errorf("components: %+v", cl.Status.GitOps.FluxComponents)
	}
}

// Switched to Kubectl, a Cluster loses its Flux status, also when plinth-controller wrote it
// with a whole-status update before this controller applied its part (and so still owns it).
func TestKubectlEngineRemovesFluxStatus(t *testing.T) {
	f := setup(t, newCluster("local", platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineKubectl}))
	cl := f.cluster("local")
	cl.Status.GitOps = &platformv1alpha1.ClusterGitOpsStatus{FluxComponents: []platformv1alpha1.FluxComponent{{Name: "source-controller"}}}
	cl.Status.Phase = platformv1alpha1.ClusterPhaseHealthy
	cl.Status.Conditions = []metav1.Condition{
		{Type: platformv1alpha1.ConditionReachable, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()},
		{Type: platformv1alpha1.ConditionFluxAvailable, Status: metav1.ConditionTrue, Reason: platformv1alpha1.ReasonFluxRunning, LastTransitionTime: metav1.Now()},
	}
	if _, err := f.client.PlatformV1alpha1().Clusters().UpdateStatus(context.Background(), cl, metav1.UpdateOptions{FieldManager: "plinth-controller"}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.reconcile("local")
	got := f.cluster("local").Status
	if got.GitOps != nil || fluxAvailable(t, f.cluster("local")) != nil {
		t.Errorf("Flux status left: %+v", got)
	}
	if got.Phase != platformv1alpha1.ClusterPhaseHealthy || !apimeta.IsStatusConditionTrue(got.Conditions, platformv1alpha1.ConditionReachable) {
		t.Errorf("the probes' status was touched: %+v", got)
	}
	if len(f.clients.dyn.(interface{ Actions() []clienttesting.Action }).Actions()) != 0 {
		t.Error("a Kubectl-engine cluster was asked about Flux")
	}
}

func TestRegistryLifecycle(t *testing.T) {
	f := setup(t, newCluster("local", platformv1alpha1.ClusterGitOps{RegistryEnabled: true, RegistryPort: 5001}))
	f.reconcile("local")
	regs := f.registries()
	if len(regs) != 1 {
		t.Fatalf("registries: %+v", regs)
	}
	reg := regs[0]
	owner := metav1.GetControllerOf(&reg)
	if reg.Namespace != DefaultNamespace || reg.Name != "local" || reg.Labels[gitopsv1alpha1.LabelCluster] != "local" ||
		owner == nil || owner.Kind != "Cluster" || owner.UID != "local-uid" || owner.APIVersion != "platform.plinth.dev/v1alpha1" ||
		reg.Spec.Port != 5001 || reg.Spec.Endpoint != "localhost:5001" || reg.Spec.DataPath != "" || reg.Spec.VolumeName != "" {
		t.Errorf("registry: %+v", reg)
	}
	st := f.cluster("local").Status.GitOps
	if st == nil || st.Registry != "plinth-system/local" || st.RegistryEndpoint != "localhost:5001" {
		t.Fatalf("gitOps status: %+v", st)
	}

	// A new port: the registry is replaced (its spec is immutable), once the old one is gone.
	f.updateSpec("local", platformv1alpha1.ClusterGitOps{RegistryEnabled: true, RegistryPort: 5002})
	f.reconcile("local")
	if regs := f.registries(); len(regs) != 0 {
		t.Fatalf("the registry on the old port was not deleted: %+v", regs)
	}
	if st := f.cluster("local").Status.GitOps; st != nil {
		t.Errorf("gitOps status names a registry being replaced: %+v", st)
	}
	f.reconcile("local")
	if regs := f.registries(); len(regs) != 1 || regs[0].Spec.Port != 5002 {
		t.Fatalf("registries: %+v", regs)
	}

	// Deleted by hand: created again.
	if err := f.client.GitopsV1alpha1().OCIRegistries(DefaultNamespace).Delete(context.Background(), "local", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.reconcile("local")
	if regs := f.registries(); len(regs) != 1 {
		t.Fatalf("the registry deleted by hand was not created again: %+v", regs)
	}

	// Turned off: deleted, status cleared.
	f.updateSpec("local", platformv1alpha1.ClusterGitOps{})
	f.reconcile("local")
	if regs := f.registries(); len(regs) != 0 {
		t.Errorf("registries left: %+v", regs)
	}
	if st := f.cluster("local").Status.GitOps; st != nil {
		t.Errorf("gitOps status: %+v", st)
	}
}

func TestRegistryInAnotherNamespace(t *testing.T) {
	f := setup(t, newCluster("east", platformv1alpha1.ClusterGitOps{RegistryEnabled: true}))
	f.c.namespace = "gitops"
	f.reconcile("east")
	if regs := f.registries(); len(regs) != 1 || regs[0].Namespace != "gitops" || regs[0].Spec.Port != platformv1alpha1.DefaultRegistryPort {
		t.Fatalf("registries: %+v", regs)
	}
	if st := f.cluster("east").Status.GitOps; st == nil || st.Registry != "gitops/east" || st.RegistryEndpoint != "localhost:5000" {
		t.Errorf("gitOps status: %+v", st)
	}
}

func TestARegistryTheClusterDoesNotOwnIsLeftAlone(t *testing.T) {
	foreign := &gitopsv1alpha1.OCIRegistry{
		ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: "local"},
		Spec:       gitopsv1alpha1.OCIRegistrySpec{Endpoint: "localhost:6000", Port: 6000},
	}
	f := setup(t, newCluster("local", platformv1alpha1.ClusterGitOps{RegistryEnabled: true}), foreign)
	f.reconcile("local")
	regs := f.registries()
	if len(regs) != 1 || regs[0].Spec.Port != 6000 || len(regs[0].OwnerReferences) != 0 {
		t.Errorf("the foreign registry was changed: %+v", regs)
	}
	if st := f.cluster("local").Status.GitOps; st != nil {
		t.Errorf("gitOps status names a registry the cluster does not own: %+v", st)
	}
	f.expectEvents("Warning RegistryConflict")

	// Turning the registry off does not delete what is not the cluster's.
	f.updateSpec("local", platformv1alpha1.ClusterGitOps{})
	f.reconcile("local")
	if regs := f.registries(); len(regs) != 1 {
		t.Errorf("the foreign registry was deleted")
	}
}

func TestADeletedClusterLosesItsRegistry(t *testing.T) {
	f := setup(t, newCluster("local", platformv1alpha1.ClusterGitOps{RegistryEnabled: true}),
		newCluster("east", platformv1alpha1.ClusterGitOps{RegistryEnabled: true}))
	f.reconcile("local")
	f.reconcile("east")
	if err := f.client.PlatformV1alpha1().Clusters().Delete(context.Background(), "local", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.reconcile("local")
	if regs := f.registries(); len(regs) != 1 || regs[0].Name != "east" {
		t.Errorf("registries: %+v", regs)
	}
}

func TestRegistriesMapToTheirCluster(t *testing.T) {
	reg := &gitopsv1alpha1.OCIRegistry{ObjectMeta: metav1.ObjectMeta{Namespace: "plinth-system", Name: "r",
		Labels: map[string]string{gitopsv1alpha1.LabelCluster: "local"}}}
	if got := clusterOf(reg); len(got) != 1 || got[0] != cache.NewObjectName("", "local") {
		t.Errorf("mapped to %v", got)
	}
	if got := clusterOf(&gitopsv1alpha1.OCIRegistry{}); len(got) != 0 {
		t.Errorf("a registry of no cluster mapped to %v", got)
	}
}

// fakeCredentials gives the cluster controller a config for any cluster.
type fakeCredentials struct{}

func (fakeCredentials) GetRESTConfig(context.Context, string) (*rest.Config, error) {
	return &rest.Config{Host: "https://local:6443"}, nil
}
func (fakeCredentials) Type() string { return "fake" }

// The cluster controller's probes and this controller both write the Cluster's status, often:
// once both have written, every later version of the Cluster has the fields of both, and
// neither ever updates the whole status.
func TestNeitherControllerErasesTheOthersStatus(t *testing.T) {
	client := applytest.Clientset(t, newCluster("local", platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineFlux, RegistryEnabled: true}))
	factory := informers.NewSharedInformerFactory(client, 0)
	clusters, regs := factory.Platform().V1alpha1().Clusters(), factory.Gitops().V1alpha1().OCIRegistries()
	healthy := cluster.Finding{Phase: platformv1alpha1.ClusterPhaseHealthy, KubernetesVersion: "v1.37.1",
		Reachable: cluster.Verdict{Status: metav1.ConditionTrue, Reason: "Ready", Message: "ok"},
		KubeVirt:  cluster.Verdict{Status: metav1.ConditionFalse, Reason: "NotInstalled", Message: "no"}}
	prober, err := cluster.NewController(client.PlatformV1alpha1(), events.NewFakeRecorder(1000), clusters, fakeCredentials{},
		func(context.Context, *rest.Config) cluster.Finding { return healthy }, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	dyn := newDynamic(fluxCRDs("v1.9.6")...)
	gitops, err := NewController(client, events.NewFakeRecorder(1000), clusters, regs, &fakeClients{dyn: dyn}, Options{ProbeInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Every other detection finds source-controller's Lease gone, so this controller writes
	// as often as it detects.
	gitops.now = func() time.Time { return now }
	var leaseLists atomic.Int64
	dyn.PrependReactor("list", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.(clienttesting.ListAction).GetListRestrictions().Fields.String() != "metadata.name=source-controller-leader-election" ||
			leaseLists.Add(1)%2 == 1 {
			return false, nil, nil
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(leasesResource.GroupVersion().WithKind("LeaseList"))
		return true, list, nil
	})
	for _, name := range []string{"source-controller-leader-election", "kustomize-controller-leader-election"} {
		if _, err := dyn.Resource(leasesResource).Namespace("flux-system").Create(context.Background(), lease("flux-system", name, "h", now, 35), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	w, err := client.PlatformV1alpha1().Clusters().Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	go func() { _ = prober.Run(ctx, 2) }()
	go func() { _ = gitops.Run(ctx, 2) }()

	both := func(cl *platformv1alpha1.Cluster) bool {
		s := cl.Status
		return s.Phase == platformv1alpha1.ClusterPhaseHealthy && apimeta.FindStatusCondition(s.Conditions, platformv1alpha1.ConditionReachable) != nil &&
			apimeta.FindStatusCondition(s.Conditions, platformv1alpha1.ConditionFluxAvailable) != nil &&
			s.GitOps != nil && s.GitOps.Registry == "plinth-system/local"
	}
	deadline := time.After(3 * time.Second)
	seenBoth, versions := false, 0
	for {
		select {
		case e := <-w.ResultChan():
			cl := e.Object.(*platformv1alpha1.Cluster)
			switch {
			case both(cl):
				seenBoth = true
				versions++
			case seenBoth:
				t.Fatalf("a write erased the other controller's fields: %+v", cl.Status)
			}
		case <-deadline:
			if !seenBoth || versions < 10 {
				t.Fatalf("too few writes to tell: both seen %v, %d versions since", seenBoth, versions)
			}
			// Each applies its part: no write is based on a version another could have
			// changed, so none can conflict.
			for _, a := range client.Actions() {
				if a.GetVerb() == "update" && a.GetResource().Resource == "clusters" {
					t.Errorf("a whole-status update of a Cluster: %v", a)
				}
			}
			return
		}
	}
}

func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		client := fake.NewSimpleClientset()
		factory := informers.NewSharedInformerFactory(client, 0)
		clusters, regs := factory.Platform().V1alpha1().Clusters(), factory.Gitops().V1alpha1().OCIRegistries()
		c, err := NewController(client, events.NewFakeRecorder(1), clusters, regs, &fakeClients{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&client.Fake}, func(stop <-chan struct{}) { factory.Start(stop) }
	})
}
