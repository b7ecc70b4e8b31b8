package benchharness

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func pod(name string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "1"}}
	if ready {
		p.Labels = map[string]string{"ready": "true"}
	}
	return p
}

func podList(rv string, pods ...*corev1.Pod) *corev1.PodList {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	return l
}

func isReady(p *corev1.Pod) bool { return p.Labels["ready"] == "true" }

// fakeSource serves lists in order and one fake watcher per watch, recording the options.
type fakeSource struct {
	lists    []runtime.Object
	watchers []*watch.FakeWatcher
	opts     []metav1.ListOptions
}

func (f *fakeSource) source() Source {
	return Source{
		List: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			l := f.lists[0]
			f.lists = f.lists[1:]
			return l, nil
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			f.opts = append(f.opts, opts)
			w := f.watchers[0]
			f.watchers = f.watchers[1:]
			go func() { <-ctx.Done(); w.Stop() }()
			return w, nil
		},
	}
}

func TestWaitReadyFollowsTheWatchFromTheListsVersion(t *testing.T) {
	w := watch.NewFakeWithChanSize(10, false)
	src := &fakeSource{lists: []runtime.Object{podList("10", pod("a", true), pod("b", false))}, watchers: []*watch.FakeWatcher{w}}
	w.Modify(pod("b", true))
	w.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12"}})
	w.Add(pod("c", false))
	w.Modify(pod("c", true))
	if err := WaitReady(context.Background(), src.source(), 3, isReady); err != nil {
		t.Fatal(err)
	}
	if len(src.opts) != 1 || src.opts[0].ResourceVersion != "10" || !src.opts[0].AllowWatchBookmarks {
		t.Errorf("watch options %+v, want one watch from resourceVersion 10 with bookmarks", src.opts)
	}
}

func TestWaitReadyForgetsDeletedAndUnreadyObjects(t *testing.T) {
	w := watch.NewFakeWithChanSize(10, false)
	src := &fakeSource{lists: []runtime.Object{podList("10", pod("a", true), pod("b", true))}, watchers: []*watch.FakeWatcher{w}}
	w.Delete(pod("a", true))
	w.Add(pod("c", true)) // three ready if a were still counted
	w.Modify(pod("b", false))
	w.Add(pod("d", true)) // three ready if b were still counted
	w.Add(pod("e", true))
	if err := WaitReady(context.Background(), src.source(), 3, isReady); err != nil {
		t.Fatal(err)
	}
	if left := len(w.ResultChan()); left != 0 {
		t.Errorf("returned with %d events unread: a deleted or unready object was counted", left)
	}
}

func TestWaitReadyRelistsAfterAWatchError(t *testing.T) {
	first, second := watch.NewFakeWithChanSize(10, false), watch.NewFakeWithChanSize(10, false)
	src := &fakeSource{
		lists:    []runtime.Object{podList("10", pod("a", true)), podList("20", pod("a", true), pod("b", true))},
		watchers: []*watch.FakeWatcher{first, second},
	}
	first.Error(&metav1.Status{Reason: metav1.StatusReasonExpired})
	second.Add(pod("c", true))
	if err := WaitReady(context.Background(), src.source(), 3, isReady); err != nil {
		t.Fatal(err)
	}
	if len(src.opts) != 2 || src.opts[1].ResourceVersion != "20" {
		t.Errorf("watch options %+v, want a second watch from the relist's resourceVersion 20", src.opts)
	}
}

func TestWaitReadySaysHowManyWereReadyWhenTimeIsUp(t *testing.T) {
	src := &fakeSource{lists: []runtime.Object{podList("10", pod("a", true), pod("b", false))},
		watchers: []*watch.FakeWatcher{watch.NewFake()}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := WaitReady(ctx, src.source(), 2, isReady)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 ready") {
		t.Errorf("got %v, want an error saying 1 of 2 ready", err)
	}
}
