// Command bench-workloads measures the controller end to end against the floor, on one fresh
// local platform (real etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
// nodes, plinth-apiserver, plinth-controller) in one run:
//
//  1. Plinth: N Workloads (one container, a dns resource and a service port each; --minimal:
//     one container only) created in team-a by parallel clients, until all are Ready;
//     plinth-controller's CPU time and peak memory over that time.
//  2. The floor, afterwards: every object Plinth made for them in team-a (whatever the kinds:
//     Deployments, Services, Secrets, and what provisioners made), captured from
//     kube-apiserver, stripped of what the server sets and of owner references, with Plinth's
//     label keys renamed (internal/benchfloor), server-side applied straight to kube-apiserver
//     by as many clients into namespace floor-team-a, until every Deployment is Available.
//
// It prints both times, their ratio, and the writes per Workload of each run: plinth-apiserver's
// (its audit log) and kube-apiserver's (apiserver_request_total) by resource and verb. With
// --diagnose, kube-apiserver also audits Deployment status updates, and a last table says how
// many of them wrote a new status and why the refused ones were refused, in each run.
// `make bench-controller` runs it for N=100 and N=1000; docs/benchmarks.md quotes its tables.
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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/benchfloor"
	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/internal/writecount"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
)

// options are the command's flags.
type options struct {
	workloads, nodes, clients int
	timeout, settle           time.Duration
	binDir, diagnose          string
	minimal, floor            bool
	controllerArgs            []string
}

func main() {
	var o options
	var controllerArgs string
	flag.IntVar(&o.workloads, "workloads", 100, "how many Workloads to create")
	flag.IntVar(&o.nodes, "nodes", 0, "fake nodes; default enough for the pods of both runs")
	flag.IntVar(&o.clients, "clients", 8, "parallel clients of each run")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "give up after this long")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "pause after each run before its writes are read, for the platform to finish what the run started")
	flag.StringVar(&o.binDir, "bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries")
	flag.BoolVar(&o.minimal, "minimal", false, "Workloads with one container only: no resource, no service port")
	flag.BoolVar(&o.floor, "floor", true, "after the Plinth run, apply what Plinth made as the floor and compare")
	flag.StringVar(&o.diagnose, "diagnose", "", "directory for a 30 s CPU profile of kube-apiserver and plinth-apiserver taken after the creates, "+
		"kube-apiserver's requests and the processes' CPU time in each run, when Workloads and floor Deployments reached each stage, "+
		"and kube-apiserver's audit log of Deployment status updates")
	flag.StringVar(&controllerArgs, "controller-args", "", "extra plinth-controller flags, space-separated")
	flag.Parse()
	o.controllerArgs = strings.Fields(controllerArgs)
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-workloads:", err)
		os.Exit(1)
	}
}

// reading is what is read before and after each run.
type reading struct {
	at       time.Time
	requests benchharness.Counts // kube-apiserver's, by resource and verb
	cpu      benchharness.Counts // seconds, by process (--diagnose only)
	audit    writecount.Counts   // plinth-apiserver's writes
	rotated  int                 // rotated audit files
}

func read(ctx context.Context, cfg *rest.Config, platform *localplatform.Platform, withCPU bool) (reading, error) {
	r := reading{at: time.Now()}
	var err error
	if r.requests, err = benchharness.APIRequests(ctx, cfg); err != nil {
		return reading{}, fmt.Errorf("kube-apiserver's request counts: %w", err)
	}
	if r.audit, r.rotated, err = auditWrites(platform.AuditLogPath()); err != nil {
		return reading{}, fmt.Errorf("plinth-apiserver's audit log: %w", err)
	}
	if withCPU {
		if r.cpu, err = benchharness.ProcessCPU(); err != nil {
			return reading{}, fmt.Errorf("CPU times: %w", err)
		}
	}
	return r, nil
}

func run(o options) error {
	if o.nodes == 0 {
		o.nodes = 2*o.workloads/200 + 2 // kwok nodes take 250 pods; both runs' pods stay
	}
	ctx, cancel := benchharness.Context(o.timeout)
	defer cancel()
	var kubeArgs []string
	var kubeAudit string
	if o.diagnose != "" {
		if err := os.MkdirAll(o.diagnose, 0o755); err != nil {
			return err
		}
		var err error
		if kubeArgs, kubeAudit, err = kubeAuditArgs(o.diagnose); err != nil {
			return err
		}
	}
	platform, stop, err := benchharness.StartPlatform(ctx, benchharness.PlatformOptions{BinDir: o.binDir, Nodes: o.nodes,
		ControllerArgs: o.controllerArgs, KubeAPIServerArgs: kubeArgs})
	if err != nil {
		return err
	}
	defer stop()
	clients, err := benchharness.AdminClients(platform)
	if err != nil {
		return err
	}
	cfg, kube, dyn := clients.Config, clients.Kube, clients.Dynamic
	pause := func() error {
		select {
		case <-time.After(o.settle):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}

	beforePlinth, err := read(ctx, cfg, platform, o.diagnose != "")
	if err != nil {
		return err
	}
	p, err := plinthRun(ctx, platform, clientset.NewForConfigOrDie(cfg).ScoreV1b1().Workloads(workloadNamespace), o)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Plinth: %d Workloads created in %s, all Ready in %s\n", o.workloads, p.createdIn.Round(10*time.Millisecond), p.readyIn.Round(10*time.Millisecond))
	if err := pause(); err != nil {
		return err
	}
	afterPlinth, err := read(ctx, cfg, platform, o.diagnose != "")
	if err != nil {
		return err
	}
	line := fmt.Sprintf("workloads=%d minimal=%v nodes=%d clients=%d created_in=%s plinth_ready_in=%s controller_cpu=%.1fs controller_peak_rss=%.0fMiB",
		o.workloads, o.minimal, o.nodes, o.clients, p.createdIn.Round(10*time.Millisecond), p.readyIn.Round(10*time.Millisecond),
		p.controller.CPUSeconds, p.controller.PeakRSSMiB())
	if !o.floor {
		fmt.Println(line)
		return nil
	}

	if o.diagnose != "" {
		tl, err := readTimeline(ctx, clientset.NewForConfigOrDie(cfg), kube)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(o.diagnose, "timeline.plinth.txt"), []byte(tl.String()), 0o644); err != nil {
			return err
		}
	}
	items, err := capture(ctx, kube, dyn, workloadNamespace)
	if err != nil {
		return err
	}
	set, err := toFloor(items)
	if err != nil {
		return err
	}
	if set.kinds["deployments"] != o.workloads {
		return fmt.Errorf("Plinth made %s for %d Workloads: want one Deployment each", set.kindsString(), o.workloads)
	}
	if err := makeFloorNamespace(ctx, kube); err != nil {
		return err
	}
	if err := pause(); err != nil {
		return err
	}
	controllerBefore, err := benchharness.ReadUsage(platform.ControllerPID())
	if err != nil {
		return err
	}
	beforeFloor, err := read(ctx, cfg, platform, o.diagnose != "")
	if err != nil {
		return err
	}
	floorStart := time.Now()
	floorIn, err := floorRun(ctx, kube, set, o.clients)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Floor: %s applied, all Available in %s\n", set.kindsString(), floorIn.Round(10*time.Millisecond))
	if err := pause(); err != nil {
		return err
	}
	afterFloor, err := read(ctx, cfg, platform, o.diagnose != "")
	if err != nil {
		return err
	}
	controllerAfter, err := benchharness.ReadUsage(platform.ControllerPID())
	if err != nil {
		return err
	}
	if afterFloor.rotated > beforePlinth.rotated {
		// auditWrites reads the one rotated file the platform keeps: a second rotation would
		// have removed writes of the run.
		fmt.Fprintln(os.Stderr, "bench-workloads: plinth-apiserver's audit log was rotated during the run: its write counts are short if it was rotated twice")
	}

	ratio := p.readyIn.Seconds() / floorIn.Seconds()
	fmt.Printf("%s floor_ready_in=%s ratio=%.2f controller_cpu_during_floor=%.1fs floor_kinds=%q\n",
		line, floorIn.Round(10*time.Millisecond), ratio, controllerAfter.CPUSeconds-controllerBefore.CPUSeconds, set.kindsString())
	kind := "full"
	if o.minimal {
		kind = "minimal"
	}
	fmt.Println()
	fmt.Println("| N | Workloads | floor objects | Plinth (all Ready) | floor (all Available) | Plinth / floor | controller CPU | controller peak RSS |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	fmt.Printf("| %d | %s | %s | %.1f s | %.1f s | %.2f× | %.1f s | %.0f MiB |\n", o.workloads, kind, set.kindsString(), p.readyIn.Seconds(), floorIn.Seconds(), ratio,
		p.controller.CPUSeconds, p.controller.PeakRSSMiB())
	fmt.Println()
	kubePlinth := afterPlinth.requests.Sub(beforePlinth.requests)
	kubeFloor := afterFloor.requests.Sub(beforeFloor.requests)
	fmt.Print(writesTable(o.workloads, afterPlinth.audit.Sub(beforePlinth.audit), kubeWrites(kubePlinth), kubeWrites(kubeFloor)))

	if o.diagnose != "" {
		list, err := kube.AppsV1().Deployments(floorNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		// Object times are whole seconds: start from the second the first apply was in.
		tl := benchfloor.DeploymentTimeline(list.Items, floorStart.Truncate(time.Second))
		if err := os.WriteFile(filepath.Join(o.diagnose, "timeline.floor.txt"), []byte(tl), 0o644); err != nil {
			return err
		}
		statusWrites, err := writecount.StatusWritesFromAuditLog(kubeAudit, "deployments.apps")
		if err != nil {
			return fmt.Errorf("kube-apiserver's audit log: %w", err)
		}
		fmt.Println()
		fmt.Print(deploymentStatusTable(statusWrites[workloadNamespace], statusWrites[floorNamespace]))
		return writeDiagnosis(ctx, platform, o.diagnose, kubePlinth, kubeFloor, beforePlinth, afterPlinth, beforeFloor, afterFloor)
	}
	return nil
}

// plinthResult is what the Plinth run measured.
type plinthResult struct {
	createdIn, readyIn time.Duration
	controller         benchharness.Usage // CPU over the run; peak RSS at its end
}

// plinthRun creates the Workloads and waits until all are Ready. With --diagnose it takes the
// CPU profiles once the creates are done, and waits for them.
func plinthRun(ctx context.Context, platform *localplatform.Platform, client workloadClient, o options) (plinthResult, error) {
	before, err := benchharness.ReadUsage(platform.ControllerPID())
	if err != nil {
		return plinthResult{}, err
	}
	start := time.Now()
	err = benchharness.Parallel(ctx, o.workloads, o.clients, func(ctx context.Context, i int) error {
		_, err := client.Create(ctx, workload(i, o.minimal), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return plinthResult{}, err
	}
	res := plinthResult{createdIn: time.Since(start)}
	profiled := make(chan error, 1)
	if o.diagnose != "" {
		go func() { profiled <- platform.ProfileCPU(ctx, o.diagnose, 30*time.Second) }()
	} else {
		profiled <- nil
	}
	err = benchharness.WaitReady(ctx, benchharness.SourceOf(client, ""), o.workloads, func(w *v1b1.Workload) bool {
		return meta.IsStatusConditionTrue(w.Status.Conditions, v1b1.ConditionReady)
	})
	if err != nil {
		return plinthResult{}, fmt.Errorf("Workloads: %w after %s", err, time.Since(start).Round(time.Second))
	}
	res.readyIn = time.Since(start)
	after, err := benchharness.ReadUsage(platform.ControllerPID())
	if err != nil {
		return plinthResult{}, err
	}
	res.controller = benchharness.Usage{CPUSeconds: after.CPUSeconds - before.CPUSeconds, PeakRSSKiB: after.PeakRSSKiB}
	return res, <-profiled
}

// workloadClient is the part of the Workloads client the Plinth run uses.
type workloadClient interface {
	benchharness.Lister[*v1b1.WorkloadList]
	Create(ctx context.Context, w *v1b1.Workload, opts metav1.CreateOptions) (*v1b1.Workload, error)
}

// writeDiagnosis writes kube-apiserver's requests (every verb) and the processes' CPU time in
// each run, and plinth-controller's reconciles (count by controller and result, and time by
// controller) into dir, beside the CPU profiles.
func writeDiagnosis(ctx context.Context, platform *localplatform.Platform, dir string, kubePlinth, kubeFloor benchharness.Counts, beforePlinth, afterPlinth, beforeFloor, afterFloor reading) error {
	return benchfloor.Diagnosis{
		PlinthRequests: kubePlinth,
		FloorRequests:  kubeFloor,
		CPU: benchfloor.CPUReport(afterPlinth.cpu.Sub(beforePlinth.cpu), afterPlinth.at.Sub(beforePlinth.at),
			afterFloor.cpu.Sub(beforeFloor.cpu), afterFloor.at.Sub(beforeFloor.at), goruntime.NumCPU()),
		ControllerURL: platform.ControllerURL(),
	}.Write(ctx, dir)
}

// workload is the i-th benchmark Workload.
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
