package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestLocalPlatformRestartsADeadComponent kills plinth-apiserver as a crash would: the
// platform says so at once, starts it again, and says so again once the API answers through
// kube-apiserver.
func TestLocalPlatformRestartsADeadComponent(t *testing.T) {
	out := &framework.Output{}
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.Progress = out
		c.NoController = true
	})
	_, _, pid := p.PIDs()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	died := out.WaitFor(t, fmt.Sprintf("plinth: plinth-apiserver (pid %d) died: signal: killed; restarting in ", pid), 5*time.Second)
	t.Logf("%s — reported %s after the kill", died, time.Since(killed).Round(time.Millisecond))
	back := out.WaitFor(t, "plinth: plinth-apiserver is back (pid ", 2*time.Minute)
	t.Log(back)
	if _, _, restarted := p.PIDs(); restarted == 0 || restarted == pid || !strings.Contains(back, fmt.Sprintf("(pid %d)", restarted)) {
		t.Errorf("plinth-apiserver now runs as pid %d (killed: %d), reported %q", restarted, pid, back)
	}
	if out, err := framework.Kubectl(p.AdminKubeconfig(), "get", "workloads,managedvms,clusters", "-A"); err != nil {
		t.Errorf("the API does not answer after the restart: %v\n%s", err, out)
	}
}

// TestLocalUpChildrenDoNotOutliveIt runs `make run`'s plinth-local-up. Interrupted (Ctrl-C),
// it stops everything within ten seconds. Killed with SIGKILL, it takes its children with
// it: an orphaned etcd would hold its port, and the next `make run` would not start.
func TestLocalUpChildrenDoNotOutliveIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("children die with their parent on Linux only (Pdeathsig)")
	}
	if err := framework.EnsurePlatformBinaries(); err != nil {
		t.Fatal(err)
	}
	bin, err := framework.LocalUpBinary()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := framework.FreePorts(7)
	if err != nil {
		t.Fatal(err)
	}
	dir, root := t.TempDir(), framework.RepoRoot()
	args := []string{"--dir", dir, "--bin-dir", framework.BinDir(), "--artifacts", filepath.Join(root, "artifacts", "deploy"),
		"--provisioners-config", filepath.Join(root, "artifacts", "controller", "provisioners.yaml"),
		// The platform alone: no second cluster (its fixed ports) and no demo chart.
		"--edge-cluster=", "--demo-chart="}
	for i, flag := range []string{"--etcd-port", "--etcd-peer-port", "--kube-port", "--plinth-port", "--controller-port", "--kwok-port", "--registry-port"} {
		args = append(args, flag, strconv.Itoa(ports[i]))
	}

	kubectl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(framework.BinDir(), "kubectl"), append([]string{"--kubeconfig", filepath.Join(dir, "admin.kubeconfig")}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	localGitOps := func() string {
		return kubectl("get", "cluster", "local", "-o", "jsonpath={.spec.gitOps.engine}/{.spec.gitOps.registryEnabled}")
	}

	t.Run("Ctrl-C stops everything within ten seconds", func(t *testing.T) {
		up := startLocalUp(t, bin, args)
		// Cluster local as a Plinth from before GitOps registered it: the next start upgrades it.
		kubectl("patch", "cluster", "local", "--type", "merge", "-p", `{"spec":{"gitOps":{"engine":"Kubectl","registryEnabled":false}}}`)
		if got := localGitOps(); got != "Kubectl/" { // registryEnabled false is omitted
			t.Fatalf("Cluster local's gitOps after the patch: %s", got)
		}
		began := time.Now()
		if err := up.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-up.exited:
			t.Logf("stopped in %s", time.Since(began).Round(100*time.Millisecond))
			if err != nil {
				t.Errorf("plinth-local-up: %v\n%s", err, up.out)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("plinth-local-up still runs 10s after Ctrl-C\n%s", up.out)
		}
		up.expectChildrenGone(t, 0)
	})

	// The same ports again: the stop above freed them.
	t.Run("SIGKILL takes the children along", func(t *testing.T) {
		// This start pushes the tour's demo chart, with the credential the registry asks of
		// every write (docs/gitops.md).
		withChart := slices.Clone(args)
		withChart[slices.Index(withChart, "--demo-chart=")] = "--demo-chart=" + filepath.Join(root, "artifacts", "examples", "charts", "hello")
		up := startLocalUp(t, bin, withChart)
		if !strings.Contains(up.out.String(), "plinth: demo chart pushed to oci://") {
			t.Errorf("the demo chart was not pushed:\n%s", up.out)
		}
		if got := localGitOps(); got != "Flux/true" {
			t.Errorf("Cluster local registered before GitOps was not given engine Flux and a registry on restart: %s", got)
		}
		if err := up.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-up.exited
		up.expectChildrenGone(t, 5*time.Second)
		// A killed process's sockets close once its last thread has gone, a moment after
		// its main thread shows as a zombie.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, port := range ports {
			var last error
			if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
				if err != nil {
					last = err
					return false, nil
				}
				l.Close()
				return true, nil
			}); err != nil {
				t.Errorf("port %d is still held: %v", port, last)
			}
		}
	})
}

// localUp is a running plinth-local-up and the children it started.
type localUp struct {
	cmd      *exec.Cmd
	out      *framework.Output
	exited   chan error
	children map[int]string // pid → command name
}

// startLocalUp runs plinth-local-up until it reports ready. Whatever it leaves behind is
// killed when the test ends, so that a failing test leaves no orphans.
func startLocalUp(t *testing.T, bin string, args []string) *localUp {
	t.Helper()
	l := &localUp{cmd: exec.Command(bin, args...), out: &framework.Output{}, exited: make(chan error, 1)}
	l.cmd.Stdout, l.cmd.Stderr = l.out, l.out
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.exited <- l.cmd.Wait() }()
	t.Cleanup(func() {
		_ = l.cmd.Process.Kill()
		for pid := range l.children {
			if processAlive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("plinth-local-up's output:\n%s", l.out)
		}
	})
	// A plinth-local-up that gave up fails the test at once, not after the timeout.
	deadline := time.After(5 * time.Minute)
	for !strings.Contains(l.out.String(), "plinth is ready in") {
		select {
		case err := <-l.exited:
			l.exited <- err
			t.Fatalf("plinth-local-up exited before it was ready: %v", err)
		case <-deadline:
			t.Fatalf("no line with %q within 5m", "plinth is ready in")
		case <-time.After(100 * time.Millisecond):
		}
	}
	l.children = childProcesses(l.cmd.Process.Pid)
	names := make([]string, 0, len(l.children))
	for _, name := range l.children {
		names = append(names, name)
	}
	// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, plinth-apiserver,
	// plinth-controller, source-controller and kustomize-controller.
	if len(l.children) != 9 || !strings.Contains(" "+strings.Join(names, " ")+" ", " etcd ") {
		t.Fatalf("plinth-local-up's children: %v, want etcd and eight others", l.children)
	}
	return l
}

// expectChildrenGone fails unless every child has ended within timeout.
func (l *localUp) expectChildrenGone(t *testing.T, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for pid, name := range l.children {
		if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
			return !processAlive(pid), nil
		}); err != nil {
			t.Errorf("%s (pid %d) outlived plinth-local-up", name, pid)
		}
	}
}

// childProcesses are the live processes whose parent is pid, read from /proc.
func childProcesses(pid int) map[int]string {
	children := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if name, state, parent, ok := procStat(child); ok && parent == pid && state != "Z" {
			children[child] = name
		}
	}
	return children
}

// processAlive reports whether pid runs; a zombie is dead, whether or not anyone reaps it.
func processAlive(pid int) bool {
	_, state, _, ok := procStat(pid)
	return ok && state != "Z"
}

// procStat reads a process's name, state and parent from /proc/<pid>/stat.
func procStat(pid int) (name, state string, parent int, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", "", 0, false
	}
	stat := string(data)
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", "", 0, false
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 2 {
		return "", "", 0, false
	}
	parent, err = strconv.Atoi(fields[1])
	return stat[open+1 : end], fields[0], parent, err == nil
}
