// Package platform is the internal version of the platform.plinth.dev API group: the target
// clusters Plinth runs VMs and workloads on. Versioned types in v1alpha1 convert to and from
// these.
//
// +k8s:deepcopy-gen=package
// +groupName=platform.plinth.dev
package platform
