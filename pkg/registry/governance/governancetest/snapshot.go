package governancetest

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
)

// Snapshot is what the approval flow has left in a namespace, in a form tests compare with
// cmp.Diff: every outcome the flow decides, none of what the server makes up (ticket and
// record names, times, UIDs, resource versions). Lists are sorted, since etcd returns them
// in the order of their generated names.
type Snapshot struct {
	VMs     []VMView
	Tickets []TicketView
	// Audit records, sorted by action, actor, VM and operation.
	Audit []AuditView
	// Events are the domain events' types, sorted.
	Events []string
	// Revisions are the VMRevisions' names, sorted.
	Revisions []string
	// NextInstance is each SystemService's next instance number.
	NextInstance map[string]int32
}

// VMView is a ManagedVM's governed state.
type VMView struct {
	Name         string
	InstanceType string
	Instance     int32
	InstanceName string
	Phase        governance.VMPhase
	Cluster      string
	// Pending is the operation waiting for approval.
	Pending          governance.Operation
	ApprovedRevision int64
	// Approved is the Approved condition's status and reason, "" without one.
	Approved   string
	Finalizers []string
	Deleting   bool
}

// TicketView is an ApprovalTicket's request and state.
type TicketView struct {
	Operation governance.Operation
	VM        string
	Requester string
	// SubmittedBy is the platform identity that asked for the requester, if one did.
	SubmittedBy string
	State       governance.TicketState
	Message     string
	Approvers   []string
}

// AuditView is one audit record: who did what to which VM. A decision's record targets the
// ticket; its VM and operation are the ticket's.
type AuditView struct {
	Actor, Action, VM string
	Operation         governance.Operation
}

// Snapshot reads what the flow has left in namespace.
func (e *Env) Snapshot(namespace string) Snapshot {
	e.t.Helper()
	var s Snapshot
	for _, vm := range e.VMs(namespace) {
		s.VMs = append(s.VMs, ViewVM(&vm))
	}
	for _, t := range e.Tickets(namespace) {
		s.Tickets = append(s.Tickets, ViewTicket(&t))
	}
	slices.SortFunc(s.Tickets, func(a, b TicketView) int {
		return cmp.Or(cmp.Compare(a.VM, b.VM), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.State, b.State))
	})
	for _, a := range e.AuditLogs(namespace) {
		v := AuditView{Actor: a.Spec.Actor, Action: a.Spec.Action, VM: a.Spec.Target.Name, Operation: governance.Operation(a.Spec.Details["operation"])}
		if a.Spec.Target.Kind == "ApprovalTicket" {
			v.VM = a.Spec.Details["vm"]
		}
		s.Audit = append(s.Audit, v)
	}
	slices.SortFunc(s.Audit, func(a, b AuditView) int {
		return cmp.Or(cmp.Compare(a.Action, b.Action), cmp.Compare(a.Actor, b.Actor), cmp.Compare(a.VM, b.VM), cmp.Compare(a.Operation, b.Operation))
	})
	for _, ev := range e.DomainEvents(namespace) {
		s.Events = append(s.Events, ev.Spec.Type)
	}
	slices.Sort(s.Events)
	for _, r := range e.Revisions(namespace) {
		s.Revisions = append(s.Revisions, r.Name)
	}
	slices.Sort(s.Revisions)
	for _, svc := range list[*governance.SystemServiceList](e, e.Stores.Services, namespace).Items {
		if s.NextInstance == nil {
			s.NextInstance = map[string]int32{}
		}
		s.NextInstance[svc.Name] = svc.Status.NextInstanceIndex
	}
	return s
}

// ViewVM is vm's governed state.
func ViewVM(vm *governance.ManagedVM) VMView {
	v := VMView{
		Name: vm.Name, InstanceType: vm.Spec.InstanceType, Instance: vm.Status.Instance, InstanceName: vm.Status.InstanceName,
		Phase: vm.Status.Phase, Cluster: vm.Status.Cluster, ApprovedRevision: vm.Status.ApprovedRevision,
		Finalizers: vm.Finalizers, Deleting: vm.DeletionTimestamp != nil,
	}
	if p := vm.Status.PendingApproval; p != nil {
		v.Pending = p.Operation
	}
	if c := meta.FindStatusCondition(vm.Status.Conditions, "Approved"); c != nil {
		v.Approved = string(c.Status) + "/" + c.Reason
	}
	return v
}

// ViewTicket is t's request and state.
func ViewTicket(t *governance.ApprovalTicket) TicketView {
	v := TicketView{Operation: t.Spec.Operation, VM: t.Spec.TargetRef.Name, Requester: t.Spec.Requester, SubmittedBy: t.Spec.SubmittedBy, State: t.Status.State, Message: t.Status.Message}
	for _, d := range t.Status.Decisions {
		if d.Decision == governance.DecisionApprove {
			v.Approvers = append(v.Approvers, d.User)
		}
	}
	return v
}
