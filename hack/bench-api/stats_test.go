package main

import (
	"testing"
	"time"
)

func TestMedianAndPercentiles(t *testing.T) {
	got := median([]Result{{Throughput: 3, P50: 1, P99: 9}, {Throughput: 1, P50: 2, P99: 7}, {Throughput: 2, P50: 3, P99: 8}})
	if got != (Result{Throughput: 2, P50: 2, P99: 8}) {
		t.Errorf("median = %+v", got)
	}
	if got := median([]Result{{Throughput: 1}, {Note: "not offered"}}); got.Note != "not offered" {
		t.Errorf("a note is lost: %+v", got)
	}
	l := &latencies{}
	for i := 1; i <= 100; i++ {
		l.add(time.Duration(i) * time.Millisecond)
	}
	r := l.result(100, 2*time.Second)
	if r.Throughput != 50 || r.P50 != 50 || r.P99 != 99 {
		t.Errorf("result = %+v", r)
	}
	// Nearest rank: with 10 samples the p99 is the largest, not the 9th.
	ten := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if p99, p50, p0 := percentile(ten, 0.99), percentile(ten, 0.50), percentile(ten, 0); p99 != 10 || p50 != 5 || p0 != 1 {
		t.Errorf("percentiles of 1..10: p99 %v, p50 %v, p0 %v", p99, p50, p0)
	}
}

func TestOptionsValidate(t *testing.T) {
	good := options{n: 10, workers: 2, rounds: 1, lists: 1, cpuWindow: time.Second}
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]options{
		"no objects":     {n: 0, workers: 2, rounds: 1, lists: 1},
		"too many":       {n: 100000, workers: 2, rounds: 1, lists: 1},
		"no workers":     {n: 10, workers: 0, rounds: 1, lists: 1},
		"no rounds":      {n: 10, workers: 2, rounds: 0, lists: 1},
		"negative lists": {n: 10, workers: 2, rounds: 1, lists: -1},
		"no CPU window":  {n: 10, workers: 2, rounds: 1, lists: 1, cpuWindow: 10 * time.Millisecond},
	} {
		if err := o.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
