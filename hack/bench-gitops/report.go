package main

import (
	"fmt"
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
		plinth:            benchharness.MedianOf(p, func(r plinthRound) time.Duration { return r.ready }),
		plinthPush:        benchharness.MedianOf(p, func(r plinthRound) time.Duration { return r.pushed }),
		plinthToRepoReady: benchharness.MedianOf(p, func(r plinthRound) time.Duration { return r.repoReady - r.pushed }),
		plinthToApplied:   benchharness.MedianOf(p, func(r plinthRound) time.Duration { return r.applied - r.repoReady }),
		report:            benchharness.MedianOf(p, func(r plinthRound) time.Duration { return r.ready - r.applied }),
		pushedAt:          benchharness.MedianOf(p, func(r plinthRound) time.Duration { return r.pushedAt }),
		floor:             benchharness.MedianOf(f, func(r floorRound) time.Duration { return r.applied }),
		floorPush:         benchharness.MedianOf(f, func(r floorRound) time.Duration { return r.push }),
		floorRepoReady:    benchharness.MedianOf(f, func(r floorRound) time.Duration { return r.repoReady }),
		floorToApplied:    benchharness.MedianOf(f, func(r floorRound) time.Duration { return r.applied - r.repoReady }),
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
	return benchharness.CPUTable(benchharness.Side{Label: "Plinth rounds", CPU: plinth.cpu, Wall: plinth.wall},
		benchharness.Side{Label: "floor rounds", CPU: floor.cpu, Wall: floor.wall}, nil)
}
