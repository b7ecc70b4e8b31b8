package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/plinth-dev/plinth/internal/ociimage"
)

// TestPauseExitsZeroOnTermination: the static binary, as the pause image holds it, exits 0 on
// SIGTERM and on SIGINT.
func TestPauseExitsZeroOnTermination(t *testing.T) {
	bin := build(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := start(t, bin, nil)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if err := waitExit(cmd, 5*time.Second); err != nil {
				t.Fatalf("after %s: %v", sig, err)
			}
		})
	}
}

// TestPauseReapsOrphans: as PID 1 of its own PID namespace, pause adopts processes whose
// parent has exited and reaps them when they exit, two at once included (one SIGCHLD may
// stand for both).
func TestPauseReapsOrphans(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a PID namespace needs root")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("entering the PID namespace needs nsenter")
	}
	bin := build(t)
	cmd := start(t, bin, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID})
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := waitExit(cmd, 5*time.Second); err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	}()
	// sh exits at once, so both sleeps become pause's children; their output goes elsewhere,
	// or CombinedOutput would wait for them.
	orphans := exec.Command(nsenter, "--target", strconv.Itoa(cmd.Process.Pid), "--pid", "--", "sh", "-c", "sleep 2 >/dev/null 2>&1 & sleep 2 >/dev/null 2>&1 & exit 0")
	if out, err := orphans.CombinedOutput(); err != nil {
		t.Fatalf("starting orphans in pause's namespace: %v\n%s", err, out)
	}
	if n := len(children(t, cmd.Process.Pid)); n != 2 {
		t.Fatalf("pause adopted %d processes, want the 2 orphans", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for kids := children(t, cmd.Process.Pid); len(kids) > 0; kids = children(t, cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pause's children are still there (a Z is a zombie): %v", kids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// build builds pause as the images are built: static, for this machine.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pause")
	if err := ociimage.BuildBinary(context.Background(), bin, ".", "", v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}, ""); err != nil {
		t.Fatal(err)
	}
	return bin
}

// start starts pause and returns once it handles its signals. It starts with SIGINT ignored
// (sh's trap, which exec keeps), so a handler for SIGINT, which pause installs after every
// other, shows in /proc only once pause is ready: a signal sent earlier would find Go's
// default handling.
func start(t *testing.T, bin string, attr *syscall.SysProcAttr) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap "" INT; exec "$0"`, bin)
	cmd.SysProcAttr = attr
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(10 * time.Second)
	for !ready(t, cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("pause did not install its signal handlers")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd
}

// ready reports whether the process is pause and has a handler for SIGINT, from
// /proc/<pid>/status. The name matters: Start may return while the kernel is still in exec,
// the pipe Go waits on closed but the test binary's handlers (SIGINT among them) not yet
// reset; the name changes after they are.
func ready(t *testing.T, pid int) bool {
	t.Helper()
	status := strconv.Itoa(pid)
	field := statusField(t, status, "SigCgt")
	if field == "" {
		t.Fatal("pause exited before it was ready")
	}
	mask, err := strconv.ParseUint(field, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return statusField(t, status, "Name") == "pause" && mask&(1<<(uint(syscall.SIGINT)-1)) != 0
}

// children are the processes whose parent is pid, with their state (Z for a zombie).
func children(t *testing.T, pid int) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		if statusField(t, d.Name(), "PPid") == strconv.Itoa(pid) {
			out = append(out, d.Name()+" "+statusField(t, d.Name(), "State"))
		}
	}
	return out
}

// statusField is one field of /proc/<pid>/status; empty once the process is gone.
func statusField(t *testing.T, pid, field string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// waitExit waits for cmd and fails unless it exits 0 within d.
func waitExit(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return errors.New("pause did not exit within " + d.String())
	}
}
