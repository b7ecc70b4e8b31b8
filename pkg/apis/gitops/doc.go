// Package gitops is the internal version of the gitops.plinth.dev API group: OCI registries,
// the artifacts pushed to them, and requests to reconcile their delivery. Versioned types in
// v1alpha1 convert to and from these.
//
// +k8s:deepcopy-gen=package
// +groupName=gitops.plinth.dev
package gitops
