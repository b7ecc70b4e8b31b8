package kubectl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

func TestForEach(t *testing.T) {
	if i, err := forEach(0, workers, func(int) error { t.Error("called with nothing to do"); return nil }); i != -1 || err != nil {
		t.Errorf("forEach(0) = %d, %v", i, err)
	}

	// Every index once, at most workers at a time.
	var calls [100]atomic.Int32
	var running, most atomic.Int32
	i, err := forEach(100, 4, func(i int) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Millisecond)
		calls[i].Add(1)
		return nil
	})
	if i != -1 || err != nil {
		t.Errorf("forEach = %d, %v", i, err)
	}
	for i := range calls {
		if calls[i].Load() != 1 {
			t.Errorf("index %d called %d times", i, calls[i].Load())
		}
	}
	if most.Load() > 4 {
		t.Errorf("%d calls at a time, want at most 4", most.Load())
	}

	// Several failures: the lowest index is named, whichever failed first. 7 is handed out after
	// 3, so both run; 3 fails only after 7 did.
	sevenFailed := make(chan struct{})
	i, err = forEach(10, 4, func(i int) error {
		switch i {
		case 3:
			<-sevenFailed
			return errors.New("three")
		case 7:
			defer close(sevenFailed)
			return errors.New("seven")
		}
		return nil
	})
	if i != 3 || err == nil || err.Error() != "three" {
		t.Errorf("forEach = %d, %v, want 3, three", i, err)
	}

	// With one worker it is a loop that stops at the first failure.
	var seen []int
	i, err = forEach(10, 1, func(i int) error {
		seen = append(seen, i)
		if i == 2 {
			return errors.New("two")
		}
		return nil
	})
	if i != 2 || err == nil || !slices.Equal(seen, []int{0, 1, 2}) {
		t.Errorf("forEach = %d, %v, called %v", i, err, seen)
	}
}

// hookedClient calls before ahead of every apply (outside the fake client's lock, which
// serializes its reactors) and after once the apply returned, with resource/namespace/name.
type hookedClient struct {
	dynamic.Interface
	before func(id string) error
	after  func(id string)
}

func (c hookedClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return hookedResource{NamespaceableResourceInterface: c.Interface.Resource(gvr), c: c, gvr: gvr}
}

type hookedResource struct {
	dynamic.NamespaceableResourceInterface
	c         hookedClient
	gvr       schema.GroupVersionResource
	namespace string
}

func (r hookedResource) Namespace(ns string) dynamic.ResourceInterface {
	return hookedResource{NamespaceableResourceInterface: r.NamespaceableResourceInterface.Namespace(ns).(dynamic.NamespaceableResourceInterface),
		c: r.c, gvr: r.gvr, namespace: ns}
}

func (r hookedResource) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions,
	subresources ...string) (*unstructured.Unstructured, error) {
	id := r.gvr.Resource + "/" + r.namespace + "/" + name
	if r.c.before != nil {
		if err := r.c.before(id); err != nil {
			return nil, err
		}
	}
	if r.c.after != nil {
		defer r.c.after(id)
	}
	return r.NamespaceableResourceInterface.Apply(ctx, name, obj, opts, subresources...)
}

// settings are n ConfigMaps settings-000… in shop, with a Namespace and a ClusterRole that
// are applied before them.
func settings(n int) []manifests.Object {
	objs := []manifests.Object{object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader")}
	for i := range n {
		objs = append(objs, object("v1", "ConfigMap", "shop", fmt.Sprintf("settings-%03d", i)))
	}
	return append(objs, object("v1", "Namespace", "", "shop"))
}

// settingsIndex is i of configmaps/shop/settings-<i>, or -1.
func settingsIndex(id string) int {
	var i int
	if _, err := fmt.Sscanf(id, "configmaps/shop/settings-%03d", &i); err != nil {
		return -1
	}
	return i
}

// The objects of a rank are applied workers at a time, and the inventory is in apply order
// whatever order the applies finished in: here the first workers ConfigMaps finish in reverse
// (each waits for the next one to finish, which only concurrent applies can do).
func TestDeliverAppliesARankConcurrentlyInventoryInOrder(t *testing.T) {
	client, clients := newCluster(t)
	var finished [workers]chan struct{}
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	var running, most atomic.Int32
	clients.client = hookedClient{Interface: client,
		before: func(id string) error {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if i := settingsIndex(id); i >= 0 && i < workers-1 {
				select {
				case <-finished[i+1]:
				case <-time.After(10 * time.Second):
					return fmt.Errorf("%s: settings-%03d was never applied alongside", id, i+1)
				}
			}
			return nil
		},
		after: func(id string) {
			running.Add(-1)
			if i := settingsIndex(id); i >= 0 && i < workers {
				close(finished[i])
			}
		}}
	status, err := New(clients).Deliver(context.Background(), artifact(settings(40)...), target(true, nil))
	if err != nil || !status.Ready {
		t.Fatalf("status %+v, err %v", status, err)
	}
	if most.Load() > workers {
		t.Errorf("%d applies at a time, want at most %d", most.Load(), workers)
	}
	got := applied(client)
	if len(got) != 42 || got[0] != "namespaces//shop" || got[1] != "clusterroles//reader" {
		t.Fatalf("applied %v: want the Namespace, then the ClusterRole, then the ConfigMaps", got)
	}
	if want := fmt.Sprintf("configmaps/shop/settings-%03d", workers-1); got[2] != want {
		t.Errorf("first ConfigMap applied %s, want %s (the test's order)", got[2], want)
	}
	var want []string
	for _, u := range applyOrder(settings(40)) {
		want = append(want, manifests.KeyOf(u.Unstructured).String())
	}
	var ids []string
	for _, e := range status.Inventory {
		ids = append(ids, e.ID)
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
}

// A failing apply stops the delivery: no object is started after it (those in flight finish),
// no later rank is applied, the message names the object, and the inventory keeps what was
// applied, in apply order, and the previous inventory. Of several failures the first in apply
// order is named.
func TestDeliverStopsAtAFailingApply(t *testing.T) {
	previous := &gitopsv1alpha1.ArtifactTargetStatus{Revision: "0.9.0@sha256:old",
		Inventory: []gitopsv1alpha1.InventoryEntry{{ID: "shop_old__ConfigMap", Version: "v1"}}}

	t.Run("within a rank", func(t *testing.T) {
		client, clients := newCluster(t)
		// settings-003 fails once the first workers ConfigMaps are all in flight; the others
		// finish well after the failure.
		release, allStarted := make(chan struct{}), make(chan struct{})
		var started atomic.Int32
		clients.client = hookedClient{Interface: client, before: func(id string) error {
			i := settingsIndex(id)
			if i < 0 {
				return nil
			}
			if started.Add(1) == workers {
				close(allStarted)
			}
			if i != 3 {
				<-release
				return nil
			}
			select {
			case <-allStarted:
			case <-time.After(10 * time.Second):
				return errors.New("the ConfigMaps were not applied concurrently")
			}
			time.AfterFunc(250*time.Millisecond, func() { close(release) })
			return errors.New("refused")
		}}
		status, err := New(clients).Deliver(context.Background(), artifact(settings(40)...), target(true, previous))
		if err == nil || status.Ready || status.Message != "Applying ConfigMap shop/settings-003 (000-configmap-settings-003.yaml#1) on cluster east failed: refused." {
			t.Fatalf("status %+v, err %v", status, err)
		}
		// The Namespace, the ClusterRole, and the first workers ConfigMaps but the failed one.
		want := []string{"_shop__Namespace", "_reader_rbac.authorization.k8s.io_ClusterRole"}
		for i := range workers {
			if i != 3 {
				want = append(want, fmt.Sprintf("shop_settings-%03d__ConfigMap", i))
			}
		}
		want = append(want, "shop_old__ConfigMap")
		var ids []string
		for _, e := range status.Inventory {
			ids = append(ids, e.ID)
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("inventory (-want +got):\n%s", diff)
		}
		if len(applied(client)) != 2+workers-1 || status.Revision != previous.Revision || len(deleted(client)) != 0 {
			t.Errorf("applied %v, deleted %v, revision %s", applied(client), deleted(client), status.Revision)
		}
	})

	t.Run("the first of several", func(t *testing.T) {
		client, clients := newCluster(t)
		fiveFailed := make(chan struct{})
		clients.client = hookedClient{Interface: client, before: func(id string) error {
			switch settingsIndex(id) {
			case 2:
				<-fiveFailed
				return errors.New("two refused")
			case 5:
				defer close(fiveFailed)
				return errors.New("five refused")
			}
			return nil
		}}
		status, err := New(clients).Deliver(context.Background(), artifact(settings(10)...), target(true, previous))
		if err == nil || !strings.HasPrefix(status.Message, "Applying ConfigMap shop/settings-002 ") || !strings.HasSuffix(status.Message, "two refused.") {
			t.Fatalf("status %+v, err %v", status, err)
		}
		for _, e := range status.Inventory {
			if e.ID == "shop_settings-002__ConfigMap" || e.ID == "shop_settings-005__ConfigMap" {
				t.Errorf("inventory %v has a failed object", status.Inventory)
			}
		}
	})

	t.Run("a rank before the rest", func(t *testing.T) {
		client, clients := newCluster(t)
		clients.client = hookedClient{Interface: client, before: func(id string) error {
			if id == "clusterroles//reader" {
				return errors.New("forbidden")
			}
			return nil
		}}
		status, err := New(clients).Deliver(context.Background(), artifact(settings(10)...), target(true, previous))
		if err == nil || !strings.HasPrefix(status.Message, "Applying ClusterRole reader ") {
			t.Fatalf("status %+v, err %v", status, err)
		}
		if want := []string{"namespaces//shop"}; !slices.Equal(applied(client), want) {
			t.Errorf("applied %v, want %v", applied(client), want)
		}
		want := []gitopsv1alpha1.InventoryEntry{{ID: "_shop__Namespace", Version: "v1"}, {ID: "shop_old__ConfigMap", Version: "v1"}}
		if diff := cmp.Diff(want, status.Inventory); diff != "" {
			t.Errorf("inventory (-want +got):\n%s", diff)
		}
	})
}

func TestRankSpans(t *testing.T) {
	for name, tc := range map[string]struct {
		objs []manifests.Object
		want [][2]int
	}{
		"none": {},
		"one rank": {objs: []manifests.Object{object("v1", "ConfigMap", "a", "x"), object("apps/v1", "Deployment", "a", "y")},
			want: [][2]int{{0, 2}}},
		"all ranks": {objs: applyOrder(append(settings(3), widgetsCRD(), object("v1", "ServiceAccount", "shop", "sa"))),
			want: [][2]int{{0, 1}, {1, 2}, {2, 4}, {4, 7}}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := rankSpans(tc.objs); !cmp.Equal(tc.want, got) {
				t.Errorf("rankSpans = %v, want %v", got, tc.want)
			}
		})
	}
}
