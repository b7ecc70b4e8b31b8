package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

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
	// The requester, and a platform identity that submitted the request for them, asked for
	// the change: they may withdraw it and may not decide on it.
	asker := u.GetName() == t.Spec.Requester || (t.Spec.SubmittedBy != "" && u.GetName() == t.Spec.SubmittedBy)
	if d.Decision == governance.DecisionCancel {
		if !asker {
			return nil, apperror.New(apperror.NotRequester, ticketResource, name, params,
				"Only the requester %s may cancel ticket %s.", t.Spec.Requester, name)
		}
	} else {
		if err := f.authorizeApprover(ctx, u, ns, name); err != nil {
			return nil, err
		}
		if asker {
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
		// Approved before, but its execution may have been interrupted: approving again
		// resumes it, once no other request is carrying it out.
		claimed, err := f.claimExecution(ctx, name, d)
		if err != nil {
			return nil, err
		}
		return f.execute(ctx, claimed)
	}

	obj, err = update(ctx, f.stores.TicketStatus, ns, name, func(obj runtime.Object) error {
		t := obj.(*governance.ApprovalTicket)
		if t.Status.State != governance.TicketPending {
			return notPending(t)
		}
		current := approvedTarget(t)
		for _, prior := range t.Status.Decisions {
			// An approval of another spec or placement no longer counts: its approver may
			// approve what the ticket holds now.
			if prior.User == u.GetName() && (prior.Decision != governance.DecisionApprove || approves(prior, current)) {
				return apperror.New(apperror.AlreadyDecided, ticketResource, name, params,
					"User %s already decided on ticket %s.", u.GetName(), name)
			}
		}
		record := governance.TicketDecisionRecord{User: u.GetName(), Decision: d.Decision, Time: metav1.NewTime(f.now()), Comment: d.Comment}
		switch d.Decision {
		case governance.DecisionCancel:
			t.Status.State, t.Status.Message = governance.TicketCancelled, "Cancelled by the requester."
		case governance.DecisionReject:
			t.Status.State, t.Status.Message = governance.TicketRejected, fmt.Sprintf("Rejected by %s.", u.GetName())
		case governance.DecisionApprove:
			applyChoices(t, d)
			// The approval records what it approved; approvals of anything else (before a
			// later approver replaced the spec or chose another placement) are set aside.
			target := approvedTarget(t)
			record.SpecHash, record.Cluster, record.StorageClass = target.specHash, target.cluster, target.storageClass
		}
		t.Status.Decisions = append(t.Status.Decisions, record)
		if d.Decision == governance.DecisionApprove {
			approved := Approvers(t)
			switch approvals := int32(len(approved)); {
			case approvals >= max(t.Spec.RequiredApprovals, 1):
				// This request carries the approval out: the start of its execution is the
				// claim that keeps a concurrent approval from carrying it out again.
				t.Status.State, t.Status.Message = governance.TicketApproved, fmt.Sprintf("Approved by %s.", strings.Join(approved, ", "))
				t.Status.ExecutionStartedAt = ptr.To(metav1.NewTime(f.now()))
			case int(approvals) < countApprovals(t):
				t.Status.Message = fmt.Sprintf("%d of %d approvals; earlier approvals were of another spec or placement and no longer count.", approvals, t.Spec.RequiredApprovals)
			default:
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
		f.event(ctx, ns, EventTicketApproved, target, map[string]any{"ticket": name, "approvers": Approvers(t), "operation": t.Spec.Operation})
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

// target is what an approval approves: the spec the ticket would carry out (by its hash)
// and, for a create, the cluster and storage class it is placed with.
type target struct{ specHash, cluster, storageClass string }

// approvedTarget is what approving t now approves. Only a create is placed: the cluster and
// storage class an approval of another operation names are not used, and do not count.
func approvedTarget(t *governance.ApprovalTicket) target {
	out := target{specHash: SpecHash(effectiveSpec(t))}
	if t.Spec.Operation == governance.OperationCreate {
		out.cluster, out.storageClass = t.Status.Cluster, t.Status.StorageClass
	}
	return out
}

// effectiveSpec is the spec an approved t carries out: an approver's replacement, or the
// requested spec.
func effectiveSpec(t *governance.ApprovalTicket) governance.ManagedVMSpec {
	if t.Status.ModifiedSpec != nil {
		return *t.Status.ModifiedSpec
	}
	return t.Spec.RequestedSpec
}

// applyChoices applies an approval's choices to t: its replacement spec, cluster and storage
// class.
func applyChoices(t *governance.ApprovalTicket, d *governance.TicketDecision) {
	if d.ModifiedSpec != nil {
		t.Status.ModifiedSpec = d.ModifiedSpec.DeepCopy()
	}
	if d.Cluster != "" {
		t.Status.Cluster = d.Cluster
	}
	if d.StorageClass != "" {
		t.Status.StorageClass = d.StorageClass
	}
}

// approves says whether an approval record approved target.
func approves(r governance.TicketDecisionRecord, current target) bool {
	return r.Decision == governance.DecisionApprove && target{specHash: r.SpecHash, cluster: r.Cluster, storageClass: r.StorageClass} == current
}

// SpecHash is what a TicketDecisionRecord's specHash holds for spec: "sha256:" and the
// hexadecimal SHA-256 of its JSON in the served version.
func SpecHash(spec governance.ManagedVMSpec) string {
	var versioned v1alpha1.ManagedVMSpec
	if err := v1alpha1.Convert_governance_ManagedVMSpec_To_v1alpha1_ManagedVMSpec(&spec, &versioned, nil); err != nil {
		// The conversion copies fields; it has no error to return for a spec.
		panic(err)
	}
	raw, err := json.Marshal(versioned)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Approvers lists, in order, the users whose approvals of t count: those who approved the
// spec, cluster and storage class the ticket holds now. An approval of something a later
// approver replaced does not count.
func Approvers(t *governance.ApprovalTicket) []string {
	current := approvedTarget(t)
	var out []string
	for _, d := range t.Status.Decisions {
		if approves(d, current) {
			out = append(out, d.User)
		}
	}
	return out
}

// countApprovals is how many approvals t records, counting or not.
func countApprovals(t *governance.ApprovalTicket) int {
	n := 0
	for _, d := range t.Status.Decisions {
		if d.Decision == governance.DecisionApprove {
			n++
		}
	}
	return n
}

// notPending is the refusal of a decision on a ticket that is no longer PENDING.
func notPending(t *governance.ApprovalTicket) error {
	return apperror.New(apperror.TicketNotPending, ticketResource, t.Name, apperror.Params{"ticket": t.Name, "state": string(t.Status.State)},
		"Ticket %s is %s, not PENDING.", t.Name, t.Status.State)
}

// executionLease is how long an execution that started may take before approving the ticket
// again takes it over: far longer than the few writes it makes, so that only an execution that
// was interrupted (its server stopped mid-request) is resumed.
const executionLease = time.Minute

// claimExecution takes over the execution of an APPROVED ticket whose execution started more
// than executionLease ago, by compare-and-swap on the ticket: of concurrent approvals, one
// carries it out and the others are refused, as a decision on a ticket that is not PENDING
// is. The approval may not change what was approved.
func (f *Flow) claimExecution(ctx context.Context, name string, d *governance.TicketDecision) (*governance.ApprovalTicket, error) {
	obj, err := update(ctx, f.stores.TicketStatus, genericapirequest.NamespaceValue(ctx), name, func(obj runtime.Object) error {
		t := obj.(*governance.ApprovalTicket)
		if t.Status.State != governance.TicketApproved {
			return notPending(t)
		}
		changed := t.DeepCopy()
		applyChoices(changed, d)
		if approvedTarget(changed) != approvedTarget(t) {
			return apperror.New(apperror.TicketNotPending, ticketResource, name, apperror.Params{"ticket": name, "state": string(t.Status.State)},
				"Ticket %s is APPROVED: its spec and placement can no longer change.", name)
		}
		if started := t.Status.ExecutionStartedAt; started != nil && f.now().Sub(started.Time) < executionLease {
			return apperror.New(apperror.TicketNotPending, ticketResource, name, apperror.Params{"ticket": name, "state": string(t.Status.State)},
				"Ticket %s is APPROVED and its change is being carried out.", name)
		}
		t.Status.ExecutionStartedAt = ptr.To(metav1.NewTime(f.now()))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obj.(*governance.ApprovalTicket), nil
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
		done, msg, err := f.apply(ctx, vm, change{
			op: t.Spec.Operation, spec: effectiveSpec(t), ticket: t.Name, approvers: Approvers(t), cluster: t.Status.Cluster, storageClass: t.Status.StorageClass,
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
		if vm.Status.Instance != 0 {
			// Applied already, by an earlier attempt of this approval: nothing to write again.
			return false, fmt.Sprintf("Instance %02d (%s) waits for a runtime to create it.", vm.Status.Instance, vm.Status.InstanceName), nil
		}
		// Revision 1 records the instance number with the approved spec. Written by an earlier
		// attempt of this approval, or a concurrent one, it decides the number: the VM gets one
		// number, whichever attempt allocated it.
		instance, err := f.revisionInstance(ctx, ns, vm.Name, c.ticket)
		if err != nil {
			return false, "", err
		}
		if instance == 0 {
			if instance, err = f.allocate(ctx, ns, vm.Spec.SystemServiceRef.Name); err != nil {
				return false, "", err
			}
			labelled := vm.DeepCopy()
			labelled.Labels[v1alpha1.LabelInstance] = v1alpha1.InstanceLabelValue(instance)
			if err := f.recordRevision(ctx, labelled, 1, c.op, c.ticket, c.approvers, c.spec); err != nil {
				return false, "", err
			}
			if recorded, err := f.revisionInstance(ctx, ns, vm.Name, c.ticket); err != nil {
				return false, "", err
			} else if recorded != 0 {
				instance = recorded
			}
		}
		vmName := v1alpha1.InstanceName(ns, vm.Labels[v1alpha1.LabelSystem], vm.Labels[v1alpha1.LabelService], instance)
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
		if p := vm.Status.PendingApproval; c.ticket != "" && (p == nil || p.Ticket != c.ticket) {
			// No longer waiting for this ticket: an earlier attempt of this approval applied
			// it. Applying it again could undo a later change, or a later request.
			return false, fmt.Sprintf("Revision %d waits for a runtime to apply it.", vm.Status.ApprovedRevision), nil
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

// revisionInstance is the instance number revision 1 of the VM records, when ticket
// approved it; 0 when there is no such revision yet. A revision 1 of another ticket (of an
// earlier VM of the same name) says nothing about this one.
func (f *Flow) revisionInstance(ctx context.Context, ns, vm, ticket string) (int32, error) {
	if ticket == "" {
		return 0, nil
	}
	obj, err := f.stores.Revisions.Get(inNamespace(ctx, ns), v1alpha1.RevisionName(vm, 1), &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	rev := obj.(*governance.VMRevision)
	if rev.Spec.Ticket != ticket {
		return 0, nil
	}
	n, err := strconv.ParseInt(rev.Labels[v1alpha1.LabelInstance], 10, 32)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("VMRevision %s/%s records no instance number", ns, rev.Name)
	}
	return int32(n), nil
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
