package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtclient "kubevirt.io/client-go/kubevirt"
	kubevirtv1client "kubevirt.io/client-go/kubevirt/typed/core/v1"

	"github.com/plinth-dev/plinth/internal/localplatform"
	compute "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	infra "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
	"github.com/plinth-dev/plinth/test/faults/check"
	"github.com/plinth-dev/plinth/test/faults/load"
	"github.com/plinth-dev/plinth/test/faults/watch"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// form is how much load, how many rounds and how long a fault test runs.
type form struct {
	name string
	// rounds repeats every fault.
	rounds int
	// workloads, vmsPerFault and services size the load; interval and vmInterval pace it.
	workloads, computes, packs, vmsPerFault, services int
	interval, vmInterval, packInterval                time.Duration
	// before and after are how long the load runs before the SIGKILL and after the first
	// acknowledged write that follows it.
	before, after time.Duration
	// readyBound is the stated bound: every object converges within it of the SIGKILL.
	readyBound time.Duration
	// controllerArgs are plinth-controller's leader election settings.
	controllerArgs []string
}

// shortForm runs in `make test` (about three minutes with the platform's start): a small load
// and every fault once. Its lease is shorter than the default so the leader's faults cost
// seconds, not the default's fifteen.
var shortForm = form{name: "short", rounds: 1, workloads: 6, computes: 3, packs: 2, vmsPerFault: 2, services: 2,
	interval: 100 * time.Millisecond, vmInterval: 300 * time.Millisecond, packInterval: 2 * time.Second,
	before: 3 * time.Second, after: 3 * time.Second, readyBound: 90 * time.Second,
	controllerArgs: []string{"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}}

// longForm runs in `make test-faults`: more load, three rounds, longer load around each fault,
// and plinth-controller's default lease (15 s).
var longForm = form{name: "long", rounds: 3, workloads: 30, computes: 10, packs: 4, vmsPerFault: 6, services: 3,
	interval: 50 * time.Millisecond, vmInterval: 200 * time.Millisecond, packInterval: time.Second,
	before: 10 * time.Second, after: 10 * time.Second, readyBound: 180 * time.Second}

// fault is one process to kill.
type fault struct {
	name string
	// kill finds what to kill when the fault starts (the leader, a replica), kills it with
	// SIGKILL and says what it killed; back returns once it or its successor serves again.
	kill func(ctx context.Context) (killed string, back func(context.Context) error, err error)
	// apiserver: the killed process is a plinth-apiserver, which must never answer 403 while
	// it starts again.
	apiserver bool
	// planned: not a crash but a stop a cluster makes on purpose (a rolling update), which no
	// client may notice.
	planned bool
}

// localFault kills a component of the local platform: component picks it.
func localFault(p *localplatform.Platform, name string, component func(context.Context, *localplatform.Platform) (string, error), registry bool) fault {
	fl := fault{name: name}
	fl.kill = func(ctx context.Context) (string, func(context.Context) error, error) {
		c, err := component(ctx, p)
		if err != nil {
			return "", nil, err
		}
		pid, err := p.KillComponent(c)
		if err != nil {
			return "", nil, err
		}
		back := func(ctx context.Context) error {
			if _, err := p.WaitComponentBack(ctx, c, pid); err != nil {
				return fmt.Errorf("%s (pid %d) did not come back: %w", c, pid, err)
			}
			switch {
			case registry:
				return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
					_, err := artifact.Tags(ctx, p.RegistryEndpoint(), repository)
					return err == nil, nil
				})
			case c == localplatform.ComponentController || c == localplatform.ComponentStandbyController:
				// Over once a live process leads: the restarted one or the standby.
				return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
					_, err := p.LeadingController(ctx)
					return err == nil, nil
				})
			}
			return nil
		}
		return fmt.Sprintf("%s (pid %d)", c, pid), back, nil
	}
	fl.apiserver = name == "plinth-apiserver"
	return fl
}

func fixed(name string) func(context.Context, *localplatform.Platform) (string, error) {
	return func(context.Context, *localplatform.Platform) (string, error) { return name, nil }
}

// localFaults are the components killed in turn. Cluster local's registry runs inside the
// leading plinth-controller (docs/gitops.md), so its fault is the leader's SIGKILL measured
// from the registry's side: it is over when the new leader serves the registry again, with its
// data.
func localFaults(p *localplatform.Platform) []fault {
	return []fault{
		localFault(p, "etcd", fixed(localplatform.ComponentEtcd), false),
		localFault(p, "kube-apiserver", fixed(localplatform.ComponentKubeAPIServer), false),
		localFault(p, "plinth-apiserver", fixed(localplatform.ComponentPlinthAPIServer), false),
		localFault(p, "leading plinth-controller", leader, false),
		localFault(p, "local registry (in the leader)", leader, true),
	}
}

func leader(ctx context.Context, p *localplatform.Platform) (string, error) {
	var name string
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		name, last = p.LeadingController(ctx)
		return last == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("no leading plinth-controller: %v", last)
	}
	return name, nil
}

const (
	ns         = "team-a"
	repository = "faults/load"
	// Packs live in plinth-system and deliver their ConfigMap into faults-packs on Cluster local.
	packNamespace, packTarget = "plinth-system", "faults-packs"
)

// TestFaults: SIGKILL etcd, kube-apiserver, plinth-apiserver, the leading plinth-controller and
// the local registry in turn while a load writes (etcd with fsync); after each, no acknowledged
// write is lost, nothing exists twice, everything is Ready within the stated bound, and a
// resuming watch saw every acknowledged Workload write once. PLINTH_FAULTS=long runs the long
// form; PLINTH_FAULTS_REPORT=<file> also writes the table there.
func TestFaults(t *testing.T) {
	f := shortForm
	if os.Getenv("PLINTH_FAULTS") == "long" {
		f = longForm
	}
	started := time.Now()
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.EtcdUnsafeNoFsync = false
		c.ControllerArgs = append(c.ControllerArgs, f.controllerArgs...)
	})
	ports, err := framework.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StartStandbyController(ports[0]); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s form: platform with a standby plinth-controller up in %s", f.name, time.Since(started).Round(time.Second))
	ctx := context.Background()

	// The load's clients give up on a request after five seconds, so that a request to a dead
	// component counts as failed instead of waiting for it.
	client := func(user string, timeout time.Duration) (*rest.Config, clientset.Interface) {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Timeout = timeout
		return cfg, clientset.NewForConfigOrDie(cfg)
	}
	_, alice := client("alice", 5*time.Second)
	_, carol := client("carol", 5*time.Second)
	_, dana := client("dana", 5*time.Second)
	adminCfg, admin := client("admin", 10*time.Second)
	kube := kubernetes.NewForConfigOrDie(adminCfg)
	kv := kubevirtclient.NewForConfigOrDie(adminCfg).KubevirtV1()
	// The watch's client has no timeout: a timeout would end every watch after it.
	watchCfg, _ := client("admin", 0)

	rec := &load.Recorder{}
	cfg := load.Config{Tenant: alice, Approver: carol, Namespace: ns,
		Workloads: f.workloads, TenantComputes: f.computes, VMs: f.vmsPerFault * len(localFaults(p)) * f.rounds, VMsPerRun: f.vmsPerFault, Services: f.services, Cluster: localplatform.LocalCluster,
		Interval: f.interval, VMInterval: f.vmInterval, RegistryEndpoint: p.RegistryEndpoint(), Repository: repository,
		Admin: dana, Packs: f.packs, PackNamespace: packNamespace, PackTargetNamespace: packTarget, PackInterval: f.packInterval,
		RequestTimeout: 5 * time.Second, Recorder: rec}
	if err := load.Setup(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// The registry takes pushes only with its credential, which plinth-controller creates when
	// it first starts the registry; the load pushes with it, as plinth-controller would.
	var registryErr error
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		cred, err := p.RegistryCredential()
		registryErr = err
		if err == nil {
			registryauth.Local.Set(p.RegistryEndpoint(), cred)
		}
		return err == nil, nil
	}); err != nil {
		t.Fatalf("Cluster local's registry credential: %v", registryErr)
	}
	gen := load.New(cfg)

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watcher := watch.New(watch.Workloads(clientset.NewForConfigOrDie(watchCfg).ScoreV1b1().Workloads(ns)))
	go watcher.Run(watchCtx)
	select {
	case <-watcher.Listed():
	case <-time.After(time.Minute):
		t.Fatal("the watch's first list did not succeed within a minute")
	}

	snap := func(ctx context.Context) (check.Snapshot, error) {
		return snapshot(ctx, admin, kube, kv, p.RegistryEndpoint())
	}
	var rows []Row
	for round := 1; round <= f.rounds; round++ {
		for _, fl := range localFaults(p) {
			row, ok := runFault(t, ctx, f, fl, round, gen, rec, watcher, admin, kv, snap)
			rows = append(rows, row)
			if !ok {
				t.Logf("results so far:\n%s", Table(rows))
				t.FailNow()
			}
		}
	}
	table := Table(rows)
	t.Logf("faults under load, %s form (%d workloads, %d tenant computes, %d packs, %d VMs, pushes every %s, etcd with fsync, Ready bound %s), total %s:\n%s",
		f.name, f.workloads, f.computes, f.packs, cfg.VMs, f.interval, f.readyBound, time.Since(started).Round(time.Second), table)
	if out := os.Getenv("PLINTH_FAULTS_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runFault runs the load, kills the fault's component, waits for it (or its successor) to
// serve, lets the load go on, stops it, and checks. ok is false when the platform did not
// recover, so that later faults would measure nothing.
func runFault(t *testing.T, ctx context.Context, f form, fl fault, round int, gen *load.Generator, rec *load.Recorder,
	watcher *watch.Recorder, admin clientset.Interface, kv kubevirtv1client.KubevirtV1Interface, snap func(context.Context) (check.Snapshot, error)) (Row, bool) {
	t.Helper()
	row := Row{Fault: fl.name, Round: round}
	// The watch's figures and the writes it must have delivered are this fault's alone.
	loadStarted, statsBefore := time.Now(), watcher.Stats()
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() { gen.Run(loadCtx); close(loadDone) }()
	defer func() { stopLoad(); <-loadDone }()
	time.Sleep(f.before)

	kill := time.Now()
	killed, back, err := fl.kill(ctx)
	if err != nil {
		t.Errorf("%s: %v", fl.name, err)
		return row, false
	}
	backCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := back(backCtx); err != nil {
		t.Errorf("%s: %s not serving again: %v", fl.name, killed, err)
		return row, false
	}
	row.Outage = time.Since(kill)
	if err := wait.PollUntilContextCancel(backCtx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		_, ok := rec.FirstAckAfter(kill, "")
		return ok, nil
	}); err != nil {
		t.Errorf("%s: no write was acknowledged within 3 minutes of the SIGKILL", fl.name)
		return row, false
	}
	first, _ := rec.FirstAckAfter(kill, "")
	row.FirstWrite = first.Sub(kill)
	time.Sleep(f.after)
	stopLoad()
	<-loadDone
	loadStopped := time.Now()
	row.Failed, row.Acked = rec.FailedBetween(kill, loadStopped), rec.AckedBetween(kill, loadStopped)
	row.FailedByKind = rec.FailedByKind(kill, loadStopped)
	row.FailedByCode, row.ErrorSpan = rec.FailedByCode(kill, loadStopped), rec.ErrorSpan(kill, loadStopped)
	row.Forbidden = rec.FailedWithCode(kill, loadStopped, http.StatusForbidden)
	// A restarted plinth-apiserver answers relayed requests 503 + Retry-After until it has
	// loaded the front proxy's CA (frontproxy.WithCALoaded), never 403 as system:anonymous.
	// kube-apiserver's own 403s while its RBAC caches fill are kube-apiserver's, and allowed.
	if fl.apiserver && row.Forbidden > 0 {
		t.Errorf("%s: %d requests were answered 403 after the restart", fl.name, row.Forbidden)
	}
	sampled := map[string]bool{}
	for _, fail := range rec.Failures() {
		// One failure per kind, and every 403: a refusal the outage caused reads as final.
		if !fail.At.Before(kill) && !fail.At.After(loadStopped) && (!sampled[fail.Kind] || fail.Code == http.StatusForbidden) {
			sampled[fail.Kind] = true
			t.Logf("%s: a failed %s %s at +%s: %s", fl.name, fail.Verb, fail.Kind, fail.At.Sub(kill).Round(100*time.Millisecond), fail.Err)
		}
	}
	// The approver finishes what the load left pending, as a person would.
	drainCtx, cancelDrain := context.WithDeadline(ctx, kill.Add(f.readyBound))
	defer cancelDrain()
	if err := gen.Drain(drainCtx); err != nil {
		t.Errorf("%s: %v", fl.name, err)
	}
	t.Logf("%s: killed %s", fl.name, killed)

	// Every object converges within the bound, counted from the SIGKILL.
	var vs []check.Violation
	var snapErr error
	converged := wait.PollUntilContextTimeout(ctx, time.Second, time.Until(kill.Add(f.readyBound)), true, func(ctx context.Context) (bool, error) {
		s, err := snap(ctx)
		if snapErr = err; err != nil {
			return false, nil
		}
		vs = check.Check(rec.Latest(), s)
		return len(vs) == 0, nil
	}) == nil
	if converged {
		row.AllReady = time.Since(kill)
	} else {
		t.Errorf("%s: not converged within %s of the SIGKILL (last snapshot error: %v):\n%s", fl.name, f.readyBound, snapErr, violations(vs))
		describe(t, ctx, admin, kv, check.Only(vs, check.NotConverged))
	}
	row.Lost = len(check.Only(vs, check.Lost))
	row.Duplicates = len(check.Only(vs, check.Duplicate, check.Numbering))
	if row.Lost+row.Duplicates > 0 {
		t.Errorf("%s: lost writes or duplicates:\n%s", fl.name, violations(check.Only(vs, check.Lost, check.Duplicate, check.Numbering)))
	}

	// The watch ends where the server is, and delivered every acknowledged Workload write.
	var diff []string
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := admin.ScoreV1b1().Workloads(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		server := map[string]string{}
		for _, w := range list.Items {
			server[w.Namespace+"/"+w.Name] = w.ResourceVersion
		}
		diff = watch.Diff(watcher.State(), server)
		return len(diff) == 0, nil
	}); err != nil {
		t.Errorf("%s: the watch's final state differs from the server's:\n%s", fl.name, strings.Join(diff, "\n"))
	}
	st := watcher.Stats()
	st.Events, st.Resumes, st.Relists, st.Duplicates, st.WatchErrors = st.Events-statsBefore.Events, st.Resumes-statsBefore.Resumes,
		st.Relists-statsBefore.Relists, st.Duplicates-statsBefore.Duplicates, st.WatchErrors-statsBefore.WatchErrors
	row.Resumes, row.Relists, row.DuplicateEvents = st.Resumes, st.Relists, st.Duplicates
	// A write a relist jumped over (after the last event before a 410, up to the list) may
	// legitimately never arrive as an event; any other one must have.
	for _, w := range rec.Writes() {
		if w.Kind == load.KindWorkload && !w.At.Before(loadStarted) && !watcher.Saw(w.Namespace+"/"+w.Name, w.ResourceVersion) &&
			!watcher.Skipped(w.ResourceVersion) {
			row.MissedEvents++
			if row.MissedEvents <= 5 {
				t.Logf("%s: the watch never delivered %s %s/%s at resourceVersion %s (%s at %s)", fl.name, w.Kind, w.Namespace, w.Name,
					w.ResourceVersion, w.Verb, w.At.Format(time.RFC3339Nano))
			}
		}
	}
	if st.Duplicates > 0 {
		t.Errorf("%s: the watch delivered %d events twice or out of order", fl.name, st.Duplicates)
	}
	if row.MissedEvents > 0 {
		t.Errorf("%s: the watch never delivered %d acknowledged Workload writes", fl.name, row.MissedEvents)
	}
	t.Logf("%s: outage %s, %d failed and %d acknowledged requests since the SIGKILL, first write after %s, all Ready after %s; watch %+v",
		fl.name, row.Outage.Round(100*time.Millisecond), row.Failed, row.Acked, row.FirstWrite.Round(100*time.Millisecond), row.AllReady.Round(100*time.Millisecond), st)
	return row, true
}

func violations(vs []check.Violation) string {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = v.String()
	}
	return strings.Join(lines, "\n")
}

// snapshot reads what check.Check needs: the namespace's Workloads with their Deployments,
// ManagedVMs with their create tickets, the VirtualMachines on Cluster local, and the load's
// repository's tags. Without kv (an install that runs no KubeVirt, no packs and no registry
// load) it reads the Workloads and TenantComputes only.
func snapshot(ctx context.Context, admin clientset.Interface, kube kubernetes.Interface, kv kubevirtv1client.KubevirtV1Interface, registry string) (check.Snapshot, error) {
	s := check.Snapshot{Workloads: map[string]check.ObjectState{}, TenantComputes: map[string]check.ObjectState{}, Packs: map[string]check.PackState{}, VMs: map[string]check.VMState{}, RunningPhase: string(gov.VMPhaseRunning),
		RegistryTags: map[string]bool{}}
	wls, err := admin.ScoreV1b1().Workloads(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: v1b1.WorkloadLabel})
	if err != nil {
		return s, err
	}
	byWorkload := map[string][]appsv1.Deployment{}
	for _, d := range deps.Items {
		byWorkload[d.Labels[v1b1.WorkloadLabel]] = append(byWorkload[d.Labels[v1b1.WorkloadLabel]], d)
	}
	for _, w := range wls.Items {
		st := check.ObjectState{Generation: w.Generation, ObservedGeneration: w.Status.ObservedGeneration,
			Ready: meta.IsStatusConditionTrue(w.Status.Conditions, v1b1.ConditionReady)}
		st.Seq, _ = load.ImageSeq(w.Spec.Containers["main"].Image)
		addDeployments(&st, byWorkload[w.Name])
		s.Workloads[ns+"/"+w.Name] = st
	}
	tcs, err := admin.ComputeV1alpha1().TenantComputes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	// A TenantCompute's Deployment lives in its tenant's namespace, labelled with its own.
	tenantDeps, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: compute.LabelTenantComputeName})
	if err != nil {
		return s, err
	}
	byCompute := map[string][]appsv1.Deployment{}
	for _, d := range tenantDeps.Items {
		id := d.Labels[compute.LabelTenantComputeNamespace] + "/" + d.Labels[compute.LabelTenantComputeName]
		byCompute[id] = append(byCompute[id], d)
	}
	for _, tc := range tcs.Items {
		st := check.ObjectState{Generation: tc.Generation, ObservedGeneration: tc.Status.ObservedGeneration, Ready: tc.Status.Phase == compute.PhaseReady}
		if len(tc.Spec.Containers) > 0 {
			st.Seq, _ = load.ImageSeq(tc.Spec.Containers[0].Image)
		}
		addDeployments(&st, byCompute[ns+"/"+tc.Name])
		s.TenantComputes[ns+"/"+tc.Name] = st
	}
	if kv == nil {
		return s, nil
	}
	if err := snapshotPacks(ctx, admin, kube, &s); err != nil {
		return s, err
	}
	vms, err := admin.GovernanceV1alpha1().ManagedVMs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	tickets, err := admin.GovernanceV1alpha1().ApprovalTickets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	createTickets := map[string][]string{}
	for _, tk := range tickets.Items {
		if tk.Spec.Operation == gov.OperationCreate && tk.Spec.TargetRef.Kind == "ManagedVM" {
			createTickets[tk.Spec.TargetRef.Name] = append(createTickets[tk.Spec.TargetRef.Name], tk.Name)
		}
	}
	for _, vm := range vms.Items {
		s.VMs[ns+"/"+vm.Name] = check.VMState{Service: vm.Spec.SystemServiceRef.Name, Instance: vm.Status.Instance,
			Approved: vm.Status.ApprovedRevision > 0, Pending: vm.Status.PendingApproval != nil, Phase: string(vm.Status.Phase),
			CreateTickets: createTickets[vm.Name]}
	}
	onCluster, err := kv.VirtualMachines(ns).List(ctx, metav1.ListOptions{LabelSelector: gov.LabelInstance})
	if err != nil {
		return s, err
	}
	for _, vm := range onCluster.Items {
		n, _ := strconv.Atoi(vm.Labels[gov.LabelInstance])
		s.VirtualMachines = append(s.VirtualMachines, check.VirtualMachine{Namespace: vm.Namespace, Name: vm.Name,
			Service: vm.Labels[gov.LabelService], Instance: int32(n)})
	}
	tags, err := artifact.Tags(ctx, registry, repository)
	if err != nil {
		return s, err
	}
	for _, tag := range tags {
		s.RegistryTags[repository+":"+tag] = true
	}
	return s, nil
}

// addDeployments records deps as st's Deployments, with the seq of each one's first container.
func addDeployments(st *check.ObjectState, deps []appsv1.Deployment) {
	for _, d := range deps {
		st.Deployments = append(st.Deployments, d.Namespace+"/"+d.Name)
		var seq int64
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			seq, _ = load.ImageSeq(cs[0].Image)
		}
		st.DeploymentSeqs = append(st.DeploymentSeqs, seq)
	}
}

// snapshotPacks reads the load's packs, their instances on Cluster local and the ConfigMaps
// they delivered there.
func snapshotPacks(ctx context.Context, admin clientset.Interface, kube kubernetes.Interface, s *check.Snapshot) error {
	packs, err := admin.InfrastructureV1alpha1().InfrastructureClusterPacks(packNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	instances, err := admin.InfrastructureV1alpha1().InfrastructurePackInstances(infra.InstanceNamespace(localplatform.LocalCluster)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	byPack := map[string][]infra.InfrastructurePackInstance{}
	for _, inst := range instances.Items {
		if inst.Spec.TargetClusterRef == localplatform.LocalCluster {
			byPack[inst.Spec.ClusterPackRef] = append(byPack[inst.Spec.ClusterPackRef], inst)
		}
	}
	delivered, err := kube.CoreV1().ConfigMaps(packTarget).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	deliveredSeq := map[string]int64{}
	for _, cm := range delivered.Items {
		deliveredSeq[cm.Name], _ = strconv.ParseInt(cm.Data["seq"], 10, 64)
	}
	for _, pack := range packs.Items {
		seq, ok := load.PackSeq(pack.Spec.Version)
		if !ok {
			continue // not the load's
		}
		st := check.PackState{Seq: seq, DeliveredSeq: deliveredSeq[pack.Name],
			Ready: pack.Status.ObservedGeneration == pack.Generation && pack.Status.Version == pack.Spec.Version &&
				meta.IsStatusConditionTrue(pack.Status.Conditions, infra.ConditionReady)}
		for i, inst := range byPack[pack.Name] {
			st.Instances = append(st.Instances, inst.Name)
			if i == 0 {
				st.InstanceSeq, _ = load.PackSeq(inst.Spec.Version)
				st.InstanceReady = meta.IsStatusConditionTrue(inst.Status.Conditions, infra.ConditionReady)
			}
		}
		s.Packs[packNamespace+"/"+pack.Name] = st
	}
	return nil
}

// describe logs the status of the ManagedVMs that did not converge, with their
// VirtualMachines', so that a failure says where each one stopped.
func describe(t *testing.T, ctx context.Context, admin clientset.Interface, kv kubevirtv1client.KubevirtV1Interface, vs []check.Violation) {
	t.Helper()
	for _, v := range vs {
		name, ok := strings.CutPrefix(v.Object, "ManagedVM "+ns+"/")
		if !ok {
			continue
		}
		vm, err := admin.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Logf("ManagedVM %s: %v", name, err)
			continue
		}
		status, _ := json.Marshal(vm.Status)
		t.Logf("ManagedVM %s (generation %d): %s", name, vm.Generation, status)
		if vm.Status.InstanceName == "" {
			continue
		}
		onCluster, err := kv.VirtualMachines(ns).Get(ctx, vm.Status.InstanceName, metav1.GetOptions{})
		if err != nil {
			t.Logf("VirtualMachine %s: %v", vm.Status.InstanceName, err)
			continue
		}
		status, _ = json.Marshal(onCluster.Status)
		t.Logf("VirtualMachine %s (created %s, resourceVersion %s): %s", onCluster.Name, onCluster.CreationTimestamp.Format(time.RFC3339), onCluster.ResourceVersion, status)
	}
}
