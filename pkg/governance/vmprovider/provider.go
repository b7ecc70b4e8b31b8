package vmprovider

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ErrNotFound is returned (wrapped) when a VM, or a cluster's virtualization layer, does not exist.
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
