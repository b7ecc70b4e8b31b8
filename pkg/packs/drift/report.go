package drift

import (
	"fmt"
	"slices"
	"strings"
)

// More ends a list of field paths that was cut short.
const More = "…"

// maxFields is how many field paths an ObjectDrift lists before More.
const maxFields = 10

// Summary limits: objects named, and field paths named per change of an object.
const (
	summaryObjects = 5
	summaryFields  = 3
)

// Report is the outcome of one Check.
type Report struct {
	// Checked is how many distinct objects were compared.
	Checked int
	// Drifted lists the objects that differ from what was applied, in the order they were
	// given.
	Drifted []ObjectDrift
}

// ObjectDrift is one object that differs from what the pack applied.
type ObjectDrift struct {
	APIVersion, Kind, Namespace, Name string
	// Missing says the object is gone from the target (deleted, or its kind is not served).
	Missing bool
	// Fields are the paths, in the API server's managed-fields notation (".spec.replicas",
	// ".data.key", `.spec.template.spec.containers[name="web"].image`), of the fields the pack
	// set whose value on the target differs or which the target lacks; sorted, at most
	// maxFields of them and then More.
	Fields []string
	// Removed are those of Fields the target lacks.
	Removed []string
	// Managers are the field managers that own the changed fields now, sorted. Nobody owns a
	// removed field.
	Managers []string
}

// Summary is one line naming the drifted objects and what changed, for a status field or an
// event; "" when nothing drifted. It names the first few objects and fields and counts the
// rest.
func (r Report) Summary() string {
	if len(r.Drifted) == 0 {
		return ""
	}
	noun := "objects"
	if r.Checked == 1 {
		noun = "object"
	}
	parts := make([]string, 0, summaryObjects+1)
	for i, d := range r.Drifted {
		if i == summaryObjects {
			parts = append(parts, fmt.Sprintf("and %d more", len(r.Drifted)-summaryObjects))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", d.Kind, d.objectName(), d.what()))
	}
	return fmt.Sprintf("%d of %d %s drifted: %s", len(r.Drifted), r.Checked, noun, strings.Join(parts, "; "))
}

// objectName is namespace/name, or the name of a cluster-scoped object.
func (d ObjectDrift) objectName() string {
	if d.Namespace == "" {
		return d.Name
	}
	return d.Namespace + "/" + d.Name
}

// what says what happened to the object: deleted, or its changed fields with their managers
// and its removed fields.
func (d ObjectDrift) what() string {
	if d.Missing {
		return "deleted"
	}
	var changed, removed []string
	for _, f := range d.Fields {
		switch {
		case f == More:
		case slices.Contains(d.Removed, f):
			removed = append(removed, f)
		default:
			changed = append(changed, f)
		}
	}
	// Fields cut short: the change the cut fields belong to is not known, so both lists
	// say there may be more.
	cut := slices.Contains(d.Fields, More)
	var parts []string
	if len(changed) > 0 {
		s := listFields(changed, cut) + " changed"
		if len(d.Managers) > 0 {
			s += " by " + strings.Join(d.Managers, ", ")
		}
		parts = append(parts, s)
	}
	if len(removed) > 0 {
		parts = append(parts, listFields(removed, cut)+" removed")
	}
	if len(parts) == 0 {
		return "changed"
	}
	return strings.Join(parts, "; ")
}

// listFields joins the first summaryFields paths, with More after them when there are others.
func listFields(paths []string, cut bool) string {
	if len(paths) > summaryFields {
		paths, cut = paths[:summaryFields], true
	}
	s := strings.Join(paths, ", ")
	if cut {
		s += " " + More
	}
	return s
}

// newObjectDrift builds the ObjectDrift of changes, the managers of the changed fields given
// by managersOf.
func newObjectDrift(apiVersion, kind, namespace, name string, changes []fieldChange, managersOf func(fieldChange) []string) ObjectDrift {
	d := ObjectDrift{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}
	paths := make([]string, 0, len(changes))
	removed := map[string]bool{}
	for _, c := range changes {
		s := c.path.String()
		paths = append(paths, s)
		if c.removed {
			removed[s] = true
			continue
		}
		for _, m := range managersOf(c) {
			if !slices.Contains(d.Managers, m) {
				d.Managers = append(d.Managers, m)
			}
		}
	}
	slices.Sort(paths)
	slices.Sort(d.Managers)
	if len(paths) > maxFields {
		paths = append(paths[:maxFields:maxFields], More)
	}
	d.Fields = paths
	for _, p := range paths {
		if removed[p] {
			d.Removed = append(d.Removed, p)
		}
	}
	return d
}
