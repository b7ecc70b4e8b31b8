package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/benchharness"
)

func TestValidateRefusesSettingsWithoutAFigure(t *testing.T) {
	good := options{workloads: 10000, namespaces: 100, reps: 5, workers: 16, timeout: time.Minute}
	if err := good.validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for name, change := range map[string]func(*options){
		"no workloads":     func(o *options) { o.workloads = 0 },
		"too many":         func(o *options) { o.workloads = 100000 },
		"one namespace":    func(o *options) { o.namespaces = 1 },
		"not a multiple":   func(o *options) { o.workloads = 1001 },
		"no repetitions":   func(o *options) { o.reps = 0 },
		"no workers":       func(o *options) { o.workers = 0 },
		"negative timeout": func(o *options) { o.timeout = -time.Second },
	} {
		o := good
		change(&o)
		if err := o.validate(); err == nil {
			t.Errorf("%s: accepted %+v", name, o)
		}
	}
}

func TestLayoutsFillTheirNamespacesInOrder(t *testing.T) {
	ls := layouts(options{workloads: 10000, namespaces: 100})
	one, spread := ls[0], ls[1]
	if one.namespace(0) != "scale-one" || one.namespace(9999) != "scale-one" || len(one.namespaces()) != 1 || one.last {
		t.Errorf("one namespace: %q, %q, %v, last %v", one.namespace(0), one.namespace(9999), one.namespaces(), one.last)
	}
	if spread.namespace(0) != "scale-000" || spread.namespace(99) != "scale-000" || spread.namespace(100) != "scale-001" || spread.namespace(9999) != "scale-099" {
		t.Errorf("spread: %q %q %q %q", spread.namespace(0), spread.namespace(99), spread.namespace(100), spread.namespace(9999))
	}
	if ns := spread.namespaces(); len(ns) != 100 || ns[0] != "scale-000" || ns[99] != "scale-099" || !spread.last {
		t.Errorf("spread namespaces %d (%v…), last %v", len(ns), ns[:2], spread.last)
	}
	scopes := spread.scopes()
	if scopes[0].namespace != "scale-000" || scopes[0].objects != 100 || scopes[1].namespace != "" || scopes[1].objects != 10000 {
		t.Errorf("scopes: %+v", scopes)
	}
	if scopes[0].title != "one namespace (100)" || scopes[1].title != "all namespaces (10,000)" {
		t.Errorf("titles %q, %q", scopes[0].title, scopes[1].title)
	}
	if spread.title != "10,000 Workloads in 100 namespaces (100 each)" {
		t.Errorf("title %q", spread.title)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWorkloadDiffersOnlyInItsGroup(t *testing.T) {
	plinth, err := workload("score.dev", "ns", "w-00001")
	if err != nil {
		t.Fatal(err)
	}
	crd, err := workload("bench.plinth.dev", "ns", "w-00001")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Replace(string(plinth), `"score.dev/v1b1"`, `"bench.plinth.dev/v1b1"`, 1); got != string(crd) {
		t.Errorf("the bodies differ beyond the group:\n%s\n%s", plinth, crd)
	}
	var obj map[string]any
	if err := json.Unmarshal(plinth, &obj); err != nil || obj["kind"] != "Workload" || obj["spec"] == nil {
		t.Errorf("not a Workload: %s (%v)", plinth, err)
	}
}

func TestParseList(t *testing.T) {
	page, err := parseList([]byte(`{"kind":"WorkloadList","metadata":{"resourceVersion":"42","continue":"abc"},"items":[{},{},{}]}`))
	if err != nil || page != (listPage{items: 3, rv: "42", cont: "abc"}) {
		t.Errorf("got %+v, %v", page, err)
	}
	page, err = parseList([]byte(`{"kind":"WorkloadList","metadata":{"resourceVersion":"7"},"items":[]}`))
	if err != nil || page.items != 0 || page.cont != "" {
		t.Errorf("empty list: %+v, %v", page, err)
	}
	for name, bad := range map[string]string{
		"a Status":           `{"kind":"Status","status":"Failure","message":"forbidden"}`,
		"not JSON":           `<html>`,
		"no resourceVersion": `{"kind":"WorkloadList","metadata":{},"items":[]}`,
		"no kind":            `{"items":[]}`,
		"items not a list":   `{"kind":"WorkloadList","metadata":{"resourceVersion":"1"},"items":{}}`,
	} {
		if _, err := parseList([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCountAddedReadsTheInitialEvents(t *testing.T) {
	added := `{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n" + `{"type":"ADDED","object":{"metadata":{"name":"b"}}}`
	if n, err := countAdded(json.NewDecoder(strings.NewReader(added)), 2); n != 2 || err != nil {
		t.Errorf("two ADDED: %d, %v", n, err)
	}
	if n, err := countAdded(json.NewDecoder(strings.NewReader(added)), 3); n != 2 || err == nil {
		t.Errorf("a stream that ends early: %d, %v", n, err)
	}
	modified := `{"type":"ADDED","object":{}}{"type":"MODIFIED","object":{}}`
	if n, err := countAdded(json.NewDecoder(strings.NewReader(modified)), 2); n != 1 || err == nil {
		t.Errorf("a MODIFIED among the initial events: %d, %v", n, err)
	}
	gone := `{"type":"ERROR","object":{"kind":"Status","reason":"Expired","message":"too old resource version"}}`
	if _, err := countAdded(json.NewDecoder(strings.NewReader(gone)), 1); err == nil || !strings.Contains(err.Error(), "too old") {
		t.Errorf("an ERROR event: %v", err)
	}
	if _, err := countAdded(json.NewDecoder(strings.NewReader(`{"type":`)), 1); err == nil {
		t.Error("a broken event was accepted")
	}
}

func TestNextEventReadsNameAndAnnotations(t *testing.T) {
	stream := `{"type":"MODIFIED","object":{"metadata":{"name":"w-00000","annotations":{"bench.plinth.dev/seq":"1-3"}}}}`
	ev, err := nextEvent(json.NewDecoder(strings.NewReader(stream)))
	if err != nil || ev.Type != "MODIFIED" || ev.Object.Metadata.Name != "w-00000" || ev.Object.Metadata.Annotations[seqAnnotation] != "1-3" {
		t.Errorf("got %+v, %v", ev, err)
	}
	if _, err := nextEvent(json.NewDecoder(strings.NewReader(""))); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("an ended stream: %v", err)
	}
}

func TestTableRows(t *testing.T) {
	for out, want := range map[string]int{
		"":                                     0,
		"NAME   AGE\nw-1   1s\nw-2   1s\n":     2,
		"NAMESPACE   NAME   AGE\na   w-1   1s": 1,
	} {
		if got, err := tableRows(out); got != want || err != nil {
			t.Errorf("tableRows(%q) = %d, %v, want %d", out, got, err, want)
		}
	}
	if _, err := tableRows("error: the server doesn't have a resource type\n"); err == nil {
		t.Error("output that is not a table was counted")
	}
}

func TestCells(t *testing.T) {
	ms := func(v ...float64) benchharness.Durations {
		var d benchharness.Durations
		for _, x := range v {
			d = append(d, time.Duration(x*float64(time.Millisecond)))
		}
		return d
	}
	if got := msCell(ms(900, 1234.4, 5000)); got != "1,234" {
		t.Errorf("msCell = %q", got)
	}
	if got := msCell(ms(2.25, 2.26, 9)); got != "2.3" {
		t.Errorf("msCell below 10 ms = %q", got)
	}
	if got := msCell(nil); got != "—" {
		t.Errorf("msCell of nothing = %q", got)
	}
	if got := speed(ms(300, 300, 300), ms(200, 100, 200)); got != "1.50" {
		t.Errorf("speed = %q", got)
	}
	for name, got := range map[string]string{
		"no anchor":   speed(nil, ms(1)),
		"no Plinth":   speed(ms(1), nil),
		"zero Plinth": speed(ms(1), ms(0)),
	} {
		if got != "—" {
			t.Errorf("speed with %s = %q", name, got)
		}
	}
	if got := memCell(benchharness.Usage{RSSKiB: 2048, PeakRSSKiB: 3072}); got != "2 · 3" {
		t.Errorf("memCell = %q", got)
	}
	if got := memCell(benchharness.Usage{}); got != "—" {
		t.Errorf("memCell of a failed reading = %q", got)
	}
}

func TestMarkdown(t *testing.T) {
	d := func(ms ...int) benchharness.Durations {
		var out benchharness.Durations
		for _, m := range ms {
			out = append(out, time.Duration(m)*time.Millisecond)
		}
		return out
	}
	r := &report{Date: "2026-11-24", Commit: "abc", Machine: "2 cores", Workloads: 1000, Namespaces: 10, Reps: 3, Workers: 16,
		Took: 90 * time.Second, Kinds: []string{"Plinth", "CRD"},
		Layouts: []layoutResult{{
			Title: "1,000 Workloads in one namespace", Created: map[string]float64{"Plinth": 600, "CRD": 700},
			ObjectBytes: map[string]int{"Plinth": 1120, "CRD": 1085},
			Rows: []row{{Op: "list, JSON, in full, one namespace (1,000)", Latency: map[string]benchharness.Durations{
				"Plinth": d(100, 110, 400), "CRD": d(220, 200, 230)}}},
		}},
		Memory: []memoryRow{
			{Moment: "at start", Plinth: benchharness.Usage{RSSKiB: 100 * 1024, PeakRSSKiB: 100 * 1024}, Kube: benchharness.Usage{RSSKiB: 300 * 1024, PeakRSSKiB: 300 * 1024},
				PlinthHeap: 50 << 20, KubeHeap: 200 << 20},
			{Moment: "after the creates, one namespace", Plinth: benchharness.Usage{RSSKiB: 100*1024 + 5000, PeakRSSKiB: 120 * 1024}, Kube: benchharness.Usage{RSSKiB: 300*1024 + 8000, PeakRSSKiB: 320 * 1024},
				PlinthHeap: 50<<20 + 2000<<10, KubeHeap: 200<<20 + 3000<<10},
		},
	}
	md := r.markdown()
	for _, want := range []string{
		"commit abc", "1m30s in all", "medians of 3 repetitions",
		"Creates: Plinth 600/s, CRD 700/s", "Plinth 1,120 bytes, CRD 1,085 bytes",
		"| operation | Plinth | CRD | speed |",
		"| list, JSON, in full, one namespace (1,000) | 110 | 220 | 2.00 |",
		"| after the creates, one namespace | 105 · 120 · 52 | 308 · 320 · 203 |",
		"live heap grew by 2.0 KiB per Workload and its resident memory by 5.0 KiB", "grew by 3.0 KiB per object",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	r.Memory[1].KubeHeap = 0
	md = r.markdown()
	if strings.Contains(md, "per Workload") {
		t.Error("a growth per Workload from a failed reading")
	}
	if !strings.Contains(md, "| after the creates, one namespace | 105 · 120 · 52 | 308 · 320 · — |") {
		t.Errorf("a failed heap reading is not a dash:\n%s", md)
	}
}

func TestBusyCountsThePlatformNotTheBenchmark(t *testing.T) {
	used := benchharness.Counts{"self": 5, "kube-apiserver": 0.5, "kube-controller-manager": 0.25}
	if got := busy(used, 2*time.Second); got != 0.375 {
		t.Errorf("busy = %v, want 0.375 cores", got)
	}
	if got := busy(used, 0); got != 0 {
		t.Errorf("busy over no time = %v", got)
	}
	if got := busy(benchharness.Counts{}, time.Second); got != 0 {
		t.Errorf("busy of nothing = %v", got)
	}
}

func TestGauge(t *testing.T) {
	text := "# HELP go_memstats_heap_alloc_bytes Bytes allocated.\n# TYPE go_memstats_heap_alloc_bytes gauge\n" +
		"go_memstats_heap_alloc_bytes_total 9\ngo_memstats_heap_alloc_bytes 1.2345e+08\n"
	if v, err := gauge(text, "go_memstats_heap_alloc_bytes"); err != nil || v != 1.2345e+08 {
		t.Errorf("gauge = %v, %v", v, err)
	}
	for name, bad := range map[string]string{
		"absent":       "other 1\n",
		"no value":     "go_memstats_heap_alloc_bytes \n",
		"not a number": "go_memstats_heap_alloc_bytes many\n",
	} {
		if _, err := gauge(bad, "go_memstats_heap_alloc_bytes"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
