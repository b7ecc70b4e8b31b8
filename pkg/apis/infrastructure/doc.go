// Package infrastructure is the internal version of the infrastructure.ontai.dev API group:
// infrastructure packs and the instances that record their delivery to clusters. Versioned
// types in v1alpha1 convert to and from these.
//
// +k8s:deepcopy-gen=package
// +groupName=infrastructure.ontai.dev
package infrastructure
