package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary play a platform that starts a child and is then killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SUPERVISOR_TEST_PARENT_LOGS"); dir != "" {
		p, err := Start(Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"}, LogDir: dir})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(p.PID())
		select {}
	}
	os.Exit(m.Run())
}

func TestChildDiesWithItsParent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self)
	parent.Env = append(os.Environ(), "SUPERVISOR_TEST_PARENT_LOGS="+t.TempDir())
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	child, convErr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || convErr != nil {
		_ = parent.Process.Kill()
		t.Fatalf("the parent did not report its child: %q %v", line, err)
	}
	defer func() { _ = exec.Command("kill", "-9", strconv.Itoa(child)).Run() }()
	if !alive(child) {
		t.Fatalf("child %d is not running", child)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still runs 5s after its parent was killed", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChildOutlivesTheThreadThatStartedIt(t *testing.T) {
	// A goroutine that ends locked to its thread ends the thread: a child forked from it with
	// Pdeathsig would be killed although the process lives on.
	started := make(chan *Process, 1)
	failed := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		p, err := Start(Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"}, LogDir: t.TempDir()})
		if err != nil {
			failed <- err
			return
		}
		started <- p
	}()
	var p *Process
	select {
	case p = <-started:
	case err := <-failed:
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	pid := p.PID()
	time.Sleep(500 * time.Millisecond)
	if err := p.Died(); err != nil || !alive(pid) {
		t.Errorf("the child ended with the thread that started it: %v", err)
	}
}
