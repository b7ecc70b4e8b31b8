// Package faults kills each component of the local platform with SIGKILL while a load
// generator writes, and checks after each fault that no acknowledged write was lost, no object
// exists twice, everything converges within a stated bound and a resuming watch saw every
// event once (faults_test.go; `make test` runs the short form, `make test-faults` the long
// one). This file formats the per-fault figures for the test log and docs/reliability.md.
package faults

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Row is one fault's figures.
type Row struct {
	// Fault names what was killed, Round which repetition it was.
	Fault string
	Round int
	// Outage is from the SIGKILL until the component (or, for the leader and the registry,
	// its successor) served again.
	Outage time.Duration
	// Failed counts the load's requests that failed from the SIGKILL until the load stopped;
	// Acked the writes acknowledged in that time.
	Failed, Acked int
	// FailedByKind splits Failed by the load's kinds (Workload, ManagedVM, Tag); Forbidden
	// counts those answered 403, which a client takes as final although the outage caused it.
	FailedByKind map[string]int
	Forbidden    int
	// FailedByCode splits Failed by the HTTP status of the answer (0: none came, the
	// connection failed or the client timed out); ErrorSpan is from the first failure to the
	// last, how long clients saw errors.
	FailedByCode map[int32]int
	ErrorSpan    time.Duration
	// FirstWrite is from the SIGKILL until the first acknowledged write; zero when none came.
	FirstWrite time.Duration
	// AllReady is from the SIGKILL until every object had converged; zero when they did not
	// within the bound.
	AllReady time.Duration
	// Lost counts acknowledged writes missing afterwards, Duplicates objects found twice
	// (including instance numbers given twice or skipped).
	Lost, Duplicates int
	// Watch summarizes the resuming watch during this fault: resumes, relists after 410 Gone,
	// duplicated events, and acknowledged writes it never delivered (outside the spans a
	// relist jumped over).
	Resumes, Relists, DuplicateEvents, MissedEvents int
}

// Table renders rows as a Markdown table.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| fault | round | outage | failed requests | acknowledged writes | first write after kill | all Ready after kill | lost writes | duplicates | watch: resumes / relists / duplicate events / missed events |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %s | %s | %d | %d | %d / %d / %d / %d |\n",
			r.Fault, r.Round, seconds(r.Outage), failed(r), r.Acked, orNone(r.FirstWrite), orNone(r.AllReady),
			r.Lost, r.Duplicates, r.Resumes, r.Relists, r.DuplicateEvents, r.MissedEvents)
	}
	return b.String()
}

// ReplicaTable renders the replica-loss rows as a Markdown table: what failed, by the HTTP
// status of the answer (429, 503 and 504 and no answer are worth a retry; a 4xx is final), and
// for how long.
func ReplicaTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| replica lost | back after | failed requests (by answer) | clients saw errors for | acknowledged writes | first write after kill | all Ready after kill | lost writes | duplicates | watch: resumes / relists / duplicate events / missed events |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %d | %d | %d / %d / %d / %d |\n",
			r.Fault, seconds(r.Outage), byCode(r), spanOrNone(r), r.Acked, orNone(r.FirstWrite), orNone(r.AllReady),
			r.Lost, r.Duplicates, r.Resumes, r.Relists, r.DuplicateEvents, r.MissedEvents)
	}
	return b.String()
}

// byCode is the failed requests' count, and per HTTP status when there were any.
func byCode(r Row) string {
	codes := make([]int32, 0, len(r.FailedByCode))
	for code := range r.FailedByCode {
		codes = append(codes, code)
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	parts := make([]string, 0, len(codes))
	for _, code := range codes {
		what := strconv.Itoa(int(code))
		if code == 0 {
			what = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", what, r.FailedByCode[code]))
	}
	if len(parts) == 0 {
		return strconv.Itoa(r.Failed)
	}
	return fmt.Sprintf("%d (%s)", r.Failed, strings.Join(parts, ", "))
}

// spanOrNone is how long clients saw errors: none without a failure, under 0.1 s for one.
func spanOrNone(r Row) string {
	if r.Failed == 0 {
		return "none"
	}
	return seconds(r.ErrorSpan)
}

// failed is the failed requests' count, and per kind when there were any.
func failed(r Row) string {
	kinds := make([]string, 0, len(r.FailedByKind))
	for kind, n := range r.FailedByKind {
		if n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", kind, n))
		}
	}
	sort.Strings(kinds)
	if r.Forbidden > 0 {
		kinds = append(kinds, fmt.Sprintf("%d answered 403", r.Forbidden))
	}
	if len(kinds) == 0 {
		return strconv.Itoa(r.Failed)
	}
	return fmt.Sprintf("%d (%s)", r.Failed, strings.Join(kinds, ", "))
}

// seconds renders d as seconds with one decimal.
func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func orNone(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return seconds(d)
}
