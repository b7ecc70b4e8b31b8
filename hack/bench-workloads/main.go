// Command bench-workloads measures the controller end to end: it starts a fresh local platform
// (real etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok nodes,
// plinth-apiserver, plinth-controller), creates N Workloads (one container, a dns resource and
// a service port each), and reports the time until all are Ready and the controller's CPU time
// and peak memory. `make bench-controller` runs it for N=100 and N=1000.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	scoreclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/score/v1b1"
)

func main() {
	n := flag.Int("workloads", 100, "how many Workloads to create")
	nodes := flag.Int("nodes", 0, "fake nodes; default enough for all pods")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	binDir := flag.String("bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries")
	minimal := flag.Bool("minimal", false, "Workloads with one container only: no resource, no service port")
	diagnose := flag.String("diagnose", "", "directory for a 30 s kube-apiserver CPU profile taken after the creates, and its request counts")
	controllerArgs := flag.String("controller-args", "", "extra plinth-controller flags, space-separated")
	flag.Parse()
	if err := run(*n, *nodes, *timeout, *binDir, *minimal, *diagnose, strings.Fields(*controllerArgs)); err != nil {
		fmt.Fprintln(os.Stderr, "bench-workloads:", err)
		os.Exit(1)
	}
}

func run(n, nodes int, timeout time.Duration, binDir string, minimal bool, diagnose string, controllerArgs []string) error {
	if nodes == 0 {
		nodes = n/200 + 2
	}
	dir, err := os.MkdirTemp("", "plinth-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ports, err := localplatform.FreePorts(6)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	platform, err := localplatform.Start(ctx, localplatform.Config{
		Dir: dir, BinDir: binDir, ArtifactsDir: filepath.Join("artifacts", "deploy"),
		EtcdPort: ports[0], EtcdPeerPort: ports[1], KubePort: ports[2], PlinthPort: ports[3], ControllerPort: ports[4], KwokPort: ports[5],
		Nodes: nodes, EtcdUnsafeNoFsync: true, Progress: os.Stderr, ControllerArgs: controllerArgs,
	})
	if err != nil {
		return err
	}
	defer platform.Stop()
	cfg, err := platform.AdminConfig()
	if err != nil {
		return err
	}
	client := clientset.NewForConfigOrDie(cfg).ScoreV1b1().Workloads("team-a")
	cpuBefore, _ := cpuSeconds(platform.ControllerPID())

	start := time.Now()
	var created atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for worker := 0; worker < 8; worker++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			for i := worker; i < n; i += 8 {
				if _, err := client.Create(ctx, workload(i, minimal), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				created.Add(1)
			}
		}(worker)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	createdIn := time.Since(start)
	profiled := make(chan error, 1)
	if diagnose != "" {
		go func() { profiled <- platform.ProfileCPU(ctx, diagnose, 30*time.Second) }()
	} else {
		profiled <- nil
	}

	// Readiness is watched, not polled: listing a thousand Workloads several times a second
	// would load the servers being measured.
	if err := waitAllReady(ctx, client, n); err != nil {
		return fmt.Errorf("%w after %s", err, time.Since(start).Round(time.Second))
	}
	allReady := time.Since(start)
	cpuAfter, _ := cpuSeconds(platform.ControllerPID())
	peak, _ := peakRSS(platform.ControllerPID())
	fmt.Printf("workloads=%d minimal=%v nodes=%d created_in=%s all_ready_in=%s controller_cpu=%.1fs controller_peak_rss=%dMiB\n",
		n, minimal, nodes, createdIn.Round(10*time.Millisecond), allReady.Round(10*time.Millisecond), cpuAfter-cpuBefore, peak/1024)
	if err := <-profiled; err != nil {
		return err
	}
	if diagnose != "" {
		return requestCounts(ctx, cfg, diagnose)
	}
	return nil
}

// waitAllReady returns once n Workloads in the namespace are Ready.
func waitAllReady(ctx context.Context, client scoreclient.WorkloadInterface, n int) error {
	ready := sets.New[string]()
	observe := func(w *v1b1.Workload, deleted bool) {
		if !deleted && meta.IsStatusConditionTrue(w.Status.Conditions, v1b1.ConditionReady) {
			ready.Insert(w.Name)
		} else {
			ready.Delete(w.Name)
		}
	}
	rv, relist := "", true
	for {
		if relist {
			// After an error event (a resourceVersion too old, for one) the watch cannot
			// resume from rv: start again from a fresh list.
			list, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			ready.Clear()
			for i := range list.Items {
				observe(&list.Items[i], false)
			}
			rv, relist = list.ResourceVersion, false
		}
		if ready.Len() >= n {
			return nil
		}
		w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%d of %d Ready", ready.Len(), n)
			}
			return err
		}
		for event := range w.ResultChan() {
			if event.Type == watch.Error {
				relist = true
				break
			}
			obj, ok := event.Object.(*v1b1.Workload)
			if !ok {
				continue
			}
			rv = obj.ResourceVersion
			if event.Type != watch.Bookmark {
				observe(obj, event.Type == watch.Deleted)
			}
			if ready.Len() >= n {
				break
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d Ready", ready.Len(), n)
		}
	}
}

func workload(i int, minimal bool) *v1b1.Workload {
	name := fmt.Sprintf("bench-%04d", i)
	if minimal {
		return &v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1b1.WorkloadSpec{RuntimeClass: "kubernetes",
			Containers: map[string]v1b1.Container{"main": {Image: "registry.example.com/bench:1"}}}}
	}
	return &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1b1.WorkloadSpec{
			RuntimeClass: "kubernetes",
			Containers: map[string]v1b1.Container{"main": {Image: "registry.example.com/bench:1",
				Variables: map[string]string{"HOST": "${resources.dns.host}"}}},
			Resources: map[string]v1b1.ResourceSpec{"dns": {Type: "dns"}},
			Service:   &v1b1.ServiceSpec{Ports: map[string]v1b1.ServicePort{"web": {Port: 80, TargetPort: 8080}}},
		},
	}
}

// requestCounts writes kube-apiserver's request counts by resource and verb, most first.
func requestCounts(ctx context.Context, cfg *rest.Config, dir string) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	data, err := client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return err
	}
	counts := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(line[strings.Index(line, "{")+1:strings.LastIndex(line, "}")], ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		value, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		counts[labels["group"]+"/"+labels["resource"]+"/"+labels["subresource"]+" "+labels["verb"]] += value
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	var out strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&out, "%8.0f %s\n", counts[k], k)
	}
	return os.WriteFile(filepath.Join(dir, "kube-apiserver.requests.txt"), []byte(out.String()), 0o644)
}

// cpuSeconds is a process's user+system CPU time from /proc/PID/stat.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data[strings.LastIndex(string(data), ")")+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// peakRSS is a process's peak resident memory in KiB (VmHWM).
func peakRSS(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strconv.Atoi(strings.Fields(line)[1])
		}
	}
	return 0, fmt.Errorf("no VmHWM")
}
