// Package vmprovider is the contract between governed VMs and the infrastructure they run on:
// the domain types a VM is described in (VMSpec, VM, VMState, Capabilities, ErrNotFound) and
// InfrastructureProvider, which creates, reads, lists, restarts and deletes VMs on a cluster.
// plinth-controller's VM runtime (pkg/controllers/managedvm), the adopter
// (pkg/controllers/adoption) and the cluster probes (pkg/controllers/cluster) speak only these
// types; the one implementation, vmprovider/kubevirt, translates them to KubeVirt's. This is
// the seed's anti-corruption layer: no KubeVirt type crosses the interface, so another
// infrastructure plugs in behind it without changing the runtime.
//
// It is one of the two KubeVirt-related packages, and the only one that reaches KubeVirt: the
// `kubevirt` compute provider (pkg/compute/providers/governedvm) runs tenants and Score
// workloads by asking for ManagedVMs through plinth-apiserver, and the approval flow then
// brings them here.
//
// # The seed's provider interfaces
//
// The VM governance seed (002, "Provider Interfaces") defines a base InfrastructureProvider and
// five interfaces beside it, combined by one KubeVirt provider:
//
//   - InfrastructureProvider: create, get, list, delete, start and stop, restart VMs; detect a
//     cluster's version and features. Declared here and implemented in full.
//   - MigrationProvider: MigrateVM and GetVMMigration (live migration; the seed asks for these
//     basic methods only).
//   - InstanceTypeProvider: ListInstanceTypes and GetInstanceType (the sizes a cluster offers).
//   - SnapshotProvider: create, get, list, delete and restore VM snapshots (interface only in
//     the seed, RFC-0013).
//   - CloneProvider: CloneVM and GetCloneStatus (interface only, RFC-0014).
//   - ConsoleProvider: VNC and serial console sessions (interface only, RFC-0011).
//
// Only InfrastructureProvider is declared. Nothing in Plinth migrates VMs or lists instance
// types (a ManagedVM names its instance type, and KubeVirt resolves it on the cluster), and
// nothing implements snapshots, clones or consoles, so declaring those interfaces would be
// code no caller or implementation keeps honest. Whoever adds one of these features declares
// its interface here, with the seed's method names, next to its first caller and its
// implementation in vmprovider/kubevirt.
package vmprovider
