// Package provider is the contract between Plinth's VM governance and the infrastructure VMs
// run on. Providers speak in the domain types of this package, never in an infrastructure's
// own types (anti-corruption layer): the controller that materializes ManagedVMs knows
// nothing of KubeVirt, and another infrastructure plugs in behind the same interfaces.
//
// InfrastructureProvider and InstanceTypeProvider are implemented in full by the KubeVirt
// provider (providers/kubevirt), MigrationProvider in its basic methods. SnapshotProvider,
// CloneProvider and ConsoleProvider are contracts only, so that the governance code written
// against them does not change when they are implemented.
package provider

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ErrNotFound is returned (wrapped) when a VM, an instance type or a migration does not exist.
var ErrNotFound = errors.New("not found")

// VMSpec is a VM as the platform wants it on a cluster.
type VMSpec struct {
	// Name and Namespace of the VM on the cluster.
	Name, Namespace string
	// Labels identify the VM as the platform's: managed-by, system, service, instance, ticket.
	Labels map[string]string
	// InstanceType names a cluster-wide instance type; otherwise CPU and Memory size the VM.
	InstanceType string
	CPU          int32
	Memory       *resource.Quantity
	// Image is a container disk image to boot; Template names a cluster-wide preference.
	Image, Template string
	// DiskSize and StorageClass describe the root disk's volume, when set.
	DiskSize     *resource.Quantity
	StorageClass string
	// Hostname of the guest.
	Hostname string
	// RunStrategy is Always, Halted, Manual, RerunOnFailure or Once.
	RunStrategy string
	// UserData is the cloud-init user data the guest boots with; empty leaves the VM's own
	// cloud-init, if it has any, as it is.
	UserData string
}

// VMState is what a VM is doing.
type VMState string

// VM states, coarser than any infrastructure's.
const (
	VMStateProvisioning VMState = "Provisioning"
	VMStateStarting     VMState = "Starting"
	VMStateRunning      VMState = "Running"
	VMStateStopping     VMState = "Stopping"
	VMStateStopped      VMState = "Stopped"
	VMStateFailed       VMState = "Failed"
	VMStateUnknown      VMState = "Unknown"
)

// VM is a VM found on a cluster.
type VM struct {
	Name, Namespace string
	Labels          map[string]string
	RunStrategy     string
	State           VMState
	Ready           bool
	// Message explains a Failed or Unknown state.
	Message string
	// RestartRequestedAt is the restart the VM last acknowledged (RestartVM's time), if any.
	RestartRequestedAt string
	// Deleting is true once the VM's deletion has begun.
	Deleting bool
	// Spec is the VM's shape as found: size, boot source, run strategy.
	Spec VMSpec
}

// Capabilities are what a cluster's virtualization layer offers.
type Capabilities struct {
	Version  string
	Features []string
	// Deployed is true when the layer reports itself fully deployed; Phase is what it reports.
	Deployed bool
	Phase    string
}

// InfrastructureProvider creates and runs VMs on clusters. Every method is idempotent.
type InfrastructureProvider interface {
	// Type names the infrastructure, for example "kubevirt".
	Type() string
	// EnsureVM creates the VM, or brings an existing one's spec and labels to spec. The
	// cluster refusing the VM is an errkind.Stalled error: asking again without a change of
	// spec gets the same answer.
	EnsureVM(ctx context.Context, cluster string, spec VMSpec) (*VM, error)
	// GetVM returns a VM, or an error wrapping ErrNotFound.
	GetVM(ctx context.Context, cluster, namespace, name string) (*VM, error)
	// ListVMs lists the VMs carrying every label of selector, in all namespaces.
	ListVMs(ctx context.Context, cluster string, selector map[string]string) ([]VM, error)
	// DeleteVM deletes a VM; a VM that does not exist is not an error.
	DeleteVM(ctx context.Context, cluster, namespace, name string) error
	// SetRunStrategy starts (Always) or stops (Halted) a VM, or sets another strategy.
	SetRunStrategy(ctx context.Context, cluster, namespace, name, runStrategy string) error
	// RestartVM restarts a running VM; at is recorded so that the restart happens once.
	RestartVM(ctx context.Context, cluster, namespace, name, at string) error
	// DetectCapabilities reports the version and enabled features of the cluster.
	DetectCapabilities(ctx context.Context, cluster string) (*Capabilities, error)
}

// Migration is a live migration of a VM.
type Migration struct {
	Name, VMName, Namespace string
	// Phase is Pending, Scheduling, Running, Succeeded or Failed.
	Phase string
}

// MigrationProvider moves running VMs between nodes. Basic methods only.
type MigrationProvider interface {
	MigrateVM(ctx context.Context, cluster, namespace, name string) (*Migration, error)
	GetVMMigration(ctx context.Context, cluster, namespace, name string) (*Migration, error)
}

// InstanceType is a VM size offered by a cluster.
type InstanceType struct {
	Name   string
	CPU    int32
	Memory resource.Quantity
}

// InstanceTypeProvider lists the sizes a cluster offers.
type InstanceTypeProvider interface {
	ListInstanceTypes(ctx context.Context, cluster string) ([]InstanceType, error)
	GetInstanceType(ctx context.Context, cluster, name string) (*InstanceType, error)
}

// Snapshot is a point-in-time copy of a VM's disks.
type Snapshot struct {
	Name, VMName, Namespace string
	Ready                   bool
	CreatedAt               time.Time
}

// SnapshotProvider takes and restores VM snapshots. Contract only (not implemented yet).
type SnapshotProvider interface {
	CreateSnapshot(ctx context.Context, cluster, namespace, vmName, snapshotName string) (*Snapshot, error)
	GetSnapshot(ctx context.Context, cluster, namespace, snapshotName string) (*Snapshot, error)
	ListSnapshots(ctx context.Context, cluster, namespace, vmName string) ([]Snapshot, error)
	DeleteSnapshot(ctx context.Context, cluster, namespace, snapshotName string) error
	RestoreSnapshot(ctx context.Context, cluster, namespace, vmName, snapshotName string) error
}

// CloneProvider clones VMs. Contract only (not implemented yet).
type CloneProvider interface {
	CloneVM(ctx context.Context, cluster, namespace, sourceVM, targetVM string) error
	GetCloneStatus(ctx context.Context, cluster, namespace, targetVM string) (phase string, err error)
}

// ConsoleSession is how a client reaches a VM's console.
type ConsoleSession struct {
	// URL is a websocket URL valid until ExpiresAt.
	URL       string
	ExpiresAt time.Time
}

// ConsoleProvider opens VNC and serial consoles. Contract only (not implemented yet).
type ConsoleProvider interface {
	VNCConsole(ctx context.Context, cluster, namespace, name string) (*ConsoleSession, error)
	SerialConsole(ctx context.Context, cluster, namespace, name string) (*ConsoleSession, error)
}
