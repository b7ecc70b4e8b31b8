package loop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/errkind"
)

// A conflict is retried like any failure but not reported as one: it is optimistic
// concurrency at work. Other errors are reported.
func TestConflictsAreRetriedQuietly(t *testing.T) {
	var mu sync.Mutex
	reported := reportedErrors(t, &mu)

	calls := map[string]int{}
	done := make(chan struct{})
	l := New("test", func(_ context.Context, key cache.ObjectName) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key.Name]++
		switch {
		case key.Name == "conflict" && calls[key.Name] == 1:
			return apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "conflict", errors.New("the object has been modified"))
		case key.Name == "broken" && calls[key.Name] == 1:
			return errors.New("broken")
		}
		if calls["conflict"] == 2 && calls["broken"] == 2 {
			close(done)
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Run(ctx, 1) }()
	l.Enqueue(cache.ObjectName{Name: "conflict"})
	l.Enqueue(cache.ObjectName{Name: "broken"})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("keys were not retried: %v", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(*reported) != 1 || (*reported)[0] != "broken" {
		t.Errorf("reported errors %q, want only the non-conflict one", *reported)
	}
}

// A Stalled error is neither retried nor reported as a failure; a Waiting one comes back after
// the time it names, also unreported.
func TestErrorKinds(t *testing.T) {
	var mu sync.Mutex
	reported := reportedErrors(t, &mu)

	calls := map[string]int{}
	waited := make(chan time.Duration, 1)
	var firstWait time.Time
	l := New("test", func(_ context.Context, key cache.ObjectName) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key.Name]++
		switch key.Name {
		case "stalled":
			return errkind.Stalledf("spec.x is refused")
		case "waiting":
			if calls[key.Name] == 1 {
				firstWait = time.Now()
				return errkind.Waitingf(300*time.Millisecond, "deleting")
			}
			waited <- time.Since(firstWait)
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Run(ctx, 1) }()
	l.Enqueue(cache.ObjectName{Name: "stalled"})
	l.Enqueue(cache.ObjectName{Name: "waiting"})
	select {
	case d := <-waited:
		if d < 300*time.Millisecond {
			t.Errorf("a Waiting key came back after %v, before the 300ms it asked for", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a Waiting key never came back")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["stalled"] != 1 {
		t.Errorf("a Stalled key ran %d times, want once", calls["stalled"])
	}
	if len(*reported) != 0 {
		t.Errorf("reported %q; stalled and waiting are not failures", *reported)
	}
}

// reportedErrors collects, under mu, the errors the loop reports until the test ends.
func reportedErrors(t *testing.T, mu *sync.Mutex) *[]string {
	var reported []string
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, _ ...interface{}) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err.Error())
	}}
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
	return &reported
}
