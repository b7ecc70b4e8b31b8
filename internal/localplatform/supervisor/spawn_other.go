//go:build !linux

package supervisor

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts each child in its own process group, so that a Ctrl-C in the terminal
// reaches the platform alone. Only Linux can tie a child's life to its parent's (Pdeathsig):
// elsewhere a killed platform leaves its children running.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// startChild starts cmd.
func startChild(cmd *exec.Cmd) error { return cmd.Start() }
