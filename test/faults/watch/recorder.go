// Package watch follows one kind with a watch that, when the watch closes or fails, resumes
// from the last resourceVersion it saw, as an informer does; it records every event so a test
// can compare what the watch saw with the server's final state.
//
// It orders resourceVersions as integers: the servers under test (kube-apiserver and
// plinth-apiserver, both on etcd) use etcd revisions, and a duplicated or reordered event is
// exactly one whose revision is not above the last one seen.
package watch

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Source lists and watches one kind.
type Source interface {
	// List returns the objects and the list's resourceVersion.
	List(ctx context.Context) ([]runtime.Object, string, error)
	// Watch watches from resourceVersion rv (exclusive), with bookmarks.
	Watch(ctx context.Context, rv string) (watch.Interface, error)
}

// Stats counts what happened to the watch.
type Stats struct {
	// Events are the Added, Modified and Deleted events received.
	Events int
	// Resumes are watches started again from the last resourceVersion after one ended.
	Resumes int
	// Relists are full lists after the server answered 410 Gone (the resourceVersion was too
	// old to resume from): events between the last one seen and the list may be skipped then.
	Relists int
	// Duplicates are events whose resourceVersion was not above the last one seen.
	Duplicates int
	// WatchErrors are failed attempts to start a watch (the server was down).
	WatchErrors int
}

// Recorder follows a Source.
type Recorder struct {
	src Source
	// Retry is the pause before a failed watch or list is tried again.
	Retry time.Duration

	// listed is closed once the first list succeeded.
	listed     chan struct{}
	listedOnce sync.Once

	mu    sync.Mutex
	state map[string]string          // namespace/name -> resourceVersion
	seen  map[string]map[string]bool // namespace/name -> resourceVersions seen (events and lists)
	last  int64
	stats Stats
	// skipped are the spans (from, to] of resourceVersions a relist jumped over: from the
	// last one seen before a 410 Gone to the list's. Events there may never be delivered.
	skipped [][2]int64
	// hasListed is set by the first successful list; only later lists skip anything.
	hasListed bool
}

// New returns a Recorder of src.
func New(src Source) *Recorder {
	return &Recorder{src: src, Retry: 200 * time.Millisecond, listed: make(chan struct{}), state: map[string]string{}, seen: map[string]map[string]bool{}}
}

// Listed is closed once the first list has succeeded: from then on every change is either in
// that list or delivered as an event. A test starts writing only then, or the writes before
// the list would be seen only as the list's (later) state.
func (r *Recorder) Listed() <-chan struct{} { return r.listed }

// Run lists, then watches until ctx ends, resuming after every close or error.
func (r *Recorder) Run(ctx context.Context) {
	for ctx.Err() == nil && !r.relist(ctx) {
		sleep(ctx, r.Retry)
	}
	for ctx.Err() == nil {
		r.mu.Lock()
		rv := strconv.FormatInt(r.last, 10)
		r.mu.Unlock()
		w, err := r.src.Watch(ctx, rv)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.count(func(s *Stats) { s.WatchErrors++ })
			if isGone(err) {
				r.count(func(s *Stats) { s.Relists++ })
				for ctx.Err() == nil && !r.relist(ctx) {
					sleep(ctx, r.Retry)
				}
				continue
			}
			sleep(ctx, r.Retry)
			continue
		}
		gone := r.consume(ctx, w)
		w.Stop()
		if ctx.Err() != nil {
			return
		}
		if gone {
			r.count(func(s *Stats) { s.Relists++ })
			for ctx.Err() == nil && !r.relist(ctx) {
				sleep(ctx, r.Retry)
			}
			continue
		}
		r.count(func(s *Stats) { s.Resumes++ })
	}
}

// consume handles w's events until it closes; true when it ended with 410 Gone.
func (r *Recorder) consume(ctx context.Context, w watch.Interface) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false
			}
			if ev.Type == watch.Error {
				status, _ := ev.Object.(*metav1.Status)
				return status != nil && (status.Code == http.StatusGone || status.Reason == metav1.StatusReasonExpired || status.Reason == metav1.StatusReasonGone)
			}
			r.handle(ev)
		}
	}
}

// handle records one event.
func (r *Recorder) handle(ev watch.Event) {
	acc, err := meta.Accessor(ev.Object)
	if err != nil {
		return
	}
	rv, err := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Type == watch.Bookmark {
		if rv > r.last {
			r.last = rv
		}
		return
	}
	r.stats.Events++
	if rv <= r.last {
		r.stats.Duplicates++
		return
	}
	r.last = rv
	id := key(acc)
	r.see(id, acc.GetResourceVersion())
	if ev.Type == watch.Deleted {
		delete(r.state, id)
	} else {
		r.state[id] = acc.GetResourceVersion()
	}
}

// relist replaces the state with a full list; false when the list failed.
func (r *Recorder) relist(ctx context.Context) bool {
	items, rv, err := r.src.List(ctx)
	if err != nil {
		return false
	}
	last, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = map[string]string{}
	for _, obj := range items {
		acc, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		r.state[key(acc)] = acc.GetResourceVersion()
		r.see(key(acc), acc.GetResourceVersion())
	}
	if r.hasListed && last > r.last {
		r.skipped = append(r.skipped, [2]int64{r.last, last})
	}
	r.hasListed = true
	r.last = last
	r.listedOnce.Do(func() { close(r.listed) })
	return true
}

func (r *Recorder) see(id, rv string) {
	if r.seen[id] == nil {
		r.seen[id] = map[string]bool{}
	}
	r.seen[id][rv] = true
}

func (r *Recorder) count(f func(*Stats)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.stats)
}

// State is the resourceVersion of every object as the watch knows it, by namespace/name.
func (r *Recorder) State() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.state))
	for k, v := range r.state {
		out[k] = v
	}
	return out
}

// Saw reports whether the watch (or a list) delivered the object id at resourceVersion rv.
func (r *Recorder) Saw(id, rv string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[id][rv]
}

// Skipped reports whether resourceVersion rv lies in a span a relist jumped over (after the
// last resourceVersion seen before a 410 Gone, up to the list's): a write there may
// legitimately never be delivered as an event. Anywhere else, an acknowledged write the watch
// did not deliver is a missed event.
func (r *Recorder) Skipped(rv string) bool {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, span := range r.skipped {
		if n > span[0] && n <= span[1] {
			return true
		}
	}
	return false
}

// LastResourceVersion is the highest resourceVersion seen, from events, bookmarks or a list.
func (r *Recorder) LastResourceVersion() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Stats are the counts so far.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Diff compares the watch's state with the server's (namespace/name -> resourceVersion) and
// describes every object missing on one side or at another resourceVersion.
func Diff(watched, server map[string]string) []string {
	var out []string
	for id, rv := range server {
		switch got, ok := watched[id]; {
		case !ok:
			out = append(out, id+": on the server at "+rv+", never seen by the watch")
		case got != rv:
			out = append(out, id+": on the server at "+rv+", the watch has "+got)
		}
	}
	for id, rv := range watched {
		if _, ok := server[id]; !ok {
			out = append(out, id+": the watch has it at "+rv+", the server does not")
		}
	}
	sort.Strings(out)
	return out
}

func key(acc metav1.Object) string { return acc.GetNamespace() + "/" + acc.GetName() }

func isGone(err error) bool {
	return apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
