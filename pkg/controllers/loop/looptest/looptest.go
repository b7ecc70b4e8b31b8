// Package looptest checks, in controllers' unit tests, that a controller waits for every cache
// it reads before it works: each informer's first list is held back in turn, and the controller
// must not count as synced until it is let through.
package looptest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// Controller is what is checked: whether it would let its workers start.
type Controller interface{ HasSynced() bool }

// Reads is one informer a controller reads: the fake clientset that serves it, its resource
// (plural) and the informer.
type Reads struct {
	Fake     *clienttesting.Fake
	Resource string
	Informer cache.SharedIndexInformer
}

// ExpectWaitsForEvery is ExpectWaitsForEveryRead for controllers whose caches cannot be told
// apart by what their factory starts — several loops built over one factory, as the local
// platform's volume provisioner does — so the test names each loop's reads. It builds the controller with build once per informer it reads, holds that
// informer's list back, and fails the test if the controller counts as synced while
// every other cache is filled and that one is still empty.
func ExpectWaitsForEvery(t *testing.T, build func(t *testing.T) (Controller, []Reads, func(stop <-chan struct{}))) {
	t.Helper()
	_, reads, _ := build(t)
	for i := range reads {
		t.Run(reads[i].Resource, func(t *testing.T) {
			ctrl, reads, start := build(t)
			held := reads[i]
			stop := make(chan struct{})
			defer close(stop)
			release := holdLists(held.Resource, held.Fake)
			defer release()
			start(stop)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			othersSynced := func(context.Context) (bool, error) {
				for j, r := range reads {
					if j != i && !r.Informer.HasSynced() {
						return false, nil
					}
				}
				return true, nil
			}
			if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, othersSynced); err != nil {
				t.Fatalf("the other caches did not sync: %v", err)
			}
			if ctrl.HasSynced() {
				t.Fatalf("the controller would start working while its %s cache is empty", held.Resource)
			}
			release()
			if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
				return ctrl.HasSynced(), nil
			}); err != nil {
				t.Fatalf("the controller did not sync once %s was listed: %v", held.Resource, err)
			}
		})
	}
}
