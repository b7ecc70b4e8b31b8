// Package score is the internal version of the score.dev API group: the types the registry,
// validation and admission work on. Versioned types in v1b1 convert to and from these.
//
// +k8s:deepcopy-gen=package
// +groupName=score.dev
package score
