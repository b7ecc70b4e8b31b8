package score

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/score-spec/score-go/framework"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// Dependencies maps each resource to the resources its params refer to with
// ${resources.NAME...} placeholders.
func (w *Workload) Dependencies() map[string]sets.Set[string] {
	deps := map[string]sets.Set[string]{}
	for name, r := range w.Resources {
		deps[name] = sets.New[string]()
		if r.Params == nil || len(r.Params.Raw) == 0 || !strings.Contains(string(r.Params.Raw), "${") {
			continue
		}
		params, err := r.Params.Object()
		if err != nil {
			continue
		}
		_, _ = framework.Substitute(params, func(ref string) (string, error) {
			if parts := framework.SplitRefParts(ref); len(parts) >= 2 && parts[0] == "resources" {
				deps[name].Insert(parts[1])
			}
			return "", nil
		})
	}
	return deps
}

// CycleError names resources whose params refer to each other in a loop.
type CycleError struct{ Resources []string }

func (e *CycleError) Error() string {
	return fmt.Sprintf("the params of resources %s refer to each other in a cycle", strings.Join(e.Resources, ", "))
}

// ResourceOrder sorts the resources so each comes after those its params refer to (ties by
// name), or reports a cycle.
func (w *Workload) ResourceOrder() ([]string, error) {
	deps := w.Dependencies()
	var order []string
	done := sets.New[string]()
	for len(done) < len(deps) {
		var ready []string
		for name, d := range deps {
			if !done.Has(name) && d.Difference(done).Len() == 0 {
				ready = append(ready, name)
			}
		}
		if len(ready) == 0 {
			cycle := sets.List(sets.KeySet(deps).Difference(done))
			return nil, &CycleError{Resources: cycle}
		}
		sort.Strings(ready)
		order = append(order, ready...)
		done.Insert(ready...)
	}
	return order, nil
}

// ResolveParams substitutes metadata and other resources' plain outputs into params. A secret
// output cannot be copied into a binding's spec; referring to one is an error.
func ResolveParams(params *common.RawObject, meta map[string]interface{}, outputs map[string]Outputs) (*common.RawObject, error) {
	if params == nil || len(params.Raw) == 0 || !strings.Contains(string(params.Raw), "${") {
		return params, nil
	}
	obj, err := params.Object()
	if err != nil {
		return nil, err
	}
	resolved, err := framework.Substitute(obj, func(ref string) (string, error) {
		parts := framework.SplitRefParts(ref)
		if len(parts) == 3 && parts[0] == "resources" {
			if o, ok := outputs[parts[1]]; ok && o.Secrets.Has(parts[2]) {
				return "", fmt.Errorf("output %q of resource %q is secret and cannot be passed in params", parts[2], parts[1])
			}
		}
		return lookup(ref, meta, outputs, map[string]sets.Set[string]{})
	})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(resolved)
	if err != nil {
		return nil, err
	}
	return &common.RawObject{Raw: raw}, nil
}
