package benchharness

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Number is what a median is taken of.
type Number interface {
	int64 | float64 | time.Duration
}

// Median is the middle value (the mean of the two middle ones for an even count); zero for
// none. It does not reorder vs.
func Median[T Number](vs []T) T {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MedianOf is the median of f over the rounds.
func MedianOf[R any, T Number](rounds []R, f func(R) T) T {
	vs := make([]T, 0, len(rounds))
	for _, r := range rounds {
		vs = append(vs, f(r))
	}
	return Median(vs)
}

// Side is one side of a side-by-side run: its label, each process's CPU seconds over its
// measured rounds, and the wall time those rounds took.
type Side struct {
	Label string
	CPU   Counts
	Wall  time.Duration
}

// CPUTable is a Markdown table of each process's CPU seconds on two sides measured in one run,
// the processes most busy on the first side first, and a last row with the totals and each
// side's wall time. name renders a process's name (nil keeps it).
func CPUTable(first, second Side, name func(string) string) string {
	if name == nil {
		name = func(s string) string { return s }
	}
	names := slices.Collect(maps.Keys(first.CPU))
	for n := range second.CPU {
		if _, ok := first.CPU[n]; !ok {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(first.CPU[b], first.CPU[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "| process | CPU s, %s | CPU s, %s |\n| --- | --- | --- |\n", first.Label, second.Label)
	var ft, st float64
	for _, n := range names {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f |\n", name(n), first.CPU[n], second.CPU[n])
		ft, st = ft+first.CPU[n], st+second.CPU[n]
	}
	fmt.Fprintf(&b, "| all (wall %.1f s and %.1f s) | %.2f | %.2f |\n", first.Wall.Seconds(), second.Wall.Seconds(), ft, st)
	return b.String()
}
