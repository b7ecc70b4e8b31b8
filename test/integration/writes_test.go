package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/internal/writecount"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// writesPerKind is how many Workloads of each kind TestWritesPerWorkload applies at once.
const writesPerKind = 10

// writesResync is plinth-controller's --informer-resync in TestWritesPerWorkload: short, so
// that the idle window spans several replays of every cache.
const writesResync = 5 * time.Second

// The status writes a Workload's way to Ready justifies (issue 21, "one status write per real
// transition"):
//   - full (artifacts/examples/workload.yaml: a postgres database and a route): accepted with
//     its resources pending; the route bound (it binds long before the database, and the
//     summary of each binding is the owner's to see); all bound, the plan made and being
//     materialized; Ready.
//   - plain (one container and a port): accepted, the plan made and being materialized; Ready.
//
// A plan is written twice (being materialized, Ready); a binding once per outcome it reaches
// (a database: Binding, then Bound; a route: Bound).
const (
	fullWorkloadWrites  = 4
	plainWorkloadWrites = 2
	planWrites          = 2
)

// TestWritesPerWorkload counts plinth-controller's writes on the way to Ready from
// plinth-apiserver's audit log and kube-apiserver's request counts: Workloads and plans are
// written once per transition and never conflict, a route's Ingress is applied once, a
// Workload whose resource cannot bind is written a bounded number of times, and while nothing
// changes — across several informer resyncs — nothing is written at all.
func TestWritesPerWorkload(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(cfg *localplatform.Config) {
		cfg.ControllerArgs = append(cfg.ControllerArgs, "--informer-resync="+writesResync.String())
	})
	ctx := context.Background()
	aliceCfg, err := p.ConfigFor("alice")
	if err != nil {
		t.Fatal(err)
	}
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	alice := clientset.NewForConfigOrDie(aliceCfg).ScoreV1b1()
	// Alice may not read bindings: the platform's view of them is the admin's.
	admin := clientset.NewForConfigOrDie(adminCfg).ScoreV1b1()
	const ns = "team-a"
	example, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "artifacts", "examples", "workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	full := func(name string) *v1b1.Workload {
		var w v1b1.Workload
		if err := yaml.UnmarshalStrict(example, &w); err != nil {
			t.Fatal(err)
		}
		w.Name, w.Labels = name, map[string]string{"writes": "full"}
		route := w.Spec.Resources["route"]
		route.Params = &common.RawObject{Raw: []byte(`{"host":"` + name + `.example.com","path":"/","port":80}`)}
		w.Spec.Resources["route"] = route
		return &w
	}
	plain := func(name string) *v1b1.Workload {
		return &v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"writes": "plain"}},
			Spec: v1b1.WorkloadSpec{
				Containers: map[string]v1b1.Container{"main": {Image: "registry.example.com/plain:1.0"}},
				Service:    &v1b1.ServiceSpec{Ports: map[string]v1b1.ServicePort{"web": {Port: 80, TargetPort: 8080}}},
			}}
	}
	c := &writeCounter{t: t, auditLog: p.AuditLogPath(), kube: adminCfg}

	// Each kind on its own, so that the counts between two readings are that kind's.
	results := map[string]writeReading{}
	for _, kind := range []struct {
		name string
		make func(string) *v1b1.Workload
	}{{"full", full}, {"plain", plain}} {
		before := c.read()
		start := time.Now()
		for i := 0; i < writesPerKind; i++ {
			if _, err := alice.Workloads(ns).Create(ctx, kind.make(fmt.Sprintf("%s-%02d", kind.name, i)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitForCondition(t, 90*time.Second, func() (bool, string) {
			list, err := alice.Workloads(ns).List(ctx, metav1.ListOptions{LabelSelector: "writes=" + kind.name})
			if err != nil {
				return false, err.Error()
			}
			ready := 0
			for _, w := range list.Items {
				if meta.IsStatusConditionTrue(w.Status.Conditions, v1b1.ConditionReady) {
					ready++
				}
			}
			return ready == writesPerKind, fmt.Sprintf("%d of %d %s Workloads Ready", ready, writesPerKind, kind.name)
		})
		elapsed := time.Since(start)
		// The log backend writes an event after its response went out: let the last ones land.
		time.Sleep(time.Second)
		got := c.read().sub(before)
		results[kind.name] = got
		t.Logf("%d %s Workloads Ready in %s; writes per Workload:\n%s", writesPerKind, kind.name, elapsed.Round(100*time.Millisecond), got.table(writesPerKind))
		t.Logf("%s: %.2f SubjectAccessReviews per Workload", kind.name, got.kube[subjectAccessReview]/writesPerKind)
	}

	t.Run("a Workload is written once per transition, a plan twice, never a conflict", func(t *testing.T) {
		for kind, limit := range map[string]int{"full": fullWorkloadWrites, "plain": plainWorkloadWrites} {
			counts := results[kind].plinth
			if n := counts[statusUpdate("workloads", 200)]; n > limit*writesPerKind {
				t.Errorf("%s: %.1f Workload status writes per Workload, want at most %d", kind, float64(n)/writesPerKind, limit)
			}
			if n := counts[statusUpdate("workloadplans", 200)]; n > planWrites*writesPerKind {
				t.Errorf("%s: %.1f plan status writes per Workload, want at most %d", kind, float64(n)/writesPerKind, planWrites)
			}
			// Score's objects only: TestClusterStatusWriters counts the Clusters' (none either).
			if conflicts := counts.Where(scoreConflict); len(conflicts) > 0 {
				t.Errorf("%s: conflicts (409):\n%s", kind, conflicts.Table(1))
			}
		}
	})

	// Before pkg/authorization.NameFreeFirst, every object plinth-controller wrote was a
	// SubjectAccessReview of its own: 4.5 per full and 2.1 per plain Workload here; with it,
	// 0.9 and 0.1 (the questions one user asks of each kind, once per cache lifetime of 10 s).
	t.Run("SubjectAccessReviews do not grow with the number of objects", func(t *testing.T) {
		for kind, reading := range results {
			if n := reading.kube[subjectAccessReview] / writesPerKind; n > maxSubjectAccessReviews {
				t.Errorf("%s: %.2f SubjectAccessReviews per Workload, want at most %d", kind, n, maxSubjectAccessReviews)
			}
		}
	})

	t.Run("a route's Ingress is applied once", func(t *testing.T) {
		if applies := results["full"].kube[ingressApply]; applies != writesPerKind {
			t.Errorf("%.0f Ingress applies for %d routes", applies, writesPerKind)
		}
	})

	// Bad input: a resource no provisioner handles waits as Pending; a route whose host no
	// Ingress accepts fails. Each reaches its state with a bounded number of writes.
	before := c.read()
	unbindable := plain("unknown-type")
	unbindable.Spec.Resources = map[string]v1b1.ResourceSpec{"thing": {Type: "no-such-type"}}
	badRoute := plain("bad-route")
	badRoute.Spec.Resources = map[string]v1b1.ResourceSpec{"route": {Type: "route",
		Params: &common.RawObject{Raw: []byte(`{"host":"not a host name","port":80}`)}}}
	for _, w := range []*v1b1.Workload{unbindable, badRoute} {
		w.Labels = map[string]string{"writes": "bad"}
		if _, err := alice.Workloads(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitForCondition(t, 60*time.Second, func() (bool, string) {
		var states []string
		done := 0
		for name, want := range map[string]string{"unknown-type": v1b1.ReasonBindingPending, "bad-route": v1b1.ReasonBindingFailed} {
			w, err := alice.Workloads(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			cond := meta.FindStatusCondition(w.Status.Conditions, v1b1.ConditionBindingsReady)
			b, err := admin.ResourceBindings(ns).List(ctx, metav1.ListOptions{LabelSelector: v1b1.WorkloadLabel + "=" + name})
			if err != nil {
				return false, err.Error()
			}
			if cond != nil && cond.Reason == want && len(b.Items) == 1 && b.Items[0].Status.Phase != "" {
				done++
			}
			states = append(states, fmt.Sprintf("%s: %+v, %d bindings", name, cond, len(b.Items)))
		}
		return done == 2, strings.Join(states, "; ")
	})
	time.Sleep(time.Second)
	bad := c.read().sub(before)
	t.Logf("2 Workloads whose resource cannot bind; writes per Workload:\n%s", bad.table(2))
	t.Run("a resource that cannot bind costs a bounded number of writes", func(t *testing.T) {
		// Each: accepted with its resource pending, then where the binding rests (Pending with
		// the unprovided type named, Failed with the route's param named).
		if n := bad.plinth[statusUpdate("workloads", 200)]; n > 4 {
			t.Errorf("%d Workload status writes for the two, want at most 4", n)
		}
		if n := bad.plinth[statusUpdate("resourcebindings", 200)]; n > 2 {
			t.Errorf("%d binding status writes for the two, want at most 2", n)
		}
		if conflicts := bad.plinth.Where(scoreConflict); len(conflicts) > 0 {
			t.Errorf("conflicts (409):\n%s", conflicts.Table(1))
		}
	})

	// Idle: nothing changes, and every cache is replayed to the controllers several times.
	before = c.read()
	time.Sleep(3*writesResync + time.Second)
	idle := c.read().sub(before)
	t.Logf("idle for %s (--informer-resync=%s): plinth-controller's writes:\n%s", 3*writesResync+time.Second, writesResync, idle.table(1))
	t.Run("idle across resyncs, nothing is written", func(t *testing.T) {
		if score := idle.plinth.Where(func(k writecount.Key) bool { return k.Group() == v1b1.GroupName }); len(score) > 0 {
			t.Errorf("writes to score.dev while idle:\n%s", score.Table(1))
		}
		clusterStatus := idle.plinth.Where(func(k writecount.Key) bool {
			return k.Resource == "clusters.platform.plinth.dev" && k.Subresource == "status"
		})
		if n := clusterStatus.Total(); n > 0 {
			t.Errorf("%d Cluster status writes while idle:\n%s", n, clusterStatus.Table(1))
		}
		if n := idle.kube[ingressApply]; n > 0 {
			t.Errorf("%.0f Ingress applies while idle", n)
		}
	})
}

// scoreConflict says whether a write is a conflict (409) on a score.dev object.
func scoreConflict(k writecount.Key) bool { return k.Code == 409 && k.Group() == v1b1.GroupName }

// statusUpdate is the key of a successful status update of a score.dev resource.
func statusUpdate(resource string, code int) writecount.Key {
	return writecount.Key{Resource: resource + "." + v1b1.GroupName, Subresource: "status", Verb: "update", Code: code}
}

// writeCounter reads plinth-controller's writes to plinth-apiserver (its audit log) and
// kube-apiserver's request counts (its metrics: kube-apiserver keeps no audit log here).
type writeCounter struct {
	t        *testing.T
	auditLog string
	kube     *rest.Config
}

// writeReading is one reading of both; kube's counts are by "group/resource/subresource VERB".
type writeReading struct {
	plinth writecount.Counts
	kube   benchharness.Counts
}

func (c *writeCounter) read() writeReading {
	c.t.Helper()
	plinth, err := writecount.FromAuditLog(c.auditLog, localplatform.ControllerUser)
	if err != nil {
		c.t.Fatal(err)
	}
	kube, err := benchharness.APIRequests(context.Background(), c.kube)
	if err != nil {
		c.t.Fatal(err)
	}
	return writeReading{plinth: plinth, kube: kube}
}

func (r writeReading) sub(before writeReading) writeReading {
	return writeReading{plinth: r.plinth.Sub(before.plinth), kube: r.kube.Sub(before.kube)}
}

// table lists the writes per object: plinth-controller's to Plinth, and the Ingress applies
// kube-apiserver counted (only plinth-controller applies Ingresses on the local platform).
func (r writeReading) table(perObject int) string {
	out := r.plinth.Table(perObject)
	if n := r.kube[ingressApply]; n > 0 {
		out += fmt.Sprintf("kube: ingresses.networking.k8s.io apply: %.2f\n", n/float64(perObject))
	}
	return out
}

// maxSubjectAccessReviews bounds the SubjectAccessReviews per Workload of writesPerKind
// Workloads: above the distinct questions the controller asks of a kind (0.9 per Workload
// here), with room for the delegated authorizer's cache to expire once on a slow machine.
const maxSubjectAccessReviews = 2

// subjectAccessReview is kube-apiserver's request key of a SubjectAccessReview: here,
// plinth-apiserver's delegated authorization of a request it could not answer from its cache.
const subjectAccessReview = "authorization.k8s.io/subjectaccessreviews/ POST"

// ingressApply is kube-apiserver's request key of an Ingress server-side apply.
const ingressApply = "networking.k8s.io/ingresses/ APPLY"
