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
}

func TestOptionsValidate(t *testing.T) {
	good := options{n: 10, workers: 2, rounds: 1, lists: 1}
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]options{
		"no objects":     {n: 0, workers: 2, rounds: 1, lists: 1},
		"too many":       {n: 100000, workers: 2, rounds: 1, lists: 1},
		"no workers":     {n: 10, workers: 0, rounds: 1, lists: 1},
		"no rounds":      {n: 10, workers: 2, rounds: 0, lists: 1},
		"negative lists": {n: 10, workers: 2, rounds: 1, lists: -1},
	} {
		if err := o.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
