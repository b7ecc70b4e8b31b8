// Package supervisor keeps the local platform's components running as child processes: a
// child that dies is reported at once and started again after a capped exponential backoff,
// a restarted child is reported back once it is ready, and no child outlives the process that
// started it (see spawn_linux.go).
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Spec is a child process to keep running.
type Spec struct {
	// Name names the child in reports and its log file, <LogDir>/<Name>.log.
	Name string
	// Path and Args are the command line.
	Path string
	Args []string
	// Env are KEY=value settings added to the environment the child inherits, overriding
	// inherited ones of the same key (Flux's controllers take their kubeconfig only from
	// KUBECONFIG).
	Env []string
	// LogDir receives the child's standard output and error, appended across restarts.
	LogDir string
	// Report receives one sentence when the child dies, and one when a restarted child is back.
	// Nil discards them.
	Report func(msg string)
	// Ready, if set, is polled after a restart until it succeeds; only then is the child
	// reported back. Without it, a restarted child is back once it has run for a second.
	Ready func(ctx context.Context) error
	// Back, if set, is called (on its own goroutine) each time a restarted incarnation has been
	// reported back: components that depend on this one without noticing its restart can be
	// told then.
	Back func()
	// Backoff spaces restarts; the zero value means DefaultBackoff. It starts over once a child
	// has run for longer than the backoff's cap, so a crash a day later waits the shortest time.
	Backoff wait.Backoff
}

// DefaultBackoff restarts half a second after the first death, doubling up to 30 seconds.
var DefaultBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}

// readyInterval is how often Ready is polled after a restart; settle is how long a restarted
// child without a Ready check must run to be back, so that one that crashes at once is not
// reported back between its deaths.
const (
	readyInterval = 250 * time.Millisecond
	settle        = time.Second
)

// Process is a supervised child: one incarnation at a time, restarted until Stop or Kill.
type Process struct {
	spec Spec
	log  *os.File

	mu       sync.Mutex
	cmd      *exec.Cmd // the running incarnation; nil between a death and the restart
	stopping bool      // set by Stop, Kill or Hold: no restart from now on
	// restarting is set by Restart until its incarnation has ended: that end is asked for, so
	// the next incarnation starts at once and the end is not reported as a death.
	restarting string
	died       error // set when the first incarnation ends, for callers waiting on start
	backPID    int   // the last restarted incarnation reported back, for WaitBack
	// outputStart is the log's size when the running (or last) incarnation started.
	outputStart int64

	halted chan struct{} // closed with stopping set, to cut a pending backoff short
	done   chan struct{} // closed when supervision has ended and no incarnation runs
}

// errHalted is spawn's answer once the process is being stopped.
var errHalted = errors.New("stopped")

// Start starts the child and supervises it until Stop or Kill.
func Start(spec Spec) (*Process, error) {
	if spec.Name == "" || spec.Path == "" || spec.LogDir == "" {
		return nil, fmt.Errorf("supervisor: a child needs a name, a path and a log directory")
	}
	if spec.Report == nil {
		spec.Report = func(string) {}
	}
	if spec.Backoff == (wait.Backoff{}) {
		spec.Backoff = DefaultBackoff
	}
	if err := os.MkdirAll(spec.LogDir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(spec.LogDir, spec.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &Process{spec: spec, log: log, halted: make(chan struct{}), done: make(chan struct{})}
	cmd, err := p.spawn()
	if err != nil {
		log.Close()
		return nil, err
	}
	go p.supervise(cmd)
	return p, nil
}

// spawn starts one incarnation, unless the process is being stopped.
func (p *Process) spawn() (*exec.Cmd, error) {
	fmt.Fprintf(p.log, "\n==== %s %s %v\n", time.Now().Format(time.RFC3339), p.spec.Path, p.spec.Args)
	// Where this incarnation's output begins: a death's report quotes from there on only.
	var outputStart int64
	if info, err := p.log.Stat(); err == nil {
		outputStart = info.Size()
	}
	cmd := exec.Command(p.spec.Path, p.spec.Args...)
	if len(p.spec.Env) > 0 {
		// exec uses the last value of a key given twice.
		cmd.Env = append(os.Environ(), p.spec.Env...)
	}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = sysProcAttr()
	// Under the lock, so that Stop either sees this incarnation and signals it, or this
	// incarnation is never started.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return nil, errHalted
	}
	if err := startChild(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", p.spec.Name, err)
	}
	p.cmd = cmd
	p.outputStart = outputStart
	return cmd, nil
}

// supervise waits for each incarnation and starts the next one after a backoff, until the
// process is stopped.
func (p *Process) supervise(cmd *exec.Cmd) {
	defer close(p.done)
	defer p.log.Close()
	backoff := p.spec.Backoff
	var diedAt time.Time // zero for the first incarnation, which the caller waits for itself
	for {
		started := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		if !diedAt.IsZero() {
			go p.reportWhenReady(ctx, cmd.Process.Pid, diedAt)
		}
		err := cmd.Wait()
		cancel()
		pid := cmd.Process.Pid
		// Read before the next incarnation writes: the line that says why this one ended.
		where := p.logAndLastLine()
		p.mu.Lock()
		p.cmd = nil
		stopping, restarting := p.stopping, p.restarting
		p.restarting = ""
		if p.died == nil && restarting == "" {
			p.died = fmt.Errorf("%s exited: %s (%s)", p.spec.Name, exitStatus(err), where)
		}
		p.mu.Unlock()
		if stopping {
			return
		}
		diedAt = time.Now()
		if restarting != "" {
			p.spec.Report(fmt.Sprintf("%s (pid %d) restarted: %s", p.spec.Name, pid, restarting))
			var err error
			if cmd, err = p.spawn(); err == nil {
				continue
			}
			if errors.Is(err, errHalted) {
				return
			}
			// It did not start again: from here on it is a death like any other.
		}
		if time.Since(started) > max(backoff.Cap, p.spec.Backoff.Duration) {
			backoff = p.spec.Backoff
		}
		delay := backoff.Step()
		p.spec.Report(fmt.Sprintf("%s (pid %d) died: %s; restarting in %s (%s)",
			p.spec.Name, pid, exitStatus(err), delay.Round(time.Millisecond), where))
		for {
			select {
			case <-p.halted:
				return
			case <-time.After(delay):
			}
			if cmd, err = p.spawn(); err == nil {
				break
			}
			if errors.Is(err, errHalted) {
				return
			}
			delay = backoff.Step()
			p.spec.Report(fmt.Sprintf("%s did not start again: %v; retrying in %s", p.spec.Name, err, delay.Round(time.Millisecond)))
		}
	}
}

// reportWhenReady reports a restarted incarnation back once Ready passes; it gives up silently
// when the incarnation ends first, whose death is reported instead.
func (p *Process) reportWhenReady(ctx context.Context, pid int, diedAt time.Time) {
	if p.spec.Ready != nil {
		err := wait.PollUntilContextCancel(ctx, readyInterval, true, func(ctx context.Context) (bool, error) {
			return p.spec.Ready(ctx) == nil, nil
		})
		if err != nil {
			return
		}
	} else {
		select {
		case <-ctx.Done():
			return
		case <-time.After(settle):
		}
	}
	p.mu.Lock()
	p.backPID = pid
	p.mu.Unlock()
	p.spec.Report(fmt.Sprintf("%s is back (pid %d), %s after it died", p.spec.Name, pid, time.Since(diedAt).Round(100*time.Millisecond)))
	if p.spec.Back != nil {
		p.spec.Back()
	}
}

// exitStatus describes how an incarnation ended: "exit status 1", "signal: killed".
func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Died is nil while the first incarnation runs, and afterwards says how it ended: callers
// waiting for a component to come up stop waiting when it crashed.
func (p *Process) Died() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.died
}

// PID is the running incarnation's process id, or 0 between a death and the restart.
func (p *Process) PID() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// logAndLastLine names the log and quotes its last line, if the incarnation that just ended
// wrote one: a report of a death then says why without a look into the log, which matters
// most where the log is gone by the time anyone reads the report (a CI run's temp dirs).
func (p *Process) logAndLastLine() string {
	p.mu.Lock()
	from := p.outputStart
	p.mu.Unlock()
	where := "log: " + p.LogPath()
	if line := lastLine(p.LogPath(), from); line != "" {
		where += ", last line: " + line
	}
	return where
}

// tailBytes is how much of a log's end lastLine reads, and maxLineRunes how much of the line
// it quotes: a controller's JSON log line carries its error near the end, within a few hundred
// bytes.
const (
	tailBytes    = 4096
	maxLineRunes = 400
)

// lastLine is the last non-empty line of the log at path from offset from on (where the last
// incarnation's output begins), shortened to maxLineRunes; "" if there is none.
func lastLine(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() <= from {
		return ""
	}
	offset := max(info.Size()-tailBytes, from)
	buf := make([]byte, info.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	lines := strings.Split(string(buf), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if line == "" || (i == 0 && offset > from) { // a line cut by the read is not quoted
			continue
		}
		if runes := []rune(line); len(runes) > maxLineRunes {
			line = string(runes[:maxLineRunes]) + "…"
		}
		return line
	}
	return ""
}

// LogPath is the child's log file.
func (p *Process) LogPath() string { return p.log.Name() }
