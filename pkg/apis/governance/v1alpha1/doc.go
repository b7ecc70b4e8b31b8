// Package v1alpha1 is version v1alpha1 of the governance.plinth.dev API group: governed VMs.
// Tenants manage Systems, SystemServices and ManagedVMs; every VM change passes an
// ApprovalTicket, leaves an AuditLog record and a DomainEvent, and each approved spec is kept
// as a VMRevision. ApprovalPolicy (cluster-scoped) is for platform administrators.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/plinth-dev/plinth/pkg/apis/governance
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.plinth.governance.v1alpha1
// +groupName=governance.plinth.dev
package v1alpha1
