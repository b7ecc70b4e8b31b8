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
	pack := []packRound{
		{rendered: 100 * msec, instance: 150 * msec, ready: 6000 * msec, driftPass: 2000 * msec},
		{rendered: 120 * msec, instance: 200 * msec, ready: 6400 * msec, driftPass: 2200 * msec},
		{rendered: 300 * msec, instance: 350 * msec, ready: 5000 * msec, driftPass: 1800 * msec},
	}
	helm := []helmRound{{pulled: 50 * msec, installed: 5000 * msec}, {pulled: 70 * msec, installed: 6000 * msec}, {pulled: 60 * msec, installed: 5500 * msec}}
	s := summarize(pack, helm)
	got := s
	got.ratio = 0
	want := summary{rounds: 3, pack: 6000 * msec, instance: 200 * msec, delivered: 5850 * msec, driftPass: 2000 * msec,
		helm: 5500 * msec, helmPull: 60 * msec, helmInstall: 5440 * msec}
	if got != want {
		t.Errorf("summary\n%+v\nwant\n%+v", got, want)
	}
	if math.Abs(s.ratio-6.0/5.5) > 1e-9 {
		t.Errorf("ratio %v, want 6.0/5.5", s.ratio)
	}
	if empty := summarize(nil, nil); empty.ratio != 0 || empty.rounds != 0 {
		t.Errorf("no rounds: %+v", empty)
	}
	if uneven := summarize(pack, helm[:2]); uneven.rounds != 2 {
		t.Errorf("rounds %d, want the fewer of the sides'", uneven.rounds)
	}
}

func TestUsageAdd(t *testing.T) {
	var u usage
	u.add(window{controllerCPU: 0.5, cpu: benchharness.Counts{"self": 0.25, "etcd": 1}, requests: benchharness.Counts{"/configmaps/ GET": 50}, wall: time.Second})
	u.add(window{controllerCPU: 0.25, cpu: benchharness.Counts{"self": 0.5}, requests: benchharness.Counts{"/configmaps/ GET": 50, "/configmaps/ APPLY": 50}, wall: 2 * time.Second})
	if u.controllerCPU != 0.75 || u.wall != 3*time.Second || u.cpu["self"] != 0.75 || u.cpu["etcd"] != 1 ||
		u.requests["/configmaps/ GET"] != 100 || u.requests["/configmaps/ APPLY"] != 50 {
		t.Errorf("usage %+v", u)
	}
}

func TestTables(t *testing.T) {
	s := summary{rounds: 5, pack: 6200 * msec, instance: 190 * msec, delivered: 6010 * msec, driftPass: 2100 * msec,
		helm: 6000 * msec, helmPull: 80 * msec, helmInstall: 5920 * msec, ratio: 1.0333}
	out := table(s, usage{controllerCPU: 1.42}, usage{cpu: benchharness.Counts{"self": 2.5}}, 130.4)
	for _, want := range []string{
		"| 5 | 6200 ms | 6000 ms | 1.03× | 1.42 s | 2.50 s | 130 MiB |",
		"| chart pulled and rendered | 190 ms (create → revision kept, instance created) | 80 ms (setup, pull, load) |",
		"| → objects applied | 6010 ms (→ instance Ready) | 5920 ms (action.Install) |",
		"| first drift pass after Ready (not counted) | 2100 ms | — |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	cpu := cpuTable(usage{cpu: benchharness.Counts{"plinth-controller": 1.5, "kube-apiserver": 2, "self": 0.01}, wall: 30 * time.Second},
		usage{cpu: benchharness.Counts{"kube-apiserver": 1.8, "self": 2.5}, wall: 29 * time.Second})
	want := []string{
		"| process | CPU s, pack rounds | CPU s, Helm rounds |", "| --- | --- | --- |",
		"| kube-apiserver | 2.00 | 1.80 |", "| plinth-controller | 1.50 | 0.00 |", "| bench-packs (the Helm SDK) | 0.01 | 2.50 |",
		"| all (wall 30.0 s and 29.0 s) | 3.51 | 4.30 |",
	}
	if got := strings.Split(strings.TrimSpace(cpu), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CPU table\n%s\nwant\n%s", cpu, strings.Join(want, "\n"))
	}
}

func TestRequestTable(t *testing.T) {
	pack := usage{requests: benchharness.Counts{"/configmaps/ GET 404": 100, "/configmaps/ APPLY": 100, "apps/deployments/ APPLY": 100,
		"/namespaces/ POST 409": 2, "apps/deployments/status PUT": 300, "apps/replicasets/ POST": 100, "/secrets/ APPLY dryRun": 40}}
	helm := usage{requests: benchharness.Counts{"/configmaps/ GET 404": 100, "/configmaps/ POST": 100, "apps/deployments/ POST": 100, "apps/deployments/status PUT": 50}}
	out := requestTable(pack, helm, 2)
	want := []string{
		"| kube-apiserver requests per round (the chart's kinds, namespaces) | pack | Helm |", "| --- | --- | --- |",
		"| configmaps GET 404 | 50 | 50 |", "| configmaps APPLY | 50 | 0 |", "| configmaps POST | 0 | 50 |", "| deployments APPLY | 50 | 0 |",
		"| deployments POST | 0 | 50 |", "| secrets APPLY dryRun | 20 | 0 |", "| namespaces POST 409 | 1 | 0 |", "| all | 171 | 150 |",
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("request table\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}
	if empty := requestTable(usage{}, usage{}, 0); !strings.Contains(empty, "| all | 0 | 0 |") {
		t.Errorf("no rounds:\n%s", empty)
	}
}

func TestDriftTable(t *testing.T) {
	d := driftResult{
		objects:  1000,
		delivery: packRound{rendered: 300 * msec, instance: 350 * msec, ready: 40 * time.Second, driftPass: 19 * time.Second, driftPassControllerCPU: 0.8, window: window{controllerCPU: 3.2}},
		first: []passResult{{wall: 19 * time.Second, cpu: 700 * msec, requests: 1004, dryRuns: 1000, apiserverCPU: 3},
			{wall: 20 * time.Second, cpu: 600 * msec, requests: 1004, dryRuns: 1000, apiserverCPU: 2.5},
			{wall: 18 * time.Second, cpu: 800 * msec, requests: 1004, dryRuns: 1000, apiserverCPU: 3.5}},
		steady: []passResult{{wall: 90 * msec, cpu: 60 * msec, requests: 4, apiserverCPU: 0.1}},
	}
	out := driftTable(d)
	for _, want := range []string{
		"| drift pass over 1000 objects | passes | wall (median) | CPU, median (target < 1 s) | requests | dry-runs | kube-apiserver CPU |",
		"| first pass (no baselines), drift.Checker in this process | 3 | 19000 ms | 700 ms | 1004 | 1000 | 3.00 s |",
		"| steady pass (baselines kept), drift.Checker in this process | 1 | 90 ms | 60 ms | 4 | 0 | 0.10 s |",
		"| plinth-controller's own first pass after the delivery | 1 | 19000 ms | 0.80 s (its process, /proc) | — | — | — |",
		"Delivery of the 1000-object pack: create → instance Ready 40000 ms (rendered 300 ms, instance 350 ms); controller CPU 3.20 s.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("drift table lacks %q:\n%s", want, out)
		}
	}
}
