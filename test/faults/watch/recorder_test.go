package watch

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// fakeSource serves a scripted list and hands each Watch call the next scripted watcher (or
// error), remembering the resourceVersions asked for.
type fakeSource struct {
	mu       sync.Mutex
	list     []runtime.Object
	listRV   string
	laterRVs []string // the resourceVersions of the lists after the first, in turn
	lists    int
	watchers []*watch.FakeWatcher
	errs     []error
	asked    []string
}

func (f *fakeSource) List(context.Context) ([]runtime.Object, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.lists > 1 && len(f.laterRVs) > 0 {
		f.listRV, f.laterRVs = f.laterRVs[0], f.laterRVs[1:]
	}
	return f.list, f.listRV, nil
}

func (f *fakeSource) Watch(_ context.Context, rv string) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, rv)
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		if err != nil {
			return nil, err
		}
	}
	if len(f.watchers) == 0 {
		return watch.NewFake(), nil // blocks until the test ends
	}
	w := f.watchers[0]
	f.watchers = f.watchers[1:]
	return w, nil
}

func (f *fakeSource) askedFor() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func wl(name, rv string) *v1b1.Workload {
	return &v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func run(t *testing.T, src Source) *Recorder {
	t.Helper()
	r := New(src)
	r.Retry = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("not within 5s: %s", what)
	}
}

func TestResumesFromTheLastResourceVersionAfterAClose(t *testing.T) {
	first, second := watch.NewFakeWithChanSize(10, false), watch.NewFakeWithChanSize(10, false)
	src := &fakeSource{list: []runtime.Object{wl("a", "5")}, listRV: "7", watchers: []*watch.FakeWatcher{first, second}}
	first.Add(wl("b", "8"))
	first.Modify(wl("a", "9"))
	first.Action(watch.Bookmark, wl("", "11"))
	first.Stop() // the server went away
	second.Delete(wl("b", "12"))
	r := run(t, src)
	select {
	case <-r.Listed():
	case <-time.After(5 * time.Second):
		t.Fatal("Listed was not closed after the first list")
	}
	eventually(t, "the delete", func() bool { _, ok := r.State()["ns/b"]; return r.Stats().Events == 3 && !ok })
	if got := src.askedFor(); len(got) < 2 || got[0] != "7" || got[1] != "11" {
		t.Errorf("watched from %v, want 7 (the list) then 11 (the bookmark)", got)
	}
	if st := r.Stats(); st.Resumes != 1 || st.Relists != 0 || st.Duplicates != 0 {
		t.Errorf("stats %+v", st)
	}
	if d := Diff(r.State(), map[string]string{"ns/a": "9"}); len(d) != 0 {
		t.Errorf("diff %v", d)
	}
	if !r.Saw("ns/b", "8") || !r.Saw("ns/a", "5") || r.Saw("ns/a", "6") {
		t.Error("Saw does not match the events")
	}
}

func TestCountsDuplicatedAndReorderedEvents(t *testing.T) {
	w := watch.NewFakeWithChanSize(10, false)
	src := &fakeSource{listRV: "1", watchers: []*watch.FakeWatcher{w}}
	w.Add(wl("a", "5"))
	w.Add(wl("a", "5"))    // the same event again
	w.Modify(wl("a", "4")) // older than what was seen
	w.Modify(wl("a", "6"))
	r := run(t, src)
	eventually(t, "four events", func() bool { return r.Stats().Events == 4 })
	if st := r.Stats(); st.Duplicates != 2 {
		t.Errorf("duplicates %d, want 2", st.Duplicates)
	}
	if r.State()["ns/a"] != "6" {
		t.Errorf("state %v", r.State())
	}
}

func TestRelistsOn410AndSaysSo(t *testing.T) {
	w := watch.NewFakeWithChanSize(10, false)
	src := &fakeSource{list: []runtime.Object{wl("a", "3")}, listRV: "3", watchers: []*watch.FakeWatcher{w},
		errs: []error{nil, apierrors.NewResourceExpired("too old resource version: 3 (20)")}}
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired})
	r := run(t, src)
	eventually(t, "two relists", func() bool { return r.Stats().Relists == 2 })
	src.mu.Lock()
	lists := src.lists
	src.mu.Unlock()
	if lists < 3 {
		t.Errorf("listed %d times, want the first list and one per 410", lists)
	}
}

// Only the resourceVersions a relist jumped over are excused: after the last event before the
// 410, up to the list's; not the first list's, not what was seen, not what came later.
func TestSkippedIsTheSpanARelistJumpedOver(t *testing.T) {
	w := watch.NewFakeWithChanSize(10, false)
	src := &fakeSource{list: []runtime.Object{wl("a", "3")}, listRV: "3", laterRVs: []string{"20"}, watchers: []*watch.FakeWatcher{w}}
	w.Add(wl("b", "5"))
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired})
	r := run(t, src)
	eventually(t, "the relist", func() bool { return r.LastResourceVersion() == 20 })
	for rv, want := range map[string]bool{"2": false, "3": false, "5": false, "6": true, "20": true, "21": false, "x": false} {
		if got := r.Skipped(rv); got != want {
			t.Errorf("Skipped(%s) = %v, want %v", rv, got, want)
		}
	}
}

func TestRetriesAWatchTheServerRefuses(t *testing.T) {
	src := &fakeSource{listRV: "2", errs: []error{apierrors.NewServiceUnavailable("down"), apierrors.NewServiceUnavailable("down")}}
	r := run(t, src)
	eventually(t, "a third attempt", func() bool { return len(src.askedFor()) >= 3 })
	if st := r.Stats(); st.WatchErrors != 2 || st.Relists != 0 {
		t.Errorf("stats %+v", st)
	}
	for _, rv := range src.askedFor() {
		if rv != "2" {
			t.Errorf("watched from %s, want 2", rv)
		}
	}
}

func TestIgnoresObjectsItCannotRead(t *testing.T) {
	w := watch.NewFakeWithChanSize(10, false)
	src := &fakeSource{listRV: "1", watchers: []*watch.FakeWatcher{w}}
	w.Add(wl("a", "not-a-number"))
	w.Add(&metav1.Status{}) // has no object metadata
	w.Add(wl("b", "2"))
	r := run(t, src)
	eventually(t, "b", func() bool { return r.State()["ns/b"] == "2" })
	if _, ok := r.State()["ns/a"]; ok || r.LastResourceVersion() != 2 {
		t.Errorf("state %v, last %d", r.State(), r.LastResourceVersion())
	}
}

func TestDiffNamesEveryDifference(t *testing.T) {
	d := Diff(map[string]string{"ns/a": "1", "ns/b": "2", "ns/c": "3"}, map[string]string{"ns/a": "1", "ns/b": "5", "ns/d": "4"})
	want := []string{"ns/b: on the server at 5, the watch has 2", "ns/c: the watch has it at 3, the server does not", "ns/d: on the server at 4, never seen by the watch"}
	if strings.Join(d, "\n") != strings.Join(want, "\n") {
		t.Errorf("Diff = %q, want %q", d, want)
	}
}
