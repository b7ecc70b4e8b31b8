// Package v1alpha1 is version v1alpha1 of the platform.plinth.dev API group: the target
// clusters Plinth runs VMs on. Platform administrators register a Cluster with its kubeconfig,
// which plinth-apiserver stores encrypted and never returns; plinth-controller probes each
// cluster's health and capabilities and reports them in its status.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/plinth-dev/plinth/pkg/apis/platform
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.plinth.platform.v1alpha1
// +groupName=platform.plinth.dev
package v1alpha1
