package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestLatenciesPairEventsWithUpdatesByResourceVersion(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	ws := &watchers{seen: [][]event{
		// Saw both updates, and the sync update before them (not one of rvs: ignored).
		{{rv: "5", at: ms(1)}, {rv: "10", at: ms(14)}, {rv: "11", at: ms(30)}},
		// Missed the second.
		{{rv: "10", at: ms(12)}},
	}}
	sent := []time.Time{ms(0), ms(20)}
	acks := []time.Time{ms(10), ms(25)}
	fromAck, fromSend, missing := ws.latencies([]string{"10", "11"}, acks, sent)
	if missing != 1 {
		t.Errorf("missing = %d, want 1", missing)
	}
	want := []time.Duration{4 * time.Millisecond, 5 * time.Millisecond, 2 * time.Millisecond}
	if len(fromAck) != len(want) {
		t.Fatalf("fromAck = %v, want %v", fromAck, want)
	}
	for i := range want {
		if fromAck[i] != want[i] {
			t.Errorf("fromAck[%d] = %s, want %s", i, fromAck[i], want[i])
		}
	}
	if fromSend[0] != 14*time.Millisecond || fromSend[1] != 10*time.Millisecond || fromSend[2] != 12*time.Millisecond {
		t.Errorf("fromSend = %v", fromSend)
	}
}

func TestWaitAll(t *testing.T) {
	ws := &watchers{seen: [][]event{{{rv: "1"}}, {{rv: "1"}, {rv: "2"}}}}
	if err := ws.waitAll(context.Background(), 1); err != nil {
		t.Errorf("every watcher has one update: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ws.waitAll(ctx, 2); err == nil || !strings.Contains(err.Error(), "1 watchers have not seen 2 updates") {
		t.Errorf("one watcher behind: %v", err)
	}
	ws.ended = 1
	if err := ws.waitAll(context.Background(), 2); err == nil || !strings.Contains(err.Error(), "closed 1 of the watches") {
		t.Errorf("a watch closed by the server: %v", err)
	}
}

func TestRunRefusesEmptyRuns(t *testing.T) {
	for _, o := range []options{{watchers: 0, writes: 1, objects: 1}, {watchers: 1, writes: 0, objects: 1}, {watchers: 1, writes: 1, objects: 0}} {
		if err := run(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
