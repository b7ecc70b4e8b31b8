package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/benchharness"
)

const msec = time.Millisecond

func TestSummarize(t *testing.T) {
	plinth := []plinthRound{
		{pushed: 100 * msec, repoReady: 400 * msec, applied: 900 * msec, ready: 2000 * msec, pushedAt: time.Second},
		{pushed: 120 * msec, repoReady: 500 * msec, applied: 1100 * msec, ready: 2400 * msec},
		{pushed: 300 * msec, repoReady: 700 * msec, applied: 1200 * msec, ready: 1500 * msec},
	}
	floor := []floorRound{
		{push: 50 * msec, repoReady: 300 * msec, applied: 800 * msec},
		{push: 70 * msec, repoReady: 350 * msec, applied: 1000 * msec},
		{push: 60 * msec, repoReady: 200 * msec, applied: 900 * msec},
	}
	s := summarize(plinth, floor)
	want := summary{rounds: 3, plinth: 2000 * msec, plinthPush: 120 * msec, floor: 900 * msec, floorPush: 60 * msec,
		plinthToRepoReady: 380 * msec, plinthToApplied: 500 * msec, report: 1100 * msec,
		floorToApplied: 650 * msec, floorRepoReady: 300 * msec}
	got := s
	got.ratio, got.ratioAfterPush = 0, 0
	if got != want {
		t.Errorf("summary\n%+v\nwant\n%+v", got, want)
	}
	if math.Abs(s.ratio-2.0/0.96) > 1e-9 || math.Abs(s.ratioAfterPush-1.88/0.9) > 1e-9 {
		t.Errorf("ratios %v and %v, want 2.0/(0.9+0.06) and (2.0−0.12)/0.9", s.ratio, s.ratioAfterPush)
	}
	if empty := summarize(nil, nil); empty.ratio != 0 || empty.ratioAfterPush != 0 || empty.rounds != 0 {
		t.Errorf("no rounds: %+v", empty)
	}
	if uneven := summarize(plinth, floor[:2]); uneven.rounds != 2 {
		t.Errorf("rounds %d, want the fewer of the sides'", uneven.rounds)
	}
}

func TestUsageAdd(t *testing.T) {
	var u usage
	u.add(benchharness.Usage{CPUSeconds: 1}, benchharness.Usage{CPUSeconds: 1.5}, benchharness.Counts{"self": 1, "etcd": 2},
		benchharness.Counts{"self": 1.25, "etcd": 2}, time.Second)
	u.add(benchharness.Usage{CPUSeconds: 2}, benchharness.Usage{CPUSeconds: 2.25}, benchharness.Counts{"self": 2},
		benchharness.Counts{"self": 2.5, "kube-apiserver": 1}, 2*time.Second)
	if u.controllerCPU != 0.75 || u.wall != 3*time.Second || u.cpu["self"] != 0.75 || u.cpu["kube-apiserver"] != 1 || u.cpu["etcd"] != 0 {
		t.Errorf("usage %+v", u)
	}
}

func TestTables(t *testing.T) {
	s := summary{rounds: 5, plinth: 2500 * msec, plinthPush: 150 * msec, floor: 1200 * msec, floorPush: 80 * msec,
		plinthToRepoReady: 300 * msec, plinthToApplied: 700 * msec, report: 900 * msec, floorRepoReady: 400 * msec,
		floorToApplied: 650 * msec, pushedAt: time.Second, ratio: 1.953, ratioAfterPush: 1.958}
	out := table(s, usage{controllerCPU: 0.42}, usage{controllerCPU: 0.05}, 98.6)
	for _, want := range []string{
		"| 5 | 2500 ms | 150 ms | 80 ms | 1200 ms | 1.95× | 1.96× | 0.42 s, 0.05 s | 99 MiB |",
		"| push | 150 ms (create → OCIRepository on the target) | 80 ms (fluxcd/pkg/oci) |",
		"| → OCIRepository Ready | 300 ms | 400 ms (from its create) |",
		"| → Kustomization Ready | 700 ms | 650 ms |",
		"| → OCIArtifact Ready | 900 ms | — |",
		"median 1s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	cpu := cpuTable(usage{cpu: benchharness.Counts{"plinth-controller": 0.5, "kube-apiserver": 2, "self": 0.5}, wall: 10 * time.Second},
		usage{cpu: benchharness.Counts{"kube-apiserver": 1.5, "source-controller": 0.3}, wall: 6 * time.Second})
	lines := strings.Split(strings.TrimSpace(cpu), "\n")
	want := []string{
		"| process | CPU s, Plinth rounds | CPU s, floor rounds |", "| --- | --- | --- |",
		"| kube-apiserver | 2.00 | 1.50 |", "| plinth-controller | 0.50 | 0.00 |", "| self | 0.50 | 0.00 |",
		"| source-controller | 0.00 | 0.30 |", "| all (wall 10.0 s and 6.0 s) | 3.00 | 1.80 |",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("CPU table\n%s\nwant\n%s", cpu, strings.Join(want, "\n"))
	}
}
