package benchharness

import (
	"testing"
	"time"
)

func TestDurationsQuantile(t *testing.T) {
	var d Durations
	for i := 100; i >= 1; i-- { // out of order on purpose
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond,
		0.001: time.Millisecond, 0: time.Millisecond, -1: time.Millisecond, 2: 100 * time.Millisecond} {
		if got := d.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %s, want %s", q, got, want)
		}
	}
	if d[0] != 100*time.Millisecond {
		t.Error("Quantile sorted the caller's slice")
	}
	if got := (Durations{}).Quantile(0.5); got != 0 {
		t.Errorf("no durations: %s, want 0", got)
	}
	if got := (Durations{7 * time.Millisecond}).Quantile(0.99); got != 7*time.Millisecond {
		t.Errorf("one duration: p99 %s", got)
	}
	if got, want := d.String(), "n=100, median 50ms, p99 99ms, max 100ms"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
