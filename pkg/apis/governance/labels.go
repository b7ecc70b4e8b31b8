package governance

// Labels the platform puts on every object it manages for a governed VM (the ManagedVM, its
// tickets and revisions, and the VirtualMachine on the target cluster). Tenants may not set or
// change them. The identity of a VM is cluster + namespace + system + service + instance.
const (
	LabelManagedBy = "kubevirt-shepherd.io/managed-by"
	LabelSystem    = "kubevirt-shepherd.io/system"
	LabelService   = "kubevirt-shepherd.io/service"
	LabelInstance  = "kubevirt-shepherd.io/instance"
	LabelTicketID  = "kubevirt-shepherd.io/ticket-id"

	// LabelPrefix is the prefix of every platform-owned label.
	LabelPrefix = "kubevirt-shepherd.io/"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "plinth"
)

// FinalizerDeleteApproval holds a ManagedVM's deletion until a delete ticket is approved.
const FinalizerDeleteApproval = "governance.plinth.dev/delete-approval"

// FinalizerVMCleanup holds a ManagedVM's deletion until the runtime has removed its VM from the
// target cluster. The runtime adds it before it creates anything there.
const FinalizerVMCleanup = "governance.plinth.dev/vm-cleanup"
