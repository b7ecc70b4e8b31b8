// Package governance is the internal version of the governance.plinth.dev API group: the types
// the registry, validation and the approval flow work on. Versioned types in v1alpha1 convert
// to and from these.
//
// +k8s:deepcopy-gen=package
// +groupName=governance.plinth.dev
package governance
