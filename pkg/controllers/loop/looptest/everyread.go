package looptest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
)

// Build constructs the controller under test from informer factories over fake clientsets and
// returns it, the fakes, and a function that starts the factories.
type Build func(t *testing.T) (ctrl Controller, fakes []*clienttesting.Fake, start func(stop <-chan struct{}))

// ExpectWaitsForEveryRead checks that the controller waits for every cache it reads, where
// "every cache it reads" is derived from the controller rather than listed by the test: the
// informers its constructor asked the factories for are the ones the factories start, so the
// resources listed in a first, unhindered start are exactly what it reads. Each is then held
// back in turn, and the controller must not count as synced while it is.
func ExpectWaitsForEveryRead(t *testing.T, build Build) {
	t.Helper()
	resources := listedBy(t, build)
	if len(resources) == 0 {
		t.Fatal("the controller read no informer at all")
	}
	for _, held := range resources {
		t.Run(held, func(t *testing.T) {
			ctrl, fakes, start := build(t)
			stop := make(chan struct{})
			defer close(stop)
			release := holdLists(held, fakes...)
			defer release()
			start(stop)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			others := sets.New(resources...).Delete(held)
			// A reflector watches only once its list has filled its store, so a watch of every
			// other resource means every other cache is full.
			if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
				return watched(fakes).IsSuperset(others), nil
			}); err != nil {
				t.Fatalf("the other caches did not fill: %v", err)
			}
			// Their handlers hear of the lists a moment later: give them that moment, in which
			// a controller not waiting for the held cache would count as synced.
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Second, true, func(context.Context) (bool, error) {
				return ctrl.HasSynced(), nil
			}); err == nil {
				t.Fatalf("the controller would start working while its %s cache is empty", held)
			}
			release()
			if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
				return ctrl.HasSynced(), nil
			}); err != nil {
				t.Fatalf("the controller did not sync once %s was listed: %v", held, err)
			}
		})
	}
}

// listedBy starts the controller once, unhindered, and returns the resources its informers
// listed, sorted.
func listedBy(t *testing.T, build Build) []string {
	t.Helper()
	ctrl, fakes, start := build(t)
	stop := make(chan struct{})
	defer close(stop)
	start(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return ctrl.HasSynced(), nil
	}); err != nil {
		t.Fatalf("the controller never synced: %v", err)
	}
	listed := sets.New[string]()
	for _, f := range fakes {
		for _, a := range f.Actions() {
			if a.GetVerb() == "list" {
				listed.Insert(a.GetResource().Resource)
			}
		}
	}
	return sets.List(listed)
}

func watched(fakes []*clienttesting.Fake) sets.Set[string] {
	out := sets.New[string]()
	for _, f := range fakes {
		for _, a := range f.Actions() {
			if a.GetVerb() == "watch" {
				out.Insert(a.GetResource().Resource)
			}
		}
	}
	return out
}

// holdLists refuses every list of resource on the fakes until release is called (more than
// once is fine). Refused rather than blocked: the fake clientset serves one request at a time,
// so a blocked list would hold back every informer; the reflector retries a refused one.
func holdLists(resource string, fakes ...*clienttesting.Fake) (release func()) {
	released := make(chan struct{})
	for _, f := range fakes {
		f.PrependReactor("list", resource, func(clienttesting.Action) (bool, runtime.Object, error) {
			select {
			case <-released:
				return false, nil, nil // on to the object tracker
			default:
				return true, nil, errors.New("held back by the test")
			}
		})
	}
	var once sync.Once
	return func() { once.Do(func() { close(released) }) }
}
