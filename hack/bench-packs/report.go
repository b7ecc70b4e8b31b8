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

// summary is the medians of the measured rounds and the ratio the issue sets a target on.
type summary struct {
	rounds int
	// pack is create → instance Ready; its phases: instance (the chart pulled and rendered, the
	// revision kept, the instance created), then delivered (the objects applied, Ready);
	// driftPass is the controller's first drift pass after Ready.
	pack, instance, delivered, driftPass time.Duration
	// helm is setup, pull and install; helmPull its setup and pull, helmInstall the install.
	helm, helmPull, helmInstall time.Duration
	// ratio is pack / helm: the target is ≤ 1.0.
	ratio float64
}

func summarize(p []packRound, h []helmRound) summary {
	s := summary{
		rounds:      min(len(p), len(h)),
		pack:        benchharness.MedianOf(p, func(r packRound) time.Duration { return r.ready }),
		instance:    benchharness.MedianOf(p, func(r packRound) time.Duration { return r.instance }),
		delivered:   benchharness.MedianOf(p, func(r packRound) time.Duration { return r.ready - r.instance }),
		driftPass:   benchharness.MedianOf(p, func(r packRound) time.Duration { return r.driftPass }),
		helm:        benchharness.MedianOf(h, func(r helmRound) time.Duration { return r.installed }),
		helmPull:    benchharness.MedianOf(h, func(r helmRound) time.Duration { return r.pulled }),
		helmInstall: benchharness.MedianOf(h, func(r helmRound) time.Duration { return r.installed - r.pulled }),
	}
	if s.helm > 0 {
		s.ratio = s.pack.Seconds() / s.helm.Seconds()
	}
	return s
}

// usage is what one side's measured rounds used, summed.
type usage struct {
	controllerCPU float64
	cpu           benchharness.Counts
	requests      benchharness.Counts
	wall          time.Duration
}

// add adds one round's window to u.
func (u *usage) add(w window) {
	u.controllerCPU += w.controllerCPU
	if u.cpu == nil {
		u.cpu, u.requests = benchharness.Counts{}, benchharness.Counts{}
	}
	for k, v := range w.cpu {
		u.cpu[k] += v
	}
	for k, v := range w.requests {
		u.requests[k] += v
	}
	u.wall += w.wall
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// table is the result as docs/benchmarks.md shows it: the headline row, then the phases.
func table(s summary, pack, helm usage, peakRSSMiB float64) string {
	var b strings.Builder
	b.WriteString("| rounds | pack (create → instance Ready) | Helm (pull + install) | pack / Helm | controller CPU (pack rounds) | Helm SDK CPU (Helm rounds) | controller peak RSS |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| %d | %s | %s | %.2f× | %.2f s | %.2f s | %.0f MiB |\n", s.rounds, ms(s.pack), ms(s.helm), s.ratio,
		pack.controllerCPU, helm.cpu["self"], peakRSSMiB)
	b.WriteString("\n| phase (medians) | pack | Helm |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| chart pulled and rendered | %s (create → revision kept, instance created) | %s (setup, pull, load) |\n", ms(s.instance), ms(s.helmPull))
	fmt.Fprintf(&b, "| → objects applied | %s (→ instance Ready) | %s (action.Install) |\n", ms(s.delivered), ms(s.helmInstall))
	fmt.Fprintf(&b, "| first drift pass after Ready (not counted) | %s | — |\n", ms(s.driftPass))
	return b.String()
}

// processName names a process of the CPU table; "self" is this one, which runs the Helm SDK.
func processName(name string) string {
	if name == "self" {
		return "bench-packs (the Helm SDK)"
	}
	return name
}

// clientResources are the resources the two sides' own requests are about: the chart's kinds
// and namespaces (kube-controller-manager's answers to the Deployments, their status and
// ReplicaSets, are left out: they fall into a round's window or after it depending on how
// long the round takes, not on the client).
var clientResources = map[string]bool{"configmaps": true, "secrets": true, "services": true, "deployments": true, "namespaces": true}

// clientRequests keeps the counts ("group/resource/subresource VERB[ dryRun][ code]") of
// clientResources without a subresource, keyed "resource VERB[ dryRun][ code]".
func clientRequests(c benchharness.Counts) benchharness.Counts {
	out := benchharness.Counts{}
	for key, v := range c {
		path, verb, _ := strings.Cut(key, " ")
		parts := strings.Split(path, "/")
		if len(parts) != 3 || parts[2] != "" || !clientResources[parts[1]] {
			continue
		}
		out[parts[1]+" "+verb] += v
	}
	return out
}

// requestTable is kube-apiserver's requests per round about the chart's kinds and namespaces
// on each side, most first (both sides' Secrets include their release or revision Secrets).
func requestTable(pack, helm usage, rounds int) string {
	p, h := clientRequests(pack.requests), clientRequests(helm.requests)
	keys := slices.Collect(maps.Keys(p))
	for k := range h {
		if _, ok := p[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if c := cmp.Compare(p[keys[j]]+h[keys[j]], p[keys[i]]+h[keys[i]]); c != 0 {
			return c < 0
		}
		return keys[i] < keys[j]
	})
	n := float64(max(rounds, 1))
	var b strings.Builder
	b.WriteString("| kube-apiserver requests per round (the chart's kinds, namespaces) | pack | Helm |\n| --- | --- | --- |\n")
	var pt, ht float64
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f |\n", k, p[k]/n, h[k]/n)
		pt, ht = pt+p[k], ht+h[k]
	}
	fmt.Fprintf(&b, "| all | %.0f | %.0f |\n", pt/n, ht/n)
	return b.String()
}

// driftTable is the drift figure: the medians of each kind of pass, the controller's own first
// pass, and the delivery of the pack.
func driftTable(d driftResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| drift pass over %d objects | passes | wall (median) | CPU, median (target < 1 s) | requests | dry-runs | kube-apiserver CPU |\n", d.objects)
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	row := func(what string, ps []passResult) {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %d | %.2f s |\n", what, len(ps),
			ms(benchharness.MedianOf(ps, func(p passResult) time.Duration { return p.wall })),
			ms(benchharness.MedianOf(ps, func(p passResult) time.Duration { return p.cpu })),
			benchharness.MedianOf(ps, func(p passResult) int64 { return p.requests }),
			benchharness.MedianOf(ps, func(p passResult) int64 { return p.dryRuns }),
			benchharness.MedianOf(ps, func(p passResult) float64 { return p.apiserverCPU }))
	}
	row("first pass (no baselines), drift.Checker in this process", d.first)
	row("steady pass (baselines kept), drift.Checker in this process", d.steady)
	fmt.Fprintf(&b, "| plinth-controller's own first pass after the delivery | 1 | %s | %.2f s (its process, /proc) | — | — | — |\n",
		ms(d.delivery.driftPass), d.delivery.driftPassControllerCPU)
	fmt.Fprintf(&b, "\nDelivery of the %d-object pack: create → instance Ready %s (rendered %s, instance %s); controller CPU %.2f s.\n",
		d.objects, ms(d.delivery.ready), ms(d.delivery.rendered), ms(d.delivery.instance), d.delivery.window.controllerCPU)
	return b.String()
}

// cpuTable is each process's CPU seconds over each side's measured rounds (create → Ready,
// setup → installed), most on the pack side first.
func cpuTable(pack, helm usage) string {
	return benchharness.CPUTable(benchharness.Side{Label: "pack rounds", CPU: pack.cpu, Wall: pack.wall},
		benchharness.Side{Label: "Helm rounds", CPU: helm.cpu, Wall: helm.wall}, processName)
}
