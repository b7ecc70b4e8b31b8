package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/docsection"
)

// report is one run's figures.
type report struct {
	Date, Commit, Machine                string
	Workloads, Namespaces, Reps, Workers int
	Took                                 time.Duration
	Kinds                                []string // Plinth first, then the CRD
	Layouts                              []layoutResult
	Memory                               []memoryRow
}

// layoutResult is one layout's figures.
type layoutResult struct {
	Title string
	// Created is each kind's creates per second; ObjectBytes the size of one object in the
	// full JSON list, by kind.
	Created     map[string]float64
	ObjectBytes map[string]int
	Rows        []row
}

// row is one timed operation on one scope: each kind's repetitions.
type row struct {
	Op      string
	Latency map[string]benchharness.Durations
}

// memoryRow is plinth-apiserver's and kube-apiserver's memory at a moment of the run: their
// resident memory and its peak, and their live heaps in bytes (zero: not read).
type memoryRow struct {
	Moment               string
	Plinth, Kube         benchharness.Usage
	PlinthHeap, KubeHeap int64
}

// markdown renders the run: per layout the creates and a table of median latencies with the
// ratio CRD ÷ Plinth, then the memory at each moment.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s, commit %s, %s; %s in all. Latencies are medians of %d repetitions in ms, "+
		"the two kinds taking turns; **speed** is the CRD's median ÷ Plinth's (above 1: Plinth is faster). Objects were created by %d parallel clients.\n",
		r.Date, r.Commit, r.Machine, r.Took, r.Reps, r.Workers)
	for _, l := range r.Layouts {
		fmt.Fprintf(&b, "\n**%s.** Creates: %s. Size of one object in the JSON list: %s.\n\n", l.Title, r.perKind(func(k string) string {
			return fmt.Sprintf("%s %.0f/s", k, l.Created[k])
		}), r.perKind(func(k string) string {
			return fmt.Sprintf("%s %s bytes", k, thousands(l.ObjectBytes[k]))
		}))
		b.WriteString("| operation |")
		for _, k := range r.Kinds {
			fmt.Fprintf(&b, " %s |", k)
		}
		b.WriteString(" speed |\n| --- |" + strings.Repeat(" ---: |", len(r.Kinds)+1) + "\n")
		for _, row := range l.Rows {
			fmt.Fprintf(&b, "| %s |", row.Op)
			for _, k := range r.Kinds {
				fmt.Fprintf(&b, " %s |", msCell(row.Latency[k]))
			}
			fmt.Fprintf(&b, " %s |\n", speed(row.Latency[r.Kinds[len(r.Kinds)-1]], row.Latency[r.Kinds[0]]))
		}
	}
	b.WriteString("\n| moment | plinth-apiserver RSS · peak · live heap (MiB) | kube-apiserver RSS · peak · live heap (MiB) |\n| --- | ---: | ---: |\n")
	for _, m := range r.Memory {
		fmt.Fprintf(&b, "| %s | %s · %s | %s · %s |\n", m.Moment, memCell(m.Plinth), heapCell(m.PlinthHeap), memCell(m.Kube), heapCell(m.KubeHeap))
	}
	if grown, ok := r.perObjectKiB(); ok {
		fmt.Fprintf(&b, "\nOver the creates in one namespace, plinth-apiserver's live heap grew by %.1f KiB per Workload and its resident memory by %.1f KiB; "+
			"kube-apiserver's live heap, which holds the CRD's objects (Plinth's only pass through it), grew by %.1f KiB per object.\n", grown[0], grown[1], grown[2])
	}
	return b.String()
}

// perKind joins one phrase per kind.
func (r *report) perKind(phrase func(kind string) string) string {
	parts := make([]string, 0, len(r.Kinds))
	for _, k := range r.Kinds {
		parts = append(parts, phrase(k))
	}
	return strings.Join(parts, ", ")
}

// perObjectKiB is how much plinth-apiserver's live heap and resident memory and
// kube-apiserver's live heap grew per object from the start to after the first layout's
// creates; false without all readings.
func (r *report) perObjectKiB() ([3]float64, bool) {
	if len(r.Memory) < 2 || r.Workloads == 0 {
		return [3]float64{}, false
	}
	start, created := r.Memory[0], r.Memory[1]
	for _, v := range []int64{start.PlinthHeap, created.PlinthHeap, start.KubeHeap, created.KubeHeap,
		int64(start.Plinth.RSSKiB), int64(created.Plinth.RSSKiB)} {
		if v == 0 {
			return [3]float64{}, false
		}
	}
	n := float64(r.Workloads)
	return [3]float64{
		float64(created.PlinthHeap-start.PlinthHeap) / 1024 / n,
		float64(created.Plinth.RSSKiB-start.Plinth.RSSKiB) / n,
		float64(created.KubeHeap-start.KubeHeap) / 1024 / n,
	}, true
}

// msCell is the median in milliseconds, or a dash without figures.
func msCell(d benchharness.Durations) string {
	if len(d) == 0 {
		return "—"
	}
	return formatMS(d.Quantile(0.5))
}

// formatMS writes a duration in milliseconds, with a decimal below 10 ms.
func formatMS(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 10 {
		return fmt.Sprintf("%.1f", ms)
	}
	return thousands(int(ms + 0.5))
}

// speed is the anchor's median ÷ Plinth's: above 1, Plinth is faster; a dash when either has
// no figure or Plinth's is zero.
func speed(anchor, plinth benchharness.Durations) string {
	if len(anchor) == 0 || len(plinth) == 0 || plinth.Quantile(0.5) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(anchor.Quantile(0.5))/float64(plinth.Quantile(0.5)))
}

// memCell is resident and peak memory in MiB, or a dash for a failed reading.
func memCell(u benchharness.Usage) string {
	if u.RSSKiB == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f · %.0f", float64(u.RSSKiB)/1024, u.PeakRSSMiB())
}

// heapCell is a live heap in MiB, or a dash when it was not read.
func heapCell(bytes int64) string {
	if bytes == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", float64(bytes)/(1<<20))
}

// The markers of the section the report owns in docs/benchmarks.md, and the heading it is
// added under when it is not there yet.
const (
	beginMarker = "<!-- bench-scale:begin (make bench writes this section) -->"
	endMarker   = "<!-- bench-scale:end -->"
	heading     = "## Scale: 10,000 Workloads (issue 21)"
)

var docs = docsection.Section{Begin: beginMarker, End: endMarker, Heading: heading}

// about says what the section measures; it stands above the figures, inside the markers, so
// that it changes with them.
const about = `Plinth's Workloads (through kube-apiserver's aggregator to plinth-apiserver) next to a CRD of the same schema
(test/bench/workload-crd.yaml, served by the same kube-apiserver), on one fresh local platform without plinth-controller:
the objects are only stored and served. First every object is in one namespace, then (after deleting them) they are
spread evenly over many. For each kind and scope, one namespace and all namespaces: a list as JSON in one response, timed
to its last byte; the same list in pages of 500 as kubectl and client-go's pager fetch it; a watch opened from that
list's resourceVersion (time to its response headers) and the time from sending an update of one object to its event; a
watch without a resourceVersion, timed until its last initial ADDED event; and the real ` + "`kubectl get`" + ` (v1.37,
server-side table, pages of 500, from the process's start to its exit). Memory is VmRSS and VmHWM from /proc, and the
live heap: go_memstats_heap_alloc_bytes right after a heap profile with gc=1, which collects the garbage first. Go keeps
freed memory resident for a while, so RSS and the peaks are upper bounds. The live heap after the deletes is higher,
not lower; the likely cause (not verified) is the watch caches' recent events, a DELETED event holding the object.
` + "`make bench-scale`" + ` (and ` + "`make bench`" + `, after bench-api) writes this section.`

// section is the Markdown between the markers.
func (r *report) section() string { return about + "\n\n" + r.markdown() }

// writeDocs puts the section between its markers in a Markdown file, adding the heading and
// markers at the file's end when they are not there.
func (r *report) writeDocs(path string) error {
	return docs.WriteFile(path, r.section())
}

// commit is HEAD's short hash, marked when the tree has changes of tracked files.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD", "--", "pkg", "cmd", "internal").Run(); err != nil {
		c += " (with uncommitted changes)"
	}
	return c
}

// machine is the cores, memory and Go of the machine the run is on.
func machine() string {
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib int
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kib); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kib)/(1<<20))
		}
	}
	return fmt.Sprintf("%d cores%s, %s", runtime.NumCPU(), mem, runtime.Version())
}
