package benchfloor

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/internal/benchharness"
)

// CPUReport is each process's CPU time in both runs, most in the Plinth run first, and how
// busy the machine's cores were.
func CPUReport(plinth benchharness.Counts, plinthWall time.Duration, floor benchharness.Counts, floorWall time.Duration, cores int) string {
	names := slices.Collect(maps.Keys(plinth))
	for name := range floor {
		if _, ok := plinth[name]; !ok {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(plinth[b], plinth[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s %12s %12s\n", "CPU seconds", "Plinth run", "floor run")
	var pt, ft float64
	for _, name := range names {
		fmt.Fprintf(&b, "%-26s %12.1f %12.1f\n", name, plinth[name], floor[name])
		pt, ft = pt+plinth[name], ft+floor[name]
	}
	fmt.Fprintf(&b, "%-26s %12.1f %12.1f\n", "all", pt, ft)
	fmt.Fprintf(&b, "%-26s %12.1f %12.1f\n", "wall seconds", plinthWall.Seconds(), floorWall.Seconds())
	busy := func(cpu float64, wall time.Duration) float64 { return 100 * cpu / wall.Seconds() / float64(cores) }
	fmt.Fprintf(&b, "%-26s %11.0f%% %11.0f%%\n", fmt.Sprintf("busy (of %d cores)", cores), busy(pt, plinthWall), busy(ft, floorWall))
	return b.String()
}
