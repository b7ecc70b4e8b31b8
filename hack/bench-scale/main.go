// Command bench-scale measures Workloads at scale: 10,000 in one namespace, then 10,000 spread
// over 100 namespaces, each time next to the same number of objects of a CRD with the same
// schema on the same kube-apiserver (test/bench/workload-crd.yaml) as an anchor. For both it
// times a list as JSON in full and paged by 500 as kubectl pages, a watch from the list's
// resourceVersion until an update's event arrives, a watch without a resourceVersion until its
// last initial ADDED event, and `kubectl get` of a namespace and of all namespaces, each the
// median of several repetitions with the two kinds taking turns; and it reads plinth-apiserver's
// and kube-apiserver's memory from /proc after the creates and after the lists.
// plinth-controller does not run: it would turn 10,000 Workloads into 10,000 Deployments, and
// the figures would be kube-controller-manager's. `make bench` runs it after bench-api and
// writes its section of docs/benchmarks.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/localplatform"
)

// options are the benchmark's settings.
type options struct {
	workloads, namespaces, reps, workers int
	binDir, docs                         string
	timeout                              time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.workloads, "workloads", 10000, "Workloads (and CRD objects) in each layout")
	flag.IntVar(&o.namespaces, "namespaces", 100, "namespaces of the spread layout; --workloads must be a multiple of it")
	flag.IntVar(&o.reps, "reps", 5, "repetitions of each timed operation; the figures are medians")
	flag.IntVar(&o.workers, "workers", 16, "concurrent clients creating and deleting the objects")
	flag.StringVar(&o.binDir, "bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries and kubectl")
	flag.StringVar(&o.docs, "docs", "", "Markdown file whose bench-scale section is replaced by the results (docs/benchmarks.md)")
	flag.DurationVar(&o.timeout, "timeout", 40*time.Minute, "give up after this long")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

// validate refuses settings that cannot give a figure.
func (o options) validate() error {
	switch {
	case o.workloads < 1 || o.workloads > 99999:
		return fmt.Errorf("--workloads must be from 1 to 99999, not %d", o.workloads)
	case o.namespaces < 2 || o.namespaces > 999:
		return fmt.Errorf("--namespaces must be from 2 to 999, not %d", o.namespaces)
	case o.workloads%o.namespaces != 0:
		return fmt.Errorf("--workloads (%d) must be a multiple of --namespaces (%d)", o.workloads, o.namespaces)
	case o.reps < 1:
		return fmt.Errorf("--reps must be at least 1, not %d", o.reps)
	case o.workers < 1:
		return fmt.Errorf("--workers must be at least 1, not %d", o.workers)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive, not %s", o.timeout)
	}
	return nil
}

func run(o options) error {
	began := time.Now()
	ctx, cancel := benchharness.Context(o.timeout)
	defer cancel()
	platform, stop, err := benchharness.StartPlatform(ctx, benchharness.PlatformOptions{BinDir: o.binDir, NoController: true})
	if err != nil {
		return err
	}
	defer stop()
	admin, err := platform.AdminConfig()
	if err != nil {
		return err
	}
	cacheDir, err := os.MkdirTemp("", "plinth-bench-scale-kubectl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cacheDir)
	b := &bench{o: o, platform: platform, kubectl: kubectl{path: filepath.Join(o.binDir, "kubectl"), kubeconfig: platform.AdminKubeconfig(), cacheDir: cacheDir}}
	if err := b.kubectl.run(ctx, "apply", "-f", filepath.Join("test", "bench", "workload-crd.yaml")); err != nil {
		return err
	}
	if err := b.kubectl.run(ctx, "wait", "--for=condition=Established", "crd/workloads.bench.plinth.dev", "--timeout=60s"); err != nil {
		return err
	}
	if b.kinds, err = kinds(admin, platform.KubeURL()); err != nil {
		return err
	}
	if b.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return err
	}
	b.kubeREST = b.kube.Discovery().RESTClient()
	direct, err := platform.PlinthDirectConfig()
	if err != nil {
		return err
	}
	plinth, err := kubernetes.NewForConfig(direct)
	if err != nil {
		return err
	}
	b.plinthREST = plinth.Discovery().RESTClient()
	r := &report{Date: time.Now().UTC().Format("2006-01-02"), Commit: commit(), Machine: machine(),
		Workloads: o.workloads, Namespaces: o.namespaces, Reps: o.reps, Workers: o.workers}
	for _, k := range b.kinds {
		r.Kinds = append(r.Kinds, k.label)
	}
	if err := b.warmUp(ctx); err != nil {
		return err
	}
	r.Memory = append(r.Memory, b.memory(ctx, "at start"))
	for _, l := range layouts(o) {
		fmt.Fprintf(os.Stderr, "bench-scale: %s\n", l.title)
		res, err := b.layout(ctx, l, r)
		if err != nil {
			return fmt.Errorf("%s: %w", l.title, err)
		}
		r.Layouts = append(r.Layouts, res)
	}
	r.Took = time.Since(began).Round(time.Second)
	fmt.Print(r.markdown())
	if o.docs != "" {
		return r.writeDocs(o.docs)
	}
	return nil
}

// bench is one run's platform, clients and settings.
type bench struct {
	o        options
	platform *localplatform.Platform
	kinds    []*kind
	kube     kubernetes.Interface
	kubectl  kubectl
	// plinthREST and kubeREST ask plinth-apiserver (directly) and kube-apiserver for their
	// heap profiles and metrics.
	plinthREST, kubeREST rest.Interface
}

// kinds are Plinth's Workloads through the aggregator and the CRD's, both asked of
// kube-apiserver with the same HTTP client, so that the client's costs are equal.
func kinds(admin *rest.Config, host string) ([]*kind, error) {
	cfg := rest.CopyConfig(admin)
	cfg.Timeout = 0 // lists of 10,000 and watches outlast the platform's 30 s
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return []*kind{
		{label: "Plinth", group: "score.dev", client: client, host: host},
		{label: "CRD", group: "bench.plinth.dev", client: client, host: host},
	}, nil
}

// warmUp creates and deletes a few objects of each kind: a CRD's handler is built on the first
// request, and connections are opened, which the first layout's creates would otherwise pay.
func (b *bench) warmUp(ctx context.Context) error {
	const ns, n = "scale-warm-up", 50
	if _, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, k := range b.kinds {
		if err := benchharness.Parallel(ctx, n, b.o.workers, func(ctx context.Context, i int) error {
			return k.create(ctx, ns, objectName(i))
		}); err != nil {
			return fmt.Errorf("%s warm-up: %w", k.label, err)
		}
		if err := k.deleteAll(ctx, ns); err != nil {
			return fmt.Errorf("%s warm-up: %w", k.label, err)
		}
	}
	return nil
}

// settle waits, for at most a minute, until the platform's processes together use less than
// quietCores over a second: after the last create or delete has been answered,
// kube-controller-manager's garbage collector and quota monitor are still taking in thousands
// of events, and a figure taken meanwhile would measure them too.
func settle(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	before, err := benchharness.ProcessCPU()
	if err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		start := time.Now()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Second):
		}
		now, err := benchharness.ProcessCPU()
		if err != nil {
			return err
		}
		if cores := busy(now.Sub(before), time.Since(start)); cores < quietCores {
			fmt.Fprintf(os.Stderr, "bench-scale: the platform is at rest (%.2f cores) after %s\n", cores, time.Until(deadline.Add(-time.Minute)).Abs().Round(time.Second))
			return nil
		}
		before = now
	}
	fmt.Fprintln(os.Stderr, "bench-scale: the platform did not quiet down within a minute; measuring anyway")
	return nil
}

// quietCores is the CPU use, in cores, below which the platform counts as at rest: its
// controllers' resyncs and leases, not the benchmark's aftermath.
const quietCores = 0.3

// busy is how many cores the platform's processes used over elapsed, from their CPU seconds;
// the benchmark's own ("self") does not count.
func busy(used benchharness.Counts, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	total := 0.0
	for name, seconds := range used {
		if name != "self" {
			total += seconds
		}
	}
	return total / elapsed.Seconds()
}

// memory reads plinth-apiserver's and kube-apiserver's memory now; a failed read shows as
// zero, and a failed live heap is reported on stderr.
func (b *bench) memory(ctx context.Context, moment string) memoryRow {
	_, kubePID, plinthPID := b.platform.PIDs()
	m := memoryRow{Moment: moment}
	m.Plinth, _ = benchharness.ReadUsage(plinthPID)
	m.Kube, _ = benchharness.ReadUsage(kubePID)
	var err error
	if m.PlinthHeap, err = liveHeap(ctx, b.plinthREST); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale: plinth-apiserver's live heap:", err)
	}
	if m.KubeHeap, err = liveHeap(ctx, b.kubeREST); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale: kube-apiserver's live heap:", err)
	}
	return m
}

// layout creates the layout's objects of both kinds, times every operation on them and, unless
// it is the last layout, deletes them again.
func (b *bench) layout(ctx context.Context, l layout, r *report) (layoutResult, error) {
	res := layoutResult{Title: l.title, Created: map[string]float64{}, ObjectBytes: map[string]int{}}
	for _, ns := range l.namespaces() {
		_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil {
			return res, err
		}
	}
	for _, k := range b.kinds {
		start := time.Now()
		err := benchharness.Parallel(ctx, l.objects, b.o.workers, func(ctx context.Context, i int) error {
			return k.create(ctx, l.namespace(i), objectName(i))
		})
		if err != nil {
			return res, fmt.Errorf("%s create: %w", k.label, err)
		}
		res.Created[k.label] = float64(l.objects) / time.Since(start).Seconds()
		fmt.Fprintf(os.Stderr, "bench-scale: %d %s objects created at %.0f/s\n", l.objects, k.label, res.Created[k.label])
	}
	if err := settle(ctx); err != nil {
		return res, err
	}
	r.Memory = append(r.Memory, b.memory(ctx, "after the creates, "+l.short))
	// kubectl's discovery and a CRD's handler are built on first use: one untimed pass of each
	// kind keeps them out of the figures.
	for _, k := range b.kinds {
		if _, _, err := b.kubectl.get(ctx, k.resource(), l.scopes()[0].namespace); err != nil {
			return res, fmt.Errorf("%s warm-up: %w", k.label, err)
		}
	}
	rows := map[string]*row{}
	var order []string
	add := func(op, kind string, d time.Duration) {
		if rows[op] == nil {
			rows[op] = &row{Op: op, Latency: map[string]benchharness.Durations{}}
			order = append(order, op)
		}
		rows[op].Latency[kind] = append(rows[op].Latency[kind], d)
	}
	for rep := 0; rep < b.o.reps; rep++ {
		turn := b.kinds
		if rep%2 == 1 { // take turns, so that a noisy moment does not always hit the same kind
			turn = []*kind{b.kinds[1], b.kinds[0]}
		}
		for _, k := range turn {
			fmt.Fprintf(os.Stderr, "bench-scale: %s, repetition %d/%d, %s\n", l.short, rep+1, b.o.reps, k.label)
			for _, s := range l.scopes() {
				size, err := b.measure(ctx, k, s, rep, func(op string, d time.Duration) { add(op+" "+s.title, k.label, d) })
				if err != nil {
					return res, fmt.Errorf("%s, %s: %w", k.label, s.title, err)
				}
				if s.namespace == "" {
					res.ObjectBytes[k.label] = size / s.objects
				}
			}
		}
	}
	for _, op := range order {
		res.Rows = append(res.Rows, *rows[op])
	}
	r.Memory = append(r.Memory, b.memory(ctx, "after the lists, "+l.short))
	if !l.last {
		for _, k := range b.kinds {
			for _, ns := range l.namespaces() {
				if err := k.deleteAll(ctx, ns); err != nil {
					return res, fmt.Errorf("%s delete: %w", k.label, err)
				}
			}
		}
		if err := settle(ctx); err != nil {
			return res, err
		}
		r.Memory = append(r.Memory, b.memory(ctx, "after the deletes, "+l.short))
	}
	return res, nil
}

// measure times each operation once on one kind and scope and reports it as op; it returns
// the size of the full JSON list.
func (b *bench) measure(ctx context.Context, k *kind, s scope, rep int, report func(op string, d time.Duration)) (int, error) {
	size, rv, d, err := k.listFull(ctx, s.namespace, s.objects)
	if err != nil {
		return 0, fmt.Errorf("list: %w", err)
	}
	report(opList, d)
	if d, err = k.listPaged(ctx, s.namespace, pageSize, s.objects); err != nil {
		return 0, fmt.Errorf("paged list: %w", err)
	}
	report(opListPaged, d)
	open, event, err := k.watchUpdate(ctx, s.namespace, rv, s.updated, objectName(s.updatedIndex), rep)
	if err != nil {
		return 0, fmt.Errorf("watch from the list: %w", err)
	}
	report(opWatchOpen, open)
	report(opWatchEvent, event)
	if d, err = k.watchInitial(ctx, s.namespace, s.objects); err != nil {
		return 0, fmt.Errorf("watch from now: %w", err)
	}
	report(opWatchInitial, d)
	rows, d, err := b.kubectl.get(ctx, k.resource(), s.namespace)
	if err != nil {
		return 0, err
	}
	if rows != s.objects {
		return 0, fmt.Errorf("kubectl get printed %d rows, want %d", rows, s.objects)
	}
	report(opKubectl, d)
	return size, nil
}

// pageSize is kubectl get's --chunk-size default.
const pageSize = 500

// The timed operations, each followed by its scope in the report.
const (
	opList         = "list, JSON, in full,"
	opListPaged    = "list, JSON, pages of 500,"
	opWatchOpen    = "watch from the list's resourceVersion: open,"
	opWatchEvent   = "watch from the list's resourceVersion: update → event,"
	opWatchInitial = "watch without resourceVersion: last initial ADDED,"
	opKubectl      = "`kubectl get`,"
)
