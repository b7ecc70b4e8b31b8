package benchharness

import (
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	const msec = time.Millisecond
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3}, 3},
		{[]time.Duration{5, 1, 3}, 3},
		{[]time.Duration{4, 1, 3, 2}, 2}, // (2+3)/2 in integer nanoseconds
		{[]time.Duration{10 * msec, 40 * msec, 20 * msec, 30 * msec}, 25 * msec},
	} {
		in := append([]time.Duration(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("Median sorted its input %v", c.in)
			}
		}
	}
	if got := Median([]int64{7, 1, 4, 2}); got != 3 {
		t.Errorf("Median of int64 = %d, want 3", got)
	}
	if got := Median([]float64{0.5, 0.25}); got != 0.375 {
		t.Errorf("Median of float64 = %v, want 0.375", got)
	}
	type round struct{ d time.Duration }
	if got := MedianOf([]round{{3}, {1}, {2}}, func(r round) time.Duration { return r.d }); got != 2 {
		t.Errorf("MedianOf = %v, want 2", got)
	}
}

func TestCPUTable(t *testing.T) {
	out := CPUTable(Side{Label: "pack rounds", CPU: Counts{"plinth-controller": 1.5, "kube-apiserver": 2, "self": 0.01}, Wall: 30 * time.Second},
		Side{Label: "Helm rounds", CPU: Counts{"kube-apiserver": 1.8, "self": 2.5, "helm": 0.2}, Wall: 29 * time.Second},
		func(n string) string {
			if n == "self" {
				return "the benchmark"
			}
			return n
		})
	want := []string{
		"| process | CPU s, pack rounds | CPU s, Helm rounds |", "| --- | --- | --- |",
		"| kube-apiserver | 2.00 | 1.80 |", "| plinth-controller | 1.50 | 0.00 |", "| the benchmark | 0.01 | 2.50 |",
		"| helm | 0.00 | 0.20 |", "| all (wall 30.0 s and 29.0 s) | 3.51 | 4.50 |",
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CPU table\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}
}
