package workloadplan

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
)

// A plan woken (by its Deployment, a binding) before its own status write reached the cache
// neither conflicts with that write nor writes the same status again.
func TestStaleCacheAfterOwnWrite(t *testing.T) {
	p := plan("vm")
	c, plinth, rt, _ := newController(t, compute.Status{Reason: v1b1.ReasonRuntimeProvisioning, Message: "The workload is being materialized."}, p)
	looptest.ResourceVersions(&plinth.Fake, plinth.Tracker(), v1b1.SchemeGroupVersion.WithResource("workloadplans"))
	key := cache.NewObjectName("team-a", "shop")
	writes := func() int {
		n := 0
		for _, a := range plinth.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	for i := 0; i < 3; i++ {
		if err := c.reconcile(context.Background(), key); err != nil {
			t.Fatalf("reconcile %d with a stale cache: %v", i, err)
		}
	}
	if n := writes(); n != 1 {
		t.Errorf("%d status writes for one change, want 1", n)
	}

	// A real change while the cache is still stale is written on top of the first write.
	rt.status = compute.Status{Ready: true, Reason: v1b1.ReasonSucceeded, Message: "The workload is available."}
	if err := c.reconcile(context.Background(), key); err != nil {
		t.Fatalf("reconcile after the runtime turned ready: %v", err)
	}
	if n := writes(); n != 2 {
		t.Errorf("%d status writes, want 2", n)
	}

}
