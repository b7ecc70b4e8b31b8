package registry

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// freeEndpoint returns localhost:<port> for a port nothing listens on, on 127.0.0.1 nor ::1.
func freeEndpoint(t *testing.T) string {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if l6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
			_ = l6.Close()
		} else if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		return net.JoinHostPort("localhost", strconv.Itoa(port))
	}
	t.Fatal("no free port")
	return ""
}

// start starts a registry on endpoint storing in dir, stopped when the test ends.
func start(t *testing.T, endpoint, dir string) *Server {
	t.Helper()
	s, err := New(Config{Endpoint: endpoint, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// writer are the options of a client that writes: this process's registry credentials.
var writer = []crane.Option{crane.Insecure, crane.WithAuthFromKeychain(registryauth.Local)}

func push(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := crane.Push(img, ref, writer...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func TestDataSurvivesARestart(t *testing.T) {
	endpoint, dir := freeEndpoint(t), t.TempDir()
	s := start(t, endpoint, dir)
	ref := endpoint + "/plinth/workloads/app:1.0.0"
	want := push(t, ref)
	if got, err := crane.Digest(ref, crane.Insecure); err != nil || got != want {
		t.Fatalf("digest %q, %v; want %q", got, err, want)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(context.Background()); err == nil {
		t.Fatal("a stopped registry answers")
	}
	if err := s.Err(); err != nil {
		t.Errorf("a clean stop reports %v", err)
	}

	start(t, endpoint, dir)
	if got, err := crane.Digest(ref, crane.Insecure); err != nil || got != want {
		t.Fatalf("after a restart: digest %q, %v; want %q", got, err, want)
	}
	// Deletes are enabled: retention and OCIArtifact deletion remove tags.
	if err := crane.Delete(ref, writer...); err != nil {
		t.Fatalf("deleting the tag: %v", err)
	}
	if _, err := crane.Digest(ref, crane.Insecure); err == nil {
		t.Error("the deleted tag is still served")
	}
}

func TestListensOnBothLoopbackAddresses(t *testing.T) {
	endpoint := freeEndpoint(t)
	start(t, endpoint, t.TempDir())
	_, port, _ := net.SplitHostPort(endpoint)
	hosts := []string{"127.0.0.1"}
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		_ = l.Close()
		hosts = append(hosts, "::1")
	} else {
		t.Logf("no ::1 on this host: %v", err)
	}
	for _, host := range hosts {
		resp, err := http.Get("http://" + net.JoinHostPort(host, port) + "/v2/")
		if err != nil {
			t.Errorf("%s: %v", host, err)
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: /v2/ answered %s", host, resp.Status)
		}
	}
}

func TestTwoRegistriesInOneProcess(t *testing.T) {
	a, b := freeEndpoint(t), freeEndpoint(t)
	start(t, a, t.TempDir())
	start(t, b, t.TempDir())
	push(t, a+"/only/in-a:1")
	if _, err := crane.Digest(b+"/only/in-a:1", crane.Insecure); err == nil {
		t.Error("the second registry serves the first one's data")
	}
	push(t, b+"/only/in-b:1")
}

func TestPortInUse(t *testing.T) {
	endpoint := freeEndpoint(t)
	start(t, endpoint, t.TempDir())
	s, err := New(Config{Endpoint: endpoint, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(context.Background())
	if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("a second registry on %s: %v", endpoint, err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("stopping a registry that never started: %v", err)
	}

	// Taken by another program, on 127.0.0.1 only.
	other := freeEndpoint(t)
	_, port, _ := net.SplitHostPort(other)
	l, err := net.Listen("tcp4", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err = New(Config{Endpoint: other, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrPortInUse) {
		t.Fatalf("a port another program holds: %v", err)
	}
}

func TestUnwritableDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Endpoint: freeEndpoint(t), DataDir: filepath.Join(file, "registry")})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(context.Background())
	var storageErr *StorageError
	if !errors.As(err, &storageErr) || storageErr.Full || !strings.Contains(err.Error(), "cannot be written: not a directory") {
		t.Fatalf("a data directory under a file: %v", err)
	}
	if s.Ready(context.Background()) == nil {
		t.Error("a registry that failed to start answers")
	}

	if os.Geteuid() != 0 {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Endpoint: freeEndpoint(t), DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); !errors.As(err, &storageErr) || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("a read-only data directory: %v", err)
		}
	}
}

func TestCheckStorage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := start(t, freeEndpoint(t), dir)
	if err := s.CheckStorage(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".plinth-storage-probe") {
			t.Errorf("the probe file %s was left behind", e.Name())
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckStorage(); err == nil || !strings.Contains(err.Error(), dir+" cannot be written") {
		t.Errorf("a removed data directory: %v", err)
	}
}

// A full disk is reported as such: the error is the kernel's, from /dev/full.
func TestFullDiskIsReportedAsFull(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer f.Close()
	_, werr := f.Write(make([]byte, 16))
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Skipf("/dev/full did not refuse the write: %v", werr)
	}
	err = storageError("/var/lib/plinth/registries/r", werr)
	if err.Error() != "the disk holding /var/lib/plinth/registries/r is full" || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("got %q", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Endpoint: "127.0.0.1:5000", DataDir: "/tmp/r"},
		{Endpoint: "localhost", DataDir: "/tmp/r"},
		{Endpoint: "localhost:0", DataDir: "/tmp/r"},
		{Endpoint: "localhost:70000", DataDir: "/tmp/r"},
		{Endpoint: "localhost:5000", DataDir: "relative/r"},
		{Endpoint: "localhost:5000"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%+v was accepted", cfg)
		}
	}
	// distribution panics on a configuration it refuses; the panic is an error.
	_, err := newApp(context.Background(), &configuration.Configuration{Storage: configuration.Storage{"nosuchdriver": {}}})
	if err == nil || !strings.Contains(err.Error(), "refused its configuration") {
		t.Errorf("an unknown storage driver: %v", err)
	}
}

func TestStartTwiceIsAnError(t *testing.T) {
	s := start(t, freeEndpoint(t), t.TempDir())
	if err := s.Start(context.Background()); err == nil {
		t.Error("a second Start succeeded")
	}
}

// The 404s a push is made of are not logged as errors; the registry's own failures are.
func TestLogsRouteToKlog(t *testing.T) {
	var buf bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&buf)
	defer func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	}()
	endpoint := freeEndpoint(t)
	start(t, endpoint, t.TempDir())
	push(t, endpoint+"/logged/app:1")
	if _, err := crane.Digest(endpoint+"/logged/app:missing", crane.Insecure); err == nil {
		t.Fatal("a missing tag was found")
	}
	logrus.WithField("http.response.status", 500).Error("storage broke")
	klog.Flush()
	// klog writes an error line once per severity at or below it, all into buf here.
	var errorLines []string
	for line := range strings.SplitSeq(buf.String(), "\n") {
		if strings.HasPrefix(line, "E") && !slices.Contains(errorLines, line) {
			errorLines = append(errorLines, line)
		}
	}
	if len(errorLines) != 1 || !strings.Contains(errorLines[0], "storage broke") {
		t.Errorf("error lines: %q", errorLines)
	}
}

func TestClientErrors(t *testing.T) {
	for fields, want := range map[*logrus.Fields]bool{
		{"http.response.status": 404}: true,
		{"http.response.status": 500}: false,
		{}:                            false,
	} {
		if got := clientError(*fields); got != want {
			t.Errorf("%v: %v, want %v", *fields, got, want)
		}
	}
}
