package clustergitops

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxClockSkew is how far a target cluster's clock may be from plinth-controller's when a
// Lease is seen for the first time and its renewTime (written by the holder with its own
// clock) is all there is to go by. Clusters whose clocks run NTP stay well within it; without
// the allowance a skew of a few seconds beyond the lease duration's slack reported a running
// Flux as FluxNotRunning.
const maxClockSkew = 30 * time.Second

// leaseTracker tells whether Flux's leader-election Leases are still renewed without comparing
// the target cluster's clock with plinth-controller's: it remembers, per cluster, each Lease's
// last renewTime and when, by plinth-controller's clock, that value was first seen. A Lease
// whose renewTime changed since then was renewed; one whose renewTime has not changed for its
// lease duration, measured on plinth-controller's clock, is stale. Safe for concurrent use.
type leaseTracker struct {
	mu   sync.Mutex
	seen map[string]map[types.NamespacedName]leaseSeen
}

// leaseSeen is a Lease's renewTime and holder at the probe that first saw them, and when that was.
type leaseSeen struct {
	renewTime time.Time
	holder    string
	at        time.Time
}

func newLeaseTracker() *leaseTracker {
	return &leaseTracker{seen: map[string]map[types.NamespacedName]leaseSeen{}}
}

// freshness is the test of one probe of cluster at now: whether a held Lease (with a holder,
// a renewTime and a lease duration) is being renewed. On the first probe of a Lease its
// renewTime must be within its lease duration plus maxClockSkew of now; afterwards a changed
// renewTime (or holder) counts as renewed, and an unchanged one as renewed while less than the
// lease duration has passed since it was first seen.
func (t *leaseTracker) freshness(cluster string, now time.Time) func(*coordinationv1.Lease) bool {
	return func(l *coordinationv1.Lease) bool {
		key := types.NamespacedName{Namespace: l.Namespace, Name: l.Name}
		current := leaseSeen{renewTime: l.Spec.RenewTime.Time, holder: *l.Spec.HolderIdentity, at: now}
		duration := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second

		t.mu.Lock()
		defer t.mu.Unlock()
		leases := t.seen[cluster]
		if leases == nil {
			leases = map[types.NamespacedName]leaseSeen{}
			t.seen[cluster] = leases
		}
		previous, known := leases[key]
		if known && previous.renewTime.Equal(current.renewTime) && previous.holder == current.holder {
			return now.Sub(previous.at) < duration
		}
		leases[key] = current
		if known {
			return true // renewed since the previous probe
		}
		off := now.Sub(current.renewTime)
		return off < duration+maxClockSkew && off > -(duration+maxClockSkew)
	}
}

// forget drops what was remembered of cluster's Leases: the Cluster is gone or no longer uses
// Flux.
func (t *leaseTracker) forget(cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.seen, cluster)
}
