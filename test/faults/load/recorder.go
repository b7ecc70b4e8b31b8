// Package load keeps writing to the local platform while faults are injected, and records
// every write the API acknowledged and every request that failed, with its time: the record
// the fault test checks the platform's state against.
package load

import (
	"sort"
	"sync"
	"time"
)

// Kinds the generator writes.
const (
	KindWorkload  = "Workload"
	KindManagedVM = "ManagedVM"
	// KindTenantCompute is a TenantCompute.
	KindTenantCompute = "TenantCompute"
	// KindPack is an InfrastructureClusterPack.
	KindPack = "InfrastructureClusterPack"
	// KindTag is a tag pushed to the registry: Namespace is the repository, Name the tag.
	KindTag = "Tag"
)

// Verbs of the generator's requests.
const (
	VerbCreate  = "create"
	VerbUpdate  = "update"
	VerbApprove = "approve"
	VerbPush    = "push"
)

// Key names one object.
type Key struct {
	Kind, Namespace, Name string
}

// Write is a request the API acknowledged (answered with success).
type Write struct {
	Key
	// Verb is create, update, approve or push.
	Verb string
	// ResourceVersion is the object's resourceVersion in the answer (for a push, the
	// manifest's digest).
	ResourceVersion string
	// Seq is what was written, as a number that grows with every write to the object: for a
	// Workload or a TenantCompute the revision in its image tag, for a pack the patch number
	// of its version, for a ManagedVM 1 for the request and 2 for its
	// approval, for a tag its number. The platform must end with at least this content.
	Seq int64
	// At is when the answer arrived.
	At time.Time
}

// Failure is a request that got no successful answer: an error status, a refused connection
// or a timeout. Its effect is unknown; a later request finds out.
type Failure struct {
	Key
	Verb string
	// Sent is when the request was sent (zero where not recorded), At when it failed: a
	// request that timed out failed long after it was sent.
	Sent, At time.Time
	// Err is the error's text.
	Err string
	// Code is the HTTP status the server answered with, or 0 when there was no answer (a
	// refused or reset connection, a timeout on the client's side).
	Code int32
}

// Recorder collects writes and failures from several goroutines.
type Recorder struct {
	mu       sync.Mutex
	writes   []Write
	failures []Failure
}

// Ack records an acknowledged write.
func (r *Recorder) Ack(w Write) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, w)
}

// Fail records a failed request.
func (r *Recorder) Fail(f Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, f)
}

// Writes are the acknowledged writes so far, in the order they were recorded.
func (r *Recorder) Writes() []Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Write(nil), r.writes...)
}

// Failures are the failed requests so far, in the order they were recorded.
func (r *Recorder) Failures() []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Failure(nil), r.failures...)
}

// Latest is, per object, the acknowledged write with the highest Seq: what the object must
// hold at least.
func (r *Recorder) Latest() map[Key]Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	latest := map[Key]Write{}
	for _, w := range r.writes {
		if old, ok := latest[w.Key]; !ok || w.Seq > old.Seq {
			latest[w.Key] = w
		}
	}
	return latest
}

// FailedBetween counts the requests that failed in [from, to].
func (r *Recorder) FailedBetween(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failedIn(from, to))
}

// FailedByKind counts the requests that failed in [from, to] per kind.
func (r *Recorder) FailedByKind(from, to time.Time) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for _, f := range r.failedIn(from, to) {
		n[f.Kind]++
	}
	return n
}

// FailedWithCode counts the requests that failed in [from, to] with HTTP status code.
func (r *Recorder) FailedWithCode(from, to time.Time, code int32) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, f := range r.failedIn(from, to) {
		if f.Code == code {
			n++
		}
	}
	return n
}

// FailedByCode counts the requests that failed in [from, to] by the HTTP status they were
// answered with (0: no answer).
func (r *Recorder) FailedByCode(from, to time.Time) map[int32]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[int32]int{}
	for _, f := range r.failedIn(from, to) {
		n[f.Code]++
	}
	return n
}

// ErrorSpan is how long clients saw errors among the requests that failed in [from, to]: from
// the sending of the first (not before from; a request that waited for an answer that never
// came counts from when it asked) to the last failure. Zero without failures.
func (r *Recorder) ErrorSpan(from, to time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first, last time.Time
	for _, f := range r.failedIn(from, to) {
		began := f.At
		if !f.Sent.IsZero() {
			began = f.Sent
		}
		if began.Before(from) {
			began = from
		}
		if first.IsZero() || began.Before(first) {
			first = began
		}
		if f.At.After(last) {
			last = f.At
		}
	}
	return last.Sub(first)
}

// AckedBetween counts the writes acknowledged in [from, to].
func (r *Recorder) AckedBetween(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, w := range r.writes {
		if within(w.At, from, to) {
			n++
		}
	}
	return n
}

// failedIn are the failures in [from, to]; the caller holds r.mu.
func (r *Recorder) failedIn(from, to time.Time) []Failure {
	var in []Failure
	for _, f := range r.failures {
		if within(f.At, from, to) {
			in = append(in, f)
		}
	}
	return in
}

// within reports whether t is in [from, to].
func within(t, from, to time.Time) bool { return !t.Before(from) && !t.After(to) }

// FirstAckAfter is the time of the first write acknowledged after t of the given kind ("" for
// any kind), and whether there is one.
func (r *Recorder) FirstAckAfter(t time.Time, kind string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var times []time.Time
	for _, w := range r.writes {
		if w.At.After(t) && (kind == "" || w.Kind == kind) {
			times = append(times, w.At)
		}
	}
	if len(times) == 0 {
		return time.Time{}, false
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times[0], true
}
