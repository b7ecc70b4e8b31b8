package drift

import (
	"bytes"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// fieldChange is one field the pack sets whose value on the target differs from the applied
// one; removed says the target lacks it (path is then the shortest missing prefix).
type fieldChange struct {
	path    fieldpath.Path
	removed bool
}

// ignoredFields are top-level and metadata fields the server writes itself: never drift, even
// if an applied object happened to carry them.
var ignoredFields = map[string]bool{
	"status":                     true,
	"metadata.managedFields":     true,
	"metadata.resourceVersion":   true,
	"metadata.generation":        true,
	"metadata.creationTimestamp": true,
	"metadata.uid":               true,
	"metadata.selfLink":          true,
}

// ignored says whether p is, or lies under, a field in ignoredFields.
func ignored(p fieldpath.Path) bool {
	if len(p) == 0 || p[0].FieldName == nil {
		return false
	}
	if ignoredFields[*p[0].FieldName] {
		return true
	}
	return len(p) > 1 && p[1].FieldName != nil && ignoredFields[*p[0].FieldName+"."+*p[1].FieldName]
}

// diffFields compares, for every leaf of applied (the fields an apply of the pack's object
// sets, in the server's own path form, merge keys included), the value in want (the object as
// it would be right after that apply) with the value in live. A field live lacks is reported
// once, at its shortest missing prefix: a removed container is one change, not one per
// field of it. A leaf want lacks (the server dropped it, as it drops status) is not compared.
// The result is sorted by path.
func diffFields(applied *fieldpath.Set, want, live map[string]interface{}) []fieldChange {
	var changes []fieldChange
	seen := map[string]bool{}
	applied.Leaves().Iterate(func(p fieldpath.Path) {
		if ignored(p) {
			return
		}
		wantValue, depth := lookup(want, p)
		if depth < len(p) {
			return
		}
		liveValue, depth := lookup(live, p)
		change := fieldChange{path: p.Copy()}
		switch {
		case depth < len(p):
			change = fieldChange{path: p[:depth+1].Copy(), removed: true}
		case value.Equals(value.NewValueInterface(wantValue), value.NewValueInterface(liveValue)):
			return
		}
		if s := change.path.String(); !seen[s] {
			seen[s] = true
			changes = append(changes, change)
		}
	})
	slices.SortFunc(changes, func(a, b fieldChange) int { return a.path.Compare(b.path) })
	return changes
}

// lookup follows p from v (an object decoded from JSON) and returns the value it reaches and
// how many of p's elements it resolved: len(p) when v has the field.
func lookup(v interface{}, p fieldpath.Path) (interface{}, int) {
	for i, pe := range p {
		next, ok := step(v, pe)
		if !ok {
			return nil, i
		}
		v = next
	}
	return v, len(p)
}

// step resolves one path element: a field of a map, or an item of a list by its merge key
// fields, its value (a set) or its index.
func step(v interface{}, pe fieldpath.PathElement) (interface{}, bool) {
	if pe.FieldName != nil {
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil, false
		}
		next, ok := m[*pe.FieldName]
		return next, ok
	}
	items, ok := v.([]interface{})
	if !ok {
		return nil, false
	}
	switch {
	case pe.Key != nil:
		for _, item := range items {
			if m, ok := item.(map[string]interface{}); ok && matchesKey(m, *pe.Key) {
				return item, true
			}
		}
	case pe.Value != nil:
		for _, item := range items {
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return item, true
			}
		}
	case pe.Index != nil:
		if i := *pe.Index; i >= 0 && i < len(items) {
			return items[i], true
		}
	}
	return nil, false
}

// matchesKey says whether a list item has every merge key field of key with its value.
func matchesKey(item map[string]interface{}, key value.FieldList) bool {
	for _, f := range key {
		v, ok := item[f.Name]
		if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
			return false
		}
	}
	return true
}

// ownership is one managedFields entry: a manager and the fields it owns.
type ownership struct {
	manager   string
	operation metav1.ManagedFieldsOperationType
	fields    *fieldpath.Set
}

// parseOwnership reads entries' field sets, leaving out status subresource entries (status is
// never drift) and skip, the pack's own Apply entry.
func parseOwnership(entries []metav1.ManagedFieldsEntry, skip func(metav1.ManagedFieldsEntry) bool) ([]ownership, error) {
	var out []ownership
	for _, e := range entries {
		if e.Subresource == "status" || skip(e) {
			continue
		}
		set, err := parseFieldSet(e.FieldsV1)
		if err != nil {
			return nil, fmt.Errorf("the managed fields of %s: %w", e.Manager, err)
		}
		out = append(out, ownership{manager: e.Manager, operation: e.Operation, fields: set})
	}
	return out, nil
}

// parseFieldSet reads a fieldsV1 value; none is the empty set.
func parseFieldSet(f *metav1.FieldsV1) (*fieldpath.Set, error) {
	set := &fieldpath.Set{}
	if f == nil || len(f.Raw) == 0 {
		return set, nil
	}
	if err := set.FromJSON(bytes.NewReader(f.Raw)); err != nil {
		return nil, err
	}
	return set, nil
}

// owners returns, sorted and once each, the managers among owned that own p or a field under
// it.
func owners(owned []ownership, p fieldpath.Path) []string {
	var names []string
	for _, o := range owned {
		if ownsUnder(o.fields, p) && !slices.Contains(names, o.manager) {
			names = append(names, o.manager)
		}
	}
	slices.Sort(names)
	return names
}

// ownsUnder says whether s has p or anything under p. An owner of a parent only (a map's
// "." entry) does not count: owning .metadata.labels as such is not owning each label.
func ownsUnder(s *fieldpath.Set, p fieldpath.Path) bool {
	if s.Has(p) {
		return true
	}
	cur := s
	for _, pe := range p {
		child, ok := cur.Children.Get(pe)
		if !ok {
			return false
		}
		cur = child
	}
	return !cur.Empty()
}
