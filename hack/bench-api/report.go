package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/internal/docsection"
)

const (
	opCreate       = "create"
	opGet          = "get"
	opGetCBOR      = "get, CBOR"
	opUpdateStatus = "update status"
	opWatch        = "watch (N events)"
)

func opList(encoding string) string { return "list all, " + encoding }

func operations() []string {
	ops := []string{opCreate, opGet, opGetCBOR, opUpdateStatus}
	for _, e := range encodings {
		ops = append(ops, opList(e.name))
	}
	return append(ops, opWatch)
}

// report is one run's medians.
type report struct {
	Date    string `json:"date"`
	Commit  string `json:"commit"`
	Machine string `json:"machine"`
	Objects int    `json:"objects"`
	Workers int    `json:"workers"`
	Rounds  int    `json:"rounds"`
	// PlinthArgs are the extra plinth-apiserver flags of the run (--plinth-arg).
	PlinthArgs  []string                     `json:"plinthArgs,omitempty"`
	ObjectBytes int                          `json:"objectBytes"`
	Targets     []string                     `json:"targets"`
	Results     map[string]map[string]Result `json:"results"` // target → operation → median
	RSSMiB      map[string]float64           `json:"rssMiB"`  // target → median resident memory after the load
	// CPUPerGet is, per target served over HTTP, the median across rounds of the CPU each
	// server spent per get.
	CPUPerGet map[string]CPUPerGet `json:"cpuPerGet"`
}

// CPUPerGet is what a get costs the two servers, read from /proc under a get load.
type CPUPerGet struct {
	GetsPerSecond     float64 `json:"getsPerSecond"`
	KubeAPIServerMs   float64 `json:"kubeAPIServerMilliseconds"`
	PlinthAPIServerMs float64 `json:"plinthAPIServerMilliseconds"`
}

// Total is both servers' CPU per get.
func (c CPUPerGet) Total() float64 { return c.KubeAPIServerMs + c.PlinthAPIServerMs }

// medianCPU takes each figure's median across rounds.
func medianCPU(rounds []CPUPerGet) CPUPerGet {
	pick := func(f func(CPUPerGet) float64) float64 {
		var values []Result
		for _, r := range rounds {
			values = append(values, Result{Throughput: f(r)})
		}
		return median(values).Throughput
	}
	return CPUPerGet{
		GetsPerSecond:     pick(func(c CPUPerGet) float64 { return c.GetsPerSecond }),
		KubeAPIServerMs:   pick(func(c CPUPerGet) float64 { return c.KubeAPIServerMs }),
		PlinthAPIServerMs: pick(func(c CPUPerGet) float64 { return c.PlinthAPIServerMs }),
	}
}

func newReport(o options, targets []target, rounds map[string]map[string][]Result, rss map[string][]float64, cpu map[string][]CPUPerGet, objectBytes int) *report {
	r := &report{
		Date: time.Now().UTC().Format("2006-01-02"), Commit: commit(), Machine: machine(),
		Objects: o.n, Workers: o.workers, Rounds: o.rounds, ObjectBytes: objectBytes, PlinthArgs: o.plinthArgs,
		Results: map[string]map[string]Result{}, RSSMiB: map[string]float64{}, CPUPerGet: map[string]CPUPerGet{},
	}
	for name, c := range cpu {
		r.CPUPerGet[name] = medianCPU(c)
	}
	for _, t := range targets {
		r.Targets = append(r.Targets, t.name())
		r.Results[t.name()] = map[string]Result{}
		for op, rs := range rounds[t.name()] {
			r.Results[t.name()][op] = median(rs)
		}
		var values []Result
		for _, v := range rss[t.name()] {
			values = append(values, Result{Throughput: v})
		}
		r.RSSMiB[t.name()] = median(values).Throughput
	}
	return r
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// markdown renders the table: per operation, each target's throughput and latencies, and the
// ratios of Plinth through the aggregator (b) to the CRD (a), to the ConfigMaps (e) and to etcd
// (d). For throughput a ratio above 1 means b is faster. Below it, the CPU per get.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s, commit %s, %s. %d objects of %d bytes, %d workers, median of %d rounds; "+
		"cells are throughput (objects/s) · p50 · p99 latency (ms).", r.Date, r.Commit, r.Machine, r.Objects, r.ObjectBytes, r.Workers, r.Rounds)
	if len(r.PlinthArgs) > 0 {
		fmt.Fprintf(&b, " plinth-apiserver ran with `%s`.", strings.Join(r.PlinthArgs, " "))
	}
	b.WriteString("\n\n")
	header := "| operation |"
	rule := "| --- |"
	for i, t := range r.Targets {
		header += fmt.Sprintf(" (%c) %s |", 'a'+i, t)
		rule += " --- |"
	}
	b.WriteString(header + " b/a | b/e | b/d |\n" + rule + " --- | --- | --- |\n")
	a, bb, d, e := r.Targets[0], r.Targets[1], r.Targets[3], r.Targets[4]
	for _, op := range operations() {
		fmt.Fprintf(&b, "| %s |", op)
		for _, t := range r.Targets {
			res := r.Results[t][op]
			if res.Note != "" {
				fmt.Fprintf(&b, " %s |", res.Note)
				continue
			}
			fmt.Fprintf(&b, " %s · %.1f · %.1f |", thousands(res.Throughput), res.P50, res.P99)
		}
		fmt.Fprintf(&b, " %s | %s | %s |\n", ratio(r.Results[bb][op], r.Results[a][op]), ratio(r.Results[bb][op], r.Results[e][op]),
			ratio(r.Results[bb][op], r.Results[d][op]))
	}
	fmt.Fprintf(&b, "| RSS after the load (MiB) |")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, " %.0f |", r.RSSMiB[t])
	}
	b.WriteString(" | | |\n| CPU per get (ms): kube-apiserver + plinth-apiserver |")
	for _, t := range r.Targets {
		c, ok := r.CPUPerGet[t]
		if !ok {
			b.WriteString(" — |")
			continue
		}
		fmt.Fprintf(&b, " %.2f + %.2f = %.2f |", c.KubeAPIServerMs, c.PlinthAPIServerMs, c.Total())
	}
	fmt.Fprintf(&b, " %s | %s | |\n", cpuRatio(r.CPUPerGet, a, bb), cpuRatio(r.CPUPerGet, e, bb))
	b.WriteString("\nRSS is the serving process's, read after that target's operations: kube-apiserver for (a) and (e), " +
		"plinth-apiserver for (b) and (c) (one process, read twice), etcd for (d); kube-apiserver also proxies (b). " +
		"CPU per get is each server's CPU time (from /proc) over the gets done while the workers only get, for " +
		"the median of the rounds; its ratios are the other target's CPU over (b)'s, so above 1 means (b) costs less. " +
		"The ConfigMaps (e) are read and written in protobuf; plinth-apiserver runs with CBORServingAndStorage on, " +
		"kube-apiserver without it.\n")
	return b.String()
}

// cpuRatio is base's CPU per get over of's, or a dash without both.
func cpuRatio(cpu map[string]CPUPerGet, base, of string) string {
	x, ok1 := cpu[base]
	y, ok2 := cpu[of]
	if !ok1 || !ok2 || y.Total() == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", x.Total()/y.Total())
}

func ratio(x, y Result) string {
	if x.Note != "" || y.Note != "" || y.Throughput == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", x.Throughput/y.Throughput)
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func (r *report) writeJSON(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

const (
	beginMarker = "<!-- bench-api:begin (make bench writes this section) -->"
	endMarker   = "<!-- bench-api:end -->"
)

// writeDocs replaces the section between the markers in a Markdown file.
func (r *report) writeDocs(path string) error {
	return docsection.Section{Begin: beginMarker, End: endMarker}.WriteFile(path, r.markdown())
}
