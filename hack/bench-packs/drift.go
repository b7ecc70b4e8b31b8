package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/internal/benchharness"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/packinstance"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	kubectldelivery "github.com/plinth-dev/plinth/pkg/gitops/delivery/kubectl"
	"github.com/plinth-dev/plinth/pkg/packs/drift"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

// driftResult is the drift figure: the delivery of the 1000-object pack, and the passes this
// process ran over what it delivered.
type driftResult struct {
	objects  int
	delivery packRound
	// first are passes of a new Checker each (no baselines: a dry-run per object); steady are
	// passes of one Checker after a first pass of its own (its baselines kept).
	first, steady []passResult
}

// passResult is one drift.Checker.Check.
type passResult struct {
	// wall is the pass's duration; cpu this process's CPU time over it (getrusage: user and
	// system), which is the checker's.
	wall, cpu time.Duration
	// requests and dryRuns are what the pass sent to kube-apiserver.
	requests, dryRuns int64
	// apiserverCPU is kube-apiserver's CPU seconds over the pass (from /proc).
	apiserverCPU float64
}

// driftPhase delivers a pack of 1000 objects to Cluster bench and runs the drift passes over
// them.
func (e *env) driftPhase(ctx context.Context) (driftResult, error) {
	const name, namespace, version = "drift", "bench-drift", "2.0.0"
	if err := pushChart(e.registry, version); err != nil {
		return driftResult{}, err
	}
	d := driftResult{objects: driftCount * kindsPerCopy}
	deliverCtx, cancel := context.WithTimeout(ctx, e.o.roundTimeout)
	defer cancel()
	var err error
	if d.delivery, err = e.deliverPack(deliverCtx, name, namespace, version, driftCount); err != nil {
		return driftResult{}, err
	}
	if err := e.countObjects(ctx, namespace, name, driftCount); err != nil {
		return driftResult{}, err
	}
	fmt.Fprintf(os.Stderr, "drift pack: %d objects Ready %s after the create; the controller's first drift pass took %s and %.2f s of its CPU\n",
		d.objects, ms(d.delivery.ready), ms(d.delivery.driftPass), d.delivery.driftPassControllerCPU)
	fmt.Fprintf(os.Stderr, "over that pass, plinth-controller's reconciles:\n%skube-apiserver's requests:\n%s",
		d.delivery.driftPassReconciles, d.delivery.driftPassRequests)

	clients, err := newCountingClients(e.cfg)
	if err != nil {
		return driftResult{}, err
	}
	expected, err := e.appliedObjects(ctx, name, clients)
	if err != nil {
		return driftResult{}, err
	}
	if len(expected) != d.objects {
		return driftResult{}, fmt.Errorf("the pack applied %d objects, want %d", len(expected), d.objects)
	}
	stopProfile, err := startCPUProfile(e.o.cpuProfile)
	if err != nil {
		return driftResult{}, err
	}
	for i := 0; i < e.o.driftPasses; i++ {
		p, err := clients.pass(ctx, drift.NewChecker(clients.dyn, clients.mapper, packinstance.FieldManager), expected)
		if err != nil {
			stopProfile()
			return driftResult{}, fmt.Errorf("first pass %d: %w", i, err)
		}
		fmt.Fprintf(os.Stderr, "drift first pass %d: %s wall, %s CPU, %d requests, %d dry-runs\n", i, ms(p.wall), ms(p.cpu), p.requests, p.dryRuns)
		d.first = append(d.first, p)
	}
	stopProfile()
	steady := drift.NewChecker(clients.dyn, clients.mapper, packinstance.FieldManager)
	if _, err := clients.pass(ctx, steady, expected); err != nil {
		return driftResult{}, fmt.Errorf("the steady Checker's first pass: %w", err)
	}
	for i := 0; i < e.o.driftPasses; i++ {
		p, err := clients.pass(ctx, steady, expected)
		if err != nil {
			return driftResult{}, fmt.Errorf("steady pass %d: %w", i, err)
		}
		if p.dryRuns != 0 {
			return driftResult{}, fmt.Errorf("steady pass %d sent %d dry-runs: the baselines did not hold", i, p.dryRuns)
		}
		fmt.Fprintf(os.Stderr, "drift steady pass %d: %s wall, %s CPU, %d requests\n", i, ms(p.wall), ms(p.cpu), p.requests)
		d.steady = append(d.steady, p)
	}
	return d, nil
}

// appliedObjects are the objects plinth-controller applied for the pack's instance on Cluster
// bench, as its drift pass compares them: the instance's revision read back from the kept
// revisions, rendered for the cluster's version, placed in the pack's namespace and labelled
// as the Kubectl engine applies them (what packinstance's kubectlArtifact and
// Engine.Applied do).
func (e *env) appliedObjects(ctx context.Context, pack string, clients *countingClients) ([]*unstructured.Unstructured, error) {
	p, err := e.plinth.InfrastructureV1alpha1().InfrastructureClusterPacks(packNamespace).Get(ctx, pack, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	inst, err := e.plinth.InfrastructureV1alpha1().InfrastructurePackInstances(infrav1alpha1.InstanceNamespace(benchCluster)).
		Get(ctx, infrav1alpha1.InstanceName(pack, benchCluster), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cluster, err := e.plinth.PlatformV1alpha1().Clusters().Get(ctx, benchCluster, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	rev, err := revisions.NewStore(e.kube).Get(ctx, packNamespace, pack, inst.Status.Revision)
	if err != nil {
		return nil, err
	}
	objs, err := packinstance.Place(packinstance.ObjectsFor(rev, cluster), p.Spec.TargetNamespace, clients.mapper)
	if err != nil {
		return nil, err
	}
	art := delivery.Artifact{Namespace: inst.Namespace, Name: inst.Name, Tag: rev.Version, Digest: rev.Digest, Objects: objs}
	target := delivery.Target{Spec: gitopsv1alpha1.ArtifactTarget{Cluster: benchCluster, Prune: ptr.To(true)}, Cluster: cluster}
	return kubectldelivery.NewFor(clients, packinstance.FieldManager, "InfrastructurePackInstance").Applied(ctx, art, target)
}

// countingClients are a dynamic client and a REST mapper of the local kube-apiserver built as
// plinth-controller builds those of a target Cluster (delivery.ClusterClients: its rate
// limits, a memory-cached discovery mapper), counting the requests and the server-side apply
// dry-runs sent through them.
type countingClients struct {
	dyn               dynamic.Interface
	mapper            meta.RESTMapper
	requests, dryRuns atomic.Int64
}

var _ delivery.Clients = &countingClients{}

func newCountingClients(cfg *rest.Config) (*countingClients, error) {
	c := &countingClients{}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = delivery.TargetQPS, delivery.TargetBurst
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.count(r)
			return rt.RoundTrip(r)
		})
	})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.dyn, c.mapper = dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return c, nil
}

// count counts a request, and a dry-run when it is one.
func (c *countingClients) count(r *http.Request) {
	c.requests.Add(1)
	if r.Method == http.MethodPatch && r.URL.Query().Get("dryRun") == metav1.DryRunAll {
		c.dryRuns.Add(1)
	}
}

// For returns the clients whatever the cluster: there is one.
func (c *countingClients) For(context.Context, string) (dynamic.Interface, meta.RESTMapper, error) {
	return c.dyn, c.mapper, nil
}

// pass runs one Check of expected and measures it; the objects must be found clean.
func (c *countingClients) pass(ctx context.Context, checker *drift.Checker, expected []*unstructured.Unstructured) (passResult, error) {
	procBefore, err := benchharness.ProcessCPU()
	if err != nil {
		return passResult{}, err
	}
	requests, dryRuns := c.requests.Load(), c.dryRuns.Load()
	cpuBefore := cpuTime()
	start := time.Now()
	report, err := checker.Check(ctx, expected)
	wall := time.Since(start)
	cpu := cpuTime() - cpuBefore
	if err != nil {
		return passResult{}, err
	}
	procAfter, err := benchharness.ProcessCPU()
	if err != nil {
		return passResult{}, err
	}
	if report.Checked != len(expected) || len(report.Drifted) != 0 {
		return passResult{}, fmt.Errorf("checked %d of %d objects: %s", report.Checked, len(expected), report.Summary())
	}
	return passResult{wall: wall, cpu: cpu, requests: c.requests.Load() - requests, dryRuns: c.dryRuns.Load() - dryRuns,
		apiserverCPU: procAfter.Sub(procBefore)["kube-apiserver"]}, nil
}

// startCPUProfile starts a CPU profile of this process into file, none when file is empty;
// stop ends it.
func startCPUProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// cpuTime is the user and system CPU time this process has used (getrusage).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
