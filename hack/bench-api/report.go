package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

const (
	opCreate       = "create"
	opGet          = "get"
	opUpdateStatus = "update status"
	opWatch        = "watch (N events)"
)

func opList(encoding string) string { return "list all, " + encoding }

func operations() []string {
	ops := []string{opCreate, opGet, opUpdateStatus}
	for _, e := range encodings {
		ops = append(ops, opList(e.name))
	}
	return append(ops, opWatch)
}

// report is one run's medians.
type report struct {
	Date        string                       `json:"date"`
	Commit      string                       `json:"commit"`
	Machine     string                       `json:"machine"`
	Objects     int                          `json:"objects"`
	Workers     int                          `json:"workers"`
	Rounds      int                          `json:"rounds"`
	ObjectBytes int                          `json:"objectBytes"`
	Targets     []string                     `json:"targets"`
	Results     map[string]map[string]Result `json:"results"` // target → operation → median
	RSSMiB      map[string]float64           `json:"rssMiB"`  // target → median resident memory after the load
}

func newReport(o options, targets []target, rounds map[string]map[string][]Result, rss map[string][]float64, objectBytes int) *report {
	r := &report{
		Date: time.Now().UTC().Format("2006-01-02"), Commit: commit(), Machine: machine(),
		Objects: o.n, Workers: o.workers, Rounds: o.rounds, ObjectBytes: objectBytes,
		Results: map[string]map[string]Result{}, RSSMiB: map[string]float64{},
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
// ratios of Plinth through the aggregator (b) to the CRD (a) and to etcd (d). For throughput a
// ratio above 1 means b is faster.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s, commit %s, %s. %d objects of %d bytes, %d workers, median of %d rounds; "+
		"cells are throughput (objects/s) · p50 · p99 latency (ms).\n\n", r.Date, r.Commit, r.Machine, r.Objects, r.ObjectBytes, r.Workers, r.Rounds)
	header := "| operation |"
	rule := "| --- |"
	for i, t := range r.Targets {
		header += fmt.Sprintf(" (%c) %s |", 'a'+i, t)
		rule += " --- |"
	}
	b.WriteString(header + " b/a | b/d |\n" + rule + " --- | --- |\n")
	a, bb, d := r.Targets[0], r.Targets[1], r.Targets[3]
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
		fmt.Fprintf(&b, " %s | %s |\n", ratio(r.Results[bb][op], r.Results[a][op]), ratio(r.Results[bb][op], r.Results[d][op]))
	}
	fmt.Fprintf(&b, "| RSS after the load (MiB) |")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, " %.0f |", r.RSSMiB[t])
	}
	b.WriteString(" | |\n\nRSS is the serving process's, read after that target's operations: kube-apiserver for (a), " +
		"plinth-apiserver for (b) and (c) (one process, read twice), etcd for (d); kube-apiserver also proxies (b).\n")
	return b.String()
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
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	begin, end := strings.Index(text, beginMarker), strings.Index(text, endMarker)
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no %q … %q section", path, beginMarker, endMarker)
	}
	text = text[:begin+len(beginMarker)] + "\n" + r.markdown() + text[end:]
	return os.WriteFile(path, []byte(text), 0o644)
}
