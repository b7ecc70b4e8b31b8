package benchharness

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeConfigMaps lists nothing and hands out one fake watch, recording the options of both.
type fakeConfigMaps struct {
	w                   *watch.FakeWatcher
	listOpts, watchOpts metav1.ListOptions
	watched             chan struct{}
}

func (f *fakeConfigMaps) List(_ context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
	f.listOpts = opts
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, nil
}

func (f *fakeConfigMaps) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	f.watchOpts = opts
	close(f.watched)
	return f.w, nil
}

func TestAwaitOpensItsWatchThenMarksWhenReady(t *testing.T) {
	f := &fakeConfigMaps{w: watch.NewFakeWithChanSize(2, false), watched: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := Await(ctx, ByName(f, "wanted"), func(cm *corev1.ConfigMap) bool { return cm.Data["ready"] == "yes" })
	if err := Opened(ctx, m); err != nil {
		t.Fatal(err)
	}
	<-f.watched
	if f.listOpts.FieldSelector != "metadata.name=wanted" || f.watchOpts.FieldSelector != "metadata.name=wanted" || f.watchOpts.ResourceVersion != "7" {
		t.Errorf("list %+v, watch %+v: want the name's field selector, the watch from the list's resourceVersion", f.listOpts, f.watchOpts)
	}
	start := time.Now()
	f.w.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wanted", ResourceVersion: "8"}})
	select {
	case <-m.done:
		t.Fatal("marked for an object that is not ready")
	case <-time.After(50 * time.Millisecond):
	}
	f.w.Modify(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wanted", ResourceVersion: "9"}, Data: map[string]string{"ready": "yes"}})
	d, err := m.Since(start)
	if err != nil || d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("Since = %v, %v; want the time of the ready event", d, err)
	}
}

func TestAwaitReportsFailureAndOpensAnyway(t *testing.T) {
	boom := errors.New("boom")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := Await(ctx, ByName(&failingLister{err: boom}, "x"), func(*corev1.ConfigMap) bool { return true })
	if err := Opened(ctx, m); err != nil {
		t.Fatalf("a mark whose list failed never opened: %v", err)
	}
	if _, err := m.Since(time.Now()); !errors.Is(err, boom) {
		t.Errorf("err %v, want the list's", err)
	}

	// Opened gives up with its context.
	stuck := &Mark{open: make(chan struct{}), done: make(chan struct{})}
	ended, end := context.WithCancel(context.Background())
	end()
	if err := Opened(ended, stuck); !errors.Is(err, context.Canceled) {
		t.Errorf("Opened = %v, want the context's end", err)
	}
}

type failingLister struct{ err error }

func (f *failingLister) List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error) {
	return nil, f.err
}

func (f *failingLister) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, f.err
}

func TestGone(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "kustomizations"}, "x")
	calls := 0
	err := Gone(context.Background(), time.Minute, func(context.Context) error { return notFound }, func(context.Context) error {
		calls++
		if calls < 3 {
			return nil // still there
		}
		return notFound
	})
	if err != nil || calls != 3 {
		t.Errorf("Gone = %v after %d reads, want nil after 3", err, calls)
	}
	boom := errors.New("boom")
	if err := Gone(context.Background(), time.Minute, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Gone = %v, want the read's error", err)
	}
	if err := Gone(context.Background(), 300*time.Millisecond, func(context.Context) error { return nil }); err == nil {
		t.Error("Gone returned nil for an object that never went")
	}
}
