// Package platformpolicy evaluates PlatformPolicies against Workloads: it compiles policies once
// per change into an ordered snapshot, finds the ones that select a workload, applies their
// defaults and reports the constraints a workload breaks. It works on the versioned API
// (score.dev/v1b1) and reads nothing itself, so the PlatformPolicy admission plugin (which
// defaults and rejects on write) and the orchestrator (which reports PolicyViolation when a
// policy changes after admission) share one definition of what a policy means.
package platformpolicy

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

// Compiled is a policy prepared for matching: selectors parsed once, not per request.
type Compiled struct {
	Name              string
	Priority          int32
	selector          labels.Selector
	namespaceSelector labels.Selector
	spec              v1b1.PlatformPolicySpec
	allowedRuntimes   sets.Set[string]
	allowedTypes      sets.Set[string]
	deniedTypes       sets.Set[string]
}

// compile prepares a policy. Its selectors were validated when it was stored.
func compile(p *v1b1.PlatformPolicy) (*Compiled, error) {
	c := &Compiled{Name: p.Name, Priority: p.Spec.Priority, spec: p.Spec, selector: labels.Everything(), namespaceSelector: labels.Everything()}
	var err error
	if p.Spec.Selector != nil {
		if c.selector, err = metav1.LabelSelectorAsSelector(p.Spec.Selector); err != nil {
			return nil, fmt.Errorf("policy %s: selector: %w", p.Name, err)
		}
	}
	if p.Spec.NamespaceSelector != nil {
		if c.namespaceSelector, err = metav1.LabelSelectorAsSelector(p.Spec.NamespaceSelector); err != nil {
			return nil, fmt.Errorf("policy %s: namespaceSelector: %w", p.Name, err)
		}
	}
	if k := p.Spec.Constraints; k != nil {
		c.allowedRuntimes = sets.New(k.AllowedRuntimeClasses...)
		if k.ResourceTypes != nil {
			c.allowedTypes = sets.New(k.ResourceTypes.Allowed...)
			c.deniedTypes = sets.New(k.ResourceTypes.Denied...)
		}
	}
	return c, nil
}

// Snapshot is the compiled, ordered policy set, replaced whole on every policy change and read
// without locks: selectors are parsed once per change, not once per request or reconcile.
type Snapshot struct {
	compiled atomic.Pointer[[]*Compiled]
}

// Set replaces the snapshot. A policy that does not compile (impossible for stored policies,
// which were validated) is skipped and logged.
func (s *Snapshot) Set(policies []*v1b1.PlatformPolicy) {
	compiled := make([]*Compiled, 0, len(policies))
	for _, policy := range policies {
		c, err := compile(policy)
		if err != nil {
			klog.ErrorS(err, "Skipping PlatformPolicy", "policy", policy.Name)
			continue
		}
		compiled = append(compiled, c)
	}
	order(compiled)
	s.compiled.Store(&compiled)
}

// Matching returns, in application order, the policies that select a workload with these
// labels in a namespace with these labels.
func (s *Snapshot) Matching(workloadLabels, namespaceLabels labels.Set) []*Compiled {
	all := s.compiled.Load()
	if all == nil {
		return nil
	}
	var out []*Compiled
	for _, c := range *all {
		if c.Matches(workloadLabels, namespaceLabels) {
			out = append(out, c)
		}
	}
	return out
}

// order sorts policies as they apply: highest priority first, ties by name.
func order(policies []*Compiled) {
	sort.Slice(policies, func(i, j int) bool {
		if policies[i].Priority != policies[j].Priority {
			return policies[i].Priority > policies[j].Priority
		}
		return policies[i].Name < policies[j].Name
	})
}

// Matches reports whether the policy selects a workload with these labels in a namespace with
// these labels.
func (c *Compiled) Matches(workloadLabels, namespaceLabels labels.Set) bool {
	return c.selector.Matches(workloadLabels) && c.namespaceSelector.Matches(namespaceLabels)
}

// ApplyDefaults fills what the workload leaves unset from the ordered, matching policies: the
// first policy that offers a value wins. resolved (may be nil) supplies resources declared only
// in the inline Score document. It returns the names of the policies that changed something.
func ApplyDefaults(w *v1b1.Workload, resolved *scorespec.Workload, matching []*Compiled) []string {
	var applied []string
	for _, p := range matching {
		d := p.spec.Defaults
		if d == nil {
			continue
		}
		changed := false
		if w.Spec.RuntimeClass == "" && d.RuntimeClass != "" {
			w.Spec.RuntimeClass = d.RuntimeClass
			changed = true
		}
		for k, v := range d.Labels {
			if _, ok := w.Labels[k]; !ok {
				if w.Labels == nil {
					w.Labels = map[string]string{}
				}
				w.Labels[k] = v
				changed = true
			}
		}
		for k, v := range d.Annotations {
			if _, ok := w.Annotations[k]; !ok {
				if w.Annotations == nil {
					w.Annotations = map[string]string{}
				}
				w.Annotations[k] = v
				changed = true
			}
		}
		if len(d.Resources) > 0 && defaultResources(w, resolved, d.Resources) {
			changed = true
		}
		if changed {
			applied = append(applied, p.Name)
		}
	}
	return applied
}

// defaultResources sets class and params by resource type. A resource declared only in the
// inline document gets a spec.resources entry carrying just the defaults (and its type), which
// the merge rule of pkg/score combines with the document.
func defaultResources(w *v1b1.Workload, resolved *scorespec.Workload, defaults map[string]v1b1.ResourceDefaults) bool {
	all := w.Spec.Resources
	if resolved != nil {
		all = resolved.Resources
	}
	changed := false
	for _, name := range sets.List(sets.KeySet(all)) {
		effective := all[name]
		def, ok := defaults[effective.Type]
		if !ok {
			continue
		}
		own := w.Spec.Resources[name]
		own.Type = effective.Type
		changedHere := false
		if effective.Class == "" && own.Class == "" && def.Class != "" {
			own.Class = def.Class
			changedHere = true
		}
		if (effective.Params == nil || len(effective.Params.Raw) == 0) && own.Params == nil && def.Params != nil && len(def.Params.Raw) > 0 {
			own.Params = &common.RawObject{Raw: append([]byte(nil), def.Params.Raw...)}
			changedHere = true
		}
		if changedHere {
			changed = true
			if w.Spec.Resources == nil {
				w.Spec.Resources = map[string]v1b1.ResourceSpec{}
			}
			w.Spec.Resources[name] = own
		}
	}
	return changed
}

// Violation is one broken constraint.
type Violation struct {
	Policy  string
	Field   *field.Path
	Message string
}

// Facts are what constraints look at, computed once per request rather than once per policy.
type Facts struct {
	RuntimeClass  string
	ResourceTypes []scorespec.Located
	Images        []Image
}

// Image is a container image, parsed, with its field path.
type Image struct {
	scorespec.Located
	Ref ImageRef
}

// NewFacts gathers the facts of a workload and its effective Score workload.
func NewFacts(w *v1b1.Workload, resolved *scorespec.Workload) *Facts {
	spec := field.NewPath("spec")
	f := &Facts{RuntimeClass: w.Spec.RuntimeClass, ResourceTypes: resolved.ResourceTypes(spec)}
	for _, img := range resolved.Images(spec) {
		f.Images = append(f.Images, Image{Located: img, Ref: ParseImage(img.Value)})
	}
	return f
}

// Violations checks the workload's facts against the policy's constraints.
func (c *Compiled) Violations(f *Facts) []Violation {
	k := c.spec.Constraints
	if k == nil {
		return nil
	}
	var out []Violation
	violate := func(p *field.Path, format string, args ...interface{}) {
		out = append(out, Violation{Policy: c.Name, Field: p, Message: fmt.Sprintf(format, args...)})
	}
	if c.allowedRuntimes.Len() > 0 && !c.allowedRuntimes.Has(f.RuntimeClass) {
		violate(field.NewPath("spec", "runtimeClass"), "runtime class %q is not one of the allowed runtime classes (%s)",
			f.RuntimeClass, strings.Join(sets.List(c.allowedRuntimes), ", "))
	}
	for _, r := range f.ResourceTypes {
		switch {
		case c.deniedTypes.Has(r.Value):
			violate(r.Path, "resource type %q is denied", r.Value)
		case c.allowedTypes.Len() > 0 && !c.allowedTypes.Has(r.Value):
			violate(r.Path, "resource type %q is not one of the allowed resource types (%s)", r.Value, strings.Join(sets.List(c.allowedTypes), ", "))
		}
	}
	if k.Images != nil {
		for _, img := range f.Images {
			ref := img.Ref
			if len(k.Images.AllowedRegistries) > 0 && !ref.FromAnyOf(k.Images.AllowedRegistries) {
				violate(img.Path, "image %q does not come from an allowed registry (%s)", img.Value, strings.Join(k.Images.AllowedRegistries, ", "))
			}
			if len(k.Images.RequiredTags) > 0 && !ref.TagMatchesAny(k.Images.RequiredTags) {
				violate(img.Path, "image %q has tag %q, which matches none of the required tag patterns (%s)", img.Value, ref.Tag, strings.Join(k.Images.RequiredTags, ", "))
			}
		}
	}
	return out
}
