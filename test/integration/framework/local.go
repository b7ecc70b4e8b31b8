package framework

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/plinth-dev/plinth/internal/localplatform"
)

var toolsOnce = struct {
	done bool
	err  error
}{}

// EnsurePlatformBinaries builds everything the local platform runs, as `make run` does.
func EnsurePlatformBinaries() error {
	if err := EnsureBinaries(); err != nil {
		return err
	}
	if _, err := buildIfMissing("plinth-controller", "./cmd/controller"); err != nil {
		return err
	}
	if toolsOnce.done {
		return toolsOnce.err
	}
	toolsOnce.done = true
	cmd := exec.Command(filepath.Join(RepoRoot(), "hack", "build-tools.sh"), "kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "etcdctl", "etcdutl", "kwok",
		"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "coredns",
		"source-controller", "kustomize-controller")
	if out, err := cmd.CombinedOutput(); err != nil {
		toolsOnce.err = err
		return &buildError{what: "Kubernetes tools", out: string(out), err: err}
	}
	return nil
}

// LocalUpBinary is `make run`'s plinth-local-up, built from this checkout when missing.
func LocalUpBinary() (string, error) {
	return buildIfMissing("plinth-local-up", "./hack/local-up")
}

// buildIfMissing builds the binary name from the package pkg of this checkout into BinDir,
// unless it is there already (make builds them all before the tests run).
func buildIfMissing(name, pkg string) (string, error) {
	bin := filepath.Join(BinDir(), name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{what: name, out: string(out), err: err}
	}
	return bin, nil
}

// Output collects what a platform reports (Config.Progress, or local-up's output) for a test
// to wait on. It is safe for concurrent writes.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}

// String is everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// WaitFor waits until a line containing text has been written and returns that line; the
// test fails after timeout.
func (o *Output) WaitFor(t testing.TB, text string, timeout time.Duration) string {
	t.Helper()
	var found string
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, line := range strings.Split(o.String(), "\n") {
			if strings.Contains(line, text) {
				found = line
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no line with %q within %s; output:\n%s", text, timeout, o.String())
	}
	return found
}

type buildError struct {
	what, out string
	err       error
}

func (e *buildError) Error() string {
	return "building " + e.what + ": " + e.err.Error() + "\n" + e.out
}

// StartLocalPlatform starts the same platform as `make run` on free ports in a temp dir, and
// stops it when the test ends. Component logs are printed if the test failed.
func StartLocalPlatform(t testing.TB) *localplatform.Platform {
	t.Helper()
	return StartLocalPlatformWith(t, nil)
}

// StartLocalPlatformWith is StartLocalPlatform with changes to the platform's configuration,
// for example extra plinth-controller flags.
func StartLocalPlatformWith(t testing.TB, configure func(*localplatform.Config)) *localplatform.Platform {
	t.Helper()
	if err := EnsurePlatformBinaries(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var p *localplatform.Platform
	// A port chosen free can be taken by an outgoing connection before the component binds
	// it; the platform refuses to start then, and a new set of ports is tried.
	for attempt := 1; ; attempt++ {
		ports, err := FreePorts(7)
		if err != nil {
			t.Fatal(err)
		}
		cfg := localplatform.Config{
			Dir: dir, BinDir: BinDir(), ArtifactsDir: filepath.Join(RepoRoot(), "artifacts", "deploy"),
			EtcdPort: ports[0], EtcdPeerPort: ports[1], KubePort: ports[2], PlinthPort: ports[3], ControllerPort: ports[4], KwokPort: ports[5],
			RegistryPort: ports[6], EtcdUnsafeNoFsync: true,
			ProvisionersConfig: filepath.Join(RepoRoot(), "artifacts", "controller", "provisioners.yaml"),
		}
		if configure != nil {
			configure(&cfg)
		}
		p, err = localplatform.Start(ctx, cfg)
		var inUse *localplatform.PortInUseError
		if err == nil {
			break
		}
		if !errors.As(err, &inUse) || attempt == 3 {
			dumpLogs(t, filepath.Join(dir, "logs"))
			t.Fatalf("local platform: %v", err)
		}
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			dumpLogs(t, p.LogDir())
		}
	})
	return p
}

func dumpLogs(t testing.TB, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if len(data) > 20000 {
			data = data[len(data)-20000:]
		}
		t.Logf("==== %s (tail)\n%s", filepath.Base(f), data)
	}
}
