package gitops

import "strings"

// DefaultTag is the registry tag a version is pushed as unless spec.tag says otherwise: the
// version, with '+' (semver build metadata, not allowed in a tag) written '_', as Helm does.
// v1alpha1's defaulting writes the same.
func DefaultTag(version string) string {
	return strings.ReplaceAll(version, "+", "_")
}
