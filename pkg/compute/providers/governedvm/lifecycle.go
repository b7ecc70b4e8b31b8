package governedvm

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

func notOurs(tc *v1alpha1.TenantCompute) error {
	return errkind.Stalledf("ManagedVM %s in namespace %s exists and was not created by the kubevirt provider for this TenantCompute.", vmName(tc), tc.Namespace)
}

// outcome is what ensure did to the tenant's ManagedVM.
type outcome struct {
	vm *gov.ManagedVM
	// changes lists what this call asked for; nil when it wrote nothing.
	changes []string
	// created is true when this call created the VM.
	created bool
	// requested is true when this call asked for a new VM spec (or created the VM).
	requested bool
	// refused is the rejection the tenant's current spec met, if it met one.
	refused string
	// blocked is true when the tenant's spec waits for another request's decision.
	blocked bool
}

// Provision creates the tenant's ManagedVM (and its System and SystemService), or finds it
// created. The result is success once the VM runs (or is stopped, for a suspended tenant),
// in_progress while it waits for approval or is being created, and failed when the VM failed. A
// rejected or cancelled creation is an errkind.Stalled error: asking again needs a
// new spec (a new generation of the TenantCompute).
func (p *Provider) Provision(ctx context.Context, tc *v1alpha1.TenantCompute) (*v1alpha1.ProvisionResult, error) {
	o, err := p.ensure(ctx, tc)
	if err != nil {
		return nil, err
	}
	if o.refused != "" {
		return nil, errkind.Stalledf("%s", o.refused)
	}
	st := statusOf(tc, o.vm)
	res := &v1alpha1.ProvisionResult{ResourceIDs: resourceIDs(o.vm), Endpoints: st.Endpoints, Message: st.Message}
	switch {
	case o.vm.Status.PendingApproval != nil || o.requested:
		res.Status = v1alpha1.ProvisionStatusInProgress
	case st.State == v1alpha1.ComputeStateRunning || st.State == v1alpha1.ComputeStateStopped:
		res.Status = v1alpha1.ProvisionStatusSuccess
	case st.State == v1alpha1.ComputeStateFailed:
		res.Status = v1alpha1.ProvisionStatusFailed
	default:
		res.Status = v1alpha1.ProvisionStatusInProgress
	}
	if res.Message == "" && res.Status == v1alpha1.ProvisionStatusInProgress {
		res.Message = fmt.Sprintf("ManagedVM %s is being created.", o.vm.Name)
	}
	return res, nil
}

// Update asks for the VM spec the tenant's spec now needs: a change of size, image or
// containers is a modify (with a restart, which applies it), suspending or resuming alone a
// stop or start; each goes through approval where governance requires it, and the result is
// in_progress, naming the ticket, until it is decided. A change of labels only is written at
// once. While another request of the VM is pending nothing is asked for; the tenant's spec is
// asked for once that is decided. A rejected request fails the update (errkind.Stalled)
// until the tenant's spec changes again.
func (p *Provider) Update(ctx context.Context, tc *v1alpha1.TenantCompute) (*v1alpha1.UpdateResult, error) {
	o, err := p.ensure(ctx, tc)
	if err != nil {
		return nil, err
	}
	if o.refused != "" {
		return nil, errkind.Stalledf("%s", o.refused)
	}
	res := &v1alpha1.UpdateResult{Changes: o.changes}
	switch {
	case o.vm.Status.PendingApproval != nil:
		res.Status, res.Message = v1alpha1.UpdateStatusInProgress, waiting(o.vm)
		if o.blocked {
			res.Message += " The tenant's newer spec is asked for once that is decided."
		}
	case o.created:
		res.Status, res.Message = v1alpha1.UpdateStatusInProgress, fmt.Sprintf("ManagedVM %s is being created.", o.vm.Name)
	case len(o.changes) > 0:
		res.Status = v1alpha1.UpdateStatusSuccess
	default:
		res.Status = v1alpha1.UpdateStatusNoChanges
	}
	return res, nil
}

// ensure brings the tenant's ManagedVM to what tc asks for. The informer's cache decides
// whether anything is to be done, so that a tenant at rest costs no request; a write is decided
// on the stored VM, which the cache may lag behind.
func (p *Provider) ensure(ctx context.Context, tc *v1alpha1.TenantCompute) (*outcome, error) {
	w, err := want(tc)
	if err != nil {
		return nil, errkind.Stalledf("%v", err)
	}
	cached, err := p.vms.ManagedVMs(tc.Namespace).Get(vmName(tc))
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		if err := usable(cached, tc); err != nil {
			return nil, err
		}
		if !outdated(cached, tc, w) {
			return settled(cached, tc, w), nil
		}
	}
	live, err := p.client.ManagedVMs(tc.Namespace).Get(ctx, vmName(tc), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return p.create(ctx, tc, w)
	}
	if err != nil {
		return nil, err
	}
	if err := usable(live, tc); err != nil {
		return nil, err
	}
	if !outdated(live, tc, w) {
		return settled(live, tc, w), nil
	}
	return p.change(ctx, tc, live, w)
}

// usable refuses a VM the provider may not change: another's, or one being deleted.
func usable(vm *gov.ManagedVM, tc *v1alpha1.TenantCompute) error {
	switch {
	case !ours(vm.Labels, tc):
		return notOurs(tc)
	case vm.DeletionTimestamp != nil:
		return fmt.Errorf("ManagedVM %s is being deleted; it is asked for again once it is gone", vm.Name)
	}
	return nil
}

// settled is the outcome for a VM with nothing to write.
func settled(vm *gov.ManagedVM, tc *v1alpha1.TenantCompute, w *wanted) *outcome {
	o := &outcome{vm: vm, blocked: vm.Status.PendingApproval != nil && requestWanted(vm, tc, w)}
	if rejectionStands(vm, tc, w) {
		o.refused = rejection(vm)
	}
	return o
}

// outdated says whether the VM needs a write: a new spec to ask for (when no other request is
// pending) or its labels.
func outdated(vm *gov.ManagedVM, tc *v1alpha1.TenantCompute, w *wanted) bool {
	return (requestWanted(vm, tc, w) && vm.Status.PendingApproval == nil) || withLabels(vm.DeepCopy(), w)
}

// requestWanted says whether the tenant's spec is to be asked for: it is not the one last asked
// for, or that one was rejected and the tenant has changed its spec since.
func requestWanted(vm *gov.ManagedVM, tc *v1alpha1.TenantCompute, w *wanted) bool {
	return vm.Annotations[AnnotationRequestedSpec] != w.fingerprint ||
		(rejected(vm) && vm.Annotations[AnnotationRequestedGeneration] != generation(tc) && !applied(vm, w))
}

// rejectionStands says whether the tenant's current spec was asked for and rejected: the VM
// never was approved, or still has another spec than the one the tenant asks for.
func rejectionStands(vm *gov.ManagedVM, tc *v1alpha1.TenantCompute, w *wanted) bool {
	return rejected(vm) && vm.Annotations[AnnotationRequestedSpec] == w.fingerprint &&
		vm.Annotations[AnnotationRequestedGeneration] == generation(tc) && (vm.Status.Instance == 0 || !applied(vm, w))
}

// applied says whether an approved VM's spec is the one wanted, in the fields the provider sets.
func applied(vm *gov.ManagedVM, w *wanted) bool {
	s := vm.Spec
	return vm.Status.Instance != 0 && s.Image == w.spec.Image && s.CloudInit == w.spec.CloudInit && s.RunStrategy == w.spec.RunStrategy &&
		s.InstanceType == "" && apiequality.Semantic.DeepEqual(s.Resources, w.spec.Resources)
}

func generation(tc *v1alpha1.TenantCompute) string { return strconv.FormatInt(tc.Generation, 10) }

// create asks for the tenant's VM, after its System and SystemService.
func (p *Provider) create(ctx context.Context, tc *v1alpha1.TenantCompute, w *wanted) (*outcome, error) {
	if err := p.ensureSystem(ctx, tc); err != nil {
		return nil, err
	}
	if err := p.ensureService(ctx, tc); err != nil {
		return nil, err
	}
	vm := &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: vmName(tc), Namespace: tc.Namespace}, Spec: w.spec}
	withLabels(vm, w)
	setAnnotation(vm, AnnotationRequestedSpec, w.fingerprint)
	setAnnotation(vm, AnnotationRequestedGeneration, generation(tc))
	requestFor(vm, tc.Annotations)
	created, err := p.client.ManagedVMs(tc.Namespace).Create(ctx, vm, metav1.CreateOptions{})
	if err != nil {
		return nil, writeError(err)
	}
	return &outcome{vm: created, created: true, requested: true, changes: []string{"ManagedVM " + created.Name + ": requested"}}, nil
}

// change writes the VM's labels and, when it is to be asked for, the tenant's spec.
func (p *Provider) change(ctx context.Context, tc *v1alpha1.TenantCompute, live *gov.ManagedVM, w *wanted) (*outcome, error) {
	updated := live.DeepCopy()
	o := &outcome{}
	if requestWanted(live, tc, w) && live.Status.PendingApproval == nil {
		if live.Status.Instance == 0 && rejected(live) {
			return p.recreate(ctx, tc, live, w)
		}
		spec := w.spec
		spec.RestartedAt = live.Spec.RestartedAt
		if live.Status.Instance != 0 && needsRestart(live.Spec, spec) {
			// The running instance keeps its size, disk and cloud-init: a new one applies them.
			spec.RestartedAt = p.now().UTC().Format(time.RFC3339)
		}
		o.changes, o.requested = changesOf(live.Spec, spec), true
		updated.Spec = spec
		setAnnotation(updated, AnnotationRequestedSpec, w.fingerprint)
		setAnnotation(updated, AnnotationRequestedGeneration, generation(tc))
		requestFor(updated, tc.Annotations)
	}
	if withLabels(updated, w) {
		o.changes = append(o.changes, "labels")
	}
	out, err := p.client.ManagedVMs(tc.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, writeError(err)
	}
	o.vm = out
	return o, nil
}

// recreate replaces a VM whose creation was rejected or cancelled with a new request: such a
// VM was never approved, so deleting it needs no approval and leaves nothing behind.
func (p *Provider) recreate(ctx context.Context, tc *v1alpha1.TenantCompute, vm *gov.ManagedVM, w *wanted) (*outcome, error) {
	err := p.client.ManagedVMs(tc.Namespace).Delete(ctx, vm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(vm.UID)}})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	return p.create(ctx, tc, w)
}

// writeError marks the API's refusal of a VM the provider built as permanent: asking again
// with the same spec cannot succeed.
func writeError(err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apperror.CodeOf(err) == apperror.QuotaExceeded {
		return errkind.Stalledf("plinth-apiserver refused the tenant's ManagedVM: %v", err)
	}
	return err
}

// ensureSystem creates the System tenant-compute unless it exists (whoever created it).
func (p *Provider) ensureSystem(ctx context.Context, tc *v1alpha1.TenantCompute) error {
	systems := p.client.Systems(tc.Namespace)
	if _, err := systems.Get(ctx, SystemName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return err
	}
	_, err := systems.Create(ctx, &gov.System{
		ObjectMeta: metav1.ObjectMeta{Name: SystemName, Namespace: tc.Namespace, Labels: map[string]string{LabelProvider: Name}},
		Spec: gov.SystemSpec{Documentation: "The tenants of the kubevirt compute provider in this namespace: one SystemService and one ManagedVM per tenant, " +
			"created for their TenantComputes."},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ensureService creates the tenant's SystemService, or checks that the one of its name is it.
func (p *Provider) ensureService(ctx context.Context, tc *v1alpha1.TenantCompute) error {
	services := p.client.SystemServices(tc.Namespace)
	svc, err := services.Get(ctx, serviceName(tc), metav1.GetOptions{})
	switch {
	case err == nil && (!ours(svc.Labels, tc) || svc.Spec.SystemRef.Name != SystemName):
		return errkind.Stalledf("SystemService %s in namespace %s exists and was not created by the kubevirt provider for this TenantCompute.", svc.Name, tc.Namespace)
	case !apierrors.IsNotFound(err):
		return err
	}
	_, err = services.Create(ctx, &gov.SystemService{
		ObjectMeta: metav1.ObjectMeta{Name: serviceName(tc), Namespace: tc.Namespace, Labels: ownLabels(tc)},
		Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: SystemName},
			Documentation: fmt.Sprintf("The VM of tenant %s (TenantCompute %s/%s).", tc.Spec.TenantID, tc.Namespace, tc.Name)},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// resourceIDs names what the provider asked for.
func resourceIDs(vm *gov.ManagedVM) map[string]string {
	ids := map[string]string{
		"system":        vm.Namespace + "/" + SystemName,
		"systemService": vm.Namespace + "/" + vm.Spec.SystemServiceRef.Name,
		"managedVM":     vm.Namespace + "/" + vm.Name,
	}
	if vm.Status.InstanceName != "" && vm.Status.Cluster != "" {
		ids["virtualMachine"] = vm.Status.Cluster + "/" + vm.Namespace + "/" + vm.Status.InstanceName
	}
	return ids
}

// Destroy deletes the tenant's ManagedVM, then its SystemService, then the System
// tenant-compute if the provider created it and no SystemService is left in it. The VM's
// deletion goes through governance: while it waits for approval, or for the VM runtime to
// remove the VM from its cluster, Destroy returns an errkind.Waiting error that
// names what it waits for, and is called again (the ManagedVM informer wakes the tenant when the
// VM is gone). A rejected deletion returns an errkind.Stalled
// error: governance keeps the VM until its deletion is asked for again (deleting
// the ManagedVM does). A pending change the provider asked for is cancelled first, since
// governance takes one request of a VM at a time. A tenant with nothing left is destroyed.
func (p *Provider) Destroy(ctx context.Context, tc *v1alpha1.TenantCompute) error {
	vm, err := p.client.ManagedVMs(tc.Namespace).Get(ctx, vmName(tc), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case !ours(vm.Labels, tc):
		// Another's VM of the same name: not the provider's to delete.
	default:
		if err := p.deleteVM(ctx, vm); err != nil {
			return err
		}
	}
	return p.cleanup(ctx, tc)
}

// deleteVM asks for the VM's deletion unless it is asked for, and returns nil once the VM is
// gone.
func (p *Provider) deleteVM(ctx context.Context, vm *gov.ManagedVM) error {
	vms := p.client.ManagedVMs(vm.Namespace)
	if vm.DeletionTimestamp == nil {
		if pa := vm.Status.PendingApproval; pa != nil && vm.Status.Instance != 0 {
			_, err := p.client.ApprovalTickets(vm.Namespace).Decide(ctx, pa.Ticket, &gov.TicketDecision{
				ObjectMeta: metav1.ObjectMeta{Name: pa.Ticket}, Decision: gov.DecisionCancel,
				Comment: "The tenant's compute is being destroyed.",
			}, metav1.CreateOptions{})
			if err != nil && apperror.CodeOf(err) != apperror.TicketNotPending {
				return err
			}
		}
		err := vms.Delete(ctx, vm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(vm.UID)}})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if vm, err = vms.Get(ctx, vm.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
	}
	switch {
	case vm.Status.PendingApproval != nil:
		return errkind.Waitingf(compute.RecheckAfter, "%s", waiting(vm))
	case rejected(vm):
		return errkind.Stalledf("%s", rejection(vm))
	case vm.Status.Cluster != "":
		return errkind.Waitingf(compute.RecheckAfter, "ManagedVM %s is being removed from cluster %s.", vm.Name, vm.Status.Cluster)
	default:
		return errkind.Waitingf(compute.RecheckAfter, "ManagedVM %s is being deleted.", vm.Name)
	}
}

// cleanup deletes the tenant's SystemService once no VM is in it, then the provider's System
// once no SystemService is in it. A VM another put in the service keeps the service.
func (p *Provider) cleanup(ctx context.Context, tc *v1alpha1.TenantCompute) error {
	services := p.client.SystemServices(tc.Namespace)
	svc, err := services.Get(ctx, serviceName(tc), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case ours(svc.Labels, tc):
		all, err := p.vms.ManagedVMs(tc.Namespace).List(labels.Everything())
		if err != nil {
			return err
		}
		for _, vm := range all {
			if vm.Spec.SystemServiceRef.Name != svc.Name {
				continue
			}
			if vm.Name == vmName(tc) && ours(vm.Labels, tc) {
				// Gone from the API, not yet from the cache: its delete event wakes the tenant.
				return errkind.Waitingf(compute.RecheckAfter, "ManagedVM %s is being deleted.", vm.Name)
			}
			return nil
		}
		err = services.Delete(ctx, svc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(svc.UID)}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return p.cleanupSystem(ctx, tc.Namespace)
}

// cleanupSystem deletes the System tenant-compute if the provider created it and it holds no
// SystemService. A tenant provisioned meanwhile creates it again.
func (p *Provider) cleanupSystem(ctx context.Context, namespace string) error {
	sys, err := p.client.Systems(namespace).Get(ctx, SystemName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if sys.Labels[LabelProvider] != Name {
		return nil
	}
	list, err := p.client.SystemServices(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if s.Spec.SystemRef.Name == SystemName {
			return nil
		}
	}
	err = p.client.Systems(namespace).Delete(ctx, SystemName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(sys.UID)}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
