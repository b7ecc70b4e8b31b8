// Package approvalticket is the REST storage of governance.plinth.dev ApprovalTickets: read-only
// for clients, written by the approval flow, decided through the approval subresource.
package approvalticket

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/governance/approval"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the ticket's validation. Only the flow writes tickets; a new one is PENDING.
var Definition = strategy.Definition[*governance.ApprovalTicket]{
	NamespaceScoped: true,
	APIVersions:     []string{v1alpha1.SchemeGroupVersion.String()},
	Validate: func(t *governance.ApprovalTicket) field.ErrorList {
		return validation.ValidateRecordMeta(t)
	},
	ValidateUpdate: func(t, old *governance.ApprovalTicket) field.ErrorList {
		return validation.ValidateImmutableRecord(t.Spec, old.Spec)
	},
	ValidateStatusUpdate: func(t, old *governance.ApprovalTicket) field.ErrorList { return nil },
	PrepareForCreate: func(_ context.Context, t *governance.ApprovalTicket) {
		t.Status.State = governance.TicketPending
		t.Status.Message = fmt.Sprintf("Waiting for %d approval(s).", max(t.Spec.RequiredApprovals, 1))
	},
}

// NewREST returns the approvaltickets storage and its status store.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*governance.ApprovalTicket]{
		Resource:    governance.Resource("approvaltickets"),
		Singular:    "approvalticket",
		NewFunc:     func() *governance.ApprovalTicket { return &governance.ApprovalTicket{} },
		NewListFunc: func() runtime.Object { return &governance.ApprovalTicketList{} },
		Definition:  Definition,
		SelectableFields: func(t *governance.ApprovalTicket) fields.Set {
			return fields.Set{
				"spec.targetRef.name": t.Spec.TargetRef.Name, "spec.operation": string(t.Spec.Operation),
				"status.state": string(t.Status.State), "spec.requester": t.Spec.Requester,
			}
		},
		Table:      Table,
		ShortNames: []string{"tkt"},
		Categories: []string{"governance"},
	})
}

// ApprovalREST is the approval subresource: POST a TicketDecision, get the updated ticket.
type ApprovalREST struct {
	flow *approval.Flow
}

var _ rest.NamedCreater = &ApprovalREST{}

// NewApprovalREST returns the approval subresource.
func NewApprovalREST(flow *approval.Flow) *ApprovalREST { return &ApprovalREST{flow: flow} }

// New allocates the request body.
func (r *ApprovalREST) New() runtime.Object { return &governance.TicketDecision{} }

// Destroy does nothing: the tickets resource owns the storage.
func (r *ApprovalREST) Destroy() {}

// Create records the decision on ticket name, after validating admission has seen it; a dry
// run answers with the ticket the decision would leave and changes nothing.
func (r *ApprovalREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.flow.Decide(ctx, name, obj.(*governance.TicketDecision), createValidation, options)
}

// ExecutionREST is the execution subresource: a runtime POSTs a TicketExecution when it has
// carried out an approved ticket, or could not.
type ExecutionREST struct {
	flow *approval.Flow
}

var _ rest.NamedCreater = &ExecutionREST{}

// NewExecutionREST returns the execution subresource.
func NewExecutionREST(flow *approval.Flow) *ExecutionREST { return &ExecutionREST{flow: flow} }

// New allocates the request body.
func (r *ExecutionREST) New() runtime.Object { return &governance.TicketExecution{} }

// Destroy does nothing: the tickets resource owns the storage.
func (r *ExecutionREST) Destroy() {}

// Create records the outcome on ticket name, after validating admission has seen it; a dry
// run changes nothing.
func (r *ExecutionREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.flow.ReportExecution(ctx, name, obj.(*governance.TicketExecution), createValidation, options)
}

// Table prints OPERATION, VM, REQUESTER, STATE and APPROVALS.
var Table = table.New([]table.Column{
	{Name: "Operation", Type: "string", Description: "The requested operation."},
	{Name: "VM", Type: "string", Description: "The ManagedVM."},
	{Name: "Requester", Type: "string", Description: "The user who asked."},
	{Name: "State", Type: "string", Description: "The ticket's state."},
	{Name: "Approvals", Type: "string", Description: "Approvals of the spec and placement the ticket holds out of approvals required."},
	{Name: "Approvers", Type: "string", Description: "The users whose approvals count.", Wide: true},
}, func(t *governance.ApprovalTicket) []interface{} {
	approvers := approval.Approvers(t)
	return []interface{}{
		string(t.Spec.Operation), t.Spec.TargetRef.Name, t.Spec.Requester, string(t.Status.State),
		fmt.Sprintf("%d/%d", len(approvers), t.Spec.RequiredApprovals), table.OrNone(strings.Join(approvers, ",")),
	}
})
