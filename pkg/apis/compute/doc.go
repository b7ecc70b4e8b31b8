// Package compute is the internal version of the compute.plinth.dev API group: tenant compute
// and the providers that provision it. Versioned types in v1alpha1 convert to and from these.
//
// +k8s:deepcopy-gen=package
// +groupName=compute.plinth.dev
package compute
