package localplatform

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one component of the platform, its output appended to a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{}
	exitErr error
}

func startProcess(name, binary, logDir string, args ...string) (*process, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "\n==== %s %s %v\n", time.Now().Format(time.RFC3339), binary, args)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a Ctrl-C in the terminal reaches the platform, which then stops
	// the components in order, instead of reaching every component at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// running reports whether the process is still alive.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop asks the process to terminate and waits; after the grace period it is killed.
func (p *process) stop(grace time.Duration) {
	if p == nil {
		return
	}
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	p.log.Close()
}

func (p *process) logPath() string { return p.log.Name() }
