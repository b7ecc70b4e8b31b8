package benchharness

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// Mark is a milestone of a benchmark round: when the object watched was first seen in a
// state. Its watch opens before the round's clock starts (Opened), so that the list that
// precedes the watch is not timed.
type Mark struct {
	open chan struct{} // closed once its watch is open
	done chan struct{}
	at   time.Time
	err  error
}

// Await watches src in the background until one object is ready, and returns the milestone.
func Await[T runtime.Object](ctx context.Context, src Source, ready func(T) bool) *Mark {
	m := &Mark{open: make(chan struct{}), done: make(chan struct{})}
	watchFrom := src.Watch
	// Only WaitReady's goroutine calls Watch, and reads once after it returns.
	var once bool
	src.Watch = func(ctx context.Context, opts metav1.ListOptions) (w watch.Interface, err error) {
		w, err = watchFrom(ctx, opts)
		if !once {
			once = true
			close(m.open)
		}
		return w, err
	}
	go func() {
		defer close(m.done)
		m.err = WaitReady(ctx, src, 1, ready)
		m.at = time.Now()
		if !once {
			// Ready from the list already, or failed before watching.
			once = true
			close(m.open)
		}
	}()
	return m
}

// Since waits for the milestone and says how long after start it was reached.
func (m *Mark) Since(start time.Time) (time.Duration, error) {
	<-m.done
	return m.at.Sub(start), m.err
}

// Opened waits until every mark's watch is open, so that the clock starts with the watches
// in place.
func Opened(ctx context.Context, marks ...*Mark) error {
	for _, m := range marks {
		select {
		case <-m.open:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// ByName is a Source of the one object named name that c lists, by field selector.
func ByName[L runtime.Object](c Lister[L], name string) Source {
	selected := func(opts metav1.ListOptions) metav1.ListOptions {
		opts.FieldSelector = "metadata.name=" + name
		return opts
	}
	return Source{
		List: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, selected(opts))
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, selected(opts))
		},
	}
}

// Gone waits, for at most timeout, until every get reports NotFound: finalizers have run, so
// that the next round starts from rest. Any other error of a get ends the wait.
func Gone(ctx context.Context, timeout time.Duration, gets ...func(context.Context) error) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, get := range gets {
			err := get(ctx)
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}
