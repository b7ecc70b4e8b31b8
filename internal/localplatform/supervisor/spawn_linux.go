//go:build linux

package supervisor

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// sysProcAttr puts each child in its own process group, so that a Ctrl-C in the terminal
// reaches the platform alone, which then stops the components in order, and so that a stop
// reaches whatever the child started. Pdeathsig makes the kernel kill the child when its
// parent goes, even by SIGKILL: an orphaned etcd would otherwise keep its port and data
// directory, and the next platform would not start.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// forks carries start requests to the forking goroutine.
var (
	forks     = make(chan forkRequest)
	forksOnce sync.Once
)

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startChild starts cmd from the forking goroutine.
//
// Pdeathsig fires when the thread that forked the child ends, not when the process does. The
// Go runtime ends a thread when a goroutine locked to it returns without unlocking, so a
// child forked from whatever thread the caller happens to run on could be killed while the
// platform is alive and well. All children are therefore forked from one goroutine locked to
// its thread that never returns: that thread ends only with the process.
func startChild(cmd *exec.Cmd) error {
	forksOnce.Do(func() { go forkLoop() })
	req := forkRequest{cmd: cmd, done: make(chan error, 1)}
	forks <- req
	return <-req.done
}

func forkLoop() {
	// Never unlocked, and the loop never ends: see startChild.
	runtime.LockOSThread()
	for req := range forks {
		req.done <- req.cmd.Start()
	}
}
