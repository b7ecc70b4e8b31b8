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
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
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
	ctx, cancel := benchharness.Context(timeout)
	defer cancel()
	platform, stop, err := benchharness.StartPlatform(ctx, benchharness.PlatformOptions{BinDir: binDir, Nodes: nodes, ControllerArgs: controllerArgs})
	if err != nil {
		return err
	}
	defer stop()
	cfg, err := platform.AdminConfig()
	if err != nil {
		return err
	}
	client := clientset.NewForConfigOrDie(cfg).ScoreV1b1().Workloads("team-a")
	before, _ := benchharness.ReadUsage(platform.ControllerPID())

	start := time.Now()
	err = benchharness.Parallel(ctx, n, 8, func(ctx context.Context, i int) error {
		_, err := client.Create(ctx, workload(i, minimal), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	createdIn := time.Since(start)
	profiled := make(chan error, 1)
	if diagnose != "" {
		go func() { profiled <- platform.ProfileCPU(ctx, diagnose, 30*time.Second) }()
	} else {
		profiled <- nil
	}

	src := benchharness.SourceOf(client, "")
	if err := benchharness.WaitReady(ctx, src, n, func(w *v1b1.Workload) bool {
		return meta.IsStatusConditionTrue(w.Status.Conditions, v1b1.ConditionReady)
	}); err != nil {
		return fmt.Errorf("%w after %s", err, time.Since(start).Round(time.Second))
	}
	allReady := time.Since(start)
	after, _ := benchharness.ReadUsage(platform.ControllerPID())
	fmt.Printf("workloads=%d minimal=%v nodes=%d created_in=%s all_ready_in=%s controller_cpu=%.1fs controller_peak_rss=%dMiB\n",
		n, minimal, nodes, createdIn.Round(10*time.Millisecond), allReady.Round(10*time.Millisecond), after.CPUSeconds-before.CPUSeconds, after.PeakRSSKiB/1024)
	if err := <-profiled; err != nil {
		return err
	}
	if diagnose != "" {
		counts, err := benchharness.APIRequests(ctx, cfg)
		if err != nil {
			return err
		}
		return counts.WriteFile(filepath.Join(diagnose, "kube-apiserver.requests.txt"))
	}
	return nil
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
