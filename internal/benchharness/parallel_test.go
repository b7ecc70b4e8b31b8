package benchharness

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestParallelCallsEveryIndexOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	err := Parallel(context.Background(), 103, 8, func(_ context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		seen[i]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 103 {
		t.Fatalf("%d indexes called, want 103", len(seen))
	}
	for i, n := range seen {
		if i < 0 || i >= 103 || n != 1 {
			t.Errorf("index %d called %d times", i, n)
		}
	}
}

func TestParallelStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	calls := 0
	err := Parallel(context.Background(), 1000, 4, func(ctx context.Context, i int) error {
		mu.Lock()
		calls++
		mu.Unlock()
		switch i {
		case 1:
			return nil
		case 5:
			return boom // client 1's second index
		}
		<-ctx.Done() // every other client waits until the failure cancels it
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	// Clients 0, 2 and 3 each started one index, client 1 two (1 and 5); none went on.
	if calls > 5 {
		t.Errorf("%d calls after the failure stopped everything", calls)
	}
}

func TestParallelReportsTheCallersCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Parallel(ctx, 10, 2, func(context.Context, int) error { t.Error("called after cancel"); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
