// Command bench-api compares, in one run on one local platform, five ways of serving objects of
// the same size: (a) a CRD with Plinth's Workload schema served by kube-apiserver
// (test/bench/workload-crd.yaml), (b) Plinth's Workload through the aggregator, (c) Plinth's
// Workload straight from plinth-apiserver, (d) raw etcd transactions with the same
// concurrency, the limit underneath all of them, and (e) ConfigMaps on the same kube-apiserver
// in protobuf, the best a built-in kind does. For each it measures create, get (also in CBOR),
// status update, list (in every encoding offered), a watch that receives N events, the serving
// process's memory, and the CPU that kube-apiserver and plinth-apiserver spend per get; each
// figure is the median of several rounds, and the order of the targets rotates between rounds
// so that the machine's noise hits all of them. plinth-apiserver runs with the
// CBORServingAndStorage gate on, so that the CBOR rows have figures; kube-apiserver runs
// without it, as a cluster does by default. `make bench` runs it and writes
// docs/benchmarks.md's table and docs/benchmarks-api.json.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/localplatform"
)

const namespace = "bench"

// encodings are the list encodings asked for; a server that does not offer one is noted.
var encodings = []struct{ name, mediaType string }{
	{"JSON", "application/json"},
	{"protobuf", "application/vnd.kubernetes.protobuf"},
	{"CBOR", "application/cbor"},
}

type options struct {
	n, workers, rounds, lists int
	binDir, docs, jsonOut     string
	profile                   string
	// cpuWindow is how long the CPU per get is read in each round, after a 2 s warm-up.
	cpuWindow time.Duration
	// plinthArgs are extra plinth-apiserver flags, to measure a setting's effect on the ratios.
	plinthArgs []string
}

func main() {
	var o options
	flag.IntVar(&o.n, "objects", 5000, "objects created, read, updated and watched per target and round")
	flag.IntVar(&o.workers, "workers", 16, "concurrent clients")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each figure is the median across rounds")
	flag.IntVar(&o.lists, "lists", 5, "lists of all objects per encoding, target and round")
	flag.StringVar(&o.binDir, "bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries")
	flag.StringVar(&o.docs, "docs", "", "Markdown file whose bench-api section is replaced by the results (docs/benchmarks.md)")
	flag.StringVar(&o.jsonOut, "json", "", "file to write the results to as JSON")
	flag.DurationVar(&o.cpuWindow, "cpu-window", 10*time.Second, "how long, per target and round, the servers' CPU is read under a get load")
	flag.Func("plinth-arg", "an extra plinth-apiserver flag, such as --consistent-get-from-cache (repeatable)", func(v string) error {
		o.plinthArgs = append(o.plinthArgs, v)
		return nil
	})
	flag.StringVar(&o.profile, "profile", "", "directory for CPU profiles of kube-apiserver and plinth-apiserver under a get load through the aggregator, taken after the rounds")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-api:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-api:", err)
		os.Exit(1)
	}
}

// validate refuses settings that cannot give a figure.
func (o options) validate() error {
	switch {
	case o.n < 1 || o.n > 99999:
		return fmt.Errorf("--objects must be from 1 to 99999, not %d", o.n)
	case o.workers < 1:
		return fmt.Errorf("--workers must be at least 1, not %d", o.workers)
	case o.rounds < 1:
		return fmt.Errorf("--rounds must be at least 1, not %d", o.rounds)
	case o.lists < 1:
		return fmt.Errorf("--lists must be at least 1, not %d", o.lists)
	case o.cpuWindow < time.Second:
		return fmt.Errorf("--cpu-window must be at least 1s, not %v", o.cpuWindow)
	}
	return nil
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "plinth-bench-api-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ports, err := localplatform.FreePorts(6)
	if err != nil {
		return err
	}
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	platform, err := localplatform.Start(startCtx, localplatform.Config{
		Dir: dir, BinDir: o.binDir, ArtifactsDir: filepath.Join("artifacts", "deploy"),
		EtcdPort: ports[0], EtcdPeerPort: ports[1], KubePort: ports[2], PlinthPort: ports[3], ControllerPort: ports[4], KwokPort: ports[5],
		EtcdUnsafeNoFsync: true, NoController: true, Progress: os.Stderr,
		PlinthArgs: append([]string{"--feature-gates=CBORServingAndStorage=true"}, o.plinthArgs...),
	})
	if err != nil {
		return err
	}
	defer platform.Stop()

	adminCfg, err := platform.AdminConfig()
	if err != nil {
		return err
	}
	if err := install(ctx, o.binDir, platform.AdminKubeconfig(), adminCfg); err != nil {
		return err
	}
	targets, sample, closeAll, err := buildTargets(ctx, platform, adminCfg, max(o.n, 50))
	if err != nil {
		return err
	}
	defer closeAll()

	// A first request on a kind pays one-time costs (a CRD's handler and schema are built on
	// first use, connections are opened); a few creates per target before the rounds keep
	// them out of the figures.
	for _, t := range targets {
		if _, err := parallel(50, o.workers, &latencies{}, func(i int) error { return t.create(ctx, i) }); err != nil {
			return fmt.Errorf("%s warm-up: %w", t.name(), err)
		}
		if err := t.cleanup(ctx); err != nil {
			return fmt.Errorf("%s warm-up: %w", t.name(), err)
		}
	}

	results := map[string]map[string][]Result{} // target → operation → rounds
	rss := map[string][]float64{}
	cpu := map[string][]CPUPerGet{}
	for round := 0; round < o.rounds; round++ {
		// Rotate, so that a noisy moment does not always hit the same target and each target
		// runs right after a different one.
		order := append(append([]target{}, targets[round%len(targets):]...), targets[:round%len(targets)]...)
		for _, t := range order {
			fmt.Fprintf(os.Stderr, "bench-api: round %d/%d, %s\n", round+1, o.rounds, t.name())
			ops, err := measure(ctx, t, o, round)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", t.name(), round+1, err)
			}
			if _, raw := t.(*etcdTarget); !raw {
				c, err := cpuPerGet(ctx, platform, t, o)
				if err != nil {
					return fmt.Errorf("%s, round %d, CPU per get: %w", t.name(), round+1, err)
				}
				fmt.Fprintf(os.Stderr, "bench-api: %s: %.0f gets/s, %.3f ms of kube-apiserver and %.3f ms of plinth-apiserver CPU per get\n",
					t.name(), c.GetsPerSecond, c.KubeAPIServerMs, c.PlinthAPIServerMs)
				cpu[t.name()] = append(cpu[t.name()], c)
			}
			if results[t.name()] == nil {
				results[t.name()] = map[string][]Result{}
			}
			for op, r := range ops {
				results[t.name()][op] = append(results[t.name()][op], r)
			}
			rss[t.name()] = append(rss[t.name()], rssMiB(t.pid()))
			if err := t.cleanup(ctx); err != nil {
				return fmt.Errorf("%s cleanup: %w", t.name(), err)
			}
		}
	}
	if o.profile != "" {
		if err := profileGets(ctx, platform, targets[1], o); err != nil {
			return err
		}
	}
	report := newReport(o, targets, results, rss, cpu, sample)
	fmt.Print(report.markdown())
	if o.jsonOut != "" {
		if err := report.writeJSON(o.jsonOut); err != nil {
			return err
		}
	}
	if o.docs != "" {
		return report.writeDocs(o.docs)
	}
	return nil
}

// measure runs every operation once on a target.
func measure(ctx context.Context, t target, o options, round int) (map[string]Result, error) {
	out := map[string]Result{}
	timed := func(op string, do func(i int) error) error {
		lat := &latencies{}
		wall, err := parallel(o.n, o.workers, lat, do)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		out[op] = lat.result(o.n, wall)
		return nil
	}
	if err := timed(opCreate, func(i int) error { return t.create(ctx, i) }); err != nil {
		return nil, err
	}
	if err := timed(opGet, func(i int) error { return t.get(ctx, i) }); err != nil {
		return nil, err
	}
	if note, err := t.getAs(ctx, 0, "application/cbor"); err != nil {
		return nil, fmt.Errorf("%s: %w", opGetCBOR, err)
	} else if note != "" {
		out[opGetCBOR] = Result{Note: note}
	} else if err := timed(opGetCBOR, func(i int) error {
		note, err := t.getAs(ctx, i, "application/cbor")
		if err == nil && note != "" {
			err = fmt.Errorf("%s", note)
		}
		return err
	}); err != nil {
		return nil, err
	}
	if err := timed(opUpdateStatus, func(i int) error { return t.updateStatus(ctx, i, 2*round+1) }); err != nil {
		return nil, err
	}
	for _, enc := range encodings {
		lat := &latencies{}
		var note string
		start := time.Now()
		for l := 0; l < o.lists; l++ {
			began := time.Now()
			_, n, err := t.list(ctx, enc.mediaType)
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", enc.name, err)
			}
			if note = n; note != "" {
				break
			}
			lat.add(time.Since(began))
		}
		op := opList(enc.name)
		if note != "" {
			out[op] = Result{Note: note}
			continue
		}
		out[op] = lat.result(o.n*o.lists, time.Since(start))
	}
	watched, err := t.watchUpdates(ctx, o.n, o.workers, 2*round+2)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	out[opWatch] = watched
	return out, nil
}

// cpuPerGet reads, from /proc, the CPU kube-apiserver and plinth-apiserver spend while the
// workers get the target's objects (which the round has left in place) for o.cpuWindow, after
// a 2 s warm-up; divided by the gets done, it says which server a get costs what. Every
// target's figure has both servers, so that the idle one's background work is visible too.
func cpuPerGet(ctx context.Context, p *localplatform.Platform, t target, o options) (CPUPerGet, error) {
	loadCtx, stop := context.WithCancel(ctx)
	defer stop()
	var gets atomic.Int64
	failed := make(chan error, o.workers)
	var wg sync.WaitGroup
	for w := 0; w < o.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; loadCtx.Err() == nil; i += o.workers {
				if err := t.get(loadCtx, i%o.n); err != nil {
					if loadCtx.Err() == nil {
						failed <- err
					}
					return
				}
				gets.Add(1)
			}
		}(w)
	}
	defer wg.Wait()
	_, kubePID, plinthPID := p.PIDs()
	select {
	case err := <-failed:
		return CPUPerGet{}, err
	case <-time.After(2 * time.Second):
	}
	k0, p0, g0, t0 := cpuTicks(kubePID), cpuTicks(plinthPID), gets.Load(), time.Now()
	select {
	case err := <-failed:
		return CPUPerGet{}, err
	case <-time.After(o.cpuWindow):
	}
	k1, p1, g1, elapsed := cpuTicks(kubePID), cpuTicks(plinthPID), gets.Load(), time.Since(t0)
	stop()
	n := float64(g1 - g0)
	if n == 0 || k0 < 0 || p0 < 0 || k1 < 0 || p1 < 0 {
		return CPUPerGet{}, fmt.Errorf("no gets, or no CPU figures from /proc")
	}
	return CPUPerGet{
		GetsPerSecond:     n / elapsed.Seconds(),
		KubeAPIServerMs:   ticksToMs(k1-k0) / n,
		PlinthAPIServerMs: ticksToMs(p1-p0) / n,
	}, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

func ticksToMs(ticks int64) float64 { return float64(ticks) * 1000 / clockTicks }

// cpuTicks is a process's user and system CPU time in clock ticks, or -1 if it cannot be read.
func cpuTicks(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	return parseCPUTicks(string(data))
}

// parseCPUTicks reads utime + stime, the 14th and 15th fields of /proc/<pid>/stat; the second
// field, the command in parentheses, may itself contain spaces and parentheses.
func parseCPUTicks(stat string) int64 {
	end := strings.LastIndex(stat, ")")
	if end < 0 || end+2 > len(stat) {
		return -1
	}
	fields := strings.Fields(stat[end+2:]) // from the 3rd field, the state, on
	if len(fields) < 13 {
		return -1
	}
	user, err1 := strconv.ParseInt(fields[11], 10, 64)
	system, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return user + system
}

// profileGets profiles both servers for 20 s while the workers get objects through the
// aggregator, the operation where Plinth trails the CRD most.
func profileGets(ctx context.Context, p *localplatform.Platform, t target, o options) error {
	if _, err := parallel(o.n, o.workers, &latencies{}, func(i int) error { return t.create(ctx, i) }); err != nil {
		return err
	}
	defer func() { _ = t.cleanup(ctx) }()
	loadCtx, stop := context.WithCancel(ctx)
	defer stop()
	for w := 0; w < o.workers; w++ {
		go func(w int) {
			for i := w; loadCtx.Err() == nil; i += o.workers {
				_ = t.get(loadCtx, i%o.n)
			}
		}(w)
	}
	if err := os.MkdirAll(o.profile, 0o755); err != nil {
		return err
	}
	return p.ProfileCPU(ctx, o.profile, 20*time.Second)
}

// install registers the benchmark CRD and creates the namespace.
func install(ctx context.Context, binDir, kubeconfig string, cfg *rest.Config) error {
	kubectl := func(args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := kubectl("apply", "-f", filepath.Join("test", "bench", "workload-crd.yaml")); err != nil {
		return err
	}
	if err := kubectl("wait", "--for=condition=Established", "crd/workloads.bench.plinth.dev", "--timeout=60s"); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// The CRD's discovery reaches kube-apiserver's handlers a moment after Established.
	var discoveryErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, discoveryErr = kube.Discovery().ServerResourcesForGroupVersion("bench.plinth.dev/v1b1")
		return discoveryErr == nil, nil
	})
	if wait.Interrupted(err) && discoveryErr != nil {
		return discoveryErr
	}
	return err
}

// buildTargets returns the five targets in the order a, b, c, d, e, and the size of the
// object; the ConfigMaps' create bodies for objects 0..prepared-1 are encoded here.
func buildTargets(ctx context.Context, p *localplatform.Platform, admin *rest.Config, prepared int) ([]target, int, func(), error) {
	httpClient := func(cfg *rest.Config) (*http.Client, error) {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = 0
		return rest.HTTPClientFor(cfg)
	}
	kubeClient, err := httpClient(admin)
	if err != nil {
		return nil, 0, nil, err
	}
	direct, err := p.PlinthDirectConfig()
	if err != nil {
		return nil, 0, nil, err
	}
	plinthClient, err := httpClient(direct)
	if err != nil {
		return nil, 0, nil, err
	}
	etcdPID, kubePID, plinthPID := p.PIDs()
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{p.EtcdURL()}, DialTimeout: 10 * time.Second})
	if err != nil {
		return nil, 0, nil, err
	}
	crd := newHTTPTarget("CRD", kubeClient, p.KubeURL(), "bench.plinth.dev", namespace, func() int { return kubePID })
	aggregated := newHTTPTarget("Plinth via aggregator", kubeClient, p.KubeURL(), "score.dev", namespace, func() int { return plinthPID })
	directTarget := newHTTPTarget("Plinth direct", plinthClient, p.PlinthURL(), "score.dev", namespace, func() int { return plinthPID })

	// The raw etcd objects are as large as a Workload as Plinth returns it: one is created and
	// the create response's JSON length is the value size. (etcd holds Plinth's objects in the
	// same JSON, so the stored value is within a few bytes of it.)
	if err := aggregated.create(ctx, 0); err != nil {
		etcd.Close()
		return nil, 0, nil, err
	}
	sample := len(aggregated.objects[0])
	if err := aggregated.cleanup(ctx); err != nil {
		etcd.Close()
		return nil, 0, nil, err
	}
	raw := &etcdTarget{client: etcd, prefix: "/bench-raw/workloads/", value: make([]byte, sample), etcd: func() int { return etcdPID }, revs: map[int]int64{}}
	for i := range raw.value {
		raw.value[i] = 'x'
	}
	configMaps, err := newConfigMapTarget(ctx, kubeClient, p.KubeURL(), admin, func() int { return kubePID }, sample)
	if err == nil {
		err = configMaps.prepare(prepared)
	}
	if err != nil {
		etcd.Close()
		return nil, 0, nil, fmt.Errorf("ConfigMaps: %w", err)
	}
	return []target{crd, aggregated, directTarget, raw, configMaps}, sample, func() { etcd.Close() }, nil
}

// rssMiB is a process's resident memory.
func rssMiB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kib, _ := strconv.Atoi(strings.Fields(line)[1])
			return float64(kib) / 1024
		}
	}
	return 0
}

func machine() string {
	cpus := runtime.NumCPU()
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		fields := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
		if len(fields) >= 2 {
			kib, _ := strconv.Atoi(fields[1])
			mem = fmt.Sprintf(", %.0f GiB", float64(kib)/1024/1024)
		}
	}
	return fmt.Sprintf("%d cores%s, %s/%s, %s", cpus, mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
