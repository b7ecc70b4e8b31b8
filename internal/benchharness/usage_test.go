package benchharness

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseCPUSeconds(t *testing.T) {
	// The command name may hold spaces and parentheses; utime 250 and stime 50 ticks.
	stat := "4242 (plinth (ctl) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 123 0 0"
	got, err := parseCPUSeconds(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3 {
		t.Errorf("got %v s, want 3", got)
	}
	for name, bad := range map[string]string{
		"no command": "4242 S 1",
		"too short":  "4242 (x) S 1 2 3",
		"not a tick": "4242 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 abc 50 0",
	} {
		if _, err := parseCPUSeconds(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseStatusKiB(t *testing.T) {
	status := "Name:\tplinth\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1000 kB\n"
	for field, want := range map[string]int{"VmHWM": 123456, "VmRSS": 1000} {
		got, err := parseStatusKiB(status, field)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: got %d KiB, want %d", field, got, want)
		}
	}
	if u := (Usage{PeakRSSKiB: 2048}); u.PeakRSSMiB() != 2 {
		t.Errorf("PeakRSSMiB = %v, want 2", u.PeakRSSMiB())
	}
	for name, bad := range map[string]string{"missing": "VmRSS:\t1 kB\n", "empty": "VmHWM:\n", "not a number": "VmHWM:\tlots kB\n"} {
		if _, err := parseStatusKiB(bad, "VmHWM"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestReadUsageOfThisProcess(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.PeakRSSKiB <= 0 || u.RSSKiB <= 0 || u.RSSKiB > u.PeakRSSKiB || u.CPUSeconds < 0 {
		t.Errorf("implausible usage %+v", u)
	}
	if _, err := ReadUsage(0); err == nil {
		t.Error("no error for pid 0")
	}
}

func TestParseStat(t *testing.T) {
	name, ppid, cpu, err := parseStat("4242 (kube-apiserver) S 77 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 123 0 0")
	if err != nil {
		t.Fatal(err)
	}
	if name != "kube-apiserver" || ppid != 77 || cpu != 3 {
		t.Errorf("got %q %d %v", name, ppid, cpu)
	}
	for name, bad := range map[string]string{
		"no name":  "4242 S 77",
		"bad ppid": "4242 (x) S pp 4242 4242 0 -1 4194560 100 0 0 0 250 50 0",
		"short":    "4242 (x) S 77",
	} {
		if _, _, _, err := parseStat(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestProcessCPUCountsChildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 5")
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := ProcessCPU()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got["self"]; !ok {
			t.Fatalf("no self in %v", got)
		}
		if got["sh"] > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's CPU never showed: %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
