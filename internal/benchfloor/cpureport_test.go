package benchfloor

import (
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/benchharness"
)

func TestCPUReport(t *testing.T) {
	got := CPUReport(benchharness.Counts{"kube-apiserver": 30, "plinth-controller": 5}, 40*time.Second,
		benchharness.Counts{"kube-apiserver": 20, "kwok": 2}, 20*time.Second, 2)
	want := `CPU seconds                  Plinth run    floor run
kube-apiserver                     30.0         20.0
plinth-controller                   5.0          0.0
kwok                                0.0          2.0
all                                35.0         22.0
wall seconds                       40.0         20.0
busy (of 2 cores)                   44%          55%
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
