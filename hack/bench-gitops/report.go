package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/internal/benchharness"
)

// plinthRound is what one Plinth round measured, each time from the OCIArtifact's create.
type plinthRound struct {
	// pushed: its OCIRepository appeared on the target. plinth-controller applies it right
	// after the push, so this is the finalizer write, the registry lookup and the push.
	pushed time.Duration
	// repoReady: the OCIRepository is Ready with the pushed artifact.
	repoReady time.Duration
	// applied: the Kustomization is Ready with the pushed revision applied.
	applied time.Duration
	// ready: the OCIArtifact reports the target Ready with the revision: Plinth's time.
	ready time.Duration
	// pushedAt is status.pushedAt minus the creation time; both are whole seconds.
	pushedAt time.Duration
}

// floorRound is what one floor round measured.
type floorRound struct {
	// push is fluxcd/pkg/oci's push of the files, timed on its own.
	push time.Duration
	// repoReady and applied run from the create of the OCIRepository: it is Ready with the
	// pushed artifact; the Kustomization is Ready with its revision applied.
	repoReady, applied time.Duration
}

// median is the middle value (the mean of the two middle ones for an even count); zero for
// none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// medianOf is the median of f over the rounds.
func medianOf[R any](rounds []R, f func(R) time.Duration) time.Duration {
	ds := make([]time.Duration, 0, len(rounds))
	for _, r := range rounds {
		ds = append(ds, f(r))
	}
	return median(ds)
}

// summary is the medians of the measured rounds and the ratios the issue sets targets on.
type summary struct {
	rounds                                     int
	plinth, plinthPush, floor, floorPush       time.Duration
	plinthToRepoReady, plinthToApplied, report time.Duration // Plinth's phases after the push
	floorToApplied                             time.Duration // the floor's OCIRepository Ready → Kustomization Ready
	floorRepoReady                             time.Duration
	pushedAt                                   time.Duration
	// ratio is Plinth / (floor + floor's push): the target is ≤ 1.1.
	ratio float64
	// ratioAfterPush is (Plinth − Plinth's push) / floor: the delivery alone.
	ratioAfterPush float64
}

func summarize(p []plinthRound, f []floorRound) summary {
	s := summary{
		rounds:            min(len(p), len(f)),
		plinth:            medianOf(p, func(r plinthRound) time.Duration { return r.ready }),
		plinthPush:        medianOf(p, func(r plinthRound) time.Duration { return r.pushed }),
		plinthToRepoReady: medianOf(p, func(r plinthRound) time.Duration { return r.repoReady - r.pushed }),
		plinthToApplied:   medianOf(p, func(r plinthRound) time.Duration { return r.applied - r.repoReady }),
		report:            medianOf(p, func(r plinthRound) time.Duration { return r.ready - r.applied }),
		pushedAt:          medianOf(p, func(r plinthRound) time.Duration { return r.pushedAt }),
		floor:             medianOf(f, func(r floorRound) time.Duration { return r.applied }),
		floorPush:         medianOf(f, func(r floorRound) time.Duration { return r.push }),
		floorRepoReady:    medianOf(f, func(r floorRound) time.Duration { return r.repoReady }),
		floorToApplied:    medianOf(f, func(r floorRound) time.Duration { return r.applied - r.repoReady }),
	}
	if d := s.floor + s.floorPush; d > 0 {
		s.ratio = s.plinth.Seconds() / d.Seconds()
	}
	if s.floor > 0 {
		s.ratioAfterPush = (s.plinth - s.plinthPush).Seconds() / s.floor.Seconds()
	}
	return s
}

// usage is where one side's rounds spent CPU: plinth-controller's seconds and every process's
// (this one is "self").
type usage struct {
	controllerCPU float64
	cpu           benchharness.Counts
	wall          time.Duration
}

// add adds one round's readings (before and after it) to u.
func (u *usage) add(controllerBefore, controllerAfter benchharness.Usage, cpuBefore, cpuAfter benchharness.Counts, wall time.Duration) {
	u.controllerCPU += controllerAfter.CPUSeconds - controllerBefore.CPUSeconds
	if u.cpu == nil {
		u.cpu = benchharness.Counts{}
	}
	for k, v := range cpuAfter.Sub(cpuBefore) {
		u.cpu[k] += v
	}
	u.wall += wall
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// table is the result as docs/benchmarks.md shows it: the headline row, then the phases.
func table(s summary, plinth, floor usage, peakRSSMiB float64) string {
	var b strings.Builder
	b.WriteString("| rounds | Plinth (create → Ready) | Plinth's push | floor's push | floor (create → Ready) | Plinth / (floor + push) | (Plinth − push) / floor | controller CPU (Plinth, floor) | controller peak RSS |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.2f× | %.2f× | %.2f s, %.2f s | %.0f MiB |\n", s.rounds, ms(s.plinth), ms(s.plinthPush),
		ms(s.floorPush), ms(s.floor), s.ratio, s.ratioAfterPush, plinth.controllerCPU, floor.controllerCPU, peakRSSMiB)
	b.WriteString("\n| phase (medians) | Plinth | floor |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| push | %s (create → OCIRepository on the target) | %s (fluxcd/pkg/oci) |\n", ms(s.plinthPush), ms(s.floorPush))
	fmt.Fprintf(&b, "| → OCIRepository Ready | %s | %s (from its create) |\n", ms(s.plinthToRepoReady), ms(s.floorRepoReady))
	fmt.Fprintf(&b, "| → Kustomization Ready | %s | %s |\n", ms(s.plinthToApplied), ms(s.floorToApplied))
	fmt.Fprintf(&b, "| → OCIArtifact Ready | %s | — |\n", ms(s.report))
	fmt.Fprintf(&b, "\nstatus.pushedAt − creationTimestamp (whole seconds): median %s\n", s.pushedAt)
	return b.String()
}

// cpuTable is each process's CPU seconds over each side's rounds, most on the Plinth side
// first.
func cpuTable(plinth, floor usage) string {
	names := slices.Collect(maps.Keys(plinth.cpu))
	for name := range floor.cpu {
		if _, ok := plinth.cpu[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if c := cmp.Compare(plinth.cpu[names[j]], plinth.cpu[names[i]]); c != 0 {
			return c < 0
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	b.WriteString("| process | CPU s, Plinth rounds | CPU s, floor rounds |\n| --- | --- | --- |\n")
	var pt, ft float64
	for _, name := range names {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f |\n", name, plinth.cpu[name], floor.cpu[name])
		pt, ft = pt+plinth.cpu[name], ft+floor.cpu[name]
	}
	fmt.Fprintf(&b, "| all (wall %.1f s and %.1f s) | %.2f | %.2f |\n", plinth.wall.Seconds(), floor.wall.Seconds(), pt, ft)
	return b.String()
}
