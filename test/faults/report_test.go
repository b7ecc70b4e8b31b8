package faults

import (
	"strings"
	"testing"
	"time"
)

func TestTableRendersEveryFigure(t *testing.T) {
	got := Table([]Row{
		{Fault: "etcd", Round: 1, Outage: 1500 * time.Millisecond, Failed: 12, FailedByKind: map[string]int{"Workload": 9, "Tag": 3, "ManagedVM": 0}, Acked: 40, FirstWrite: 2 * time.Second, AllReady: 9 * time.Second,
			Resumes: 2, Relists: 1, DuplicateEvents: 0, MissedEvents: 3},
		{Fault: "plinth-apiserver", Round: 2, Lost: 1, Duplicates: 2},
		{Fault: "kube-apiserver", Round: 1, Failed: 3, FailedByKind: map[string]int{"Workload": 3}, Forbidden: 1},
	})
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "| fault | round | outage | failed requests") || !strings.HasPrefix(lines[1], "|---|") {
		t.Fatalf("table:\n%s", got)
	}
	if want := "| etcd | 1 | 1.5 s | 12 (Tag 3, Workload 9) | 40 | 2.0 s | 9.0 s | 0 | 0 | 2 / 1 / 0 / 3 |"; lines[2] != want {
		t.Errorf("row %q, want %q", lines[2], want)
	}
	if want := "| plinth-apiserver | 2 | 0.0 s | 0 | 0 | none | none | 1 | 2 | 0 / 0 / 0 / 0 |"; lines[3] != want {
		t.Errorf("row %q, want %q (zero durations are none)", lines[3], want)
	}
	if want := "| kube-apiserver | 1 | 0.0 s | 3 (Workload 3, 1 answered 403) |"; !strings.HasPrefix(lines[4], want) {
		t.Errorf("row %q, want it to begin with %q", lines[4], want)
	}
}

func TestReplicaTableSplitsFailuresByAnswer(t *testing.T) {
	got := ReplicaTable([]Row{
		{Fault: "one plinth-apiserver replica", Outage: 4 * time.Second, Failed: 5, FailedByCode: map[int32]int{503: 4, 0: 1}, ErrorSpan: 1200 * time.Millisecond,
			Acked: 80, FirstWrite: 100 * time.Millisecond, AllReady: 6 * time.Second, Resumes: 1},
		{Fault: "the leading etcd member", Outage: 3 * time.Second, Acked: 90},
	})
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "| replica lost | back after | failed requests (by answer) | clients saw errors for |") {
		t.Fatalf("table:\n%s", got)
	}
	if want := "| one plinth-apiserver replica | 4.0 s | 5 (no answer: 1, 503: 4) | 1.2 s | 80 | 0.1 s | 6.0 s | 0 | 0 | 1 / 0 / 0 / 0 |"; lines[2] != want {
		t.Errorf("row %q, want %q", lines[2], want)
	}
	if want := "| the leading etcd member | 3.0 s | 0 | none | 90 |"; !strings.HasPrefix(lines[3], want) {
		t.Errorf("row %q, want it to begin with %q (no failure: no error span)", lines[3], want)
	}
}
