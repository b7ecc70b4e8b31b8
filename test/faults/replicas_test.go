package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth-dev/plinth/internal/docsection"
	"github.com/plinth-dev/plinth/internal/localplatform"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/faults/check"
	"github.com/plinth-dev/plinth/test/faults/load"
	"github.com/plinth-dev/plinth/test/faults/watch"
	"github.com/plinth-dev/plinth/test/install"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// replicaForm is the replica-loss test's load and timing: the fault suite's short load, and the
// chart's own leader election (the default 15 s lease), as a real install has it.
var replicaForm = form{name: "replicas", rounds: 1, workloads: 6, computes: 3,
	interval: 100 * time.Millisecond, before: 5 * time.Second, after: 5 * time.Second, readyBound: 2 * time.Minute}

// TestReplicaLoss installs the chart's highly available profile (charts/plinth/values-ha.yaml:
// two plinth-apiservers, two plinth-controllers, three etcd members) on the local platform's
// real node, runs the fault suite's load through kube-apiserver, restarts plinth-apiserver as a
// rolling update does (no request may fail), then SIGKILLs in turn the process of one
// plinth-apiserver replica, of the etcd member that leads, and of the leading
// plinth-controller; kubelet restarts each. Per fault it reports the requests that failed, for
// how long clients saw errors, how the watch resumed, and lost writes, which must be none. It
// does all this twice, once for each way kube-apiserver routes to the replicas (routingModes).
// `make test-replicas` runs it (PLINTH_REPLICAS=1) and writes the tables into
// docs/reliability.md (PLINTH_REPLICAS_DOCS).
func TestReplicaLoss(t *testing.T) {
	if os.Getenv("PLINTH_REPLICAS") == "" {
		t.Skip("make test-replicas runs the replica-loss test (PLINTH_REPLICAS=1)")
	}
	started := time.Now()
	var sections []string
	for _, mode := range routingModes {
		t.Run(mode.name, func(t *testing.T) {
			rows := replicaLoss(t, mode.kubeAPIServerArgs)
			sections = append(sections, fmt.Sprintf("**%s.**\n\n%s", mode.title, ReplicaTable(rows)))
		})
	}
	if t.Failed() {
		return
	}
	f := replicaForm
	all := strings.Join(sections, "\n")
	t.Logf("losing a replica under load (%d workloads, %d tenant computes, a write every %s per kind), total %s:\n%s",
		f.workloads, f.computes, f.interval, time.Since(started).Round(time.Second), all)
	if page := os.Getenv("PLINTH_REPLICAS_DOCS"); page != "" {
		commit, _ := exec.Command("git", "-C", framework.RepoRoot(), "rev-parse", "--short", "HEAD").Output()
		content := fmt.Sprintf("One run of `make test-replicas` on %s at commit %s (%d workloads and %d tenant computes, a write every %s per kind; %s in all).\n\n%s",
			time.Now().UTC().Format("2006-01-02"), strings.TrimSpace(string(commit)), f.workloads, f.computes, f.interval, time.Since(started).Round(time.Second), all)
		if err := replicaSection.WriteFile(page, content); err != nil {
			t.Error(err)
		}
	}
}

// routingModes are the two ways kube-apiserver reaches an aggregated server's replicas. By
// default it proxies to the Service's cluster IP over long-lived HTTP/2 connections, so
// kube-proxy balances connections, not requests; --enable-aggregator-routing makes it pick an
// endpoint from the EndpointSlices for each request.
var routingModes = []struct {
	name, title       string
	kubeAPIServerArgs []string
}{
	{"service", "kube-apiserver proxies to the Service's cluster IP (its default)", nil},
	{"endpoints", "kube-apiserver picks a ready endpoint per request (`--enable-aggregator-routing`)", []string{"--enable-aggregator-routing=true"}},
}

// replicaLoss installs the HA profile on a cluster whose kube-apiserver has the extra args,
// runs the load and the faults, and returns their rows.
func replicaLoss(t *testing.T, kubeAPIServerArgs []string) []Row {
	f := replicaForm
	started := time.Now()
	tg := install.Prepare(t, "v0.0.0-replicas", func(c *localplatform.Config) {
		c.KubeAPIServerArgs = append(c.KubeAPIServerArgs, kubeAPIServerArgs...)
	})
	tg.Install(t, tg.Values(install.HAValues(t)))
	t.Logf("highly available profile installed on the real node in %s", time.Since(started).Round(time.Second))
	ctx := context.Background()

	client := func(timeout time.Duration) clientset.Interface {
		cfg, err := clientcmd.BuildConfigFromFlags("", tg.Admin)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Timeout = timeout
		return clientset.NewForConfigOrDie(cfg)
	}
	// The load gives up on a request after five seconds, as in the fault suite; the watch's
	// client has no timeout.
	admin, watchClient := client(5*time.Second), client(0)
	if _, err := framework.Kubectl(tg.Admin, "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	rec := &load.Recorder{}
	cfg := load.Config{Tenant: admin, Approver: admin, Admin: admin, Namespace: ns, Workloads: f.workloads, TenantComputes: f.computes,
		Interval: f.interval, RequestTimeout: 5 * time.Second, Recorder: rec}
	if err := load.Setup(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	gen := load.New(cfg)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watcher := watch.New(watch.Workloads(watchClient.ScoreV1b1().Workloads(ns)))
	go watcher.Run(watchCtx)
	select {
	case <-watcher.Listed():
	case <-time.After(time.Minute):
		t.Fatal("the watch's first list did not succeed within a minute")
	}
	snap := func(ctx context.Context) (check.Snapshot, error) { return snapshot(ctx, admin, tg.Client, nil, "") }

	r := replicas{kube: tg.Client}
	var rows []Row
	for _, fl := range []fault{
		{name: "plinth-apiserver's rolling restart (planned)", kill: r.rollingRestart, apiserver: true, planned: true},
		{name: "one plinth-apiserver replica", kill: r.apiserver, apiserver: true},
		{name: "the leading etcd member", kill: r.etcdLeader},
		{name: "the leading plinth-controller", kill: r.controllerLeader},
	} {
		row, ok := runFault(t, ctx, f, fl, 1, gen, rec, watcher, admin, nil, snap)
		rows = append(rows, row)
		// A planned restart stops each replica after its endpoints are gone
		// (apiserver.shutdownDelaySeconds): no client may see an error.
		if fl.planned && row.Failed > 0 {
			t.Errorf("%s: %d requests failed", fl.name, row.Failed)
		}
		if !ok {
			t.Logf("results so far:\n%s", ReplicaTable(rows))
			t.FailNow()
		}
	}
	return rows
}

// replicaSection is the table's place in docs/reliability.md.
var replicaSection = docsection.Section{Begin: "<!-- test-replicas:begin (make test-replicas writes this section) -->", End: "<!-- test-replicas:end -->"}

// replicas finds and kills the processes of the chart's pods on the real node.
type replicas struct {
	kube kubernetes.Interface
}

// rollingRestart restarts plinth-apiserver's Deployment as `kubectl rollout restart` does: a
// new replica starts, then an old one is stopped with SIGTERM, twice. It is back once the
// rollout is complete.
func (r replicas) rollingRestart(ctx context.Context) (string, func(context.Context) error, error) {
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := r.kube.AppsV1().Deployments(install.Namespace).Patch(ctx, "plinth-apiserver", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return "", nil, err
	}
	back := func(ctx context.Context) error {
		return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			d, err := r.kube.AppsV1().Deployments(install.Namespace).Get(ctx, "plinth-apiserver", metav1.GetOptions{})
			if err != nil || d.Spec.Replicas == nil {
				return false, nil
			}
			st := d.Status
			if st.ObservedGeneration != d.Generation || st.UpdatedReplicas != *d.Spec.Replicas || st.Replicas != *d.Spec.Replicas ||
				st.AvailableReplicas != *d.Spec.Replicas {
				return false, nil
			}
			// Over when the old replicas have stopped, not only when the new ones serve.
			pods, err := r.kube.CoreV1().Pods(install.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=plinth-apiserver"})
			return err == nil && int32(len(pods.Items)) == *d.Spec.Replicas, nil
		})
	}
	return "both plinth-apiserver replicas, one after the other", back, nil
}

// apiserver kills one Ready plinth-apiserver replica; it is back once the Deployment has both
// replicas available again.
func (r replicas) apiserver(ctx context.Context) (string, func(context.Context) error, error) {
	pods, err := r.readyPods(ctx, "plinth-apiserver")
	if err != nil {
		return "", nil, err
	}
	if len(pods) < 2 {
		return "", nil, fmt.Errorf("%d plinth-apiserver replicas are Ready, want 2", len(pods))
	}
	return r.killPod(ctx, pods[0], "plinth-apiserver")
}

// etcdLeader kills the etcd member whose metrics say it leads.
func (r replicas) etcdLeader(ctx context.Context) (string, func(context.Context) error, error) {
	pods, err := r.readyPods(ctx, "plinth-etcd")
	if err != nil {
		return "", nil, err
	}
	for _, pod := range pods {
		leads, err := etcdLeads(ctx, pod.Status.PodIP)
		if err != nil {
			return "", nil, fmt.Errorf("etcd member %s: %w", pod.Name, err)
		}
		if leads {
			return r.killPod(ctx, pod, "etcd")
		}
	}
	return "", nil, fmt.Errorf("none of the %d etcd members leads", len(pods))
}

// controllerLeader kills the plinth-controller replica holding the Lease (its identity is
// <pod name>_<pid>); it is over once a live replica renewed the Lease after the kill.
func (r replicas) controllerLeader(ctx context.Context) (string, func(context.Context) error, error) {
	lease, err := r.kube.CoordinationV1().Leases(install.Namespace).Get(ctx, "plinth-controller", metav1.GetOptions{})
	if err != nil {
		return "", nil, err
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	podName, _, _ := strings.Cut(holder, "_")
	pod, err := r.kube.CoreV1().Pods(install.Namespace).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("the Lease's holder %q: %w", holder, err)
	}
	killed, podBack, err := r.killPod(ctx, *pod, "plinth-controller")
	if err != nil {
		return "", nil, err
	}
	at := time.Now()
	back := func(ctx context.Context) error {
		if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			l, err := r.kube.CoordinationV1().Leases(install.Namespace).Get(ctx, "plinth-controller", metav1.GetOptions{})
			return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(at), nil
		}); err != nil {
			return fmt.Errorf("no replica renewed the Lease: %w", err)
		}
		return podBack(ctx)
	}
	return killed + ", held the Lease", back, nil
}

// readyPods are the Ready pods of the chart's component name that are not being deleted.
func (r replicas) readyPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	list, err := r.kube.CoreV1().Pods(install.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		return nil, err
	}
	var ready []corev1.Pod
	for _, pod := range list.Items {
		// A pod being deleted is on its way out, however Ready: kubelet restarts nothing in it.
		if pod.DeletionTimestamp == nil && podReady(&pod) {
			ready = append(ready, pod)
		}
	}
	return ready, nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// killPod SIGKILLs the process of pod's container that runs binary, found by its cgroup on this
// machine; back returns once kubelet restarted it and the pod is Ready again.
func (r replicas) killPod(ctx context.Context, pod corev1.Pod, binary string) (string, func(context.Context) error, error) {
	pid, err := podProcess(string(pod.UID), binary)
	if err != nil {
		return "", nil, fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	restarts := restartCount(&pod)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return "", nil, fmt.Errorf("pod %s: killing pid %d: %w", pod.Name, pid, err)
	}
	back := func(ctx context.Context) error {
		var last *corev1.Pod
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			p, err := r.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = p
			return restartCount(p) > restarts && podReady(p), nil
		})
		if err != nil && last != nil {
			return fmt.Errorf("pod %s: %d restarts, Ready %t: %w", pod.Name, restartCount(last), podReady(last), err)
		}
		return err
	}
	return fmt.Sprintf("%s in pod %s (pid %d)", binary, pod.Name, pid), back, nil
}

func restartCount(pod *corev1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// podProcess is the process running binary in the pod with uid: kubelet (cgroupfs driver) puts
// each pod's containers under a cgroup named pod<uid>. The kernel keeps 15 bytes of a name.
func podProcess(uid, binary string) (int, error) {
	comm := binary
	if len(comm) > 15 {
		comm = comm[:15]
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		name, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(name)) != comm {
			continue
		}
		cgroups, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err == nil && strings.Contains(string(cgroups), "/pod"+uid+"/") {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s process in a cgroup of pod %s", binary, uid)
}

// etcdLeads reads etcd_server_is_leader from the member's metrics listener.
func etcdLeads(ctx context.Context, ip string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ip+":2381/metrics", nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_server_is_leader "); ok {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, fmt.Errorf("no etcd_server_is_leader in its metrics (%v)", sc.Err())
}
