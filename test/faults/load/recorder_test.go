package load

import (
	"sync"
	"testing"
	"time"
)

func TestRecorderLatestKeepsTheHighestSeqPerObject(t *testing.T) {
	var r Recorder
	a := Key{KindWorkload, "ns", "a"}
	b := Key{KindManagedVM, "ns", "a"} // same name, other kind: another object
	now := time.Now()
	r.Ack(Write{Key: a, Verb: VerbCreate, Seq: 1, ResourceVersion: "10", At: now})
	r.Ack(Write{Key: a, Verb: VerbUpdate, Seq: 3, ResourceVersion: "12", At: now.Add(time.Second)})
	// Recorded late (a slow answer), but older content: it must not win.
	r.Ack(Write{Key: a, Verb: VerbUpdate, Seq: 2, ResourceVersion: "11", At: now.Add(2 * time.Second)})
	r.Ack(Write{Key: b, Verb: VerbCreate, Seq: 1, ResourceVersion: "13", At: now})
	latest := r.Latest()
	if len(latest) != 2 || latest[a].Seq != 3 || latest[a].ResourceVersion != "12" || latest[b].Seq != 1 {
		t.Errorf("Latest = %+v", latest)
	}
	if len(r.Writes()) != 4 {
		t.Errorf("Writes = %d, want 4", len(r.Writes()))
	}
}

func TestRecorderCountsInWindows(t *testing.T) {
	var r Recorder
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := Key{KindWorkload, "ns", "a"}
	for i := 0; i < 5; i++ {
		r.Fail(Failure{Key: k, Verb: VerbUpdate, At: t0.Add(time.Duration(i) * time.Second), Err: "refused"})
	}
	r.Ack(Write{Key: k, Seq: 1, At: t0.Add(7 * time.Second)})
	r.Ack(Write{Key: Key{KindManagedVM, "ns", "v"}, Seq: 1, At: t0.Add(6 * time.Second)})
	if n := r.FailedBetween(t0.Add(time.Second), t0.Add(3*time.Second)); n != 3 {
		t.Errorf("FailedBetween = %d, want 3 (both ends count)", n)
	}
	r.Fail(Failure{Key: Key{KindTag, "repo", "1.0.1"}, At: t0.Add(2 * time.Second)})
	if byKind := r.FailedByKind(t0.Add(time.Second), t0.Add(2*time.Second)); len(byKind) != 2 || byKind[KindWorkload] != 2 || byKind[KindTag] != 1 {
		t.Errorf("FailedByKind = %v", byKind)
	}
	r.Fail(Failure{Key: k, At: t0.Add(3 * time.Second), Code: 403})
	if n := r.FailedWithCode(t0, t0.Add(3*time.Second), 403); n != 1 {
		t.Errorf("FailedWithCode(403) = %d, want 1", n)
	}
	if n := r.FailedWithCode(t0, t0.Add(2*time.Second), 403); n != 0 {
		t.Errorf("FailedWithCode(403) before it = %d", n)
	}
	if n := r.AckedBetween(t0, t0.Add(10*time.Second)); n != 2 {
		t.Errorf("AckedBetween = %d, want 2", n)
	}
	if at, ok := r.FirstAckAfter(t0, ""); !ok || !at.Equal(t0.Add(6*time.Second)) {
		t.Errorf("FirstAckAfter(any) = %s %v", at, ok)
	}
	if at, ok := r.FirstAckAfter(t0, KindWorkload); !ok || !at.Equal(t0.Add(7*time.Second)) {
		t.Errorf("FirstAckAfter(Workload) = %s %v", at, ok)
	}
	if _, ok := r.FirstAckAfter(t0.Add(7*time.Second), ""); ok {
		t.Error("FirstAckAfter found a write at the given time, want only later ones")
	}
	if len(r.Failures()) != 7 {
		t.Errorf("Failures = %d", len(r.Failures()))
	}
}

func TestRecorderIsSafeForConcurrentUse(t *testing.T) {
	var r Recorder
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			for j := 0; j < 100; j++ {
				r.Ack(Write{Key: Key{KindWorkload, "ns", "a"}, Seq: int64(j)})
				r.Fail(Failure{At: time.Now()})
				_ = r.Latest()
			}
		})
	}
	wg.Wait()
	if len(r.Writes()) != 800 || len(r.Failures()) != 800 {
		t.Errorf("got %d writes, %d failures", len(r.Writes()), len(r.Failures()))
	}
}

func TestRecorderSplitsFailuresByCodeAndSpansThem(t *testing.T) {
	var r Recorder
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := Key{KindWorkload, "ns", "a"}
	// Sent before the window and answered in it after a timeout: counts from the window's start.
	r.Fail(Failure{Key: k, Sent: t0.Add(-time.Second), At: t0.Add(4 * time.Second)})
	r.Fail(Failure{Key: k, Sent: t0.Add(2 * time.Second), At: t0.Add(2100 * time.Millisecond), Code: 503})
	r.Fail(Failure{Key: k, At: t0.Add(3 * time.Second), Code: 503}) // no Sent: counts from At
	r.Fail(Failure{Key: k, At: t0.Add(9 * time.Second), Code: 500}) // outside the window
	codes := r.FailedByCode(t0, t0.Add(5*time.Second))
	if len(codes) != 2 || codes[0] != 1 || codes[503] != 2 {
		t.Errorf("FailedByCode = %v, want no answer 1 and 503 2", codes)
	}
	if span := r.ErrorSpan(t0, t0.Add(5*time.Second)); span != 4*time.Second {
		t.Errorf("ErrorSpan = %s, want 4s (from the window's start to the timeout)", span)
	}
	if span := r.ErrorSpan(t0.Add(6*time.Second), t0.Add(8*time.Second)); span != 0 {
		t.Errorf("ErrorSpan without failures = %s", span)
	}
}
