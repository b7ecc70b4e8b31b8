// Command bench-packs measures the delivery of infrastructure packs against the Helm SDK's own
// install of the same chart, and a drift pass over 1000 delivered objects, on one fresh local
// platform in one run (`make bench-packs`).
//
// The platform's kube-apiserver is registered a second time, as Cluster bench with GitOps
// engine Kubectl (Cluster local uses Flux), so that plinth-controller applies a pack's objects
// itself. Each round pushes a new version of a chart of 200 objects (50 ConfigMaps, Secrets,
// Services and Deployments; built with the Helm SDK) to Cluster local's OCI registry, and
// then, one side at a time, in alternating order (the pack first in even rounds):
//
//   - the pack: an InfrastructureClusterPack of that chart version, targeting Cluster bench,
//     into its own namespace. The time runs from the create until the InfrastructurePackInstance
//     {pack}-bench is Ready: plinth-controller pulled and rendered the chart (Helm SDK),
//     kept the revision, created the instance, created the namespace and applied the 200
//     objects with server-side apply. When the pack was rendered and the instance created are
//     noted too, and, after Ready and not counted, when the controller's first drift pass
//     reported the objects clean.
//   - Helm: `helm install` of the same chart version through the Helm SDK in this process
//     (settings, action.Configuration, the registry client pulling the chart, action.Install
//     with Wait false and --create-namespace) against the same kube-apiserver, into another
//     namespace. The time runs from the setup until Install returns the deployed release.
//
// Pulling the chart is counted on both sides: each round's version is new to both. Both sides'
// Kubernetes clients have the same client-side rate limits (plinth-controller's for target
// clusters, delivery.TargetQPS and TargetBurst; --helm-qps and --helm-burst change Helm's).
// Each round's pack, release and namespaces are deleted, and gone, before the next.
//
// Then a pack of the same chart with count 250 (1000 objects) is delivered to Cluster bench,
// and this process runs drift.Checker.Check over exactly the objects plinth-controller applied
// (read back from the kept revision as the controller does), measuring its own CPU time
// (getrusage) and the wall time of a first pass (a new Checker: a server-side apply dry-run per
// object) and of a steady pass (baselines kept: one list per kind), --drift-passes times each.
// plinth-controller runs with --pack-drift-interval=1h so that its own periodic passes stay
// out of the way; its first pass right after the delivery is measured from outside as well.
//
// It prints the medians, pack / Helm (target ≤ 1.0), the phases, CPU per process and requests
// per side, and the drift figures (target < 1 s of CPU). See docs/benchmarks.md,
// "Infrastructure packs".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/localplatform"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
)

const (
	// benchCluster is the Cluster with engine Kubectl the packs target: the local
	// kube-apiserver again.
	benchCluster = "bench"
	// packNamespace holds the benchmark's InfrastructureClusterPacks.
	packNamespace = "bench-packs"
	// driftCount is the chart's count for the drift pack: 1000 objects.
	driftCount = 250
)

// controllerDefaults are the plinth-controller flags the benchmark always sets: no periodic
// drift pass during the measurements (the first pass after each delivery still runs).
var controllerDefaults = []string{"--pack-drift-interval=1h"}

// options are the command's flags.
type options struct {
	rounds, warmup, driftPasses int
	timeout, roundTimeout       time.Duration
	settle                      time.Duration
	helmQPS                     float64
	helmBurst                   int
	binDir                      string
	controllerArgs              []string
	// cpuProfile, when set, is where a CPU profile of this process over the first drift passes
	// goes.
	cpuProfile string
}

func main() {
	var o options
	var controllerArgs string
	flag.IntVar(&o.rounds, "rounds", 5, "measured rounds; each has one pack delivery and one helm install")
	flag.IntVar(&o.warmup, "warmup", 1, "rounds run first and not counted (the first pull, render and discovery)")
	flag.IntVar(&o.driftPasses, "drift-passes", 3, "drift passes of each kind (first, steady) over the 1000 objects; 0 skips the drift figure")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.DurationVar(&o.roundTimeout, "round-timeout", 4*time.Minute, "give up on one delivery after this long")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "pause before each delivery, for the platform to finish what the one before started")
	flag.Float64Var(&o.helmQPS, "helm-qps", delivery.TargetQPS, "requests per second of Helm's Kubernetes client (by default plinth-controller's target clients')")
	flag.IntVar(&o.helmBurst, "helm-burst", delivery.TargetBurst, "burst of Helm's Kubernetes client (by default plinth-controller's target clients')")
	flag.StringVar(&o.binDir, "bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries")
	flag.StringVar(&controllerArgs, "controller-args", "", "extra plinth-controller flags, space-separated")
	flag.StringVar(&o.cpuProfile, "drift-cpuprofile", "", "file for a CPU profile of this process over the first drift passes (go tool pprof reads it)")
	flag.Parse()
	o.controllerArgs = append(append([]string{}, controllerDefaults...), strings.Fields(controllerArgs)...)
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-packs:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-packs:", err)
		os.Exit(1)
	}
}

// validate refuses flags that cannot make a run.
func (o options) validate() error {
	switch {
	case o.rounds < 1:
		return fmt.Errorf("--rounds must be at least 1, not %d", o.rounds)
	case o.warmup < 0:
		return fmt.Errorf("--warmup must not be negative, not %d", o.warmup)
	case o.driftPasses < 0:
		return fmt.Errorf("--drift-passes must not be negative, not %d", o.driftPasses)
	case o.helmQPS <= 0 || o.helmBurst < 1:
		return fmt.Errorf("--helm-qps must be positive and --helm-burst at least 1")
	case o.roundTimeout <= 0 || o.timeout <= 0:
		return fmt.Errorf("--timeout and --round-timeout must be positive")
	}
	return nil
}

// env is what both sides use.
type env struct {
	o        options
	platform *localplatform.Platform
	cfg      *rest.Config
	plinth   clientset.Interface
	kube     kubernetes.Interface
	// registry is Cluster local's registry endpoint, localhost:<port>, where the charts go.
	registry string
	// helmDir holds Helm's files: the discovery cache and one directory per install.
	helmDir string
}

func run(o options) error {
	ctx, cancel := benchharness.Context(o.timeout)
	defer cancel()
	platform, stop, err := benchharness.StartPlatform(ctx, benchharness.PlatformOptions{BinDir: o.binDir, Nodes: 1, ControllerArgs: o.controllerArgs})
	if err != nil {
		return err
	}
	defer stop()
	clients, err := benchharness.AdminClients(platform)
	if err != nil {
		return err
	}
	cfg, plinth, kube := clients.Config, clients.Plinth, clients.Kube
	helmDir, err := os.MkdirTemp("", "plinth-bench-helm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(helmDir)
	e := &env{o: o, platform: platform, cfg: cfg, plinth: plinth, kube: kube, helmDir: helmDir}
	if err := e.waitRegistry(ctx); err != nil {
		return err
	}
	if err := e.registerBenchCluster(ctx); err != nil {
		return err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: packNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Cluster %s (engine Kubectl) is reachable; charts go to %s\n", benchCluster, chartURL(e.registry))

	var packRounds []packRound
	var helmRounds []helmRound
	var packUsage, helmUsage usage
	for r := 0; r < o.warmup+o.rounds; r++ {
		measured := r >= o.warmup
		version := fmt.Sprintf("1.0.%d", r)
		if err := pushChart(e.registry, version); err != nil {
			return err
		}
		sides := []func() error{
			func() error {
				res, err := e.packRound(ctx, r, version)
				if err != nil {
					return err
				}
				if measured {
					packRounds = append(packRounds, res)
					packUsage.add(res.window)
				}
				fmt.Fprintf(os.Stderr, "round %d pack: rendered %s, instance %s, Ready %s; first drift pass %s after Ready%s\n",
					r, ms(res.rendered), ms(res.instance), ms(res.ready), ms(res.driftPass), warmupNote(measured))
				return nil
			},
			func() error {
				res, err := e.helmRound(ctx, r, version)
				if err != nil {
					return err
				}
				if measured {
					helmRounds = append(helmRounds, res)
					helmUsage.add(res.window)
				}
				fmt.Fprintf(os.Stderr, "round %d helm: pulled %s, installed %s%s\n", r, ms(res.pulled), ms(res.installed), warmupNote(measured))
				return nil
			},
		}
		if r%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			if err := e.pause(ctx); err != nil {
				return err
			}
			if err := side(); err != nil {
				return fmt.Errorf("round %d: %w", r, err)
			}
		}
	}
	controller, err := benchharness.ReadUsage(platform.ControllerPID())
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kube-apiserver's requests over the measured pack rounds:\n%sand over the Helm rounds:\n%s", packUsage.requests, helmUsage.requests)
	s := summarize(packRounds, helmRounds)
	fmt.Printf("rounds=%d pack=%s helm=%s ratio=%.2f controller_cpu_pack=%.2fs helm_cpu=%.2fs controller_peak_rss=%.0fMiB\n",
		s.rounds, ms(s.pack), ms(s.helm), s.ratio, packUsage.controllerCPU, helmUsage.cpu["self"], controller.PeakRSSMiB())
	fmt.Println()
	fmt.Print(table(s, packUsage, helmUsage, controller.PeakRSSMiB()))
	fmt.Println()
	fmt.Print(cpuTable(packUsage, helmUsage))
	fmt.Println()
	fmt.Print(requestTable(packUsage, helmUsage, s.rounds))

	if o.driftPasses == 0 {
		return nil
	}
	if err := e.pause(ctx); err != nil {
		return err
	}
	d, err := e.driftPhase(ctx)
	if err != nil {
		return fmt.Errorf("drift: %w", err)
	}
	fmt.Println()
	fmt.Printf("drift objects=%d first_cpu=%s first_wall=%s steady_cpu=%s steady_wall=%s\n", d.objects,
		ms(benchharness.MedianOf(d.first, func(p passResult) time.Duration { return p.cpu })), ms(benchharness.MedianOf(d.first, func(p passResult) time.Duration { return p.wall })),
		ms(benchharness.MedianOf(d.steady, func(p passResult) time.Duration { return p.cpu })), ms(benchharness.MedianOf(d.steady, func(p passResult) time.Duration { return p.wall })))
	fmt.Println()
	fmt.Print(driftTable(d))
	return nil
}

func warmupNote(measured bool) string {
	if measured {
		return ""
	}
	return " (warm-up, not counted)"
}

// pause waits the settle time.
func (e *env) pause(ctx context.Context) error {
	select {
	case <-time.After(e.o.settle):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// waitRegistry waits until Cluster local reports its registry endpoint and the OCIRegistry is
// Running: the charts are pushed there.
func (e *env) waitRegistry(ctx context.Context) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		cl, err := e.plinth.PlatformV1alpha1().Clusters().Get(ctx, localplatform.LocalCluster, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("Cluster: %+v", cl.Status.GitOps)
		if cl.Status.GitOps == nil || cl.Status.GitOps.RegistryEndpoint == "" || cl.Status.GitOps.Registry == "" {
			return false, nil
		}
		// status.gitOps.registry is <namespace>/<name>.
		namespace, name, ok := strings.Cut(cl.Status.GitOps.Registry, "/")
		if !ok {
			return false, fmt.Errorf("Cluster %s's registry is %q, not <namespace>/<name>", localplatform.LocalCluster, cl.Status.GitOps.Registry)
		}
		reg, err := e.plinth.GitopsV1alpha1().OCIRegistries(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("OCIRegistry: %+v", reg.Status)
		e.registry = cl.Status.GitOps.RegistryEndpoint
		return reg.Status.Phase == gitopsv1alpha1.RegistryPhaseRunning, nil
	})
	if err != nil {
		return fmt.Errorf("Cluster %s's registry is not running (%s): %w", localplatform.LocalCluster, last, err)
	}
	return nil
}

// registerBenchCluster registers the local kube-apiserver as Cluster bench with engine
// Kubectl, with the admin identity that Helm's side uses too, and waits until it is
// reachable with its Kubernetes version known (a pack renders for that version).
func (e *env) registerBenchCluster(ctx context.Context) error {
	kubeconfig, err := e.platform.AdminTargetKubeconfig()
	if err != nil {
		return err
	}
	cl := &platformv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: benchCluster},
		Spec: platformv1alpha1.ClusterSpec{
			Description: "The local kube-apiserver again, delivered to by plinth-controller itself (benchmark).",
			Kubeconfig:  string(kubeconfig),
			GitOps:      platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineKubectl},
		},
	}
	clusters := e.plinth.PlatformV1alpha1().Clusters()
	if _, err := clusters.Create(ctx, cl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering Cluster %s: %w", benchCluster, err)
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := clusters.Get(ctx, benchCluster, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%s %+v", got.Status.KubernetesVersion, got.Status.Conditions)
		return meta.IsStatusConditionTrue(got.Status.Conditions, platformv1alpha1.ConditionReachable) && got.Status.KubernetesVersion != "", nil
	})
	if err != nil {
		return fmt.Errorf("Cluster %s is not reachable (%s): %w", benchCluster, last, err)
	}
	return nil
}

// deleteNamespace deletes a namespace and waits until it is gone, with everything in it.
func (e *env) deleteNamespace(ctx context.Context, name string) error {
	namespaces := e.kube.CoreV1().Namespaces()
	if err := namespaces.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := benchharness.Gone(ctx, 2*time.Minute, func(ctx context.Context) error {
		_, err := namespaces.Get(ctx, name, metav1.GetOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	return nil
}

// countObjects checks that namespace holds want objects of each of the chart's kinds labelled
// with release as their instance: what a delivery must have left there.
func (e *env) countObjects(ctx context.Context, namespace, release string, want int) error {
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	counts := map[string]int{}
	cms, err := e.kube.CoreV1().ConfigMaps(namespace).List(ctx, opts)
	if err != nil {
		return err
	}
	counts["ConfigMaps"] = len(cms.Items)
	secrets, err := e.kube.CoreV1().Secrets(namespace).List(ctx, opts)
	if err != nil {
		return err
	}
	counts["Secrets"] = len(secrets.Items)
	services, err := e.kube.CoreV1().Services(namespace).List(ctx, opts)
	if err != nil {
		return err
	}
	counts["Services"] = len(services.Items)
	deployments, err := e.kube.AppsV1().Deployments(namespace).List(ctx, opts)
	if err != nil {
		return err
	}
	counts["Deployments"] = len(deployments.Items)
	for kind, n := range counts {
		if n != want {
			return fmt.Errorf("namespace %s holds %d %s of %s, want %d (%v)", namespace, n, kind, release, want, counts)
		}
	}
	return nil
}

// instanceState describes a pack and its instance on Cluster bench for an error: their
// conditions and the instance's drift summary, which say why a delivery is not Ready.
func (e *env) instanceState(ctx context.Context, pack string) string {
	var b strings.Builder
	if p, err := e.plinth.InfrastructureV1alpha1().InfrastructureClusterPacks(packNamespace).Get(ctx, pack, metav1.GetOptions{}); err != nil {
		fmt.Fprintf(&b, "pack: %v; ", err)
	} else {
		fmt.Fprintf(&b, "pack revision %d, conditions %s; ", p.Status.Revision, conditions(p.Status.Conditions))
	}
	inst, err := e.plinth.InfrastructureV1alpha1().InfrastructurePackInstances(infrav1alpha1.InstanceNamespace(benchCluster)).
		Get(ctx, infrav1alpha1.InstanceName(pack, benchCluster), metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(&b, "instance: %v", err)
	} else {
		fmt.Fprintf(&b, "instance revision %d, %d deployed resources, conditions %s", inst.Status.Revision, len(inst.Status.DeployedResources),
			conditions(inst.Status.Conditions))
		if inst.Status.DriftSummary != "" {
			fmt.Fprintf(&b, ", drift %q", inst.Status.DriftSummary)
		}
	}
	return b.String()
}

// conditions lists conditions as Type=Status (Reason: message).
func conditions(cs []metav1.Condition) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}
