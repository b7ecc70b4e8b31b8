package main

import (
	"strings"
	"testing"
)

func TestParseCPUTicks(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int64
	}{
		// utime 1500 and stime 250 are the 14th and 15th fields.
		{"4242 (plinth-apiserver) S 1 4242 4242 0 -1 4194560 90 0 0 0 1500 250 0 0 20 0 12 0 100 0 0", 1750},
		// The command may hold spaces and parentheses; only the last ")" ends it.
		{"7 (a b) c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0", 7},
		{"7 (truncated", -1},
		{"7 (x) S 1 2", -1},
		{"7 (x) S 1 7 7 0 -1 0 0 0 0 0 many 4 0 0", -1},
	} {
		if got := parseCPUTicks(tc.stat); got != tc.want {
			t.Errorf("parseCPUTicks(%q) = %d, want %d", tc.stat, got, tc.want)
		}
	}
}

func TestCPURowAndRatios(t *testing.T) {
	r := &report{
		Targets: []string{"CRD", "Plinth via aggregator", "Plinth direct", "etcd", "ConfigMap"},
		Results: map[string]map[string]Result{}, RSSMiB: map[string]float64{},
		CPUPerGet: map[string]CPUPerGet{
			"CRD":                   medianCPU([]CPUPerGet{{KubeAPIServerMs: 0.7}, {KubeAPIServerMs: 0.9}, {KubeAPIServerMs: 0.8}}),
			"Plinth via aggregator": {KubeAPIServerMs: 0.5, PlinthAPIServerMs: 0.5},
			"ConfigMap":             {KubeAPIServerMs: 0.4},
		},
	}
	out := r.markdown()
	for _, want := range []string{
		"| CPU per get (ms): kube-apiserver + plinth-apiserver | 0.80 + 0.00 = 0.80 | 0.50 + 0.50 = 1.00 | — | — | 0.40 + 0.00 = 0.40 | 0.80 | 0.40 | |",
		"| b/a | b/e | b/d |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report has no %q:\n%s", want, out)
		}
	}
}
