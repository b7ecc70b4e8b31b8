package integration

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/packs/drift"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// packFieldManager is the field manager the drift tests apply with, as the packs controller
// does.
const packFieldManager = "plinth-packs"

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	servicesGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// driftTarget is a bare cluster with the clients a drift Checker needs, and a count of the
// server-side apply dry-runs sent through them.
type driftTarget struct {
	cfg *rest.Config
	// dyn counts dry-runs and serves the Checkers; raw serves the tests' own writes.
	dyn, raw dynamic.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	kube     kubernetes.Interface
	dryRuns  atomic.Int64
}

// startDriftTarget starts a bare cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok; no Plinth) and creates the namespace namespace on it.
func startDriftTarget(tb testing.TB, namespace string) *driftTarget {
	tb.Helper()
	p := framework.StartLocalPlatformWith(tb, func(c *localplatform.Config) { c.KubernetesOnly, c.Nodes = true, 1 })
	cfg, err := p.AdminConfig()
	if err != nil {
		tb.Fatal(err)
	}
	d := &driftTarget{cfg: cfg}
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch && r.URL.Query().Get("dryRun") == metav1.DryRunAll {
				d.dryRuns.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	d.dyn, d.raw = dynamic.NewForConfigOrDie(counted), dynamic.NewForConfigOrDie(cfg)
	d.kube = kubernetes.NewForConfigOrDie(cfg)
	d.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := d.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
	return d
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apply applies objects as the pack does: server-side, field manager plinth-packs, forced.
func (d *driftTarget) apply(tb testing.TB, objects ...*unstructured.Unstructured) {
	tb.Helper()
	for _, o := range objects {
		if err := d.applyOne(o); err != nil {
			tb.Fatal(err)
		}
	}
}

func (d *driftTarget) applyOne(o *unstructured.Unstructured) error {
	mapping, err := d.mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
	if err != nil {
		return err
	}
	_, err = d.raw.Resource(mapping.Resource).Namespace(o.GetNamespace()).
		Apply(context.Background(), o.GetName(), o, metav1.ApplyOptions{FieldManager: packFieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}

// edit changes a live object with an update (not an apply) as manager, the way kubectl edit
// and kubectl scale write; again on a conflict, as kube-controller-manager writes the
// Deployment's status meanwhile.
func (d *driftTarget) edit(t *testing.T, gvr schema.GroupVersionResource, namespace, name, manager string, change func(u *unstructured.Unstructured)) {
	t.Helper()
	client := d.raw.Resource(gvr).Namespace(namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(u)
		_, err = client.Update(context.Background(), u, metav1.UpdateOptions{FieldManager: manager})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func driftObjects() []*unstructured.Unstructured {
	labels := map[string]interface{}{"app.kubernetes.io/part-of": "drift-demo"}
	deployment := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "demo", "labels": labels},
		"spec": map[string]interface{}{
			"replicas": int64(2),
			"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "web"}},
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": "web"}},
				"spec": map[string]interface{}{"containers": []interface{}{
					map[string]interface{}{"name": "web", "image": "registry.example/web:1",
						"ports": []interface{}{map[string]interface{}{"containerPort": int64(8080)}}},
					map[string]interface{}{"name": "sidecar", "image": "registry.example/sidecar:1"},
				}},
			},
		},
	}}
	configMap := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "cfg", "namespace": "demo", "labels": labels},
		"data":     map[string]interface{}{"key": "value", "other": "x"},
	}}
	service := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]interface{}{"name": "web", "namespace": "demo", "labels": labels},
		"spec": map[string]interface{}{
			"selector": map[string]interface{}{"app": "web"},
			"ports":    []interface{}{map[string]interface{}{"port": int64(80), "targetPort": int64(8080)}},
		},
	}}
	return []*unstructured.Unstructured{deployment, configMap, service}
}

// TestPackDrift applies a Deployment, a ConfigMap and a Service to a bare cluster as a pack
// does and checks drift.Checker against the real server-side apply: edits, removals and
// deletions by others are drift with their fields and managers, what only others set is not,
// and a clean object is checked without a dry-run once its baseline is kept.
func TestPackDrift(t *testing.T) {
	d := startDriftTarget(t, "demo")
	ctx := context.Background()
	objects := driftObjects()
	d.apply(t, objects...)
	checker := drift.NewChecker(d.dyn, d.mapper, packFieldManager)

	check := func(t *testing.T, c *drift.Checker, want []drift.ObjectDrift) drift.Report {
		t.Helper()
		report, err := c.Check(ctx, objects)
		if err != nil {
			t.Fatal(err)
		}
		if report.Checked != len(objects) {
			t.Errorf("Checked %d, want %d", report.Checked, len(objects))
		}
		if diff := cmp.Diff(want, report.Drifted, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("drift (-want +got):\n%s", diff)
		}
		return report
	}
	dryRuns := func(t *testing.T, f func()) int64 {
		t.Helper()
		before := d.dryRuns.Load()
		f()
		return d.dryRuns.Load() - before
	}

	t.Run("clean after apply; the second pass sends no dry-run", func(t *testing.T) {
		if n := dryRuns(t, func() { check(t, checker, nil) }); n != 3 {
			t.Errorf("first pass: %d dry-runs, want 3", n)
		}
		if n := dryRuns(t, func() { check(t, checker, nil) }); n != 0 {
			t.Errorf("second pass: %d dry-runs, want 0", n)
		}
	})

	t.Run("an update of fields the pack set is drift naming the fields and the manager", func(t *testing.T) {
		d.edit(t, deploymentsGVR, "demo", "web", "kubectl-edit", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "replicas")
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			containers[0].(map[string]interface{})["image"] = "registry.example/web:2"
			_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
		})
		report := check(t, checker, []drift.ObjectDrift{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web",
			Fields:   []string{".spec.replicas", `.spec.template.spec.containers[name="web"].image`},
			Managers: []string{"kubectl-edit"}}})
		want := `1 of 3 objects drifted: Deployment demo/web (.spec.replicas, .spec.template.spec.containers[name="web"].image changed by kubectl-edit)`
		if got := report.Summary(); got != want {
			t.Errorf("summary\n got %s\nwant %s", got, want)
		}
	})

	t.Run("a removed key and a removed list item are drift; a deleted object is missing", func(t *testing.T) {
		d.edit(t, configMapsGVR, "demo", "cfg", "kubectl-edit", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "data", "other")
		})
		d.edit(t, deploymentsGVR, "demo", "web", "kubectl-edit", func(u *unstructured.Unstructured) {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			_ = unstructured.SetNestedSlice(u.Object, containers[:1], "spec", "template", "spec", "containers")
		})
		if err := d.kube.CoreV1().Services("demo").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		report := check(t, checker, []drift.ObjectDrift{
			{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web",
				Fields: []string{".spec.replicas", `.spec.template.spec.containers[name="sidecar"]`,
					`.spec.template.spec.containers[name="web"].image`},
				Removed:  []string{`.spec.template.spec.containers[name="sidecar"]`},
				Managers: []string{"kubectl-edit"}},
			{APIVersion: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "cfg", Fields: []string{".data.other"}, Removed: []string{".data.other"}},
			{APIVersion: "v1", Kind: "Service", Namespace: "demo", Name: "web", Missing: true},
		})
		t.Logf("summary: %s", report.Summary())
	})

	t.Run("re-applied, everything is clean again", func(t *testing.T) {
		d.apply(t, objects...)
		check(t, checker, nil)
		if n := dryRuns(t, func() { check(t, checker, nil) }); n != 0 {
			t.Errorf("pass after the clean one: %d dry-runs, want 0", n)
		}
	})

	t.Run("a forced apply by another manager is drift naming that manager", func(t *testing.T) {
		_, err := d.raw.Resource(configMapsGVR).Namespace("demo").Apply(ctx, "cfg",
			&unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]interface{}{"name": "cfg"}, "data": map[string]interface{}{"key": "theirs"}}},
			metav1.ApplyOptions{FieldManager: "other-applier", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		check(t, checker, []drift.ObjectDrift{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "cfg",
			Fields: []string{".data.key"}, Managers: []string{"other-applier"}}})
		d.apply(t, objects...)
		check(t, checker, nil)
	})

	t.Run("fields only another manager set are not drift", func(t *testing.T) {
		d.edit(t, configMapsGVR, "demo", "cfg", "other-tool", func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"app.kubernetes.io/part-of": "drift-demo", "team": "blue"})
			_ = unstructured.SetNestedField(u.Object, "added", "data", "extra")
		})
		other, err := d.raw.Resource(servicesGVR).Namespace("demo").Apply(ctx, "web",
			&unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]interface{}{"name": "web", "annotations": map[string]interface{}{"note": "by hand"}}}},
			metav1.ApplyOptions{FieldManager: "other-applier"})
		if err != nil {
			t.Fatal(other, err)
		}
		check(t, checker, nil)
		// A Checker without baselines dry-runs all three and still finds nothing.
		if n := dryRuns(t, func() { check(t, drift.NewChecker(d.dyn, d.mapper, packFieldManager), nil) }); n != 3 {
			t.Errorf("fresh Checker: %d dry-runs, want 3", n)
		}
	})

	t.Run("a field taken over at the same value stays watched", func(t *testing.T) {
		// Set to 3 and back to 2 by another manager: the value is the pack's, but the pack
		// no longer owns the field, so its later change would not show in the pack's entry.
		for _, replicas := range []int64{3, 2} {
			d.edit(t, deploymentsGVR, "demo", "web", "kubectl-scale", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, replicas, "spec", "replicas")
			})
		}
		check(t, checker, nil)
		if n := dryRuns(t, func() { check(t, checker, nil) }); n != 1 {
			t.Errorf("%d dry-runs, want 1 (the Deployment, whose replicas another manager owns)", n)
		}
		d.edit(t, deploymentsGVR, "demo", "web", "kubectl-scale", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(7), "spec", "replicas")
		})
		check(t, checker, []drift.ObjectDrift{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web",
			Fields: []string{".spec.replicas"}, Managers: []string{"kubectl-scale"}}})
		d.apply(t, objects...)
	})

	t.Run("an object of a kind the target does not serve is missing", func(t *testing.T) {
		widget := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": "w", "namespace": "demo"}}}
		report, err := checker.Check(ctx, append(driftObjects(), widget))
		if err != nil {
			t.Fatal(err)
		}
		want := []drift.ObjectDrift{{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "demo", Name: "w", Missing: true}}
		if diff := cmp.Diff(want, report.Drifted, cmpopts.EquateEmpty()); diff != "" || report.Checked != 4 {
			t.Errorf("Checked %d, drift (-want +got):\n%s", report.Checked, diff)
		}
		if got, want := report.Summary(), "1 of 4 objects drifted: Widget demo/w (deleted)"; got != want {
			t.Errorf("summary %q, want %q", got, want)
		}
	})
}

// BenchmarkCheck measures a drift pass over 1000 ConfigMaps a pack applied to a bare cluster:
// the first pass (a dry-run per object) and the steady state (baselines kept, one list). It
// reports the benchmark process's CPU time per pass (cpu-ms/op: user and system, from
// getrusage), which is the controller's share of the work, besides the wall time (ns/op).
func BenchmarkCheck(b *testing.B) {
	const objects = 1000
	d := startDriftTarget(b, "bench")
	expected := make([]*unstructured.Unstructured, objects)
	for i := range expected {
		expected[i] = &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("cm-%04d", i), "namespace": "bench",
				"labels": map[string]interface{}{"app.kubernetes.io/part-of": "bench", "app.kubernetes.io/instance": "bench-pack"}},
			"data": map[string]interface{}{"a": "one", "b": fmt.Sprintf("value-%d", i), "config.yaml": "replicas: 3\nimage: registry.example/app:1\n"},
		}}
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	errs := make(chan error, objects)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < objects; i = next.Add(1) - 1 {
				if err := d.applyOne(expected[i]); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	ctx := context.Background()
	pass := func(b *testing.B, c *drift.Checker) {
		report, err := c.Check(ctx, expected)
		if err != nil {
			b.Fatal(err)
		}
		if report.Checked != objects || len(report.Drifted) != 0 {
			b.Fatalf("Checked %d, drifted %d", report.Checked, len(report.Drifted))
		}
	}

	b.Run("first pass", func(b *testing.B) {
		start := cpuTime()
		for b.Loop() {
			pass(b, drift.NewChecker(d.dyn, d.mapper, packFieldManager))
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	})
	b.Run("steady state", func(b *testing.B) {
		c := drift.NewChecker(d.dyn, d.mapper, packFieldManager)
		pass(b, c)
		start, dryRuns := cpuTime(), d.dryRuns.Load()
		for b.Loop() {
			pass(b, c)
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		if n := d.dryRuns.Load() - dryRuns; n != 0 {
			b.Errorf("%d dry-runs in the steady state", n)
		}
	})
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
