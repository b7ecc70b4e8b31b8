package workload

import (
	"maps"

	"github.com/plinth-dev/plinth/pkg/apis/score"
)

// The seed (Score Orchestrator CRD spec) names container environment env; Score, its
// documents and tools name it variables. Both names are served for the same map and kept in
// step the way Kubernetes keeps a pod's serviceAccount and serviceAccountName: the one a
// client sets defaults the other, and both set and different is refused by validation.

// syncEnvOnCreate copies whichever of env and variables each container sets to the other.
func syncEnvOnCreate(w *score.Workload) {
	for name, c := range w.Spec.Containers {
		fillEmpty(&c)
		w.Spec.Containers[name] = c
	}
}

// syncEnvOnUpdate carries a change of one name to the other. A patch or an apply from a client
// that knows only one name (kubectl apply of a file written with env, say) changes only that
// one, and the other follows, so the stored pair never goes stale; a client that changes both,
// differently, is refused by validation.
//
// A PUT (replace) sends the whole object: a file written with only one name leaves the other
// out, which says nothing about it, so the missing one is filled from the present one as on
// create — otherwise replacing an object with its own unchanged file would clear the map.
func syncEnvOnUpdate(w, old *score.Workload, replace bool) {
	if replace {
		syncEnvOnCreate(w)
		return
	}
	for name, c := range w.Spec.Containers {
		o, existed := old.Spec.Containers[name]
		varsChanged := !existed || !maps.Equal(c.Variables, o.Variables)
		envChanged := !existed || !maps.Equal(c.Env, o.Env)
		switch {
		case varsChanged && !envChanged:
			c.Env = maps.Clone(c.Variables)
		case envChanged && !varsChanged:
			c.Variables = maps.Clone(c.Env)
		default:
			fillEmpty(&c)
		}
		w.Spec.Containers[name] = c
	}
}

func fillEmpty(c *score.Container) {
	switch {
	case len(c.Env) == 0 && len(c.Variables) > 0:
		c.Env = maps.Clone(c.Variables)
	case len(c.Variables) == 0 && len(c.Env) > 0:
		c.Variables = maps.Clone(c.Env)
	}
}
