package provisioners

import (
	"fmt"
	"sort"
)

// DefaultClass is the class of a resource that names none, as in Score's resource uids.
const DefaultClass = "default"

// Source is where a provisioner comes from. Lower is stronger: when two provisioners match a
// resource equally well, the one from the stronger source is used.
type Source int

const (
	// SourceObject is a Provisioner object in the cluster, which its users manage.
	SourceObject Source = iota
	// SourceConfigFile is an entry of plinth-controller's provisioners file, which the
	// platform's operator manages.
	SourceConfigFile
	// SourceBuiltIn is one of Plinth's built-in template provisioners, the fallback.
	SourceBuiltIn
)

func (s Source) String() string {
	switch s {
	case SourceObject:
		return "object"
	case SourceConfigFile:
		return "config-file"
	case SourceBuiltIn:
		return "built-in"
	default:
		return fmt.Sprintf("Source(%d)", int(s))
	}
}

// Entry is one provisioner a Set resolves to.
type Entry struct {
	// Name identifies the provisioner in its source: an object's name, or the file's name and
	// the entry's index. Ties are broken by it, so it should be unique in its source.
	Name string
	// Source is where the provisioner comes from.
	Source Source
	// Template is the compiled provisioner. Entries without one are left out of a Set.
	Template *Template
}

// specificity ranks how narrowly an entry matches: an entry naming both a class and an id beats
// one naming an id, which beats one naming a class, which beats one naming the type alone. An
// id names one shared resource, a class a kind of them, so the id is the narrower of the two.
func (e *Entry) specificity() int {
	spec := e.Template.Spec()
	rank := 0
	if spec.ID != nil {
		rank += 2
	}
	if spec.Class != nil {
		rank++
	}
	return rank
}

// Set is provisioners to pick from, immutable once made, safe for concurrent use.
//
// Where score-k8s takes the first matching entry of its files in order, a Set takes the most
// specific: its provisioners come from several sources with no order between them, and a
// narrower provisioner is written to override a broader one.
type Set struct {
	// byType holds each type's entries in the order Match tries them.
	byType map[string][]Entry
	all    []Entry
}

// NewSet makes a Set of entries.
func NewSet(entries ...Entry) *Set {
	s := &Set{byType: map[string][]Entry{}}
	for _, e := range entries {
		if e.Template == nil {
			continue
		}
		typ := e.Template.Spec().Type
		s.byType[typ] = append(s.byType[typ], e)
	}
	for _, list := range s.byType {
		sort.SliceStable(list, func(i, j int) bool { return before(&list[i], &list[j]) })
	}
	types := make([]string, 0, len(s.byType))
	for typ := range s.byType {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		s.all = append(s.all, s.byType[typ]...)
	}
	return s
}

// before orders two entries of a type: the more specific first, then the stronger source, then
// by name.
func before(a, b *Entry) bool {
	if ra, rb := a.specificity(), b.specificity(); ra != rb {
		return ra > rb
	}
	if a.Source != b.Source {
		return a.Source < b.Source
	}
	return a.Name < b.Name
}

// Match picks the provisioner for a resource of type typ, class class ("" is the default class)
// and id id (its shared id, else workload.resource): among the entries of the type whose class
// and id, where set, are the resource's, the most specific, then the one from the strongest
// source, then the first by name. It returns nil when none matches. The Entry is the Set's own:
// read it, do not change it.
func (s *Set) Match(typ, class, id string) *Entry {
	if class == "" {
		class = DefaultClass
	}
	list := s.byType[typ]
	for i := range list {
		if list[i].Matches(typ, class, id) {
			return &list[i]
		}
	}
	return nil
}

// Matches says whether the entry provides a resource of type typ, class class ("" is the
// default class) and id id: its type is typ, and its class and id, where set, are the resource's.
func (e *Entry) Matches(typ, class, id string) bool {
	if class == "" {
		class = DefaultClass
	}
	spec := e.Template.Spec()
	return spec.Type == typ && (spec.Class == nil || *spec.Class == class) && (spec.ID == nil || *spec.ID == id)
}

// Named is the entry of type typ from source with the given name, or nil: the provisioner a
// resource was bound by, looked up again.
func (s *Set) Named(typ string, source Source, name string) *Entry {
	list := s.byType[typ]
	for i := range list {
		if list[i].Source == source && list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// List is every entry of the Set, by type and, within a type, in the order Match tries them.
func (s *Set) List() []Entry {
	return append([]Entry(nil), s.all...)
}
