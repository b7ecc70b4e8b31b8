// Command bench-compute measures TenantComputes against the floor, on one fresh local
// platform in one run (`make bench-compute`):
//
//  1. Plinth: N TenantComputes of the kubernetes provider (one container with an http port and
//     health check, cpu 128, memory 128) created in team-a by parallel clients, until every one
//     is phase Ready; plinth-controller's CPU time and peak RSS over that time.
//  2. The floor, afterwards: exactly the Namespaces, Deployments and Services the provider made
//     (see floorTenants), server-side applied straight to kube-apiserver by as many clients into
//     namespaces floor-<tenantID>, until every Deployment is Available.
//
// It prints one table row: N, both times, their ratio (target ≤ 1.3), controller CPU and peak
// RSS. See docs/benchmarks.md, "Tenant compute".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/benchfloor"
	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
)

// options are the command's flags.
type options struct {
	tenants, nodes, clients int
	timeout, settle         time.Duration
	binDir, diagnose        string
	controllerArgs          []string
}

func main() {
	var o options
	var controllerArgs string
	flag.IntVar(&o.tenants, "tenants", 500, "how many TenantComputes (and floor tenants) to create")
	flag.IntVar(&o.nodes, "nodes", 0, "fake nodes; default enough for the pods of both runs")
	flag.IntVar(&o.clients, "clients", 8, "parallel clients of each run")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "give up after this long")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "pause between the Plinth run and the floor run, for the platform to finish what the first started")
	flag.StringVar(&o.binDir, "bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries")
	flag.StringVar(&o.diagnose, "diagnose", "", "directory for a 30 s CPU profile of kube-apiserver and plinth-apiserver taken after the TenantCompute creates, "+
		"kube-apiserver's request counts of each run, plinth-controller's reconcile counts and when tenants reached each stage")
	flag.StringVar(&controllerArgs, "controller-args", "", "extra plinth-controller flags, space-separated")
	flag.Parse()
	o.controllerArgs = strings.Fields(controllerArgs)
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-compute:", err)
		os.Exit(1)
	}
}

// plinthResult is what the Plinth run measured.
type plinthResult struct {
	createdIn, readyIn time.Duration
	controller         benchharness.Usage // CPU over the run; peak RSS at its end
}

func run(o options) error {
	if o.nodes == 0 {
		o.nodes = 2*o.tenants/200 + 2 // kwok nodes take 250 pods; both runs' pods stay
	}
	ctx, cancel := benchharness.Context(o.timeout)
	defer cancel()
	platform, stop, err := benchharness.StartPlatform(ctx, benchharness.PlatformOptions{BinDir: o.binDir, Nodes: o.nodes, ControllerArgs: o.controllerArgs})
	if err != nil {
		return err
	}
	defer stop()
	clients, err := benchharness.AdminClients(platform)
	if err != nil {
		return err
	}
	cfg, plinth, kube := clients.Config, clients.Plinth, clients.Kube
	if err := waitProvider(ctx, plinth); err != nil {
		return err
	}

	snap := func() snapshot { return snapshot{} }
	if o.diagnose != "" {
		if err := os.MkdirAll(o.diagnose, 0o755); err != nil {
			return err
		}
		snap = func() snapshot { return takeSnapshot(ctx, cfg) }
	}
	beforePlinth := snap()
	p, profiled, err := plinthRun(ctx, platform, plinth, o)
	if err != nil {
		return err
	}
	afterPlinth := snap()
	if err := <-profiled; err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Plinth: %d TenantComputes created in %s, all Ready in %s\n", o.tenants, p.createdIn.Round(10*time.Millisecond), p.readyIn.Round(10*time.Millisecond))

	tenants, err := capture(ctx, kube, o.tenants)
	if err != nil {
		return err
	}
	if o.diagnose != "" {
		tl, err := readTimeline(ctx, plinth, kube)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(o.diagnose, "timeline.plinth.txt"), []byte(tl.String()), 0o644); err != nil {
			return err
		}
	}
	select {
	case <-time.After(o.settle):
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	controllerBefore, _ := benchharness.ReadUsage(platform.ControllerPID())
	beforeFloor := snap()
	floorStart := time.Now()
	floorIn, err := floorRun(ctx, kube, tenants, o.clients)
	if err != nil {
		return err
	}
	afterFloor := snap()
	controllerAfter, _ := benchharness.ReadUsage(platform.ControllerPID())
	fmt.Fprintf(os.Stderr, "Floor: %d tenants applied, all Deployments Available in %s\n", len(tenants), floorIn.Round(10*time.Millisecond))

	if o.diagnose != "" {
		list, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: floorTenantLabel})
		if err != nil {
			return err
		}
		// Object times are whole seconds: start from the second the first apply was in.
		tl := benchfloor.DeploymentTimeline(list.Items, floorStart.Truncate(time.Second))
		if err := os.WriteFile(filepath.Join(o.diagnose, "timeline.floor.txt"), []byte(tl), 0o644); err != nil {
			return err
		}
		if err := writeDiagnosis(ctx, platform, o.diagnose, beforePlinth, afterPlinth, beforeFloor, afterFloor); err != nil {
			return err
		}
		events, err := kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if err := eventReasons(events.Items).WriteFile(filepath.Join(o.diagnose, "events.txt")); err != nil {
			return err
		}
	}
	ratio := p.readyIn.Seconds() / floorIn.Seconds()
	fmt.Printf("tenants=%d nodes=%d clients=%d created_in=%s plinth_ready_in=%s floor_ready_in=%s ratio=%.2f controller_cpu=%.1fs controller_peak_rss=%.0fMiB controller_cpu_during_floor=%.1fs\n",
		o.tenants, o.nodes, o.clients, p.createdIn.Round(10*time.Millisecond), p.readyIn.Round(10*time.Millisecond), floorIn.Round(10*time.Millisecond),
		ratio, p.controller.CPUSeconds, p.controller.PeakRSSMiB(), controllerAfter.CPUSeconds-controllerBefore.CPUSeconds)
	fmt.Println()
	fmt.Println("| N | Plinth (all Ready) | floor (all Available) | Plinth / floor | controller CPU | controller peak RSS |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	fmt.Printf("| %d | %.1f s | %.1f s | %.2f× | %.1f s | %.0f MiB |\n", o.tenants, p.readyIn.Seconds(), floorIn.Seconds(), ratio,
		p.controller.CPUSeconds, p.controller.PeakRSSMiB())
	return nil
}

// waitProvider waits until plinth-controller has published the kubernetes ComputeProvider as
// Ready: admission refuses TenantComputes of a provider that is not.
func waitProvider(ctx context.Context, plinth clientset.Interface) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cp, err := plinth.ComputeV1alpha1().ComputeProviders().Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%+v", cp.Status.Conditions)
		return meta.IsStatusConditionTrue(cp.Status.Conditions, v1alpha1.ConditionProviderReady), nil
	})
	if err != nil {
		return fmt.Errorf("the kubernetes ComputeProvider is not Ready (%s): %w", last, err)
	}
	return nil
}

// tenant is the i-th benchmark TenantCompute.
func tenant(i int) *v1alpha1.TenantCompute {
	name := fmt.Sprintf("bench-%04d", i)
	return &v1alpha1.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.TenantComputeSpec{
			TenantID:     name,
			ProviderType: "kubernetes",
			Containers: []v1alpha1.ContainerSpec{{
				Name: "web", Image: "registry.example.com/bench:1",
				Ports: []v1alpha1.PortMapping{{ContainerPort: 8080, Protocol: v1alpha1.ProtocolTCP, Name: "http"}},
				HealthCheck: &v1alpha1.HealthCheckConfig{Type: v1alpha1.HealthCheckHTTP, HTTPPath: "/healthz", Port: 8080,
					IntervalSeconds: 10, TimeoutSeconds: 2},
			}},
			Resources: v1alpha1.ResourceRequirements{CPU: 128, Memory: 128},
		},
	}
}

// plinthRun creates the TenantComputes in team-a and waits until all are Ready. With
// --diagnose it starts the CPU profiles once the creates are done; profiled reports their end.
func plinthRun(ctx context.Context, platform *localplatform.Platform, plinth clientset.Interface, o options) (_ plinthResult, profiled <-chan error, _ error) {
	client := plinth.ComputeV1alpha1().TenantComputes("team-a")
	before, err := benchharness.ReadUsage(platform.ControllerPID())
	if err != nil {
		return plinthResult{}, nil, err
	}
	start := time.Now()
	err = benchharness.Parallel(ctx, o.tenants, o.clients, func(ctx context.Context, i int) error {
		_, err := client.Create(ctx, tenant(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return plinthResult{}, nil, err
	}
	var res plinthResult
	res.createdIn = time.Since(start)
	profiles := make(chan error, 1)
	if o.diagnose != "" {
		go func() { profiles <- platform.ProfileCPU(ctx, o.diagnose, 30*time.Second) }()
	} else {
		profiles <- nil
	}
	src := benchharness.SourceOf(client, "")
	err = benchharness.WaitReady(ctx, src, o.tenants, func(tc *v1alpha1.TenantCompute) bool {
		return tc.Status.Phase == v1alpha1.PhaseReady && meta.IsStatusConditionTrue(tc.Status.Conditions, v1alpha1.ConditionReady)
	})
	if err != nil {
		return plinthResult{}, nil, fmt.Errorf("TenantComputes: %w after %s", err, time.Since(start).Round(time.Second))
	}
	res.readyIn = time.Since(start)
	after, err := benchharness.ReadUsage(platform.ControllerPID())
	if err != nil {
		return plinthResult{}, nil, err
	}
	res.controller = benchharness.Usage{CPUSeconds: after.CPUSeconds - before.CPUSeconds, PeakRSSKiB: after.PeakRSSKiB}
	return res, profiles, nil
}

// capture lists what the provider made (everything with its tenant-id label) and turns it
// into the floor's tenants; there must be one per TenantCompute.
func capture(ctx context.Context, kube kubernetes.Interface, n int) ([]floorTenant, error) {
	opts := metav1.ListOptions{LabelSelector: v1alpha1.LabelTenantID}
	namespaces, err := kube.CoreV1().Namespaces().List(ctx, opts)
	if err != nil {
		return nil, err
	}
	deployments, err := kube.AppsV1().Deployments("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	services, err := kube.CoreV1().Services("").List(ctx, opts)
	if err != nil {
		return nil, err
	}
	tenants, err := floorTenants(captured{namespaces: namespaces.Items, deployments: deployments.Items, services: services.Items})
	if err != nil {
		return nil, err
	}
	if len(tenants) != n || len(deployments.Items) != n || len(services.Items) != n {
		return nil, fmt.Errorf("the provider made %d namespaces, %d Deployments and %d Services for %d TenantComputes",
			len(namespaces.Items), len(deployments.Items), len(services.Items), n)
	}
	return tenants, nil
}

// floorRun applies the floor's tenants, each tenant's objects in order by one client, and
// waits until every floor Deployment is Available.
func floorRun(ctx context.Context, kube kubernetes.Interface, tenants []floorTenant, clients int) (time.Duration, error) {
	start := time.Now()
	groups := make([][]benchfloor.Object, len(tenants))
	for i, t := range tenants {
		groups[i] = t.objects
	}
	if err := benchfloor.ApplyAll(ctx, kube, groups, clients); err != nil {
		return 0, err
	}
	deployments := kube.AppsV1().Deployments("")
	src := benchharness.SourceOf(deployments, floorTenantLabel)
	if err := benchharness.WaitReady(ctx, src, len(tenants), benchfloor.Available); err != nil {
		return 0, fmt.Errorf("floor Deployments: %w after %s", err, time.Since(start).Round(time.Second))
	}
	return time.Since(start), nil
}

// snapshot is what --diagnose reads before and after each run.
type snapshot struct {
	at       time.Time
	requests benchharness.Counts // kube-apiserver's, by resource and verb
	cpu      benchharness.Counts // seconds, by process
}

// takeSnapshot reads kube-apiserver's request counts and the CPU time of the platform's
// processes and this one; what it cannot read it reports and leaves out.
func takeSnapshot(ctx context.Context, cfg *rest.Config) snapshot {
	s := snapshot{at: time.Now()}
	var err error
	if s.cpu, err = benchharness.ProcessCPU(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-compute: CPU times:", err)
	}
	if s.requests, err = benchharness.APIRequests(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-compute: kube-apiserver request counts:", err)
	}
	return s
}

// writeDiagnosis writes kube-apiserver's requests during each run, where each run spent the
// machine's CPU, and plinth-controller's reconciles so far into dir, beside the CPU profiles.
func writeDiagnosis(ctx context.Context, platform *localplatform.Platform, dir string, beforePlinth, afterPlinth, beforeFloor, afterFloor snapshot) error {
	return benchfloor.Diagnosis{
		PlinthRequests: afterPlinth.requests.Sub(beforePlinth.requests),
		FloorRequests:  afterFloor.requests.Sub(beforeFloor.requests),
		CPU: benchfloor.CPUReport(afterPlinth.cpu.Sub(beforePlinth.cpu), afterPlinth.at.Sub(beforePlinth.at),
			afterFloor.cpu.Sub(beforeFloor.cpu), afterFloor.at.Sub(beforeFloor.at), goruntime.NumCPU()),
		ControllerURL: platform.ControllerURL(),
	}.Write(ctx, dir)
}

// eventReasons counts events by the run whose namespaces they are in (tenant-* for Plinth's,
// floor-* for the floor's, else "other"), the kind of object and the reason: what Kubernetes'
// controllers went through in each run.
func eventReasons(events []corev1.Event) benchharness.Counts {
	out := benchharness.Counts{}
	for _, e := range events {
		run := "other"
		switch {
		case strings.HasPrefix(e.Namespace, tenantNamespacePrefix):
			run = "plinth"
		case strings.HasPrefix(e.Namespace, floorNamespacePrefix):
			run = "floor"
		}
		n := e.Count
		if e.Series != nil && e.Series.Count > n {
			n = e.Series.Count
		}
		out[run+" "+e.InvolvedObject.Kind+" "+e.Reason] += float64(max(n, 1))
	}
	return out
}
