// Package kubevirt materializes governed VMs as KubeVirt VirtualMachines: it is the
// vmprovider.InfrastructureProvider plinth-controller's VM runtime (pkg/controllers/managedvm)
// and adopter (pkg/controllers/adoption) use, and DetectFromConfig is the cluster probes'
// KubeVirt detection. It works through kubevirt.io/client-go's generated clientset, on clusters
// whose REST configs come from a credentials.Provider, returns the domain types of
// pkg/governance/vmprovider and never lets a KubeVirt type out.
//
// This is the only package that speaks KubeVirt's API. The compute provider registered as
// `kubevirt` (pkg/compute/providers/governedvm), which runs TenantComputes and Workloads of
// runtime class kubevirt, never does: it asks plinth-apiserver for ManagedVMs, the approval
// flow decides them, and this package makes the approved ones exist.
package kubevirt
