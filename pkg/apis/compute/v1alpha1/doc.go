// Package v1alpha1 is version v1alpha1 of the compute.plinth.dev API group: tenant compute.
// A tenant creates a TenantCompute (containers, resources, networking, secrets) naming a
// ComputeProvider; plinth-apiserver validates it against the provider's published schema and
// the namespace's ResourceQuota, and plinth-controller drives the provider (Validate,
// Provision, Update, Destroy, GetStatus) through the lifecycle Requested → Provisioning →
// Ready ⇄ Updating → Deleting, with Failed, Stopped and Archived.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/plinth-dev/plinth/pkg/apis/compute
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.plinth.compute.v1alpha1
// +groupName=compute.plinth.dev
package v1alpha1
