package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter/applytest"
	"github.com/plinth-dev/plinth/pkg/credentials"
	platformac "github.com/plinth-dev/plinth/pkg/generated/applyconfiguration/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

var east = cache.NewObjectName("", "east")

type fakeProvider struct {
	cfg *rest.Config
	err error
}

func (p *fakeProvider) GetRESTConfig(context.Context, string) (*rest.Config, error) {
	return p.cfg, p.err
}
func (p *fakeProvider) Type() string { return "fake" }

func setup(t *testing.T, provider credentials.Provider, f Finding) (*Controller, *fake.Clientset, *events.FakeRecorder) {
	t.Helper()
	cl := &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east", Generation: 3}}
	client := applytest.Clientset(t, cl)
	factory := informers.NewSharedInformerFactory(client, 0)
	clusters := factory.Platform().V1alpha1().Clusters()
	if err := clusters.Informer().GetIndexer().Add(cl); err != nil {
		t.Fatal(err)
	}
	recorder := events.NewFakeRecorder(10)
	c, err := NewController(client.PlatformV1alpha1(), recorder, clusters, provider,
		func(context.Context, *rest.Config) Finding { return f }, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return c, client, recorder
}

// expectEvents compares the events recorded so far with want ("Type Reason Note" each).
func expectEvents(t *testing.T, recorder *events.FakeRecorder, want ...string) {
	t.Helper()
	var got []string
	for len(recorder.Events) > 0 {
		got = append(got, <-recorder.Events)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func get(t *testing.T, client *fake.Clientset) *platform.Cluster {
	t.Helper()
	cl, err := client.PlatformV1alpha1().Clusters().Get(context.Background(), "east", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func TestReconcileWritesWhatTheProbeFound(t *testing.T) {
	f := Finding{Phase: platform.ClusterPhaseHealthy, KubernetesVersion: "v1.37.1", KubevirtVersion: "v1.9.0", EnabledFeatures: []string{"Snapshot"},
		Reachable: Verdict{metav1.ConditionTrue, "Ready", "ok"}, KubeVirt: Verdict{metav1.ConditionTrue, "Deployed", "ok"}}
	c, client, recorder := setup(t, &fakeProvider{cfg: &rest.Config{Host: "https://east:6443"}}, f)
	if err := c.reconcile(context.Background(), east); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, recorder, "Normal Healthy The cluster answers and is healthy.")
	s := get(t, client).Status
	if s.Phase != platform.ClusterPhaseHealthy || s.APIServerURL != "https://east:6443" || s.KubevirtVersion != "v1.9.0" ||
		s.ObservedGeneration != 3 || s.LastProbeTime == nil || len(s.EnabledFeatures) != 1 {
		t.Fatalf("status: %+v", s)
	}
	for _, cond := range []string{platform.ConditionCredentialsValid, platform.ConditionReachable, platform.ConditionKubeVirtAvailable} {
		if !apimeta.IsStatusConditionTrue(s.Conditions, cond) {
			t.Errorf("%s is not True: %+v", cond, s.Conditions)
		}
	}
}

func TestReconcileReportsUnusableCredentials(t *testing.T) {
	provider := &fakeProvider{err: &credentials.Error{Reason: credentials.ReasonUnknownKey, Message: "sealed with key \"k0\""}}
	c, client, recorder := setup(t, provider, Finding{})
	if err := c.reconcile(context.Background(), east); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, recorder, `Warning UnknownEncryptionKey sealed with key "k0"`)
	s := get(t, client).Status
	cond := apimeta.FindStatusCondition(s.Conditions, platform.ConditionCredentialsValid)
	if s.Phase != platform.ClusterPhaseUnknown || cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "UnknownEncryptionKey" {
		t.Fatalf("status: %+v", s)
	}
}

func TestReconcileRetriesOtherErrors(t *testing.T) {
	c, _, recorder := setup(t, &fakeProvider{err: errors.New("apiserver unavailable")}, Finding{})
	if err := c.reconcile(context.Background(), east); err == nil {
		t.Fatal("a transient error was swallowed")
	}
	expectEvents(t, recorder)
	if err := c.reconcile(context.Background(), cache.NewObjectName("", "gone")); err != nil {
		t.Errorf("a deleted cluster: %v", err)
	}
}

// A probe that finds what the last one found writes nothing until the probe time is
// ProbeTimeRefresh old; a change is written at once. The first probe of a controller always
// writes, so its probe time says this process has probed.
func TestProbeTimeIsRefreshedNotRewritten(t *testing.T) {
	f := Finding{Phase: platform.ClusterPhaseHealthy, KubernetesVersion: "v1.37.1",
		Reachable: Verdict{metav1.ConditionTrue, "Ready", "ok"}, KubeVirt: Verdict{metav1.ConditionFalse, "NotDeployed", "no"}}
	provider := &fakeProvider{cfg: &rest.Config{Host: "https://east:6443"}}
	cl := &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east", Generation: 3}}
	client := applytest.Clientset(t, cl)
	clusters := informers.NewSharedInformerFactory(client, 0).Platform().V1alpha1().Clusters()
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now := start
	finding := f
	c, err := NewController(client.PlatformV1alpha1(), events.NewFakeRecorder(10), clusters, provider,
		func(context.Context, *rest.Config) Finding { return finding }, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.now, c.started = func() time.Time { return now }, start
	writes := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	// probe reconciles with the informer holding what was last written, at a time after start.
	probe := func(at time.Duration, want int) {
		t.Helper()
		now = start.Add(at)
		if err := clusters.Informer().GetIndexer().Update(get(t, client)); err != nil {
			t.Fatal(err)
		}
		if err := c.reconcile(context.Background(), east); err != nil {
			t.Fatal(err)
		}
		if got := writes(); got != want {
			t.Errorf("probe at %s: %d status writes so far, want %d", at, got, want)
		}
	}
	probe(0, 1)
	probe(30*time.Second, 1)
	probe(4*time.Minute, 1)
	probe(5*time.Minute, 2) // the refresh
	probe(5*time.Minute+30*time.Second, 2)
	finding.KubeVirt = Verdict{metav1.ConditionTrue, "Deployed", "ok"}
	probe(6*time.Minute, 3) // a change
	if s := get(t, client).Status; s.LastProbeTime == nil || !s.LastProbeTime.Time.Equal(start.Add(6*time.Minute)) {
		t.Errorf("lastProbeTime %v after the change", s.LastProbeTime)
	}

	probe(6*time.Minute+30*time.Second, 3)
	// Another process wrote the probe time (this controller started after it): written anyway.
	c.started = start.Add(6*time.Minute + time.Second)
	probe(6*time.Minute+45*time.Second, 4)
}

// Credentials that cannot be used need their owner: each reason is a Warning event, DecryptionFailed
// and InvalidKubeconfig included (they were Normal before the platform group declared its reasons).
func TestUnusableCredentialsAreWarnings(t *testing.T) {
	for _, reason := range []credentials.Reason{credentials.ReasonUnknownKey, credentials.ReasonDecryptionFailed, credentials.ReasonInvalidKubeconfig} {
		c, _, recorder := setup(t, &fakeProvider{err: &credentials.Error{Reason: reason, Message: "The kubeconfig cannot be used."}}, Finding{})
		if err := c.reconcile(context.Background(), east); err != nil {
			t.Fatal(err)
		}
		expectEvents(t, recorder, "Warning "+string(reason)+" The kubeconfig cannot be used.")
	}
}

// The prober applies only its part of the status: what the GitOps controller wrote stays,
// though the prober's cache has not seen it, and managedFields give each its own part.
func TestProbeLeavesTheGitOpsPartAlone(t *testing.T) {
	f := Finding{Phase: platform.ClusterPhaseHealthy, KubernetesVersion: "v1.37.1",
		Reachable: Verdict{metav1.ConditionTrue, "Ready", "ok"}, KubeVirt: Verdict{metav1.ConditionFalse, "NotInstalled", "no"}}
	c, client, _ := setup(t, &fakeProvider{cfg: &rest.Config{Host: "https://east:6443"}}, f)
	ctx := context.Background()
	gitOps := platformac.Cluster("east").WithStatus(platformac.ClusterStatus().
		WithGitOps(platformac.ClusterGitOpsStatus().WithRegistry("plinth-system/east").WithRegistryEndpoint("localhost:5000")).
		WithConditions(metav1ac.Condition().WithType(platform.ConditionFluxAvailable).WithStatus(metav1.ConditionTrue).
			WithReason(platform.ReasonFluxRunning).WithMessage("Flux serves the cluster.").WithLastTransitionTime(metav1.Now())))
	if _, err := client.PlatformV1alpha1().Clusters().ApplyStatus(ctx, gitOps, metav1.ApplyOptions{FieldManager: "plinth-clustergitops"}); err != nil {
		t.Fatal(err)
	}
	if err := c.reconcile(ctx, east); err != nil {
		t.Fatal(err)
	}
	cl := get(t, client)
	if cl.Status.GitOps == nil || cl.Status.GitOps.Registry != "plinth-system/east" || !apimeta.IsStatusConditionTrue(cl.Status.Conditions, platform.ConditionFluxAvailable) {
		t.Errorf("the GitOps controller's part is gone: %+v", cl.Status)
	}
	if cl.Status.Phase != platform.ClusterPhaseHealthy || !apimeta.IsStatusConditionTrue(cl.Status.Conditions, platform.ConditionReachable) {
		t.Errorf("the probe's part is missing: %+v", cl.Status)
	}
	owners := map[string]string{}
	for _, m := range cl.ManagedFields {
		owners[m.Manager] = string(m.Operation) + " " + m.Subresource + " " + string(m.FieldsV1.Raw)
	}
	if got := owners[FieldManager]; !strings.Contains(got, `"f:phase"`) || strings.Contains(got, "gitOps") || strings.Contains(got, "FluxAvailable") {
		t.Errorf("%s owns %s", FieldManager, got)
	}
}

// Fields plinth-controller wrote with whole-status updates, before each of its controllers
// applied its part, go away once the prober no longer finds them, though the old field manager
// still owns them.
func TestFieldsWrittenByUpdateGoAway(t *testing.T) {
	f := Finding{Phase: platform.ClusterPhaseHealthy, KubernetesVersion: "v1.37.1",
		Reachable: Verdict{metav1.ConditionTrue, "Ready", "ok"}, KubeVirt: Verdict{metav1.ConditionFalse, "NotInstalled", "no"}}
	c, client, _ := setup(t, &fakeProvider{cfg: &rest.Config{Host: "https://east:6443"}}, f)
	ctx := context.Background()
	old := get(t, client)
	old.Status = platform.ClusterStatus{Phase: platform.ClusterPhaseHealthy, KubernetesVersion: "v1.36.0", KubevirtVersion: "v1.8.0",
		EnabledFeatures: []string{"LiveMigration", "Snapshot"}, ObservedGeneration: 3,
		GitOps: &platform.ClusterGitOpsStatus{Registry: "plinth-system/east"}}
	if _, err := client.PlatformV1alpha1().Clusters().UpdateStatus(ctx, old, metav1.UpdateOptions{FieldManager: "plinth-controller"}); err != nil {
		t.Fatal(err)
	}
	if err := c.reconcile(ctx, east); err != nil {
		t.Fatal(err)
	}
	s := get(t, client).Status
	if s.KubevirtVersion != "" || len(s.EnabledFeatures) != 0 || s.KubernetesVersion != "v1.37.1" {
		t.Errorf("status after the probe: %+v", s)
	}
	if s.GitOps == nil || s.GitOps.Registry != "plinth-system/east" {
		t.Errorf("the prober removed the GitOps controller's part: %+v", s.GitOps)
	}
}
