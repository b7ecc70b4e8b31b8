// Package dependencies holds the dependency graph of the packs of a namespace: admission
// (pkg/admission/plugin/packtargets) refuses a pack that closes a cycle.
package dependencies

import "slices"

// Graph maps a pack's name to the names of the packs it depends on.
type Graph map[string][]string

// CycleThrough returns a cycle through the named pack as the path of names from it back to
// it (["a", "b", "a"]), or nil when there is none. Packs the graph does not know have no
// dependencies. The search is depth-first in the order of dependsOn, so the answer is stable.
func (g Graph) CycleThrough(name string) []string {
	visited := map[string]bool{}
	var path []string
	var visit func(n string) bool
	visit = func(n string) bool {
		for _, d := range g[n] {
			if d == name {
				path = append(path, d)
				return true
			}
			if visited[d] {
				continue
			}
			visited[d] = true
			path = append(path, d)
			if visit(d) {
				return true
			}
			path = path[:len(path)-1]
		}
		return false
	}
	path = []string{name}
	if visit(name) {
		return slices.Clone(path)
	}
	return nil
}
