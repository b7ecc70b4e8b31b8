// Package common holds value types shared by every Plinth API group, internal and versioned alike.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.plinth.common
package common
