package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

// Decide records a decision on a ticket and carries out what follows from it: execution on
// final approval, release of the VM on rejection or cancellation. createValidation is the
// request's validating admission. A dry run makes every check a real decision makes (the
// approver's authorization, the ticket's state, placement, the writes' validation) and writes
// nothing: no decision, audit record, event, instance number or VM change; it answers with the
// ticket as the decision would leave it.
func (f *Flow) Decide(ctx context.Context, name string, d *governance.TicketDecision, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (*governance.ApprovalTicket, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	if err := matchURLName("TicketDecision", &d.ObjectMeta, name); err != nil {
		return nil, err
	}
	if errs := validation.ValidateTicketDecision(d); len(errs) > 0 {
		return nil, apierrors.NewInvalid(governance.Kind("TicketDecision"), name, errs)
	}
	if err := admit(ctx, createValidation, d); err != nil {
		return nil, err
	}
	ctx = withDryRun(ctx, opts.DryRun)
	obj, err := f.stores.Tickets.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	t := obj.(*governance.ApprovalTicket)
	u, _ := genericapirequest.UserFrom(ctx)
	if u == nil {
		return nil, apierrors.NewUnauthorized("the request has no user")
	}
	params := apperror.Params{"ticket": name, "user": u.GetName()}
	if d.Decision == governance.DecisionCancel {
		if u.GetName() != t.Spec.Requester {
			return nil, apperror.New(apperror.NotRequester, ticketResource, name, params,
				"Only the requester %s may cancel ticket %s.", t.Spec.Requester, name)
		}
	} else {
		if err := f.authorizeApprover(ctx, u, ns, name); err != nil {
			return nil, err
		}
		if u.GetName() == t.Spec.Requester {
			return nil, apperror.New(apperror.SelfApprovalForbidden, ticketResource, name, params,
				"User %s requested ticket %s and may not decide on it.", u.GetName(), name)
		}
		if groups := t.Spec.ApproverGroups; len(groups) > 0 && !slices.ContainsFunc(u.GetGroups(), func(g string) bool { return slices.Contains(groups, g) }) {
			params["groups"] = strings.Join(groups, ",")
			return nil, apperror.New(apperror.ApproverNotEligible, ticketResource, name, params,
				"Ticket %s may only be decided by members of %s.", name, strings.Join(groups, ", "))
		}
		if err := checkModifiedSpec(t, d); err != nil {
			return nil, err
		}
		if d.Decision == governance.DecisionApprove && t.Spec.Operation == governance.OperationCreate {
			if err := f.checkPlacement(ctx, t, d); err != nil {
				return nil, err
			}
		}
	}
	if d.Decision == governance.DecisionApprove && t.Status.State == governance.TicketApproved {
		// Approved before, but its execution was interrupted: approving again resumes it.
		return f.execute(ctx, t)
	}

	obj, err = update(ctx, f.stores.TicketStatus, ns, name, func(obj runtime.Object) error {
		t := obj.(*governance.ApprovalTicket)
		if t.Status.State != governance.TicketPending {
			return apperror.New(apperror.TicketNotPending, ticketResource, name, apperror.Params{"ticket": name, "state": string(t.Status.State)},
				"Ticket %s is %s, not PENDING.", name, t.Status.State)
		}
		for _, prior := range t.Status.Decisions {
			if prior.User == u.GetName() {
				return apperror.New(apperror.AlreadyDecided, ticketResource, name, params,
					"User %s already decided on ticket %s.", u.GetName(), name)
			}
		}
		t.Status.Decisions = append(t.Status.Decisions, governance.TicketDecisionRecord{
			User: u.GetName(), Decision: d.Decision, Time: metav1.NewTime(f.now()), Comment: d.Comment,
		})
		switch d.Decision {
		case governance.DecisionCancel:
			t.Status.State, t.Status.Message = governance.TicketCancelled, "Cancelled by the requester."
		case governance.DecisionReject:
			t.Status.State, t.Status.Message = governance.TicketRejected, fmt.Sprintf("Rejected by %s.", u.GetName())
		case governance.DecisionApprove:
			if d.ModifiedSpec != nil {
				t.Status.ModifiedSpec = d.ModifiedSpec.DeepCopy()
			}
			if d.Cluster != "" {
				t.Status.Cluster = d.Cluster
			}
			if d.StorageClass != "" {
				t.Status.StorageClass = d.StorageClass
			}
			approvals := int32(len(approvers(t)))
			if approvals >= max(t.Spec.RequiredApprovals, 1) {
				t.Status.State, t.Status.Message = governance.TicketApproved, fmt.Sprintf("Approved by %s.", strings.Join(approvers(t), ", "))
			} else {
				t.Status.Message = fmt.Sprintf("%d of %d approvals.", approvals, t.Spec.RequiredApprovals)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	t = obj.(*governance.ApprovalTicket)
	target := governance.TargetReference{Kind: "ApprovalTicket", Namespace: ns, Name: name}
	action := map[governance.Decision]string{governance.DecisionApprove: ActionApprove, governance.DecisionReject: ActionReject, governance.DecisionCancel: ActionCancel}[d.Decision]
	if err := f.audit(ctx, ns, u.GetName(), action, target, map[string]string{
		"ticket": name, "operation": string(t.Spec.Operation), "vm": t.Spec.TargetRef.Name, "state": string(t.Status.State),
	}); err != nil {
		return nil, err
	}
	switch t.Status.State {
	case governance.TicketApproved:
		f.event(ctx, ns, EventTicketApproved, target, map[string]any{"ticket": name, "approvers": approvers(t), "operation": t.Spec.Operation})
		return f.execute(ctx, t)
	case governance.TicketRejected, governance.TicketCancelled:
		eventType := EventTicketRejected
		if t.Status.State == governance.TicketCancelled {
			eventType = EventTicketCancelled
		}
		f.event(ctx, ns, eventType, target, map[string]any{"ticket": name, "by": u.GetName(), "operation": t.Spec.Operation})
		if err := f.release(ctx, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// authorizeApprover asks the authorizer, as CertificateSigningRequest approval does, whether
// the user holds the verb approve on approvaltickets/approval.
func (f *Flow) authorizeApprover(ctx context.Context, u user.Info, ns, name string) error {
	decision, reason, err := f.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: "approve", APIGroup: governance.GroupName, APIVersion: "v1alpha1",
		Resource: "approvaltickets", Subresource: "approval", Namespace: ns, Name: name, ResourceRequest: true,
	})
	if err == nil && decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		klog.V(2).InfoS("Approver authorization failed", "user", u.GetName(), "reason", reason, "err", err)
	}
	return apperror.New(apperror.ApproverNotAuthorized, ticketResource, name, apperror.Params{"ticket": name, "user": u.GetName()},
		"User %s may not approve or reject tickets: the verb approve on approvaltickets/approval is required.", u.GetName())
}

// checkModifiedSpec allows a replacement spec for create and modify tickets only, for the
// same service.
func checkModifiedSpec(t *governance.ApprovalTicket, d *governance.TicketDecision) error {
	if d.ModifiedSpec == nil {
		return nil
	}
	path := field.NewPath("modifiedSpec")
	switch {
	case t.Spec.Operation != governance.OperationCreate && t.Spec.Operation != governance.OperationModify:
		return apierrors.NewInvalid(governance.Kind("TicketDecision"), t.Name, field.ErrorList{
			field.Forbidden(path, fmt.Sprintf("may only replace the spec of create and modify tickets, not of %s", t.Spec.Operation))})
	case d.ModifiedSpec.SystemServiceRef != t.Spec.RequestedSpec.SystemServiceRef:
		return apierrors.NewInvalid(governance.Kind("TicketDecision"), t.Name, field.ErrorList{
			field.Invalid(path.Child("systemServiceRef", "name"), d.ModifiedSpec.SystemServiceRef.Name, "must stay the requested service")})
	}
	return nil
}

// approvers lists the users who approved t, in order.
func approvers(t *governance.ApprovalTicket) []string {
	var out []string
	for _, d := range t.Status.Decisions {
		if d.Decision == governance.DecisionApprove {
			out = append(out, d.User)
		}
	}
	return out
}

// change is an approved (or approval-free) operation on a VM.
type change struct {
	op           governance.Operation
	spec         governance.ManagedVMSpec
	ticket       string
	approvers    []string
	cluster      string
	storageClass string
}

// execute carries out an approved ticket and moves it to EXECUTING, or SUCCESS when nothing
// is left for a runtime to do. On an error the ticket stays APPROVED: approving it again
// resumes.
func (f *Flow) execute(ctx context.Context, t *governance.ApprovalTicket) (*governance.ApprovalTicket, error) {
	ns := t.Namespace
	state, message := governance.TicketExecuting, ""
	vm, err := f.getVM(ctx, ns, t.Spec.TargetRef.Name)
	switch {
	case apperror.CodeOf(err) == apperror.VMNotFound:
		state, message = governance.TicketFailed, "The VM no longer exists."
	case err != nil:
		return nil, err
	default:
		spec := t.Spec.RequestedSpec
		if t.Status.ModifiedSpec != nil {
			spec = *t.Status.ModifiedSpec
		}
		done, msg, err := f.apply(ctx, vm, change{
			op: t.Spec.Operation, spec: spec, ticket: t.Name, approvers: approvers(t), cluster: t.Status.Cluster, storageClass: t.Status.StorageClass,
		})
		if err != nil {
			return nil, err
		}
		message = msg
		if done {
			state = governance.TicketSuccess
		}
	}
	if dryRun(ctx) != nil {
		// The decision that led here was not stored either: a dry-run update would start from
		// the stored ticket without it. Answer with t as it would be stored.
		out := t.DeepCopy()
		out.Status.State, out.Status.Message = state, message
		return out, nil
	}
	obj, err := update(ctx, f.stores.TicketStatus, ns, t.Name, func(obj runtime.Object) error {
		t := obj.(*governance.ApprovalTicket)
		t.Status.State, t.Status.Message = state, message
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obj.(*governance.ApprovalTicket), nil
}

// apply makes an approved change take effect on the VM object. It is idempotent: applied again
// after an interruption, it reuses the instance number and revision already given. done
// reports that nothing is left for a runtime.
func (f *Flow) apply(ctx context.Context, vm *governance.ManagedVM, c change) (done bool, message string, err error) {
	ns := vm.Namespace
	target := vmTarget(vm)
	switch c.op {
	case governance.OperationCreate:
		instance := vm.Status.Instance
		if instance == 0 {
			if instance, err = f.allocate(ctx, ns, vm.Spec.SystemServiceRef.Name); err != nil {
				return false, "", err
			}
		}
		vmName := v1alpha1.InstanceName(ns, vm.Labels[v1alpha1.LabelSystem], vm.Labels[v1alpha1.LabelService], instance)
		labelled := vm.DeepCopy()
		labelled.Labels[v1alpha1.LabelInstance] = v1alpha1.InstanceLabelValue(instance)
		if err := f.recordRevision(ctx, labelled, 1, c.op, c.ticket, c.approvers, c.spec); err != nil {
			return false, "", err
		}
		if _, err := f.updateVM(ctx, ns, vm.Name, func(v *governance.ManagedVM) {
			v.Spec = c.spec
			v.Labels[v1alpha1.LabelInstance] = v1alpha1.InstanceLabelValue(instance)
			if c.ticket != "" {
				v.Labels[v1alpha1.LabelTicketID] = c.ticket
			}
			if !hasFinalizer(v) {
				v.Finalizers = append(v.Finalizers, v1alpha1.FinalizerDeleteApproval)
			}
			v.Status.Instance, v.Status.InstanceName, v.Status.Hostname = instance, vmName, vmName
			v.Status.Cluster, v.Status.StorageClass = c.cluster, c.storageClass
			v.Status.Phase = governance.VMPhaseCreating
			v.Status.ApprovedRevision = 1
			v.Status.PendingApproval = nil
			setCondition(v, metav1.ConditionTrue, "Approved", "The creation is approved.")
		}); err != nil {
			return false, "", err
		}
		f.event(ctx, ns, EventVMInstanceAllocated, target, map[string]any{"instance": instance, "instanceName": vmName, "ticket": c.ticket})
		return false, fmt.Sprintf("Instance %02d (%s) waits for a runtime to create it.", instance, vmName), nil

	case governance.OperationDelete:
		updated, err := f.updateVM(ctx, ns, vm.Name, func(v *governance.ManagedVM) {
			v.Finalizers = slices.DeleteFunc(v.Finalizers, func(s string) bool { return s == v1alpha1.FinalizerDeleteApproval })
			v.Status.PendingApproval = nil
			v.Status.Phase = governance.VMPhaseDeleting
			setCondition(v, metav1.ConditionTrue, "Approved", "The deletion is approved.")
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, "", err
		}
		f.event(ctx, ns, EventVMDeleted, target, map[string]any{"ticket": c.ticket, "instanceName": vm.Status.InstanceName})
		if err == nil && updated.DeletionTimestamp != nil && len(updated.Finalizers) > 0 {
			return false, "The VM waits for its runtime to remove it.", nil
		}
		return true, "The VM is deleted.", nil

	default: // modify, start, stop, restart
		revision := vm.Status.ApprovedRevision + 1
		if c.ticket != "" && vm.Status.PendingApproval == nil && vm.Status.LastTicket == c.ticket {
			revision = vm.Status.ApprovedRevision // applied before; only the ticket was not updated
		}
		if err := f.recordRevision(ctx, vm, revision, c.op, c.ticket, c.approvers, c.spec); err != nil {
			return false, "", err
		}
		if _, err := f.updateVM(ctx, ns, vm.Name, func(v *governance.ManagedVM) {
			v.Spec = c.spec
			if c.ticket != "" {
				v.Labels[v1alpha1.LabelTicketID] = c.ticket
				v.Status.LastTicket = c.ticket
			}
			v.Status.ApprovedRevision = revision
			v.Status.PendingApproval = nil
			setCondition(v, metav1.ConditionTrue, "Approved", fmt.Sprintf("The %s is approved.", c.op))
		}); err != nil {
			return false, "", err
		}
		f.event(ctx, ns, EventVMRevised, target, map[string]any{"revision": revision, "operation": c.op, "ticket": c.ticket})
		return false, fmt.Sprintf("Revision %d waits for a runtime to apply it.", revision), nil
	}
}

// allocate takes the service's next instance number. The counter is updated by
// compare-and-swap on the stored SystemService, retried on conflict, so concurrent approvals
// get distinct, consecutive numbers; it only ever grows, so a number is never reused.
func (f *Flow) allocate(ctx context.Context, ns, service string) (int32, error) {
	var instance int32
	_, err := update(ctx, f.stores.ServiceStatus, ns, service, func(obj runtime.Object) error {
		s := obj.(*governance.SystemService)
		instance = max(s.Status.NextInstanceIndex, 1)
		s.Status.NextInstanceIndex = instance + 1
		return nil
	})
	return instance, err
}

// release ends a rejected or cancelled request: the VM is no longer pending, and a spec the
// request changed goes back to the approved revision.
func (f *Flow) release(ctx context.Context, t *governance.ApprovalTicket) error {
	ns := t.Namespace
	vm, err := f.getVM(ctx, ns, t.Spec.TargetRef.Name)
	if apperror.CodeOf(err) == apperror.VMNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if p := vm.Status.PendingApproval; p == nil || p.Ticket != t.Name {
		return nil
	}
	approved := vm.Spec
	if vm.Status.ApprovedRevision > 0 && t.Spec.Operation != governance.OperationDelete {
		obj, err := f.stores.Revisions.Get(inNamespace(ctx, ns), v1alpha1.RevisionName(vm.Name, vm.Status.ApprovedRevision), &metav1.GetOptions{})
		if err != nil {
			return err
		}
		approved = obj.(*governance.VMRevision).Spec.VMSpec
	}
	word := strings.ToLower(string(t.Status.State))
	_, err = f.updateVM(ctx, ns, vm.Name, func(v *governance.ManagedVM) {
		v.Spec = approved
		v.Status.PendingApproval = nil
		reason := "Rejected"
		if t.Status.State == governance.TicketCancelled {
			reason = "Cancelled"
		}
		setCondition(v, metav1.ConditionFalse, reason, fmt.Sprintf("The %s was %s.", t.Spec.Operation, word))
	})
	return err
}
