// Package v1b1 is version v1b1 of the score.dev API group: Score workloads served natively by Plinth.
// Workload is the public, tenant-facing kind; PlatformPolicy is for platform administrators;
// ResourceBinding and WorkloadPlan are internal contracts between the orchestrator, resource
// resolvers and runtimes.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/plinth-dev/plinth/pkg/apis/score
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.score.v1b1
// +groupName=score.dev
package v1b1
