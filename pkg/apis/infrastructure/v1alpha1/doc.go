// Package v1alpha1 is version v1alpha1 of the infrastructure.ontai.dev API group:
// infrastructure packs. A platform administrator declares an InfrastructureClusterPack (a Helm
// chart, a kustomize directory or raw manifests, with a version vX.Y.Z[-rN] and target
// Clusters); plinth-controller renders it with the Helm SDK or krusty, keeps the last rendered
// revisions for rollback, delivers it to each cluster through the cluster's GitOps engine and
// records each delivery, its direction and its drift in an InfrastructurePackInstance (seed
// 000, verbatim).
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/plinth-dev/plinth/pkg/apis/infrastructure
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.ontai.infrastructure.v1alpha1
// +groupName=infrastructure.ontai.dev
package v1alpha1
