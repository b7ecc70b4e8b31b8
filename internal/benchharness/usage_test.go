package benchharness

import (
	"os"
	"testing"
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

func TestParsePeakRSS(t *testing.T) {
	got, err := parsePeakRSS("Name:\tplinth\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1000 kB\n")
	if err != nil {
		t.Fatal(err)
	}
	if got != 123456 {
		t.Errorf("got %d KiB, want 123456", got)
	}
	if u := (Usage{PeakRSSKiB: 2048}); u.PeakRSSMiB() != 2 {
		t.Errorf("PeakRSSMiB = %v, want 2", u.PeakRSSMiB())
	}
	for name, bad := range map[string]string{"missing": "VmRSS:\t1 kB\n", "empty": "VmHWM:\n", "not a number": "VmHWM:\tlots kB\n"} {
		if _, err := parsePeakRSS(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestReadUsageOfThisProcess(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.PeakRSSKiB <= 0 || u.CPUSeconds < 0 {
		t.Errorf("implausible usage %+v", u)
	}
	if _, err := ReadUsage(0); err == nil {
		t.Error("no error for pid 0")
	}
}
