package main

import "fmt"

// layout is how a run's objects are spread: all in one namespace, or evenly over several.
type layout struct {
	// title heads the layout's table; short names it in the memory table and on stderr.
	title, short string
	objects      int
	// spread is how many namespaces hold the objects; prefix names them.
	spread int
	prefix string
	// last layouts keep their objects: the run ends with them.
	last bool
}

// layouts are the run's two layouts, one namespace first, so that the memory its creates take
// is read from a fresh plinth-apiserver.
func layouts(o options) []layout {
	return []layout{
		{title: fmt.Sprintf("%s Workloads in one namespace", thousands(o.workloads)), short: "one namespace",
			objects: o.workloads, spread: 1, prefix: "scale-one"},
		{title: fmt.Sprintf("%s Workloads in %d namespaces (%s each)", thousands(o.workloads), o.namespaces, thousands(o.workloads/o.namespaces)),
			short: fmt.Sprintf("%d namespaces", o.namespaces), objects: o.workloads, spread: o.namespaces, prefix: "scale", last: true},
	}
}

// namespace is where object i lives: the objects fill the namespaces in order.
func (l layout) namespace(i int) string {
	if l.spread == 1 {
		return l.prefix
	}
	return fmt.Sprintf("%s-%03d", l.prefix, i/(l.objects/l.spread))
}

// namespaces are the layout's namespaces.
func (l layout) namespaces() []string {
	out := make([]string, 0, l.spread)
	for n := 0; n < l.spread; n++ {
		out = append(out, l.namespace(n*(l.objects/l.spread)))
	}
	return out
}

// scope is what one list, watch or kubectl get covers.
type scope struct {
	title string
	// namespace is empty for all namespaces.
	namespace string
	objects   int
	// updated and updatedIndex are the namespace and index of the object whose update the
	// watch from the list's resourceVersion waits for.
	updated      string
	updatedIndex int
}

// scopes are the first namespace and all namespaces.
func (l layout) scopes() []scope {
	perNamespace := l.objects / l.spread
	return []scope{
		{title: fmt.Sprintf("one namespace (%s)", thousands(perNamespace)), namespace: l.namespace(0), objects: perNamespace, updated: l.namespace(0)},
		{title: fmt.Sprintf("all namespaces (%s)", thousands(l.objects)), objects: l.objects, updated: l.namespace(0)},
	}
}

// objectName is object i's name, in every layout and kind.
func objectName(i int) string { return fmt.Sprintf("w-%05d", i) }

// thousands writes n with commas: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
