package supervisor

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Hold ends supervision without touching the running incarnation: it is not restarted when it
// dies. StopAll holds every process first, so that one stopping does not make another crash
// and come back.
func (p *Process) Hold() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopping {
		p.stopping = true
		close(p.halted)
	}
}

// Stop ends supervision and the child: SIGTERM to its process group, SIGKILL once grace has
// passed. It returns when no incarnation runs.
func (p *Process) Stop(grace time.Duration) {
	if p == nil {
		return
	}
	p.signal(syscall.SIGTERM)
	p.waitOrKill(time.Now().Add(grace))
}

// Kill ends supervision and kills the child at once, as a crash would (no chance to clean up,
// a leader keeps its lease until it expires). It returns when no incarnation runs.
func (p *Process) Kill() {
	if p == nil {
		return
	}
	p.signal(syscall.SIGKILL)
	<-p.done
}

// signal holds the process and sends sig to the running incarnation's process group, which
// includes anything the child started itself.
func (p *Process) signal(sig syscall.Signal) {
	p.Hold()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		// The group may be gone already (ESRCH): the incarnation is dying anyway.
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// waitOrKill waits for supervision to end, and kills the child at the deadline.
func (p *Process) waitOrKill(deadline time.Time) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.Kill()
	}
}

// StopAll stops groups of processes one group after the other, all within timeout: every
// process is held first, then each group is sent SIGTERM and given an equal share of the time
// left, and what still runs at the end of its share is killed. Nil processes are skipped.
func StopAll(timeout time.Duration, groups ...[]*Process) {
	for _, group := range groups {
		for _, p := range group {
			p.Hold()
		}
	}
	deadline := time.Now().Add(timeout)
	for i, group := range groups {
		share := time.Until(deadline) / time.Duration(len(groups)-i)
		groupDeadline := time.Now().Add(share)
		for _, p := range group {
			if p != nil {
				p.signal(syscall.SIGTERM)
			}
		}
		for _, p := range group {
			if p != nil {
				p.waitOrKill(groupDeadline)
			}
		}
	}
}

// KillIncarnation kills the running incarnation's process group with SIGKILL, as a crash
// would, and leaves supervision on: the child is restarted after the backoff like any child
// that died. It returns the killed incarnation's pid, for WaitBack; fault tests use it.
func (p *Process) KillIncarnation() (int, error) {
	if p == nil {
		return 0, fmt.Errorf("supervisor: no process")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return 0, fmt.Errorf("supervisor: %s is stopped", p.spec.Name)
	}
	if p.cmd == nil {
		return 0, fmt.Errorf("supervisor: %s is between incarnations", p.spec.Name)
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("supervisor: killing %s (pid %d): %w", p.spec.Name, pid, err)
	}
	// Whatever was reported back before is dead now: WaitBack waits for a later incarnation,
	// also when this one was killed before it was itself reported back.
	p.backPID = 0
	return pid, nil
}

// WaitBack waits until an incarnation started after the one with pid killed has been
// reported back (its Ready check passed, or it ran for a second), and returns its pid. It
// fails when ctx ends or supervision ends first.
func (p *Process) WaitBack(ctx context.Context, killed int) (int, error) {
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		p.mu.Lock()
		back, stopping := p.backPID, p.stopping
		p.mu.Unlock()
		if back != 0 && back != killed {
			return back, nil
		}
		if stopping {
			return 0, fmt.Errorf("supervisor: %s is stopped", p.spec.Name)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("supervisor: %s is not back: %w", p.spec.Name, ctx.Err())
		case <-ticker.C:
		}
	}
}

// Restart ends the running incarnation with SIGTERM and starts the next one at once, without
// the backoff and without reporting a death; why is reported instead. It is for a child whose
// state went wrong while a component it depends on was away, and that only a fresh start puts
// right. A child that is stopped or between incarnations is left alone.
func (p *Process) Restart(why string) error {
	if p == nil {
		return fmt.Errorf("supervisor: no process")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return fmt.Errorf("supervisor: %s is stopped", p.spec.Name)
	}
	if p.cmd == nil {
		return fmt.Errorf("supervisor: %s is between incarnations", p.spec.Name)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("supervisor: restarting %s (pid %d): %w", p.spec.Name, p.cmd.Process.Pid, err)
	}
	p.restarting = why
	p.backPID = 0
	return nil
}
