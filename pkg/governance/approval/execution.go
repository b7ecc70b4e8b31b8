package approval

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

// Audit actions and domain events of a runtime's report.
const (
	ActionExecutionSuccess = "execution.success"
	ActionExecutionFailed  = "execution.failed"
	EventTicketSucceeded   = "TicketSucceeded"
	EventTicketFailed      = "TicketFailed"
)

// ReportExecution records what a runtime made of an EXECUTING ticket: SUCCESS or FAILED. A
// report that repeats the ticket's final state is answered with the ticket and changes
// nothing, so a runtime restarted after reporting may report again. createValidation is the
// request's validating admission; a dry run makes every check and writes nothing.
func (f *Flow) ReportExecution(ctx context.Context, name string, e *governance.TicketExecution, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (*governance.ApprovalTicket, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	if err := matchURLName("TicketExecution", &e.ObjectMeta, name); err != nil {
		return nil, err
	}
	if errs := validation.ValidateTicketExecution(e); len(errs) > 0 {
		return nil, apierrors.NewInvalid(governance.Kind("TicketExecution"), name, errs)
	}
	if err := admit(ctx, createValidation, e); err != nil {
		return nil, err
	}
	ctx = withDryRun(ctx, opts.DryRun)
	obj, err := f.stores.Tickets.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if t := obj.(*governance.ApprovalTicket); t.Status.State == e.State {
		return t, nil
	}
	obj, err = update(ctx, f.stores.TicketStatus, ns, name, func(obj runtime.Object) error {
		t := obj.(*governance.ApprovalTicket)
		if t.Status.State != governance.TicketExecuting {
			return apperror.New(apperror.TicketNotExecuting, ticketResource, name, apperror.Params{"ticket": name, "state": string(t.Status.State)},
				"Ticket %s is %s, not EXECUTING.", name, t.Status.State)
		}
		t.Status.State, t.Status.Message = e.State, e.Message
		return nil
	})
	if err != nil {
		return nil, err
	}
	t := obj.(*governance.ApprovalTicket)
	action, eventType := ActionExecutionSuccess, EventTicketSucceeded
	if e.State == governance.TicketFailed {
		action, eventType = ActionExecutionFailed, EventTicketFailed
	}
	target := governance.TargetReference{Kind: "ApprovalTicket", Namespace: ns, Name: name}
	if err := f.audit(ctx, ns, userName(ctx), action, target, map[string]string{
		"ticket": name, "operation": string(t.Spec.Operation), "vm": t.Spec.TargetRef.Name, "message": e.Message,
	}); err != nil {
		return nil, err
	}
	f.event(ctx, ns, eventType, target, map[string]any{"ticket": name, "operation": t.Spec.Operation, "vm": t.Spec.TargetRef.Name, "message": e.Message})
	return t, nil
}
