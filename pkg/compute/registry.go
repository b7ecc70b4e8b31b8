// Package compute holds plinth-controller's compute providers in one registry, by name. A
// provider is a Score runtime (it materializes WorkloadPlans of its runtime class), a
// tenant-compute provider (it provisions TenantComputes whose spec.providerType names it), or
// both, as the built-in kubernetes provider is.
package compute

import (
	"errors"
	"fmt"
	"sort"
)

// ErrDuplicateName is returned when a second compute provider is registered under a name the
// registry already holds.
var ErrDuplicateName = errors.New("duplicate compute provider name")

// Entry is one compute provider: a Score runtime, a tenant-compute provider, or both under the
// same name.
type Entry struct {
	// Name is the runtime class and the tenant-compute provider type.
	Name string
	// Runtime materializes WorkloadPlans whose runtimeClass is Name; nil if the provider is not
	// a Score runtime.
	Runtime Runtime
	// Provider provisions TenantComputes whose providerType is Name; nil if the provider does
	// not provision tenant compute.
	Provider Provider
}

// Registry holds compute providers by name. Register everything before the controllers start;
// lookups afterwards are safe from any goroutine (the registry is read-only by then).
type Registry struct {
	entries map[string]Entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{entries: map[string]Entry{}} }

// Register adds a compute provider. A name already registered is refused (ErrDuplicateName),
// as is an entry whose runtime or provider reports another name than the entry's: the name a
// provider publishes in its ComputeProvider must be the one it is found by.
func (r *Registry) Register(e Entry) error {
	switch {
	case e.Name == "":
		return errors.New("a compute provider needs a name")
	case e.Runtime == nil && e.Provider == nil:
		return fmt.Errorf("compute provider %q is neither a runtime nor a tenant-compute provider", e.Name)
	case e.Runtime != nil && e.Runtime.Name() != e.Name:
		return fmt.Errorf("compute provider %q: its runtime is named %q", e.Name, e.Runtime.Name())
	case e.Provider != nil && e.Provider.Name() != e.Name:
		return fmt.Errorf("compute provider %q: its tenant-compute provider is named %q", e.Name, e.Provider.Name())
	}
	if _, dup := r.entries[e.Name]; dup {
		return fmt.Errorf("%w: %q is already registered", ErrDuplicateName, e.Name)
	}
	r.entries[e.Name] = e
	return nil
}

// Runtime returns the Score runtime registered under name (a WorkloadPlan's runtime class).
func (r *Registry) Runtime(name string) (Runtime, bool) {
	e, ok := r.entries[name]
	return e.Runtime, ok && e.Runtime != nil
}

// Provider returns the tenant-compute provider registered under name (a TenantCompute's
// providerType).
func (r *Registry) Provider(name string) (Provider, bool) {
	e, ok := r.entries[name]
	return e.Provider, ok && e.Provider != nil
}

// Providers returns the tenant-compute providers sorted by name, for publishing them as
// ComputeProviders.
func (r *Registry) Providers() []Provider {
	var out []Provider
	for _, e := range r.entries {
		if e.Provider != nil {
			out = append(out, e.Provider)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Runtimes returns the Score runtimes sorted by name, for the WorkloadPlan controller to find
// the informers they read (PlanNotifier).
func (r *Registry) Runtimes() []Runtime {
	var out []Runtime
	for _, e := range r.entries {
		if e.Runtime != nil {
			out = append(out, e.Runtime)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Release tells every runtime that keeps state per plan that a plan is gone.
func (r *Registry) Release(namespace, name string) {
	for _, e := range r.entries {
		if rel, ok := e.Runtime.(Releaser); ok {
			rel.Release(namespace, name)
		}
	}
}
