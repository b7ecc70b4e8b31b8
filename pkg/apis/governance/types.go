package governance

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// Environment is a System's environment; it decides which VM operations need approval.
type Environment string

const (
	// EnvironmentTest is for systems where power operations need no approval.
	EnvironmentTest Environment = "test"
	// EnvironmentProd is for production systems: every VM operation needs approval by default.
	EnvironmentProd Environment = "prod"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// System is a tenant's application, for example "shop": the first level of the
// System → SystemService → ManagedVM hierarchy. Tenants create systems themselves; no approval.
type System struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The name is at most 15 characters, since it becomes part of
	// VM names.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the system.
	// +optional
	Spec SystemSpec `json:"spec,omitempty"`
	// Status is written by the platform.
	// +optional
	Status SystemStatus `json:"status,omitempty"`
}

// SystemSpec describes a system.
type SystemSpec struct {
	// Documentation is free text or a link that tells operators what the system is.
	// +optional
	Documentation string `json:"documentation,omitempty"`
	// Environment is "test" (the default) or "prod". Production systems need approval for
	// every VM operation, test systems only for create, modify and delete. Immutable.
	// +optional
	Environment Environment `json:"environment,omitempty"`
	// CreatedBy is the user who created the system. The server sets it from the request's
	// user; a value sent by the client is replaced.
	// +optional
	CreatedBy string `json:"createdBy,omitempty"`
}

// SystemStatus is the observed state of a system.
type SystemStatus struct {
	// Conditions describe the system's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SystemList is a list of systems.
type SystemList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the systems.
	Items []System `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SystemService is a service of a System, for example "redis" in "shop": the level whose VMs
// are numbered. Tenants create services themselves; no approval.
type SystemService struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The name is the service's name, at most 15 characters, unique
	// in the namespace.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the service.
	// +optional
	Spec SystemServiceSpec `json:"spec,omitempty"`
	// Status holds the service's instance counter; written by the platform only.
	// +optional
	Status SystemServiceStatus `json:"status,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the object.
	Name string `json:"name"`
}

// SystemServiceSpec describes a service.
type SystemServiceSpec struct {
	// SystemRef names the System, in the same namespace, the service belongs to. It must
	// exist when the service is created. Immutable.
	SystemRef LocalObjectReference `json:"systemRef"`
	// Documentation is free text or a link that tells operators what the service is.
	// +optional
	Documentation string `json:"documentation,omitempty"`
	// CreatedBy is the user who created the service, set by the server from the request.
	// +optional
	CreatedBy string `json:"createdBy,omitempty"`
}

// SystemServiceStatus is the observed state of a service.
type SystemServiceStatus struct {
	// NextInstanceIndex is the instance number the next approved VM of this service gets.
	// It starts at 1, only ever increases and is never reset, so that a number is never
	// reused, even after its VM was deleted.
	// +optional
	NextInstanceIndex int32 `json:"nextInstanceIndex,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SystemServiceList is a list of services.
type SystemServiceList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the services.
	Items []SystemService `json:"items"`
}

// RunStrategy is how a VM's power state is kept, as in KubeVirt.
type RunStrategy string

const (
	// RunStrategyAlways keeps the VM running.
	RunStrategyAlways RunStrategy = "Always"
	// RunStrategyHalted keeps the VM stopped.
	RunStrategyHalted RunStrategy = "Halted"
	// RunStrategyManual leaves power to explicit start and stop requests.
	RunStrategyManual RunStrategy = "Manual"
	// RunStrategyRerunOnFailure restarts the VM when it fails, not when it shuts down.
	RunStrategyRerunOnFailure RunStrategy = "RerunOnFailure"
	// RunStrategyOnce runs the VM once.
	RunStrategyOnce RunStrategy = "Once"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ManagedVM is a governed virtual machine of a SystemService. Every change to it — create,
// modify, delete, and in production start, stop and restart — opens an ApprovalTicket and
// takes effect only once approved; each approved spec is recorded as a VMRevision. On approval
// the VM gets a permanent instance number and the name {namespace}-{system}-{service}-{NN}.
type ManagedVM struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. Labels under kubevirt-shepherd.io/ are set by the platform.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the requested VM. Until a change is approved it is a request: the approved
	// shape is the VMRevision named in status.approvedRevision.
	// +optional
	Spec ManagedVMSpec `json:"spec,omitempty"`
	// Status is written by the platform only.
	// +optional
	Status ManagedVMStatus `json:"status,omitempty"`
}

// ManagedVMSpec is the requested shape of a VM. Exactly one of instanceType and resources is
// set, and exactly one of image and template.
type ManagedVMSpec struct {
	// SystemServiceRef names the SystemService, in the same namespace, the VM belongs to. It
	// must exist. Immutable.
	SystemServiceRef LocalObjectReference `json:"systemServiceRef"`
	// InstanceType names a size offered by the platform, for example "u1.medium".
	// +optional
	InstanceType string `json:"instanceType,omitempty"`
	// Resources gives the size as CPU and memory instead of an instance type.
	// +optional
	Resources *VMResources `json:"resources,omitempty"`
	// DiskSize is the size of the root disk, for example "20Gi".
	// +optional
	DiskSize *resource.Quantity `json:"diskSize,omitempty"`
	// Image is the boot image (a container disk image reference).
	// +optional
	Image string `json:"image,omitempty"`
	// Template names a VM template offered by the platform, instead of an image.
	// +optional
	Template string `json:"template,omitempty"`
	// RequiredFeatures are KubeVirt feature gates the VM needs, for example LiveMigration or
	// Snapshot. An approver may only place the VM on a cluster whose probes report all of them
	// enabled (status.enabledFeatures of the Cluster).
	// +optional
	// +listType=set
	RequiredFeatures []string `json:"requiredFeatures,omitempty"`
	// CloudInit is cloud-init user data the VM boots with (NoCloud), for example a
	// "#cloud-config" document: at most 2048 bytes, KubeVirt's limit for inline user data. It
	// is part of the approved spec, so changing it is a modify and waits for approval like any
	// other change. The guest applies it when it first boots; a container-disk VM starts from a
	// fresh disk, so there a restart applies a changed value. Approvers, and everyone who may
	// read the VM, its tickets and revisions, read it: it must hold no secret.
	// +optional
	CloudInit string `json:"cloudInit,omitempty"`
	// RunStrategy is Always (the default), Halted, Manual, RerunOnFailure or Once. Changing
	// only the run strategy is a start (to anything but Halted) or a stop (to Halted).
	// +optional
	RunStrategy RunStrategy `json:"runStrategy,omitempty"`
	// RestartedAt asks for a restart when it changes, like kubectl rollout restart: set it to
	// the current time (RFC 3339). Changing only this field is a restart.
	// +optional
	RestartedAt string `json:"restartedAt,omitempty"`
	// Reason tells approvers why the change is requested. It is copied into the ticket.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// VMResources is a VM size given as CPU and memory.
type VMResources struct {
	// CPU is the number of virtual CPUs, at least 1.
	CPU int32 `json:"cpu"`
	// Memory is the guest memory, for example "4Gi".
	Memory resource.Quantity `json:"memory"`
}

// VMPhase is the lifecycle phase of a governed VM.
type VMPhase string

const (
	// VMPhaseCreating means the VM is approved and waits for or undergoes materialization.
	VMPhaseCreating VMPhase = "CREATING"
	// VMPhaseRunning means the VM runs.
	VMPhaseRunning VMPhase = "RUNNING"
	// VMPhaseStopping means the VM is shutting down.
	VMPhaseStopping VMPhase = "STOPPING"
	// VMPhaseStopped means the VM exists and does not run.
	VMPhaseStopped VMPhase = "STOPPED"
	// VMPhaseFailed means the VM could not be created or failed.
	VMPhaseFailed VMPhase = "FAILED"
	// VMPhaseDeleting means the VM's deletion is approved and under way.
	VMPhaseDeleting VMPhase = "DELETING"
)

// ManagedVMStatus is the observed state of a governed VM.
type ManagedVMStatus struct {
	// Phase is CREATING, RUNNING, STOPPING, STOPPED, FAILED or DELETING; empty until the VM's
	// creation is approved.
	// +optional
	Phase VMPhase `json:"phase,omitempty"`
	// PendingApproval is the change waiting for approval, if any.
	// +optional
	PendingApproval *PendingApproval `json:"pendingApproval,omitempty"`
	// Instance is the VM's permanent instance number in its service, allocated on approval
	// of its creation.
	// +optional
	Instance int32 `json:"instance,omitempty"`
	// InstanceName is {namespace}-{system}-{service}-{NN}: the name the VM has on its cluster.
	// +optional
	InstanceName string `json:"instanceName,omitempty"`
	// Cluster is the target cluster chosen by the approver.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// StorageClass is the storage class chosen by the approver for the VM's disks.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// Hostname is the VM's hostname, set by the platform.
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// ApprovedRevision is the number of the VMRevision holding the approved spec; 0 before the
	// creation is approved.
	// +optional
	ApprovedRevision int64 `json:"approvedRevision,omitempty"`
	// LastTicket names the most recent ApprovalTicket of this VM.
	// +optional
	LastTicket string `json:"lastTicket,omitempty"`
	// Conditions are Approved (whether the latest request was approved) and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PendingApproval is a change of a VM that waits for approval.
type PendingApproval struct {
	// Ticket names the ApprovalTicket.
	Ticket string `json:"ticket"`
	// Operation is the requested operation.
	Operation Operation `json:"operation"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ManagedVMList is a list of governed VMs.
type ManagedVMList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the VMs.
	Items []ManagedVM `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VMRevision is the immutable record of one approved spec of a ManagedVM. The platform writes
// it when a change is approved (or, for changes that need no approval, when it is made);
// nobody can change or delete it through the API.
type VMRevision struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The name is {vm}-r{revision}.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the record.
	// +optional
	Spec VMRevisionSpec `json:"spec,omitempty"`
}

// VMRevisionSpec is the content of a revision.
type VMRevisionSpec struct {
	// VMName names the ManagedVM.
	VMName string `json:"vmName"`
	// Revision counts the VM's approved specs from 1.
	Revision int64 `json:"revision"`
	// Operation is the operation that produced this revision.
	Operation Operation `json:"operation"`
	// Ticket names the ApprovalTicket that approved it; empty when no approval was needed.
	// +optional
	Ticket string `json:"ticket,omitempty"`
	// ApprovedBy lists the approvers, empty when no approval was needed.
	// +optional
	// +listType=atomic
	ApprovedBy []string `json:"approvedBy,omitempty"`
	// VMSpec is the approved spec.
	VMSpec ManagedVMSpec `json:"vmSpec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// VMRevisionList is a list of revisions.
type VMRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the revisions.
	Items []VMRevision `json:"items"`
}

// Operation is what a ticket asks for.
type Operation string

const (
	// OperationCreate creates a VM.
	OperationCreate Operation = "create"
	// OperationModify changes a VM's spec.
	OperationModify Operation = "modify"
	// OperationDelete deletes a VM.
	OperationDelete Operation = "delete"
	// OperationStart starts a VM.
	OperationStart Operation = "start"
	// OperationStop stops a VM.
	OperationStop Operation = "stop"
	// OperationRestart restarts a VM.
	OperationRestart Operation = "restart"
)

// TicketState is the state of an approval ticket.
type TicketState string

const (
	// TicketPending waits for decisions.
	TicketPending TicketState = "PENDING"
	// TicketApproved has enough approvals; execution starts.
	TicketApproved TicketState = "APPROVED"
	// TicketRejected was rejected by an approver. Final.
	TicketRejected TicketState = "REJECTED"
	// TicketCancelled was withdrawn by its requester. Final.
	TicketCancelled TicketState = "CANCELLED"
	// TicketExecuting is approved and being carried out (or waits for a runtime).
	TicketExecuting TicketState = "EXECUTING"
	// TicketSuccess was carried out. Final.
	TicketSuccess TicketState = "SUCCESS"
	// TicketFailed could not be carried out. Final.
	TicketFailed TicketState = "FAILED"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApprovalTicket is a request to change a ManagedVM, opened by the platform when a tenant asks
// for the change. Approvers decide through the approval subresource (POST a TicketDecision to
// approvaltickets/NAME/approval), which needs the RBAC verb "approve" on
// approvaltickets/approval; the requester may cancel it there while it is pending.
type ApprovalTicket struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the request, written once by the platform.
	// +optional
	Spec ApprovalTicketSpec `json:"spec,omitempty"`
	// Status is the decision state.
	// +optional
	Status ApprovalTicketStatus `json:"status,omitempty"`
}

// TargetReference names the object a ticket or record is about.
type TargetReference struct {
	// Kind of the object, for example ManagedVM.
	Kind string `json:"kind"`
	// Namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
}

// ApprovalTicketSpec is the request.
type ApprovalTicketSpec struct {
	// Operation is create, modify, delete, start, stop or restart.
	Operation Operation `json:"operation"`
	// TargetRef is the ManagedVM.
	TargetRef TargetReference `json:"targetRef"`
	// Requester is the user who asked for the change. For a request plinth-controller makes
	// for a Workload or TenantCompute, it is the user who last wrote that object's spec, as the
	// server recorded it. The requester may not approve or reject the ticket.
	Requester string `json:"requester"`
	// SubmittedBy is the platform identity that made the request for the requester, for
	// example plinth-controller asking for the VM of a Workload; empty when the requester
	// made it. It may cancel the ticket, and may not approve or reject it.
	// +optional
	SubmittedBy string `json:"submittedBy,omitempty"`
	// Environment is the environment of the VM's System when the ticket was opened.
	Environment Environment `json:"environment"`
	// RequestedSpec is the spec the requester asked for (for delete, the VM's current spec).
	RequestedSpec ManagedVMSpec `json:"requestedSpec"`
	// Reason is the requester's reason, from the VM's spec.reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// RequiredApprovals is how many distinct approvers must approve, from the ApprovalPolicy.
	RequiredApprovals int32 `json:"requiredApprovals"`
	// ApproverGroups, when not empty, restricts approvers to members of these groups.
	// +optional
	// +listType=atomic
	ApproverGroups []string `json:"approverGroups,omitempty"`
}

// Decision is an approver's or requester's decision on a ticket.
type Decision string

const (
	// DecisionApprove approves the ticket (one of its required approvals).
	DecisionApprove Decision = "Approve"
	// DecisionReject rejects the ticket.
	DecisionReject Decision = "Reject"
	// DecisionCancel withdraws the ticket; only its requester may cancel.
	DecisionCancel Decision = "Cancel"
)

// TicketDecisionRecord is one decision recorded on a ticket.
type TicketDecisionRecord struct {
	// User who decided, from the request's authentication.
	User string `json:"user"`
	// Decision is Approve, Reject or Cancel.
	Decision Decision `json:"decision"`
	// Time of the decision.
	Time metav1.Time `json:"time"`
	// Comment is the decider's comment.
	// +optional
	Comment string `json:"comment,omitempty"`
	// SpecHash is, for an approval, the spec it approved: "sha256:" and the hexadecimal
	// SHA-256 of the JSON of the spec in place once it was recorded (the requested spec, or
	// the modifiedSpec). An approval counts toward requiredApprovals only while the ticket
	// holds the spec, and for a create the cluster and storage class, that it approved: a
	// later approver who changes any of them sets the earlier approvals aside, and their
	// approvers may approve again.
	// +optional
	SpecHash string `json:"specHash,omitempty"`
	// Cluster is, for an approval of a create, the target cluster in place once it was
	// recorded.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// StorageClass is, for an approval of a create, the storage class in place once it was
	// recorded.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
}

// ApprovalTicketStatus is the decision state of a ticket.
type ApprovalTicketStatus struct {
	// State is PENDING, APPROVED, REJECTED, CANCELLED, EXECUTING, SUCCESS or FAILED.
	// +optional
	State TicketState `json:"state,omitempty"`
	// Decisions are the recorded decisions, oldest first.
	// +optional
	// +listType=atomic
	Decisions []TicketDecisionRecord `json:"decisions,omitempty"`
	// ModifiedSpec is the spec an approver put in place of the requested one; it replaces
	// the requested spec as a whole.
	// +optional
	ModifiedSpec *ManagedVMSpec `json:"modifiedSpec,omitempty"`
	// Cluster is the target cluster chosen at approval of a create.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// StorageClass is the storage class chosen at approval of a create.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// ExecutionStartedAt is when the approved change began to be carried out. Approving an
	// APPROVED ticket again resumes an execution that was interrupted, once this is a minute
	// old; until then the approval is refused, so that the change is carried out once.
	// +optional
	ExecutionStartedAt *metav1.Time `json:"executionStartedAt,omitempty"`
	// Message is one sentence on the current state.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApprovalTicketList is a list of tickets.
type ApprovalTicketList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the tickets.
	Items []ApprovalTicket `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TicketDecision is the body POSTed to approvaltickets/NAME/approval: an approval, a rejection
// or, by the requester, a cancellation. The response is the updated ApprovalTicket.
type TicketDecision struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; unused.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Decision is Approve, Reject or Cancel.
	Decision Decision `json:"decision"`
	// Comment is recorded with the decision.
	// +optional
	Comment string `json:"comment,omitempty"`
	// Cluster chooses the target cluster; only for approving a create.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// StorageClass chooses the storage class; only for approving a create.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// ModifiedSpec replaces the requested spec as a whole; only for approving a create or a
	// modify. Its systemServiceRef must stay the same.
	// +optional
	ModifiedSpec *ManagedVMSpec `json:"modifiedSpec,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApprovalPolicy says, for an environment and a set of operations, whether approval is needed,
// who may approve and how many distinct approvals are required; it can also cap the number of
// VMs per namespace. Where several policies match, the strictest wins. Without any policy:
// create, modify and delete need one approval everywhere; start, stop and restart need one
// approval in prod and none in test.
type ApprovalPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +optional
	Spec ApprovalPolicySpec `json:"spec,omitempty"`
	// Status is written by the platform.
	// +optional
	Status ApprovalPolicyStatus `json:"status,omitempty"`
}

// ApprovalPolicySpec is a policy.
type ApprovalPolicySpec struct {
	// Environment is the environment the policy covers: test, prod, or empty for both.
	// +optional
	Environment Environment `json:"environment,omitempty"`
	// Operations are the operations the policy covers; empty means all.
	// +optional
	// +listType=set
	Operations []Operation `json:"operations,omitempty"`
	// ApprovalRequired says whether the covered operations need approval.
	ApprovalRequired bool `json:"approvalRequired"`
	// ApproverGroups, when not empty, restricts approvers to members of these groups (they
	// also need the RBAC verb approve on approvaltickets/approval).
	// +optional
	// +listType=set
	ApproverGroups []string `json:"approverGroups,omitempty"`
	// RequiredApprovals is the number of distinct approvers needed; default 1.
	// +optional
	RequiredApprovals int32 `json:"requiredApprovals,omitempty"`
	// VMQuotaPerNamespace, when set, caps the number of ManagedVMs in each namespace of the
	// covered environment; a request beyond it fails with QUOTA_EXCEEDED.
	// +optional
	VMQuotaPerNamespace *int32 `json:"vmQuotaPerNamespace,omitempty"`
}

// ApprovalPolicyStatus is the observed state of a policy.
type ApprovalPolicyStatus struct {
	// Conditions describe the policy's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApprovalPolicyList is a list of policies.
type ApprovalPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the policies.
	Items []ApprovalPolicy `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AuditLog is an immutable audit record written by the platform for every governed action.
// Nobody can create, change or delete one through the API.
type AuditLog struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the record.
	// +optional
	Spec AuditLogSpec `json:"spec,omitempty"`
}

// AuditLogSpec is an audit record.
type AuditLogSpec struct {
	// Actor is the user who acted.
	Actor string `json:"actor"`
	// Action is the canonical action, for example vm.request, vm.delete_submitted,
	// approval.approve, approval.reject, approval.cancel, system.create.
	Action string `json:"action"`
	// Target is the object acted on.
	Target TargetReference `json:"target"`
	// Time of the action.
	Time metav1.Time `json:"time"`
	// Details are action-specific facts, for example the ticket's name.
	// +optional
	Details map[string]string `json:"details,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AuditLogList is a list of audit records.
type AuditLogList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the records.
	Items []AuditLog `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DomainEvent is an append-only domain event, for example VMRequested or TicketApproved,
// written by the platform for consumers such as notifiers. Its payload never changes; a
// consumer with access to the status subresource may archive it.
type DomainEvent struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the event.
	// +optional
	Spec DomainEventSpec `json:"spec,omitempty"`
	// Status carries the archive mark.
	// +optional
	Status DomainEventStatus `json:"status,omitempty"`
}

// DomainEventSpec is an event.
type DomainEventSpec struct {
	// Type is the event type, for example VMRequested, TicketApproved, TicketRejected,
	// TicketCancelled, VMInstanceAllocated, VMDeleteRequested.
	Type string `json:"type"`
	// Aggregate is the object the event belongs to.
	Aggregate TargetReference `json:"aggregate"`
	// OccurredAt is when it happened.
	OccurredAt metav1.Time `json:"occurredAt"`
	// Payload is the event's data, never changed after it is written.
	// +optional
	Payload *common.RawObject `json:"payload,omitempty"`
}

// DomainEventStatus marks consumption.
type DomainEventStatus struct {
	// ArchivedAt is when the event was archived; archived events may be cleaned up.
	// +optional
	ArchivedAt *metav1.Time `json:"archivedAt,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DomainEventList is a list of events.
type DomainEventList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the events.
	Items []DomainEvent `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PendingAdoption is a VM found on a registered cluster with the platform's labels, pointing
// at an existing SystemService, but without a ManagedVM. An administrator may adopt it, which
// creates the ManagedVM with the VM's existing instance number.
type PendingAdoption struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what was found.
	// +optional
	Spec PendingAdoptionSpec `json:"spec,omitempty"`
	// Status is written by the platform.
	// +optional
	Status PendingAdoptionStatus `json:"status,omitempty"`
}

// PendingAdoptionSpec describes a VM found on a cluster.
type PendingAdoptionSpec struct {
	// Cluster is the cluster the VM runs on.
	Cluster string `json:"cluster"`
	// VMName is the VirtualMachine's name on the cluster.
	VMName string `json:"vmName"`
	// SystemServiceRef names the SystemService the VM's labels point at.
	SystemServiceRef LocalObjectReference `json:"systemServiceRef"`
	// Instance is the instance number from the VM's labels.
	Instance int32 `json:"instance"`
	// VMSpec is the VM's shape as found on the cluster; adopting makes it the ManagedVM's
	// first approved revision.
	VMSpec ManagedVMSpec `json:"vmSpec"`
	// FoundAt is when the platform first found the VM.
	// +optional
	FoundAt metav1.Time `json:"foundAt,omitempty"`
}

// PendingAdoptionStatus is the observed state of an adoption candidate.
type PendingAdoptionStatus struct {
	// Conditions describe the candidate's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PendingAdoptionList is a list of adoption candidates.
type PendingAdoptionList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the candidates.
	Items []PendingAdoption `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TicketExecution is the body plinth-controller POSTs to approvaltickets/NAME/execution when it
// has carried out an approved ticket (SUCCESS) or could not (FAILED). Only a ticket in
// EXECUTING accepts it. The response is the updated ApprovalTicket.
type TicketExecution struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; unused.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// State is SUCCESS or FAILED.
	State TicketState `json:"state"`
	// Message is one sentence on the outcome, shown as the ticket's message.
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AdoptionRequest is the body an administrator POSTs to pendingadoptions/NAME/adopt. Adopting
// creates the ManagedVM for the found VM, with its existing instance number, and removes the
// PendingAdoption. The response is the new ManagedVM.
type AdoptionRequest struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; unused.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// VMName names the ManagedVM to create; empty means the found VM's instance name.
	// +optional
	VMName string `json:"vmName,omitempty"`
	// Reason is recorded in the audit log.
	// +optional
	Reason string `json:"reason,omitempty"`
}
