package benchfloor

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/internal/benchharness"
)

// Diagnosis is what a --diagnose run writes beside its CPU profiles: kube-apiserver's requests
// (every verb) during Plinth's run and during the floor's, where the CPU went (CPUReport), and
// plinth-controller's reconciles so far, read from its metrics at ControllerURL.
type Diagnosis struct {
	PlinthRequests, FloorRequests benchharness.Counts
	CPU                           string
	ControllerURL                 string
}

// Write writes the diagnosis into dir: kube-apiserver.requests.{plinth,floor}.txt, cpu.txt and
// plinth-controller.reconciles.txt.
func (d Diagnosis) Write(ctx context.Context, dir string) error {
	if err := d.PlinthRequests.WriteFile(filepath.Join(dir, "kube-apiserver.requests.plinth.txt")); err != nil {
		return err
	}
	if err := d.FloorRequests.WriteFile(filepath.Join(dir, "kube-apiserver.requests.floor.txt")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.txt"), []byte(d.CPU), 0o644); err != nil {
		return err
	}
	reconciles, err := benchharness.Reconciles(ctx, d.ControllerURL)
	if err != nil {
		return err
	}
	seconds, err := benchharness.ReconcileSeconds(ctx, d.ControllerURL)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "plinth-controller.reconciles.txt"), []byte(ReconcileReport(reconciles, seconds)), 0o644)
}

// ReconcileReport lists the reconciles by controller and result ("controller result" keys),
// then each controller's reconcile time: in all and per reconcile. With W workers, a
// controller whose time in reconciles approaches W × the run's wall time is short of workers.
func ReconcileReport(reconciles, seconds benchharness.Counts) string {
	perController := map[string]float64{}
	for key, n := range reconciles {
		controller, _, _ := strings.Cut(key, " ")
		perController[controller] += n
	}
	var b strings.Builder
	b.WriteString(reconciles.String())
	for _, controller := range slices.Sorted(maps.Keys(seconds)) {
		mean := 0.0
		if n := perController[controller]; n > 0 {
			mean = seconds[controller] / n
		}
		fmt.Fprintf(&b, "%s: %.1f s in reconciles, %.0f ms each\n", controller, seconds[controller], mean*1000)
	}
	return b.String()
}
