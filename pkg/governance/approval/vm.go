package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	"github.com/plinth-dev/plinth/pkg/governance/policy"
)

// classify names the operation a spec change asks for: "" when nothing governed changed (the
// reason alone is free text), start or stop when only the run strategy changed, restart when
// only restartedAt changed, modify otherwise.
func classify(old, changed governance.ManagedVMSpec) governance.Operation {
	old.Reason = changed.Reason
	if apiequality.Semantic.DeepEqual(old, changed) {
		return ""
	}
	power := old
	power.RunStrategy = changed.RunStrategy
	if apiequality.Semantic.DeepEqual(power, changed) {
		if changed.RunStrategy == governance.RunStrategyHalted {
			return governance.OperationStop
		}
		return governance.OperationStart
	}
	restart := old
	restart.RestartedAt = changed.RestartedAt
	if apiequality.Semantic.DeepEqual(restart, changed) {
		return governance.OperationRestart
	}
	return governance.OperationModify
}

// forbidPlatformFields refuses a tenant write that sets or changes a kubevirt-shepherd.io/
// label or the delete-approval finalizer; old is nil on create.
func forbidPlatformFields(vm, old *governance.ManagedVM, runtime bool) error {
	var errs field.ErrorList
	labels := field.NewPath("metadata", "labels")
	for k, v := range vm.Labels {
		if strings.HasPrefix(k, v1alpha1.LabelPrefix) && (old == nil || old.Labels[k] != v) {
			errs = append(errs, field.Forbidden(labels.Key(k), "is set by the platform"))
		}
	}
	if old != nil {
		for k := range old.Labels {
			if _, kept := vm.Labels[k]; strings.HasPrefix(k, v1alpha1.LabelPrefix) && !kept {
				errs = append(errs, field.Forbidden(labels.Key(k), "is set by the platform and may not be removed"))
			}
		}
	}
	if hasFinalizer(vm) != (old != nil && hasFinalizer(old)) {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "finalizers"), v1alpha1.FinalizerDeleteApproval+" is managed by the platform"))
	}
	// The user a request is made for is the runtime's to name (it takes it from the
	// Workload or TenantCompute the server recorded it on); named by anyone else, it would let
	// a requester pass their request off as someone else's. Keeping or removing it is harmless.
	annotations := field.NewPath("metadata", "annotations")
	if v, set := vm.Annotations[v1alpha1.AnnotationOnBehalfOf]; !runtime && set && (old == nil || old.Annotations[v1alpha1.AnnotationOnBehalfOf] != v) {
		errs = append(errs, field.Forbidden(annotations.Key(v1alpha1.AnnotationOnBehalfOf), "is set by the platform"))
	}
	// The runtime's finalizer keeps a VM's deletion waiting until its VirtualMachine is gone
	// from the cluster; removing it by hand would leave the VirtualMachine behind.
	if !runtime && slices.Contains(vm.Finalizers, v1alpha1.FinalizerVMCleanup) != (old != nil && slices.Contains(old.Finalizers, v1alpha1.FinalizerVMCleanup)) {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "finalizers"), v1alpha1.FinalizerVMCleanup+" is managed by the platform's runtime"))
	}
	if len(errs) == 0 {
		return nil
	}
	invalid := apierrors.NewInvalid(governance.Kind("ManagedVM"), vm.Name, errs)
	invalid.ErrStatus.Details.Causes = append(invalid.ErrStatus.Details.Causes,
		metav1.StatusCause{Type: metav1.CauseType(apperror.PlatformLabel), Field: "code", Message: "Platform-managed labels, annotations and finalizers may not be set or changed."})
	return invalid
}

func hasFinalizer(vm *governance.ManagedVM) bool {
	for _, f := range vm.Finalizers {
		if f == v1alpha1.FinalizerDeleteApproval {
			return true
		}
	}
	return false
}

func pendingConflict(vm *governance.ManagedVM, op governance.Operation) error {
	p := vm.Status.PendingApproval
	params := apperror.Params{"vm": vm.Name, "ticket": p.Ticket, "operation": string(p.Operation)}
	if p.Operation == op {
		return apperror.New(apperror.DuplicatePendingRequest, vmResource, vm.Name, params,
			"A %s request for ManagedVM %q is already pending in ticket %s.", op, vm.Name, p.Ticket)
	}
	return apperror.New(apperror.PendingRequestExists, vmResource, vm.Name, params,
		"ManagedVM %q has a pending %s request in ticket %s; it must be decided or cancelled first.", vm.Name, p.Operation, p.Ticket)
}

func approvalWarning(ctx context.Context, ticket string, op governance.Operation, vm string) {
	warning.AddWarning(ctx, "", fmt.Sprintf("%s: the %s of ManagedVM %s waits for approval in ApprovalTicket %s", apperror.ApprovalRequired, op, vm, ticket))
}

// CreateVM stores a new VM as a request: it opens a create ticket (or, where no approval is
// required, executes the creation at once).
func (f *Flow) CreateVM(ctx context.Context, vm *governance.ManagedVM, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	if vm.Namespace == "" {
		vm.Namespace = genericapirequest.NamespaceValue(ctx)
	}
	if err := forbidPlatformFields(vm, nil, f.isRuntime(ctx)); err != nil {
		return nil, err
	}
	// Shape errors first, so that a malformed reference is reported as such, not as missing.
	if errs := validation.ValidateManagedVM(vm); len(errs) > 0 {
		return nil, apierrors.NewInvalid(governance.Kind("ManagedVM"), vm.Name, errs)
	}
	svc, sys, err := f.lineage(ctx, vm.Namespace, vm.Name, vm.Spec.SystemServiceRef.Name)
	if err != nil {
		return nil, err
	}
	policies, err := f.policies(ctx)
	if err != nil {
		return nil, err
	}
	if quota := policy.Quota(policies, sys.Spec.Environment); quota != nil {
		list, err := f.stores.VMs.List(inNamespace(ctx, vm.Namespace), &metainternalversion.ListOptions{})
		if err != nil {
			return nil, err
		}
		if n := len(list.(*governance.ManagedVMList).Items); int32(n) >= *quota {
			return nil, apperror.New(apperror.QuotaExceeded, vmResource, vm.Name,
				apperror.Params{"namespace": vm.Namespace, "quota": fmt.Sprint(*quota)},
				"Namespace %q already has %d ManagedVMs, the most its ApprovalPolicy allows.", vm.Namespace, n)
		}
	}
	if vm.Labels == nil {
		vm.Labels = map[string]string{}
	}
	vm.Labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByValue
	vm.Labels[v1alpha1.LabelSystem] = sys.Name
	vm.Labels[v1alpha1.LabelService] = svc.Name

	req := policy.For(policies, sys.Spec.Environment, governance.OperationCreate)
	user, submitter := f.requester(ctx, vm)
	if !req.ApprovalRequired {
		cluster, err := f.autoPlace(ctx, vm.Name, vm.Spec)
		if err != nil {
			return nil, err
		}
		obj, err := f.stores.VMs.Create(ctx, vm, createValidation, opts)
		if err != nil || isDryRun(opts.DryRun) {
			return obj, err
		}
		created := obj.(*governance.ManagedVM)
		if err := f.audit(ctx, created.Namespace, user, "vm.create", vmTarget(created), submitted(map[string]string{"operation": "create", "approval": "not required"}, submitter)); err != nil {
			return nil, err
		}
		if _, _, err := f.apply(ctx, created, change{op: governance.OperationCreate, spec: created.Spec, cluster: cluster}); err != nil {
			return nil, err
		}
		return f.getVM(ctx, created.Namespace, created.Name)
	}

	name := ticketName()
	pending := withMutation(ctx, func(v *governance.ManagedVM) {
		v.Status.PendingApproval = &governance.PendingApproval{Ticket: name, Operation: governance.OperationCreate}
		v.Status.LastTicket = name
		setCondition(v, metav1.ConditionFalse, "PendingApproval", "The creation waits for approval.")
	})
	obj, err := f.stores.VMs.Create(pending, vm, createValidation, opts)
	if err != nil || isDryRun(opts.DryRun) {
		return obj, err
	}
	created := obj.(*governance.ManagedVM)
	ticket := newTicket(name, created, governance.OperationCreate, sys.Spec.Environment, req, created.Spec, user, submitter)
	if err := f.openTicket(ctx, ticket, created, ActionVMRequest, EventVMRequested); err != nil {
		// Nothing was approved and nothing may stay half-requested: the VM goes too.
		_, _, _ = f.stores.VMs.Delete(inNamespace(ctx, created.Namespace), created.Name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
		return nil, err
	}
	approvalWarning(ctx, name, governance.OperationCreate, created.Name)
	return created, nil
}

// governedUpdate wraps a tenant's update of a VM: it classifies the change and decides, on the
// stored version the update applies to, whether it opens a ticket or takes effect at once.
type governedUpdate struct {
	flow  *Flow
	inner rest.UpdatedObjectInfo

	// Decided by UpdatedObject, for the stored version the write finally applied to.
	op        governance.Operation
	env       governance.Environment
	req       policy.Requirement
	ticket    string
	immediate bool
	old       *governance.ManagedVM
}

func (g *governedUpdate) Preconditions() *metav1.Preconditions { return g.inner.Preconditions() }

func (g *governedUpdate) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	g.op, g.ticket, g.immediate, g.old = "", "", false, nil
	newObj, err := g.inner.UpdatedObject(ctx, oldObj)
	if err != nil {
		return nil, err
	}
	vm, old := newObj.(*governance.ManagedVM), oldObj.(*governance.ManagedVM)
	if err := forbidPlatformFields(vm, old, g.flow.isRuntime(ctx)); err != nil {
		return nil, err
	}
	op := classify(old.Spec, vm.Spec)
	if op == "" {
		return newObj, nil
	}
	if old.DeletionTimestamp != nil {
		return nil, apperror.New(apperror.VMDeleting, vmResource, old.Name, apperror.Params{"vm": old.Name},
			"ManagedVM %q is being deleted and can no longer be changed.", old.Name)
	}
	if old.Status.PendingApproval != nil {
		return nil, pendingConflict(old, op)
	}
	if old.Status.Instance == 0 {
		// Never approved (its creation was rejected or cancelled): a changed spec is a new
		// request to create it.
		op = governance.OperationCreate
	}
	if errs := validation.ValidateManagedVMUpdate(vm, old); len(errs) > 0 {
		return nil, apierrors.NewInvalid(governance.Kind("ManagedVM"), vm.Name, errs)
	}
	_, sys, err := g.flow.lineage(ctx, old.Namespace, old.Name, old.Spec.SystemServiceRef.Name)
	if err != nil {
		return nil, err
	}
	req, err := g.flow.requirement(ctx, sys.Spec.Environment, op)
	if err != nil {
		return nil, err
	}
	g.op, g.env, g.req, g.old = op, sys.Spec.Environment, req, old
	if req.ApprovalRequired {
		g.ticket = ticketName()
	} else {
		g.immediate = true
	}
	return newObj, nil
}

// mark records the pending request in the VM's status, in the same write as the spec.
func (g *governedUpdate) mark(vm *governance.ManagedVM) {
	if g.ticket == "" {
		return
	}
	vm.Status.PendingApproval = &governance.PendingApproval{Ticket: g.ticket, Operation: g.op}
	vm.Status.LastTicket = g.ticket
	setCondition(vm, metav1.ConditionFalse, "PendingApproval", fmt.Sprintf("The %s waits for approval.", g.op))
}

// UpdateVM applies a tenant's update: a governed change is stored as a request with a ticket,
// or takes effect at once where no approval is required. A server-side apply of a VM that
// does not exist yet (forceAllowCreate) is a create and goes through CreateVM.
func (f *Flow) UpdateVM(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if forceAllowCreate {
		_, err := f.stores.VMs.Get(ctx, name, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			obj, err := objInfo.UpdatedObject(ctx, &governance.ManagedVM{})
			if err != nil {
				return nil, false, err
			}
			created, err := f.CreateVM(ctx, obj.(*governance.ManagedVM), createValidation,
				&metav1.CreateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation})
			return created, err == nil, err
		}
		if err != nil {
			return nil, false, err
		}
	}
	g := &governedUpdate{flow: f, inner: objInfo}
	obj, created, err := f.stores.VMs.Update(withMutation(ctx, g.mark), name, g, createValidation, updateValidation, false, opts)
	if err != nil || isDryRun(opts.DryRun) || g.op == "" {
		return obj, created, err
	}
	vm := obj.(*governance.ManagedVM)
	user, submitter := f.requester(ctx, vm)
	if g.immediate {
		if err := f.audit(ctx, vm.Namespace, user, "vm."+string(g.op), vmTarget(vm), submitted(map[string]string{"operation": string(g.op), "approval": "not required"}, submitter)); err != nil {
			return nil, false, err
		}
		c := change{op: g.op, spec: vm.Spec}
		if g.op == governance.OperationCreate {
			if c.cluster, err = f.autoPlace(ctx, vm.Name, vm.Spec); err != nil {
				return nil, false, err
			}
		}
		if _, _, err := f.apply(ctx, vm, c); err != nil {
			return nil, false, err
		}
		fresh, err := f.getVM(ctx, vm.Namespace, vm.Name)
		return fresh, false, err
	}
	ticket := newTicket(g.ticket, vm, g.op, g.env, g.req, vm.Spec, user, submitter)
	eventType := EventVMChangeRequested
	if g.op == governance.OperationCreate {
		eventType = EventVMRequested
	}
	if err := f.openTicket(ctx, ticket, vm, actionFor(g.op), eventType); err != nil {
		old := g.old
		_, _ = f.updateVM(ctx, vm.Namespace, vm.Name, func(v *governance.ManagedVM) {
			v.Spec = old.Spec
			v.Status.PendingApproval = nil
			v.Status.LastTicket = old.Status.LastTicket
			v.Status.Conditions = old.Status.Conditions
		})
		return nil, false, err
	}
	approvalWarning(ctx, g.ticket, g.op, vm.Name)
	return vm, created, nil
}

// actionFor is the audit action of a tenant's request.
func actionFor(op governance.Operation) string {
	switch op {
	case governance.OperationCreate:
		return ActionVMRequest
	case governance.OperationStart, governance.OperationStop, governance.OperationRestart:
		return ActionVMPowerRequest
	}
	return ActionVMModifyRequest
}

// DeleteVM asks for a VM's deletion. A VM that was never approved goes at once (its pending
// create ticket is cancelled); otherwise a delete ticket is opened and the deletion is held
// by the platform's finalizer until the ticket is approved.
func (f *Flow) DeleteVM(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	vm, err := f.getVM(ctx, ns, name)
	if err != nil {
		return nil, false, err
	}
	// Validating admission sees the delete before the flow writes anything for it (status,
	// ticket, audit record, event): a refused delete leaves no trace. The deletes below are
	// then not shown to admission again.
	if deleteValidation != nil {
		if err := deleteValidation(ctx, vm.DeepCopy()); err != nil {
			return nil, false, err
		}
	}
	user := userName(ctx)
	dryRun := isDryRun(opts.DryRun)
	if vm.Status.Instance == 0 {
		obj, deleted, err := f.stores.VMs.Delete(ctx, name, rest.ValidateAllObjectFunc, opts)
		if err != nil || dryRun {
			return obj, deleted, err
		}
		if p := vm.Status.PendingApproval; p != nil {
			f.withdraw(ctx, &governance.ApprovalTicket{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Ticket}}, "The VM was deleted before a decision.")
		}
		err = f.audit(ctx, ns, user, ActionVMDelete, vmTarget(vm), map[string]string{"approval": "not required: the VM was never approved"})
		return obj, deleted, err
	}
	if vm.Status.PendingApproval != nil {
		return nil, false, pendingConflict(vm, governance.OperationDelete)
	}
	_, sys, err := f.lineage(ctx, ns, name, vm.Spec.SystemServiceRef.Name)
	if err != nil {
		return nil, false, err
	}
	req, err := f.requirement(ctx, sys.Spec.Environment, governance.OperationDelete)
	if err != nil {
		return nil, false, err
	}
	if dryRun {
		return f.stores.VMs.Delete(ctx, name, rest.ValidateAllObjectFunc, opts)
	}
	if !req.ApprovalRequired {
		if err := f.audit(ctx, ns, user, ActionVMDelete, vmTarget(vm), map[string]string{"approval": "not required"}); err != nil {
			return nil, false, err
		}
		if _, _, err := f.stores.VMs.Delete(ctx, name, rest.ValidateAllObjectFunc, opts); err != nil && !apierrors.IsNotFound(err) {
			return nil, false, err
		}
		if _, _, err := f.apply(ctx, vm, change{op: governance.OperationDelete}); err != nil {
			return nil, false, err
		}
		return vm, true, nil
	}

	tname := ticketName()
	_, err = update(ctx, f.stores.VMStatus, ns, name, func(obj runtime.Object) error {
		v := obj.(*governance.ManagedVM)
		if v.Status.PendingApproval != nil {
			return pendingConflict(v, governance.OperationDelete)
		}
		v.Status.PendingApproval = &governance.PendingApproval{Ticket: tname, Operation: governance.OperationDelete}
		v.Status.LastTicket = tname
		setCondition(v, metav1.ConditionFalse, "PendingApproval", "The delete waits for approval.")
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	clearPending := func() {
		_, _ = update(ctx, f.stores.VMStatus, ns, name, func(obj runtime.Object) error {
			v := obj.(*governance.ManagedVM)
			v.Status.PendingApproval = nil
			v.Status.LastTicket = vm.Status.LastTicket
			v.Status.Conditions = vm.Status.Conditions
			return nil
		})
	}
	// A deletion is its deleter's request: the annotation names who last wrote the spec, not
	// who deleted the Workload or TenantCompute.
	ticket := newTicket(tname, vm, governance.OperationDelete, sys.Spec.Environment, req, vm.Spec, user, "")
	if err := f.openTicket(ctx, ticket, vm, ActionVMDeleteSubmitted, EventVMDeleteRequested); err != nil {
		clearPending()
		return nil, false, err
	}
	obj, deleted, err := f.stores.VMs.Delete(ctx, name, rest.ValidateAllObjectFunc, opts)
	if err != nil {
		f.withdraw(ctx, ticket, "The deletion could not be requested.")
		clearPending()
		return nil, false, err
	}
	approvalWarning(ctx, tname, governance.OperationDelete, name)
	return obj, deleted, nil
}
