// Package v1alpha1 is version v1alpha1 of the gitops.plinth.dev API group: GitOps OCI delivery.
// A platform administrator runs an OCIRegistry on localhost (the distribution v3 registry, in
// plinth-controller), pushes OCIArtifacts to it in Flux's artifact format and delivers them to
// Clusters, through Flux's OCIRepository and Kustomization or by server-side apply; a
// ReconciliationRequest asks the targets to reconcile now and records when they did.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/plinth-dev/plinth/pkg/apis/gitops
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.plinth.gitops.v1alpha1
// +groupName=gitops.plinth.dev
package v1alpha1
