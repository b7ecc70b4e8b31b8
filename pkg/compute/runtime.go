// Package compute holds the runtimes that materialize WorkloadPlans, registered by runtime class.
// A runtime turns a plan into running things and reports their health; owned objects are
// removed by garbage collection when the plan goes, so runtimes need no delete path of their own.
package compute

import (
	"context"
	"fmt"
	"sort"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// Status is a runtime's report on a plan, in the workload vocabulary.
type Status struct {
	// Ready is true when the workload runs as planned.
	Ready bool
	// Reason is RuntimeProvisioning, RuntimeDegraded or Succeeded (or another seed reason).
	Reason string
	// Message is one neutral sentence without runtime nouns.
	Message string
	// State and Details are runtime-specific, for WorkloadPlan.status.runtimeInfo.
	State   string
	Details map[string]string
}

// Runtime materializes plans of one runtime class. Apply is idempotent.
type Runtime interface {
	Name() string
	Apply(ctx context.Context, plan *v1b1.WorkloadPlan, bindings map[string]*v1b1.ResourceBinding) (Status, error)
}

// Releaser is implemented by runtimes that keep state per plan in memory; Release is called
// once a plan is gone.
type Releaser interface {
	Release(namespace, name string)
}

// Registry maps runtime classes to runtimes.
type Registry struct {
	runtimes map[string]Runtime
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{runtimes: map[string]Runtime{}} }

// Register adds a runtime; a second runtime with the same name is refused.
func (r *Registry) Register(rt Runtime) error {
	if _, dup := r.runtimes[rt.Name()]; dup {
		return fmt.Errorf("runtime %q is already registered", rt.Name())
	}
	r.runtimes[rt.Name()] = rt
	return nil
}

// Get returns the runtime for a class.
func (r *Registry) Get(class string) (Runtime, bool) {
	rt, ok := r.runtimes[class]
	return rt, ok
}

// Release tells every runtime that keeps state per plan that a plan is gone.
func (r *Registry) Release(namespace, name string) {
	for _, rt := range r.runtimes {
		if rel, ok := rt.(Releaser); ok {
			rel.Release(namespace, name)
		}
	}
}

// Names lists the registered classes.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.runtimes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
