package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// reports collects a process's reports.
type reports chan string

func (r reports) report(msg string) { r <- msg }

// next is the next report, or a failure after timeout.
func (r reports) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case msg := <-r:
		return msg
	case <-time.After(timeout):
		t.Fatalf("no report within %s", timeout)
		return ""
	}
}

// none fails if a report arrives within d.
func (r reports) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case msg := <-r:
		t.Errorf("unexpected report: %s", msg)
	case <-time.After(d):
	}
}

func start(t *testing.T, spec Spec) (*Process, reports) {
	t.Helper()
	r := make(reports, 100)
	spec.Report = r.report
	if spec.LogDir == "" {
		spec.LogDir = t.TempDir()
	}
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	return p, r
}

// alive reports whether pid runs: a zombie is dead, whether or not anyone reaps it.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func TestRestartsAChildThatDies(t *testing.T) {
	p, r := start(t, Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"},
		Backoff: wait.Backoff{Duration: 50 * time.Millisecond}})
	first := p.PID()
	if first == 0 || p.Died() != nil {
		t.Fatalf("after start: pid %d, died %v", first, p.Died())
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	died := r.next(t, 5*time.Second)
	want := "sleeper (pid " + strconv.Itoa(first) + ") died: signal: killed; restarting in 50ms"
	if !strings.HasPrefix(died, want) {
		t.Errorf("report %q, want it to begin with %q", died, want)
	}
	back := r.next(t, 5*time.Second)
	second := p.PID()
	if second == 0 || second == first || !strings.HasPrefix(back, "sleeper is back (pid "+strconv.Itoa(second)+")") {
		t.Errorf("after the restart: pid %d (was %d), report %q", second, first, back)
	}
	if err := p.Died(); err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Errorf("Died() = %v, want the first incarnation's end", err)
	}
}

func TestReportsBackOnlyWhenReady(t *testing.T) {
	dir := t.TempDir()
	flag := filepath.Join(dir, "ready")
	p, r := start(t, Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"},
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond},
		Ready: func(ctx context.Context) error {
			_, err := os.Stat(flag)
			return err
		}})
	_ = syscall.Kill(p.PID(), syscall.SIGKILL)
	r.next(t, 5*time.Second) // died
	r.none(t, 500*time.Millisecond)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if back := r.next(t, 5*time.Second); !strings.Contains(back, "is back") {
		t.Errorf("report %q, want the child back", back)
	}
}

// TestChildGetsItsEnvironment: Env is added to the inherited environment, wins over an
// inherited value of the same key, and is given again to a restarted child.
func TestChildGetsItsEnvironment(t *testing.T) {
	t.Setenv("PLINTH_SUPERVISOR_TEST", "inherited")
	t.Setenv("PLINTH_SUPERVISOR_KEPT", "kept")
	out := filepath.Join(t.TempDir(), "env")
	p, r := start(t, Spec{Name: "env", Path: "sh",
		Args:    []string{"-c", `echo "$PLINTH_SUPERVISOR_TEST $PLINTH_SUPERVISOR_KEPT" >> ` + out + `; exec sleep 60`},
		Env:     []string{"PLINTH_SUPERVISOR_TEST=set"},
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond}})
	lines := func(n int) []string {
		t.Helper()
		var got []string
		if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			data, _ := os.ReadFile(out)
			got = strings.Split(strings.TrimSpace(string(data)), "\n")
			return len(got) >= n && got[0] != "", nil
		}); err != nil {
			t.Fatalf("the child wrote %q, want %d lines", got, n)
		}
		return got
	}
	if got := lines(1); got[0] != "set kept" {
		t.Errorf("the child saw %q, want \"set kept\"", got[0])
	}
	_ = syscall.Kill(p.PID(), syscall.SIGKILL)
	r.next(t, 5*time.Second) // died
	if got := lines(2); got[1] != "set kept" {
		t.Errorf("the restarted child saw %q, want \"set kept\"", got[1])
	}
}

func TestBacksOffAChildThatKeepsDying(t *testing.T) {
	_, r := start(t, Spec{Name: "crasher", Path: "sh", Args: []string{"-c", "exit 3"},
		Backoff: wait.Backoff{Duration: 20 * time.Millisecond, Factor: 2, Steps: 100, Cap: 160 * time.Millisecond}})
	delay := regexp.MustCompile(`^crasher \(pid \d+\) died: exit status 3; restarting in (\w+) `)
	var got []string
	for len(got) < 6 {
		msg := r.next(t, 5*time.Second)
		m := delay.FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("unexpected report %q", msg)
		}
		got = append(got, m[1])
	}
	if want := "20ms 40ms 80ms 160ms 160ms 160ms"; strings.Join(got, " ") != want {
		t.Errorf("restart delays %v, want %s", got, want)
	}
}

func TestStopEndsChildAndSupervision(t *testing.T) {
	p, r := start(t, Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"},
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond}})
	pid := p.PID()
	began := time.Now()
	p.Stop(10 * time.Second)
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Stop took %s for a child that ends on SIGTERM", took)
	}
	if alive(pid) || p.PID() != 0 {
		t.Errorf("child %d still runs after Stop (PID() = %d)", pid, p.PID())
	}
	r.none(t, 200*time.Millisecond)
}

func TestStopKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	p, r := start(t, Spec{Name: "stubborn", Path: "sh", Args: []string{"-c", `trap "" TERM; while :; do sleep 0.05; done`},
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond}})
	pid := p.PID()
	time.Sleep(100 * time.Millisecond) // let the shell set its trap
	began := time.Now()
	p.Stop(300 * time.Millisecond)
	if took := time.Since(began); took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("Stop took %s, want the 300ms grace and then a kill", took)
	}
	if alive(pid) {
		t.Errorf("child %d still runs after Stop", pid)
	}
	r.none(t, 200*time.Millisecond)
}

func TestKillDoesNotRestart(t *testing.T) {
	p, r := start(t, Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"},
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond}})
	pid := p.PID()
	p.Kill()
	if alive(pid) || p.PID() != 0 {
		t.Errorf("child %d still runs after Kill", pid)
	}
	r.none(t, 200*time.Millisecond)
}

func TestStopAllStopsGroupsInOrderWithinTheTimeout(t *testing.T) {
	dir := t.TempDir()
	order := filepath.Join(dir, "order")
	child := func(name string, ignoreTerm bool) *Process {
		script := `trap 'echo ` + name + ` >> "$0"; exit 0' TERM; while :; do sleep 0.05; done`
		if ignoreTerm {
			script = `trap '' TERM; while :; do sleep 0.05; done`
		}
		p, _ := start(t, Spec{Name: name, Path: "sh", Args: []string{"-c", script, order}, LogDir: dir})
		return p
	}
	a, b, stubborn, c := child("a", false), child("b", false), child("stubborn", true), child("c", false)
	time.Sleep(200 * time.Millisecond) // let the shells set their traps
	began := time.Now()
	StopAll(1500*time.Millisecond, []*Process{a, nil}, []*Process{b, stubborn}, []*Process{c})
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("StopAll took %s, want at most its 1.5s timeout", took)
	}
	data, _ := os.ReadFile(order)
	if got := strings.Fields(string(data)); strings.Join(got, " ") != "a b c" {
		t.Errorf("stopped in order %v, want a b c", got)
	}
	for _, p := range []*Process{a, b, stubborn, c} {
		if p.PID() != 0 {
			t.Errorf("%s still runs", p.spec.Name)
		}
	}
}

// TestKillIncarnationRestartsAndWaitBackSeesTheNewOne: the killed incarnation's whole process
// group dies, supervision goes on, and WaitBack returns the next incarnation only once it is
// ready, never the killed one.
func TestKillIncarnationRestartsAndWaitBackSeesTheNewOne(t *testing.T) {
	dir := t.TempDir()
	flag := filepath.Join(dir, "ready")
	grandchild := filepath.Join(dir, "grandchild")
	p, r := start(t, Spec{Name: "group", Path: "sh",
		Args:    []string{"-c", `sleep 60 & echo $! > ` + grandchild + `; exec sleep 60`},
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond},
		Ready: func(ctx context.Context) error {
			_, err := os.Stat(flag)
			return err
		}})
	var gpid int
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		data, _ := os.ReadFile(grandchild)
		gpid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return gpid != 0, nil
	}); err != nil {
		t.Fatal("the child did not start its own child")
	}
	first := p.PID()
	killed, err := p.KillIncarnation()
	if err != nil || killed != first {
		t.Fatalf("KillIncarnation = %d, %v; want %d", killed, err, first)
	}
	r.next(t, 5*time.Second) // died
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if pid, err := p.WaitBack(ctx, killed); err == nil {
		t.Fatalf("WaitBack returned %d before the new incarnation was ready", pid)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := p.WaitBack(context.Background(), killed)
	if err != nil || back == killed || back != p.PID() {
		t.Fatalf("WaitBack = %d, %v; killed %d, running %d", back, err, killed, p.PID())
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !alive(gpid), nil
	}); err != nil {
		t.Errorf("the killed incarnation's child %d still runs", gpid)
	}
}

// TestKillIncarnationRefusesAStoppedProcess: after Stop there is nothing to kill or wait for.
func TestKillIncarnationRefusesAStoppedProcess(t *testing.T) {
	p, _ := start(t, Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"}})
	p.Stop(time.Second)
	if _, err := p.KillIncarnation(); err == nil {
		t.Error("KillIncarnation on a stopped process succeeded")
	}
	if _, err := p.WaitBack(context.Background(), 1); err == nil {
		t.Error("WaitBack on a stopped process succeeded")
	}
	var none *Process
	if _, err := none.KillIncarnation(); err == nil {
		t.Error("KillIncarnation on nil succeeded")
	}
}

// TestWaitBackIgnoresAnEarlierIncarnation: an incarnation killed before it was reported back
// (it was restarted and not ready yet) is not "back" because an older, dead incarnation once
// was; WaitBack waits for one started after it.
func TestWaitBackIgnoresAnEarlierIncarnation(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	p, _ := start(t, Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"},
		Backoff: wait.Backoff{Duration: 10 * time.Millisecond},
		Ready: func(context.Context) error {
			if !ready.Load() {
				return os.ErrNotExist
			}
			return nil
		}})
	first, err := p.KillIncarnation()
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.WaitBack(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	ready.Store(false)
	if _, err := p.KillIncarnation(); err != nil {
		t.Fatal(err)
	}
	var third int
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		third = p.PID()
		return third != 0 && third != second, nil
	}); err != nil {
		t.Fatal("no incarnation after the second")
	}
	// Killed before it was ever reported back.
	if killed, err := p.KillIncarnation(); err != nil || killed != third {
		t.Fatalf("KillIncarnation = %d, %v; want %d", killed, err, third)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if pid, err := p.WaitBack(ctx, third); err == nil {
		t.Fatalf("WaitBack after killing %d returned %d (the second incarnation was %d) while no later one was ready", third, pid, second)
	}
	ready.Store(true)
	back, err := p.WaitBack(context.Background(), third)
	if err != nil || back == third || back == second || back != p.PID() {
		t.Fatalf("WaitBack = %d, %v; killed %d and %d, running %d", back, err, second, third, p.PID())
	}
}

// A death's report quotes the last line the dead incarnation wrote, so that it says why
// where the log itself is gone by the time anyone reads the report; an incarnation that wrote
// nothing is not given an earlier one's line.
func TestADeathsReportQuotesTheLastLineOfTheLog(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran-once")
	// The first incarnation explains itself; the ones after it die silently.
	script := `if [ -e ` + marker + ` ]; then exit 1; fi; touch ` + marker + `; echo starting; ` +
		`echo '{"level":"error","msg":"problem running manager","error":"listen tcp 127.0.0.1:40467: bind: address already in use"}' >&2; exit 1`
	p, r := start(t, Spec{Name: "crasher", Path: "sh", Args: []string{"-c", script},
		Backoff: wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1, Steps: 100}})
	first := r.next(t, 5*time.Second)
	if !strings.HasSuffix(first, `, last line: {"level":"error","msg":"problem running manager","error":"listen tcp 127.0.0.1:40467: bind: address already in use"})`) {
		t.Errorf("first death's report: %s", first)
	}
	if died := p.Died(); died == nil || !strings.Contains(died.Error(), "bind: address already in use") {
		t.Errorf("Died() = %v, want the log's last line in it", died)
	}
	if second := r.next(t, 5*time.Second); strings.Contains(second, "last line") || !strings.HasSuffix(second, "crasher.log)") {
		t.Errorf("second death's report quotes a line the incarnation did not write: %s", second)
	}
}

func TestLastLineIsShortenedAndSkipsACutLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	header := "==== an earlier incarnation\nits last words\n==== this incarnation\n"
	long := strings.Repeat("x", tailBytes+10)
	if err := os.WriteFile(path, []byte(header+long+"\n"+strings.Repeat("é", maxLineRunes+5)+"\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	from := int64(len(header))
	if got := lastLine(path, from); got != strings.Repeat("é", maxLineRunes)+"…" {
		t.Errorf("lastLine = %q", got)
	}
	// Only a line cut by the read: nothing to quote.
	if err := os.WriteFile(path, []byte(header+long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lastLine(path, from); got != "" {
		t.Errorf("lastLine of a log whose only line is cut = %q", got)
	}
	// Nothing written since the incarnation started: an earlier incarnation's line is not quoted.
	if err := os.WriteFile(path, []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lastLine(path, from); got != "" {
		t.Errorf("lastLine of a silent incarnation = %q", got)
	}
	// A line of the child's own that looks like the header is quoted like any other.
	if err := os.WriteFile(path, []byte(header+"==== banner of the child\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lastLine(path, from); got != "==== banner of the child" {
		t.Errorf("lastLine = %q", got)
	}
	if got := lastLine(filepath.Join(t.TempDir(), "missing"), 0); got != "" {
		t.Errorf("lastLine of a missing log = %q", got)
	}
}

// TestRestartStartsTheNextIncarnationAtOnce: a restart asked for is reported with its reason,
// not as a death, skips the backoff, and Back runs once the new incarnation is back.
func TestRestartStartsTheNextIncarnationAtOnce(t *testing.T) {
	backs := make(chan struct{}, 4)
	p, r := start(t, Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"},
		Backoff: wait.Backoff{Duration: time.Hour},
		Back:    func() { backs <- struct{}{} }})
	first := p.PID()
	if err := p.Restart("etcd is back"); err != nil {
		t.Fatal(err)
	}
	want := "sleeper (pid " + strconv.Itoa(first) + ") restarted: etcd is back"
	if got := r.next(t, 5*time.Second); got != want {
		t.Errorf("report %q, want %q", got, want)
	}
	second, err := p.WaitBack(context.Background(), first)
	if err != nil || second == first {
		t.Fatalf("WaitBack = %d, %v; want an incarnation after %d (an hour's backoff was not skipped?)", second, err, first)
	}
	select {
	case <-backs:
	case <-time.After(5 * time.Second):
		t.Error("Back was not called once the restarted child was back")
	}
	if err := p.Died(); err != nil {
		t.Errorf("Died() = %v after a restart that was asked for", err)
	}
}

// TestRestartRefusesAStoppedProcess: there is nothing to restart after Stop.
func TestRestartRefusesAStoppedProcess(t *testing.T) {
	p, _ := start(t, Spec{Name: "sleeper", Path: "sleep", Args: []string{"60"}})
	p.Stop(time.Second)
	if err := p.Restart("no"); err == nil {
		t.Error("Restart of a stopped process succeeded")
	}
	var none *Process
	if err := none.Restart("no"); err == nil {
		t.Error("Restart of no process succeeded")
	}
}
