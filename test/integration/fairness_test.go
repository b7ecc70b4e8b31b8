package integration

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// The flood of TestFairUnderLoad and the latency it promises (docs/reliability.md, "Fair under
// load").
const (
	// floodClients is how many of alice's goroutines list in a tight loop: nine times the
	// plinth-tenants level's 11 seats, so most of her requests wait in her flow's queues.
	floodClients = 100
	// floodDuration is how long she floods; bob and the controller ask throughout.
	floodDuration = 30 * time.Second
	// fairLatencyBound is the stated bound on bob's and the controller's slowest request during
	// the flood. Their slowest took 85-270 ms on this shared 2-core machine; the bound leaves
	// ten times that for the machine's noise. What tells a fair configuration from the default
	// one is the comparison of medians below, not this bound.
	fairLatencyBound = 3 * time.Second
	// floodWorkloads is the size of the list alice repeats, so that each of her requests costs
	// the servers real work (encoding, proxying).
	floodWorkloads = 30
)

// fairBaseline runs TestFairUnderLoad without Plinth's FlowSchemas and checks nothing: the
// figures to compare with (docs/reliability.md).
var fairBaseline = flag.Bool("fair-baseline", false, "TestFairUnderLoad: flood without Plinth's FlowSchemas, report only")

// TestFairUnderLoad floods plinth-apiserver through kube-apiserver as alice — floodClients
// goroutines listing team-a's Workloads without pause — while bob lists and gets in team-b and
// the controller's identity lists across namespaces. The FlowSchemas of
// artifacts/deploy/45-flowcontrol.yaml put alice and bob in one level with a flow each and the
// controller in a level of its own, in both servers: bob's and the controller's slowest
// requests stay within fairLatencyBound and their median is at most a third of alice's, while
// alice's requests were held in her queues (or refused), as both servers' flow-control metrics
// show.
func TestFairUnderLoad(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	admin := plinthClient(t, p, "admin")
	for i := 0; i < floodWorkloads; i++ {
		if _, err := admin.ScoreV1b1().Workloads("team-a").Create(ctx, fairWorkload(fmt.Sprintf("flood-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := admin.ScoreV1b1().Workloads("team-b").Create(ctx, fairWorkload(fmt.Sprintf("steady-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if *fairBaseline {
		// The figures docs/reliability.md compares with: Kubernetes' suggested configuration
		// alone, where alice and bob share global-default and the controller workload-low.
		if out, err := framework.Kubectl(p.AdminKubeconfig(), "delete", "flowschemas,prioritylevelconfigurations", "plinth-tenants", "plinth-controller"); err != nil {
			t.Fatalf("kubectl delete: %v\n%s", err, out)
		}
		time.Sleep(3 * time.Second) // both servers' flow-control informers see the deletion
	}
	kubeBefore, plinthBefore := flowControlMetrics(t, p)

	alice := plinthClient(t, p, "alice").ScoreV1b1().RESTClient()
	bob := plinthClient(t, p, "bob").ScoreV1b1().RESTClient()
	controller := plinthClient(t, p, localplatform.ControllerUser).ScoreV1b1().RESTClient()
	// Unloaded, for comparison in the log.
	quiet := &latencies{}
	for i := 0; i < 20; i++ {
		quiet.time(ctx, func() error { return list(ctx, bob, "team-b") })
	}

	floodCtx, stop := context.WithTimeout(ctx, floodDuration)
	defer stop()
	var wg sync.WaitGroup
	flood, bobs, controllers := &latencies{}, &latencies{}, &latencies{}
	for i := 0; i < floodClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for floodCtx.Err() == nil {
				flood.time(floodCtx, func() error { return list(floodCtx, alice, "team-a") })
			}
		}()
	}
	// Let alice's queues fill before the others start asking.
	time.Sleep(2 * time.Second)
	steady := func(l *latencies, requests ...func() error) {
		defer wg.Done()
		for floodCtx.Err() == nil {
			for _, r := range requests {
				l.time(floodCtx, r)
			}
			// A person or a controller between two requests, not another flood.
			time.Sleep(100 * time.Millisecond)
		}
	}
	wg.Add(2)
	go steady(bobs,
		func() error { return list(floodCtx, bob, "team-b") },
		func() error {
			return bob.Get().Namespace("team-b").Resource("workloads").Name("steady-0").MaxRetries(0).Do(floodCtx).Error()
		})
	go steady(controllers,
		func() error { return list(floodCtx, controller, "") },
		func() error {
			return controller.Get().Namespace("team-a").Resource("workloads").Name("flood-0").MaxRetries(0).Do(floodCtx).Error()
		})
	wg.Wait()
	kubeAfter, plinthAfter := flowControlMetrics(t, p)

	t.Logf("bob unloaded: %s", quiet.summary())
	t.Logf("alice (flooding, %d clients): %s", floodClients, flood.summary())
	t.Logf("bob: %s", bobs.summary())
	t.Logf("controller: %s", controllers.summary())
	for _, m := range []struct {
		server        string
		before, after fairnessMetrics
	}{{"kube-apiserver", kubeBefore, kubeAfter}, {"plinth-apiserver", plinthBefore, plinthAfter}} {
		d := m.after.sub(m.before)
		t.Logf("%s: dispatched\n%swaited (seconds)\n%srejected\n%s", m.server, d.dispatched, d.waitSeconds, d.rejected)
		if *fairBaseline {
			continue
		}
		// The server classified with Plinth's schemas: plinth-apiserver too, which proves its
		// flow-control controller reads them from kube-apiserver.
		for _, schema := range []string{"plinth-tenants", "plinth-controller"} {
			if d.dispatched[schema] == 0 {
				t.Errorf("%s dispatched no request under FlowSchema %s", m.server, schema)
			}
		}
		if d.dispatched["global-default"] > d.dispatched["plinth-tenants"] {
			t.Errorf("%s served more requests under global-default (%v) than plinth-tenants (%v): the tenants' schema does not match them",
				m.server, d.dispatched["global-default"], d.dispatched["plinth-tenants"])
		}
	}
	if *fairBaseline {
		t.Log("baseline without Plinth's FlowSchemas: figures only, nothing checked")
		return
	}
	// alice was throttled: her requests waited in her queues in kube-apiserver, which holds the
	// seats of proxied requests, or were refused there or in plinth-apiserver. (Requests still
	// queued when the flood ends are cancelled by the client; those are counted with reason
	// time-out, so that reason proves nothing.)
	kube, plinth := kubeAfter.sub(kubeBefore), plinthAfter.sub(plinthBefore)
	refused := kube.rejected["plinth-tenants queue-full"] + kube.rejected["plinth-tenants concurrency-limit"] +
		plinth.rejected["plinth-tenants queue-full"] + plinth.rejected["plinth-tenants concurrency-limit"]
	if kube.waitSeconds["plinth-tenants"] < 1 && refused == 0 {
		t.Errorf("alice's flood was neither queued (%.2f s waited in all) nor refused: the level does not limit her", kube.waitSeconds["plinth-tenants"])
	}
	// plinth-apiserver's flow-control controller may write FlowSchema status (20-apiserver-rbac.yaml):
	// it marks a FlowSchema whose level is missing Dangling, by a server-side apply patch.
	// Whether it ever writes depends on kube-apiserver writing first, so its permission is asked
	// of RBAC directly, and its log is read for a failed write besides.
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:plinth-system:plinth-apiserver", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:plinth-system"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas", Subresource: "status", Verb: "patch"}}}
	adminCfg, err := p.ConfigFor("admin")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := kubernetes.NewForConfigOrDie(adminCfg).AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{}); err != nil || !got.Status.Allowed {
		t.Errorf("plinth-apiserver may not patch flowschemas/status: %+v %v", got.Status, err)
	}
	if log, err := os.ReadFile(filepath.Join(p.LogDir(), "plinth-apiserver.log")); err != nil {
		t.Error(err)
	} else if i := strings.Index(string(log), "failed to set a status.condition for FlowSchema"); i >= 0 {
		t.Errorf("plinth-apiserver could not write a FlowSchema's status: %s", strings.SplitN(string(log[i:]), "\n", 2)[0])
	}
	if flood.count() < 2*floodClients {
		t.Errorf("alice made only %d requests: the flood did not load the servers", flood.count())
	}
	for _, who := range []struct {
		name string
		l    *latencies
	}{{"bob", bobs}, {"the controller", controllers}} {
		if who.l.errors > 0 {
			t.Errorf("%s: %d of %d requests failed, first: %v", who.name, who.l.errors, who.l.count(), who.l.firstErr)
		}
		if who.l.count() < 20 {
			t.Errorf("%s: only %d requests in %s", who.name, who.l.count(), floodDuration)
		}
		if max := who.l.quantile(1); max > fairLatencyBound {
			t.Errorf("%s: slowest request %s during the flood, more than the stated %s", who.name, max, fairLatencyBound)
		}
		// Meaningful, not only bounded: they are served ahead of alice's own queue. With the
		// flood running in global-default's 49 seats and what it borrows (Kubernetes' suggested
		// configuration alone, -fair-baseline), bob's median was half of alice's; here it is a
		// seventh.
		if median, aliceMedian := who.l.quantile(0.5), flood.quantile(0.5); 3*median > aliceMedian {
			t.Errorf("%s: median %s is more than a third of alice's %s: the flood delays others", who.name, median, aliceMedian)
		}
	}
}

// fairWorkload is a Workload with one container, so that the controller's work for it is small.
func fairWorkload(name string) *v1b1.Workload {
	w := newWorkload(name, "")
	w.Spec.Resources = nil
	w.Spec.Service = nil
	w.Spec.Containers = map[string]v1b1.Container{"main": {Image: "registry.example.com/web:1.0"}}
	return w
}

// plinthClient is the clientset of a demo identity, through kube-apiserver.
func plinthClient(t *testing.T, p *localplatform.Platform, user string) *clientset.Clientset {
	t.Helper()
	cfg, err := p.ConfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	return clientset.NewForConfigOrDie(cfg)
}

// list lists a namespace's Workloads (all of them for ns ""), once: a 429 is an answer to
// count, not one to retry.
func list(ctx context.Context, c rest.Interface, ns string) error {
	return c.Get().Namespace(ns).Resource("workloads").MaxRetries(0).Do(ctx).Error()
}

// latencies records the duration of requests, concurrently.
type latencies struct {
	mu        sync.Mutex
	durations benchharness.Durations
	errors    int
	refused   int
	firstErr  error
}

// time runs one request and records how long it took; a request that ends after ctx (the
// flood) has ended is not recorded: it may have been cut short.
func (l *latencies) time(ctx context.Context, request func() error) {
	start := time.Now()
	err := request()
	took := time.Since(start)
	if ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.durations = append(l.durations, took)
	case apierrors.IsTooManyRequests(err):
		l.refused++
	default:
		l.errors++
		if l.firstErr == nil {
			l.firstErr = err
		}
	}
}

func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.durations) + l.refused + l.errors
}

// quantile is the q-th quantile of the successful requests' durations (1 is the slowest).
func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durations.Quantile(q)
}

func (l *latencies) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d refused (429), %d failed; served %s", l.refused, l.errors, l.durations)
}

// fairnessMetrics are a server's flow-control counters by FlowSchema (rejections by FlowSchema
// and reason: "plinth-tenants queue-full").
type fairnessMetrics struct {
	dispatched, waitSeconds, rejected benchharness.Counts
}

func (m fairnessMetrics) sub(before fairnessMetrics) fairnessMetrics {
	return fairnessMetrics{m.dispatched.Sub(before.dispatched), m.waitSeconds.Sub(before.waitSeconds), m.rejected.Sub(before.rejected)}
}

// flowControlMetrics reads kube-apiserver's and plinth-apiserver's (directly) flow-control
// counters.
func flowControlMetrics(t *testing.T, p *localplatform.Platform) (kube, plinth fairnessMetrics) {
	t.Helper()
	kubeCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	plinthCfg, err := p.PlinthDirectConfig()
	if err != nil {
		t.Fatal(err)
	}
	read := func(cfg *rest.Config) fairnessMetrics {
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(cfg.Host + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s/metrics: %s", cfg.Host, resp.Status)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		bySchema := func(l map[string]string) string { return l["flow_schema"] }
		var m fairnessMetrics
		for _, metric := range []struct {
			name string
			into *benchharness.Counts
		}{
			{"apiserver_flowcontrol_dispatched_requests_total", &m.dispatched},
			{"apiserver_flowcontrol_request_wait_duration_seconds_sum", &m.waitSeconds},
		} {
			if *metric.into, err = benchharness.SumBy(string(body), metric.name, bySchema); err != nil {
				t.Fatal(err)
			}
		}
		m.rejected, err = benchharness.SumBy(string(body), "apiserver_flowcontrol_rejected_requests_total", func(l map[string]string) string {
			return l["flow_schema"] + " " + l["reason"]
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	return read(kubeCfg), read(plinthCfg)
}
