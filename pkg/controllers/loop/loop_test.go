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
)

// A conflict is retried like any failure but not reported as one: it is optimistic
// concurrency at work. Other errors are reported.
func TestConflictsAreRetriedQuietly(t *testing.T) {
	var mu sync.Mutex
	var reported []string
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, _ ...interface{}) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err.Error())
	}}
	defer func() { utilruntime.ErrorHandlers = saved }()

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
	if len(reported) != 1 || reported[0] != "broken" {
		t.Errorf("reported errors %q, want only the non-conflict one", reported)
	}
}
