package tenantidclaim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth-dev/plinth/pkg/registry/compute/computetest"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(computetest.Scheme, computetest.RunEtcd(t).OptionsGetter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Destroy)
	return s
}

// objects is a fake set of TenantComputes for Lookup.
type objects map[string]types.UID

func (o objects) lookup(_ context.Context, namespace, name string) (types.UID, bool, error) {
	uid, ok := o[namespace+"/"+name]
	return uid, ok, nil
}

func held(t *testing.T, err error) *HeldError {
	t.Helper()
	var h *HeldError
	if !errors.As(err, &h) {
		t.Fatalf("got %v, want a HeldError", err)
	}
	return h
}

func TestClaimHeldInFlightAndStale(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	existing := objects{}
	a := Holder{Namespace: "team-a", Name: "shop", UID: "uid-a"}
	b := Holder{Namespace: "team-b", Name: "store", UID: "uid-b"}

	claim, err := s.Claim(ctx, "acme", a, existing.lookup, false)
	if err != nil || claim.HolderUID != "uid-a" {
		t.Fatalf("first claim: %+v %v", claim, err)
	}
	// The holder's create is still in flight: another claim is refused as in flight.
	if h := held(t, func() error { _, err := s.Claim(ctx, "acme", b, existing.lookup, false); return err }()); !h.InFlight || h.Holder != a {
		t.Errorf("in flight: %+v", h)
	}
	// The holder exists: refused, naming it.
	existing["team-a/shop"] = "uid-a"
	if h := held(t, func() error { _, err := s.Claim(ctx, "acme", b, existing.lookup, false); return err }()); h.InFlight || h.Holder != a {
		t.Errorf("held: %+v", h)
	}
	// However old the claim, an existing holder keeps its ID.
	s.staleAfter = 0
	held(t, func() error { _, err := s.Claim(ctx, "acme", b, existing.lookup, false); return err }())

	// The holder is gone (a crash between claim and create) but the claim is young: refused.
	delete(existing, "team-a/shop")
	s.staleAfter = StaleAfter
	held(t, func() error { _, err := s.Claim(ctx, "acme", b, existing.lookup, false); return err }())
	// Once the claim is older than StaleAfter, it is taken over, also by a dry run's check.
	s.staleAfter = 0
	if c, err := s.Claim(ctx, "acme", b, existing.lookup, true); err != nil || c != nil {
		t.Fatalf("dry run on a stale claim: %+v %v", c, err)
	}
	if c, _ := s.Get(ctx, "acme"); c.HolderUID != "uid-a" {
		t.Fatalf("a dry run changed the claim: %+v", c)
	}
	taken, err := s.Claim(ctx, "acme", b, existing.lookup, false)
	if err != nil || taken.HolderUID != "uid-b" || taken.UID == claim.UID {
		t.Fatalf("takeover: %+v %v", taken, err)
	}
	// A holder of the same name but another UID (deleted and created again) does not keep
	// the ID either.
	existing["team-b/store"] = "uid-b2"
	c := Holder{Namespace: "team-c", Name: "c", UID: "uid-c"}
	if taken, err := s.Claim(ctx, "acme", c, existing.lookup, false); err != nil || taken.HolderUID != "uid-c" {
		t.Fatalf("takeover from a recreated holder: %+v %v", taken, err)
	}
}

func TestReleaseOnlyWhatIsHeld(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	none := objects{}
	first, err := s.Claim(ctx, "acme", Holder{Namespace: "a", Name: "x", UID: "uid-1"}, none.lookup, false)
	if err != nil {
		t.Fatal(err)
	}
	s.staleAfter = 0
	second, err := s.Claim(ctx, "acme", Holder{Namespace: "b", Name: "y", UID: "uid-2"}, none.lookup, false)
	if err != nil {
		t.Fatal(err)
	}
	// The first request's clean-up must not release the claim taken over since.
	if err := s.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseHeld(ctx, "acme", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Get(ctx, "acme"); err != nil || c.UID != second.UID {
		t.Fatalf("the second claim was released: %+v %v", c, err)
	}
	if err := s.ReleaseHeld(ctx, "acme", "uid-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "acme"); !apierrors.IsNotFound(err) {
		t.Fatalf("after its holder released it: %v", err)
	}
	// Releasing what is gone is no error.
	if err := s.Release(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseHeld(ctx, "acme", "uid-2"); err != nil {
		t.Fatal(err)
	}
}

// Ten requests find the same stale claim at once: exactly one takes it over, the others are
// told a create is in flight.
func TestConcurrentTakeoverOfAStaleClaim(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	none := objects{}
	if _, err := s.Claim(ctx, "acme", Holder{Namespace: "gone", Name: "gone", UID: "uid-gone"}, none.lookup, false); err != nil {
		t.Fatal(err)
	}
	// Creation timestamps have a resolution of one second: after three seconds the first
	// claim is more than two seconds old, and a claim written now less than two.
	s.staleAfter = 2 * time.Second
	time.Sleep(3 * time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Claim(ctx, "acme", Holder{Namespace: "ns", Name: "n", UID: types.UID(fmt.Sprintf("uid-%d", i))}, none.lookup, false)
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("requests %d and %d both took the claim over", winner, i)
			}
			winner = i
			continue
		}
		if h := held(t, err); !h.InFlight {
			t.Errorf("request %d: %+v, want in flight", i, h)
		}
	}
	if winner < 0 {
		t.Fatal("nobody took the stale claim over")
	}
	if c, err := s.Get(ctx, "acme"); err != nil || c.HolderUID != fmt.Sprintf("uid-%d", winner) {
		t.Fatalf("claim %+v %v, want the winner's", c, err)
	}
}

// A claim outlives the longest request: a create still writing after the generic server's
// 60 s request timeout has not lost its claim.
func TestStaleAfterOutlivesARequest(t *testing.T) {
	if StaleAfter <= 60*time.Second {
		t.Errorf("StaleAfter %s is not longer than the 60 s request timeout", StaleAfter)
	}
}
