package approval

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/policy"
)

// Canonical audit actions. An operation that needs no approval is audited as "vm." followed
// by the operation (vm.create, vm.modify, vm.start, vm.stop, vm.restart).
const (
	ActionVMRequest         = "vm.request"
	ActionVMModifyRequest   = "vm.modify_request"
	ActionVMPowerRequest    = "vm.power_request"
	ActionVMDeleteSubmitted = "vm.delete_submitted"
	ActionVMDelete          = "vm.delete"
	ActionApprove           = "approval.approve"
	ActionReject            = "approval.reject"
	ActionCancel            = "approval.cancel"
)

// Domain event types.
const (
	EventVMRequested         = "VMRequested"
	EventVMChangeRequested   = "VMChangeRequested"
	EventVMDeleteRequested   = "VMDeleteRequested"
	EventTicketApproved      = "TicketApproved"
	EventTicketRejected      = "TicketRejected"
	EventTicketCancelled     = "TicketCancelled"
	EventVMInstanceAllocated = "VMInstanceAllocated"
	EventVMRevised           = "VMRevised"
	EventVMDeleted           = "VMDeleted"
)

// ticketName returns a fresh ticket name; the random part makes it unique without a lookup.
func ticketName() string { return "tkt-" + rand.String(8) }

// newTicket is a PENDING ticket for op on vm (the ticket strategy sets the state on create),
// asked for by requester; submitter is the platform identity that made the request for them,
// if one did.
func newTicket(name string, vm *governance.ManagedVM, op governance.Operation, env governance.Environment,
	req policy.Requirement, spec governance.ManagedVMSpec, requester, submitter string) *governance.ApprovalTicket {
	labels := v1alpha1.PlatformLabels(vm.Labels)
	labels[v1alpha1.LabelTicketID] = name
	return &governance.ApprovalTicket{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vm.Namespace, Labels: labels},
		Spec: governance.ApprovalTicketSpec{
			Operation:         op,
			TargetRef:         vmTarget(vm),
			Requester:         requester,
			SubmittedBy:       submitter,
			Environment:       env,
			RequestedSpec:     spec,
			Reason:            spec.Reason,
			RequiredApprovals: req.RequiredApprovals,
			ApproverGroups:    req.ApproverGroups,
		},
	}
}

// openTicket stores ticket with its audit record and domain event. When any of them cannot be
// written, the ones already written are removed again (the ticket is marked CANCELLED when it
// cannot be removed: records are never deleted) and the error is returned.
func (f *Flow) openTicket(ctx context.Context, ticket *governance.ApprovalTicket, vm *governance.ManagedVM, action, eventType string) error {
	ns := ticket.Namespace
	if _, err := f.stores.Tickets.Create(inNamespace(ctx, ns), ticket, rest.ValidateAllObjectFunc, createOptions(ctx)); err != nil {
		return err
	}
	details := submitted(map[string]string{"ticket": ticket.Name, "operation": string(ticket.Spec.Operation)}, ticket.Spec.SubmittedBy)
	if err := f.audit(ctx, ns, ticket.Spec.Requester, action, vmTarget(vm), details); err != nil {
		f.withdraw(ctx, ticket, "The request could not be recorded.")
		return err
	}
	payload := map[string]any{"ticket": ticket.Name, "operation": ticket.Spec.Operation, "requester": ticket.Spec.Requester, "spec": ticket.Spec.RequestedSpec}
	if ticket.Spec.SubmittedBy != "" {
		payload["submittedBy"] = ticket.Spec.SubmittedBy
	}
	f.event(ctx, ns, eventType, vmTarget(vm), payload)
	return nil
}

// submitted adds to an audit record's details the platform identity that made the request for
// the actor, if one did.
func submitted(details map[string]string, submitter string) map[string]string {
	if submitter != "" {
		details["submittedBy"] = submitter
	}
	return details
}

// withdraw cancels a ticket whose request could not be completed.
func (f *Flow) withdraw(ctx context.Context, ticket *governance.ApprovalTicket, message string) {
	_, err := update(ctx, f.stores.TicketStatus, ticket.Namespace, ticket.Name, func(obj runtime.Object) error {
		t := obj.(*governance.ApprovalTicket)
		t.Status.State = governance.TicketCancelled
		t.Status.Message = message
		return nil
	})
	if err != nil {
		klog.ErrorS(err, "Withdrawing an incomplete ticket failed", "ticket", klog.KRef(ticket.Namespace, ticket.Name))
	}
}

// audit writes one immutable audit record.
func (f *Flow) audit(ctx context.Context, namespace, actor, action string, target governance.TargetReference, details map[string]string) error {
	record := &governance.AuditLog{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "audit-", Namespace: namespace, Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}},
		Spec:       governance.AuditLogSpec{Actor: actor, Action: action, Target: target, Time: metav1.NewTime(f.now()), Details: details},
	}
	_, err := f.stores.AuditLogs.Create(inNamespace(ctx, namespace), record, rest.ValidateAllObjectFunc, createOptions(ctx))
	return err
}

// event appends a domain event. Events are for consumers such as notifiers, not the source of
// truth: a failure is logged and does not undo the change it reports (the audit record does).
func (f *Flow) event(ctx context.Context, namespace, eventType string, aggregate governance.TargetReference, payload map[string]any) {
	raw, err := json.Marshal(payload)
	if err != nil {
		klog.ErrorS(err, "Encoding a domain event failed", "type", eventType)
		return
	}
	ev := &governance.DomainEvent{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "event-", Namespace: namespace, Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}},
		Spec:       governance.DomainEventSpec{Type: eventType, Aggregate: aggregate, OccurredAt: metav1.NewTime(f.now()), Payload: &common.RawObject{Raw: raw}},
	}
	if _, err := f.stores.Events.Create(inNamespace(ctx, namespace), ev, rest.ValidateAllObjectFunc, createOptions(ctx)); err != nil {
		klog.ErrorS(err, "Writing a domain event failed", "type", eventType, "aggregate", klog.KRef(namespace, aggregate.Name))
	}
}

// recordRevision writes the immutable record of an approved spec. A revision that already
// exists was written by an earlier attempt of the same approval and is kept.
func (f *Flow) recordRevision(ctx context.Context, vm *governance.ManagedVM, revision int64, op governance.Operation, ticket string, approvers []string, spec governance.ManagedVMSpec) error {
	labels := v1alpha1.PlatformLabels(vm.Labels)
	if ticket != "" {
		labels[v1alpha1.LabelTicketID] = ticket
	}
	rev := &governance.VMRevision{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.RevisionName(vm.Name, revision), Namespace: vm.Namespace, Labels: labels},
		Spec: governance.VMRevisionSpec{
			VMName: vm.Name, Revision: revision, Operation: op, Ticket: ticket, ApprovedBy: approvers, VMSpec: spec,
		},
	}
	_, err := f.stores.Revisions.Create(inNamespace(ctx, vm.Namespace), rev, rest.ValidateAllObjectFunc, createOptions(ctx))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
