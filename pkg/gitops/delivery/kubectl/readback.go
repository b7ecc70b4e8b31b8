package kubectl

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

// check reads the placed objects at indices back from the target and returns why the artifact
// may not apply the first of them, in apply order, that it may not (see mayApply), or could not
// read; nil when it may apply them all.
//
// The objects of one resource in one namespace are read with one list rather than a GET each
// (a lone one with a GET): a chart's 50 ConfigMaps are one request instead of 50. The list is
// one page of at most twice as many items as the artifact has there, so that a crowded
// namespace (kube-system's Secrets) costs no more than about twice the GETs would; the
// artifact's objects that page does not hold, and those of a resource the target's identity
// may get but not list, are read with a GET each. The reads run on up to workers goroutines.
// Every object is read whatever another's outcome, so that the one named is always the
// first in apply order.
func (p *placer) check(ctx context.Context, placements []*placement, indices []int) error {
	live := make([]*unstructured.Unstructured, len(placements))
	errs := make([]error, len(placements))

	type group struct {
		members []int
	}
	var groups []*group
	byKey := map[readKey]*group{}
	for _, i := range indices {
		k := placements[i].readKey()
		g := byKey[k]
		if g == nil {
			g = &group{}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.members = append(g.members, i)
	}

	// Lists first; what they leave unread (found[i] false) is read with a GET next.
	found := make([]bool, len(placements))
	forEach(len(groups), workers, func(n int) error {
		g := groups[n]
		if len(g.members) < 2 {
			return nil
		}
		first := placements[g.members[0]]
		list, err := first.resource.List(ctx, metav1.ListOptions{Limit: int64(2 * len(g.members))})
		if apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) {
			return nil // read one by one
		}
		if err != nil {
			errs[g.members[0]] = fmt.Errorf("listing the %s objects%s on cluster %s failed: %w",
				first.obj.GetKind(), inNamespace(first.obj.GetNamespace()), p.cluster, err)
			for _, i := range g.members {
				found[i] = true // the error stands for all of them
			}
			return nil
		}
		items := make(map[string]*unstructured.Unstructured, len(list.Items))
		for j := range list.Items {
			items[list.Items[j].GetName()] = &list.Items[j]
		}
		complete := list.GetContinue() == ""
		for _, i := range g.members {
			if u, ok := items[placements[i].obj.GetName()]; ok {
				live[i], found[i] = u, true
			} else if complete {
				found[i] = true // not on the target
			}
		}
		return nil
	})
	var gets []int
	for _, i := range indices {
		if !found[i] {
			gets = append(gets, i)
		}
	}
	forEach(len(gets), workers, func(n int) error {
		i := gets[n]
		pl := placements[i]
		u, err := pl.resource.Get(ctx, pl.obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs[i] = fmt.Errorf("reading %s on cluster %s failed: %w", describe(pl.obj), p.cluster, err)
		default:
			live[i] = u
		}
		return nil
	})

	for _, i := range indices {
		if errs[i] != nil {
			return errs[i]
		}
		pl := placements[i]
		if live[i] != nil && !p.mayApply(live[i], manifests.KeyOf(pl.obj.Unstructured).String()) {
			return fmt.Errorf("%s exists on cluster %s and was not created by %s %s, so it is left alone unless annotated %s=true",
				describe(pl.obj), p.cluster, p.owner, p.annotation, delivery.AnnotationAdopt)
		}
	}
	return nil
}

// readKey is what the objects read with one list share: their resource and namespace.
type readKey struct {
	resource  schema.GroupVersionResource
	namespace string
}

func (pl *placement) readKey() readKey {
	return readKey{resource: pl.gvr, namespace: pl.obj.GetNamespace()}
}

// inNamespace is " in namespace <ns>" for messages, or nothing for cluster-scoped objects.
func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}
