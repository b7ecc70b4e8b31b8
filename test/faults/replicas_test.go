package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

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
// real node, runs the fault suite's load through kube-apiserver, and SIGKILLs in turn the
// process of one plinth-apiserver replica, of the etcd member that leads, and of the leading
// plinth-controller; kubelet restarts each. Per fault it reports the requests that failed, for
// how long clients saw errors, how the watch resumed, and lost writes, which must be none.
// `make test-replicas` runs it (PLINTH_REPLICAS=1) and writes the table to
// _output/replicas.md, which docs/reliability.md quotes.
func TestReplicaLoss(t *testing.T) {
	if os.Getenv("PLINTH_REPLICAS") == "" {
		t.Skip("make test-replicas runs the replica-loss test (PLINTH_REPLICAS=1)")
	}
	f := replicaForm
	started := time.Now()
	tg := install.Prepare(t, "v0.0.0-replicas")
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
		{name: "one plinth-apiserver replica", kill: r.apiserver, apiserver: true},
		{name: "the leading etcd member", kill: r.etcdLeader},
		{name: "the leading plinth-controller", kill: r.controllerLeader},
	} {
		row, ok := runFault(t, ctx, f, fl, 1, gen, rec, watcher, admin, nil, snap)
		rows = append(rows, row)
		if !ok {
			t.Logf("results so far:\n%s", ReplicaTable(rows))
			t.FailNow()
		}
	}
	table := ReplicaTable(rows)
	t.Logf("losing a replica under load (%d workloads, %d tenant computes, a write every %s per kind), total %s:\n%s",
		f.workloads, f.computes, f.interval, time.Since(started).Round(time.Second), table)
	if out := os.Getenv("PLINTH_REPLICAS_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// replicas finds and kills the processes of the chart's pods on the real node.
type replicas struct {
	kube kubernetes.Interface
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

// readyPods are the Ready pods of the chart's component name, by name.
func (r replicas) readyPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	list, err := r.kube.CoreV1().Pods(install.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		return nil, err
	}
	var ready []corev1.Pod
	for _, pod := range list.Items {
		if podReady(&pod) {
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
