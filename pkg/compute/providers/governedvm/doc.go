// Package governedvm is the compute provider registered as `kubevirt`: it runs tenant compute
// and Score workloads in governed VMs. It is both a tenant-compute provider (Provider: each
// TenantCompute of providerType kubevirt gets a VM) and a Score runtime (Runtime, runtime.go:
// each WorkloadPlan of runtimeClass kubevirt gets a VM and a Service in front of it).
//
// For a tenant, the provider asks for a ManagedVM (governance.plinth.dev) in the TenantCompute's
// namespace, under a SystemService named after the tenant in the System tenant-compute, and the
// VM's cloud-init runs the tenant's containers with podman. Governance applies as to any
// ManagedVM: creating, changing and deleting it wait for approval, an approver chooses its
// cluster, and the VM runtime materializes it once approved. The tenant's status follows the
// ManagedVM's.
//
// The provider and the runtime write ManagedVMs, SystemServices and Systems through
// plinth-apiserver, never a VirtualMachine: the approval flow is the only way a VM comes to
// exist.
//
// # Why the package is not called kubevirt
//
// Plinth has two KubeVirt-related jobs, one package each, named after the job:
//
//   - this package turns TenantComputes and WorkloadPlans into requests for governed VMs
//     (ManagedVMs). It never talks to KubeVirt; its registered name, the value tenants write in
//     spec.providerType and spec.runtimeClass, stays `kubevirt` because that is where the VMs
//     end up.
//   - pkg/governance/vmprovider/kubevirt materializes approved ManagedVMs as KubeVirt
//     VirtualMachines on target clusters, behind the vmprovider contract. It is the only code that
//     imports KubeVirt's API.
//
// Between them stands the approval flow (pkg/governance/approval), which no client, this
// provider included, can skip.
package governedvm
