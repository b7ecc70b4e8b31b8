package benchfloor

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/internal/benchharness"
)

func TestReconcileReport(t *testing.T) {
	got := ReconcileReport(benchharness.Counts{"tenantcompute success": 900, "tenantcompute conflict": 100, "cluster success": 4},
		benchharness.Counts{"tenantcompute": 250, "cluster": 0.2, "idle": 1})
	for _, want := range []string{"     900 tenantcompute success\n", "tenantcompute: 250.0 s in reconciles, 250 ms each\n",
		"cluster: 0.2 s in reconciles, 50 ms each\n", "idle: 1.0 s in reconciles, 0 ms each\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
}
