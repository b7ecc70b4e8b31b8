package resourcebinding

import (
	"crypto/sha256"
	"sync"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// forgetter is a provisioner that remembers something per binding, dropped when the binding is
// gone.
type forgetter interface {
	forget(key cache.ObjectName)
}

// appliedIngresses remembers, per route binding, the Ingress manifest this process last
// applied and the UID and generation of the Ingress that apply returned. A route binding is
// reconciled again whenever its workload, its Ingress or the Provisioners change; while the
// manifest is the same and the live Ingress is still the applied one, applying it again would
// change nothing, so it is skipped.
//
// "Still the applied one": the same UID (deleted and made anew starts again at generation 1),
// the same generation (a spec edit by anyone moves it), and the labels and controller owner the
// manifest sets still present (a metadata edit does not move the generation). Anything else is
// drift, repaired by applying. A restarted controller remembers nothing and applies once.
type appliedIngresses struct {
	mu      sync.Mutex
	entries map[cache.ObjectName]appliedIngress
}

type appliedIngress struct {
	manifest   [sha256.Size]byte
	uid        types.UID
	generation int64
	labels     map[string]string
	owner      types.UID
}

// upToDate reports whether manifest was the last applied for key and live is still the
// Ingress that apply left.
func (a *appliedIngresses) upToDate(key cache.ObjectName, manifest []byte, live *networkingv1.Ingress) bool {
	a.mu.Lock()
	e, ok := a.entries[key]
	a.mu.Unlock()
	if !ok || e.manifest != sha256.Sum256(manifest) || live.UID != e.uid || live.Generation != e.generation {
		return false
	}
	for k, v := range e.labels {
		if have, ok := live.Labels[k]; !ok || have != v {
			return false
		}
	}
	for _, ref := range live.OwnerReferences {
		if ref.UID == e.owner && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// record keeps what an apply of manifest returned.
func (a *appliedIngresses) record(key cache.ObjectName, manifest []byte, applied *networkingv1.Ingress) {
	e := appliedIngress{manifest: sha256.Sum256(manifest), uid: applied.UID, generation: applied.Generation, labels: applied.Labels}
	for _, ref := range applied.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			e.owner = ref.UID
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.entries == nil {
		a.entries = map[cache.ObjectName]appliedIngress{}
	}
	a.entries[key] = e
}

// forget drops the entry of key.
func (a *appliedIngresses) forget(key cache.ObjectName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.entries, key)
}
