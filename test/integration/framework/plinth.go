// Package framework starts the real plinth-apiserver binary (and later the rest of the local
// platform) for integration tests, and hands out clients: the generated clientset, a REST
// config and kubectl.
package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth-dev/plinth/internal/localplatform"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
)

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// BinDir holds the binaries under test: plinth's own and the Kubernetes tools.
func BinDir() string {
	if dir := os.Getenv("PLINTH_BIN_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "_output", "bin")
}

var buildOnce sync.Once
var buildErr error

// EnsureBinaries builds plinth-apiserver from this checkout and kubectl from hack/tools when
// they are missing, so `go test ./test/integration/...` works on its own as well as under make.
func EnsureBinaries() error {
	buildOnce.Do(func() {
		root := RepoRoot()
		if _, buildErr = buildIfMissing("plinth-apiserver", "./cmd/apiserver"); buildErr != nil {
			return
		}
		if _, err := os.Stat(filepath.Join(BinDir(), "kubectl")); err != nil {
			cmd := exec.Command(filepath.Join(root, "hack", "build-tools.sh"), "kubectl")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("building kubectl: %v\n%s", err, out)
			}
		}
	})
	return buildErr
}

// Plinth is a running standalone plinth-apiserver process.
type Plinth struct {
	// Dir holds the standalone credentials and, with the embedded etcd, the data.
	Dir string
	// Kubeconfig is the admin kubeconfig (group system:masters).
	Kubeconfig string
	// Config and Client reach the server as the admin.
	Config *rest.Config
	Client clientset.Interface
	// Port is the secure port.
	Port int

	cmd     *exec.Cmd
	logs    *syncBuffer
	exited  chan struct{}
	exitErr error
}

// syncBuffer collects process output written from the exec goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Options for StartPlinth.
type Options struct {
	// Dir reuses a directory from an earlier server (restart); empty means a new temp dir.
	Dir string
	// EtcdServers points at an external etcd; empty means the embedded etcd under Dir/data.
	EtcdServers string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
}

// StartPlinth starts plinth-apiserver --standalone and waits until it is ready. The process is
// stopped when the test ends.
func StartPlinth(t testing.TB, o Options) *Plinth {
	t.Helper()
	if err := EnsureBinaries(); err != nil {
		t.Fatal(err)
	}
	dir := o.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--standalone", "--standalone-dir", dir, "--data-dir", filepath.Join(dir, "data"),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--embedded-etcd-unsafe-no-fsync",
	}
	if o.EtcdServers != "" {
		args = append(args, "--etcd-servers", o.EtcdServers)
	}
	args = append(args, o.ExtraArgs...)
	p := &Plinth{Dir: dir, Kubeconfig: filepath.Join(dir, "admin.kubeconfig"), Port: port, logs: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(BinDir(), "plinth-apiserver"), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("plinth-apiserver logs:\n%s", p.logs.String())
		}
	})
	if err := p.waitReady(60 * time.Second); err != nil {
		t.Fatalf("plinth-apiserver did not become ready: %v\n%s", err, p.logs.String())
	}
	p.Config, err = clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// No client-side throttling: tests issue bursts, and benchmarks must measure the server,
	// not client-go's token bucket (a negative QPS turns it off).
	p.Config.QPS = -1
	p.Client = clientset.NewForConfigOrDie(p.Config)
	return p
}

// Stop interrupts the server and waits for it to exit.
func (p *Plinth) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// PID is the server's process id, for benchmarks that read its CPU time from /proc.
func (p *Plinth) PID() int { return p.cmd.Process.Pid }

// Logs returns what the server printed so far.
func (p *Plinth) Logs() string { return p.logs.String() }

func (p *Plinth) waitReady(timeout time.Duration) error {
	// readyz is always allowed, so a plain TLS client without a certificate can poll it.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", p.Port)
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, false, func(ctx context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("exited: %v", p.exitErr)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("timed out; last answer: %s", last)
	}
	return err
}

// FreePorts asks the kernel for n distinct free loopback ports (see localplatform.FreePorts).
func FreePorts(n int) ([]int, error) { return localplatform.FreePorts(n) }

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Kubectl runs the real kubectl against a kubeconfig and returns its combined output.
func Kubectl(kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(BinDir(), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// KubectlStdin is Kubectl with a manifest on standard input.
func KubectlStdin(kubeconfig, stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(BinDir(), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewBufferString(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
