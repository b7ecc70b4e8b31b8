// Package managedvm is the VM runtime: it materializes approved ManagedVMs on their target clusters through an
// InfrastructureProvider, and reports back: the VM's phase follows what the provider observes,
// and the ticket that is EXECUTING ends in SUCCESS or FAILED. Deleting waits for the VM to be
// gone from its cluster (the runtime's finalizer). It knows no KubeVirt type: the provider
// translates.
//
// Status is written as plinth-managedvm through a statuswriter, with the reasons
// governance.plinth.dev declares. The cluster refusing a VM (an errkind.Stalled error of the
// provider) fails it and its ticket at once; any other error is retried.
//
// In memory the runtime keeps each VM's status as its last write returned it, until its cache
// shows that write, and the looks it has scheduled in its queue. A restart loses both: the
// informers' first lists reconcile every VM again, and a write from a cache behind the last
// write before the restart meets a conflict and is retried from the newer object.
package managedvm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/errkind"
	govclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/governance/v1alpha1"
	govinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/governance/v1alpha1"
	platforminformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/platform/v1alpha1"
	govlisters "github.com/plinth-dev/plinth/pkg/generated/listers/governance/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/vmprovider"
)

// Finalizer holds a ManagedVM's deletion until its VM is gone from the cluster.
const Finalizer = gov.FinalizerVMCleanup

// Name names the runtime in logs, metrics and events.
const Name = "managedvm"

// FieldManager names the runtime in the managedFields of the statuses it writes.
const FieldManager = "plinth-managedvm"

// Listers are what the runtime reads from informers.
type Listers struct {
	VMs       govlisters.ManagedVMLister
	Revisions govlisters.VMRevisionLister
	Tickets   govlisters.ApprovalTicketLister
	Clusters  platformlisters.ClusterLister
	// TicketIndex is the ticket informer's indexer, with TicketIndexers added.
	TicketIndex cache.Indexer
}

// Controller is the ManagedVM runtime.
type Controller struct {
	*loop.Loop
	client  govclient.GovernanceV1alpha1Interface
	events  *transition.Recorder
	status  *statuswriter.Writer[*gov.ManagedVM]
	written loop.Written[*gov.ManagedVM]
	listers Listers
	infra   vmprovider.InfrastructureProvider
	// poll is how soon a VM in transition is looked at again; settle, a VM at rest.
	poll, settle time.Duration
}

// NewController returns the runtime. It reads ManagedVMs, the approved VMRevisions, the
// tickets of each VM (through an index it adds) and Clusters, and is woken by each of them:
// a VM by its tickets and revisions, and the VMs on a Cluster when the Cluster's phase changes
// (probes rewrite its status every interval; only a phase change matters to a VM).
func NewController(ctx context.Context, client govclient.GovernanceV1alpha1Interface, recorder events.EventRecorder,
	vms govinformers.ManagedVMInformer, revisions govinformers.VMRevisionInformer, tickets govinformers.ApprovalTicketInformer,
	clusters platforminformers.ClusterInformer, infra vmprovider.InfrastructureProvider, poll, settle time.Duration) (*Controller, error) {
	if err := tickets.Informer().AddIndexers(TicketIndexers); err != nil {
		return nil, err
	}
	c := &Controller{client: client, events: transition.New(recorder, gov.Reasons), infra: infra, poll: poll, settle: settle, listers: Listers{
		VMs: vms.Lister(), Revisions: revisions.Lister(), Tickets: tickets.Lister(), Clusters: clusters.Lister(),
		TicketIndex: tickets.Informer().GetIndexer(),
	}}
	c.status = &statuswriter.Writer[*gov.ManagedVM]{
		FieldManager: FieldManager, Reasons: gov.Reasons,
		Conditions: func(vm *gov.ManagedVM) []metav1.Condition { return vm.Status.Conditions },
		Update: func(ctx context.Context, vm *gov.ManagedVM, opts metav1.UpdateOptions) (*gov.ManagedVM, error) {
			return client.ManagedVMs(vm.Namespace).UpdateStatus(ctx, vm, opts)
		},
		Written: &c.written,
	}
	c.Loop = loop.New(Name, c.reconcile, vms.Informer(), revisions.Informer(), tickets.Informer(), clusters.Informer())
	for _, err := range []error{
		c.Watch(vms.Informer()),
		c.WatchMapped(tickets.Informer(), func(obj interface{}) []cache.ObjectName {
			if t, ok := obj.(*gov.ApprovalTicket); ok {
				return []cache.ObjectName{cache.NewObjectName(t.Namespace, t.Spec.TargetRef.Name)}
			}
			return nil
		}),
		c.WatchMapped(revisions.Informer(), func(obj interface{}) []cache.ObjectName {
			if r, ok := obj.(*gov.VMRevision); ok {
				return []cache.ObjectName{cache.NewObjectName(r.Namespace, r.Spec.VMName)}
			}
			return nil
		}),
		c.WatchMappedIf(clusters.Informer(), c.vmsOnCluster(klog.FromContext(ctx)), func(oldObj, obj interface{}) bool {
			o, ok1 := oldObj.(*platform.Cluster)
			n, ok2 := obj.(*platform.Cluster)
			return !ok1 || !ok2 || o.Status.Phase != n.Status.Phase
		}),
	} {
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// vmsOnCluster maps a Cluster to the ManagedVMs placed on it.
func (c *Controller) vmsOnCluster(logger klog.Logger) loop.KeysFunc {
	return func(obj interface{}) []cache.ObjectName {
		cl, ok := obj.(*platform.Cluster)
		if !ok {
			return nil
		}
		all, err := c.listers.VMs.List(labels.Everything())
		if err != nil {
			utilruntime.HandleErrorWithLogger(logger, err, "Listing ManagedVMs failed", "cluster", cl.Name)
			return nil
		}
		var keys []cache.ObjectName
		for _, vm := range all {
			if vm.Status.Cluster == cl.Name {
				keys = append(keys, cache.MetaObjectToName(vm))
			}
		}
		return keys
	}
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	ns, name := key.Namespace, key.Name
	cached, err := c.listers.VMs.ManagedVMs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.written.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	vm := c.written.Fresher(key, cached)
	if vm.Status.Instance == 0 || vm.Status.Cluster == "" {
		return nil // not approved yet: nothing to materialize
	}
	if vm.DeletionTimestamp != nil {
		return c.finalize(ctx, vm)
	}
	if !slices.Contains(vm.Finalizers, Finalizer) {
		// Before anything exists on the cluster, so nothing can be left behind.
		updated := vm.DeepCopy()
		updated.Finalizers = append(updated.Finalizers, Finalizer)
		_, err := c.client.ManagedVMs(ns).Update(ctx, updated, metav1.UpdateOptions{})
		return err
	}
	rev, err := c.listers.Revisions.VMRevisions(ns).Get(gov.RevisionName(vm.Name, vm.Status.ApprovedRevision))
	if apierrors.IsNotFound(err) {
		c.EnqueueAfter(key, c.poll) // the informer has not seen it yet
		return nil
	}
	if err != nil {
		return err
	}
	spec := rev.Spec.VMSpec
	ticket, err := c.executing(ctx, vm)
	if err != nil {
		return err
	}

	reason, msg, err := c.clusterProblem(vm.Status.Cluster)
	if err != nil {
		return err
	}
	if reason != "" {
		c.EnqueueAfter(key, c.settle)
		return c.writeStatus(ctx, vm, vm.Status.Phase, metav1.ConditionFalse, reason, msg)
	}
	observed, err := c.infra.EnsureVM(ctx, vm.Status.Cluster, vmSpec(vm, spec))
	if err != nil {
		if !errkind.IsStalled(err) {
			return err
		}
		// The cluster's own error text goes to the log only: it can name the platform's
		// identity and API on the target cluster, and the tenant reads the message.
		klog.FromContext(ctx).Info("Cluster refused the VM", "cluster", vm.Status.Cluster, "err", err)
		msg := refusal(vm.Status.Cluster, err)
		if err := c.report(ctx, vm, ticket, gov.TicketFailed, msg); err != nil {
			return err
		}
		return c.writeStatus(ctx, vm, gov.VMPhaseFailed, metav1.ConditionFalse, gov.ReasonRefused, msg)
	}
	if spec.RestartedAt != "" && observed.RestartRequestedAt != spec.RestartedAt && observed.State == vmprovider.VMStateRunning {
		if err := c.infra.RestartVM(ctx, vm.Status.Cluster, ns, vm.Status.InstanceName, spec.RestartedAt); err != nil {
			return err
		}
		c.EnqueueAfter(key, c.poll)
		return nil
	}

	phase := phaseOf(observed.State, vm.Status.Phase)
	status, reason, msg := metav1.ConditionFalse, stateReason(observed.State), fmt.Sprintf("The VM is %s on cluster %s.", observed.State, vm.Status.Cluster)
	if observed.State == vmprovider.VMStateRunning && observed.Ready {
		status = metav1.ConditionTrue
	}
	if observed.Message != "" {
		msg = observed.Message
	}
	if err := c.writeStatus(ctx, vm, phase, status, reason, msg); err != nil {
		return err
	}
	if created(vm) {
		c.events.Record(vm, gov.ReasonCreated, "Materialize",
			fmt.Sprintf("VirtualMachine %s was created on cluster %s.", vm.Status.InstanceName, vm.Status.Cluster))
	}
	switch {
	case ticket == nil:
	case observed.State == vmprovider.VMStateFailed:
		if err := c.report(ctx, vm, ticket, gov.TicketFailed, msg); err != nil {
			return err
		}
	case done(ticket.Spec.Operation, spec, observed):
		if err := c.report(ctx, vm, ticket, gov.TicketSuccess, fmt.Sprintf("The %s is done: the VM is %s on cluster %s.", ticket.Spec.Operation, observed.State, vm.Status.Cluster)); err != nil {
			return err
		}
		ticket = nil
	}
	if ticket != nil || phase == gov.VMPhaseCreating || phase == gov.VMPhaseStopping {
		c.EnqueueAfter(key, c.poll)
	} else {
		c.EnqueueAfter(key, c.settle)
	}
	return nil
}

// finalize removes the VM from its cluster once the deletion is approved (the governance
// finalizer is gone), then lets the ManagedVM go.
func (c *Controller) finalize(ctx context.Context, vm *gov.ManagedVM) error {
	if slices.Contains(vm.Finalizers, gov.FinalizerDeleteApproval) || !slices.Contains(vm.Finalizers, Finalizer) {
		return nil
	}
	// The approval removes the governance finalizer a moment before it marks the delete
	// ticket EXECUTING: wait for that, or the ticket would be left behind unreported.
	t, err := c.listers.Tickets.ApprovalTickets(vm.Namespace).Get(vm.Status.LastTicket)
	switch {
	case err == nil && t.Spec.Operation == gov.OperationDelete && t.Status.State == gov.TicketApproved:
		c.EnqueueAfter(cache.MetaObjectToName(vm), c.poll)
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	ticket, err := c.executing(ctx, vm)
	if err != nil {
		return err
	}
	_, err = c.listers.Clusters.Get(vm.Status.Cluster)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if apierrors.IsNotFound(err) {
		// Unregistered behind the guard's back (the API refuses to delete a cluster that hosts
		// VMs): nothing can reach the VM any more. Let the ManagedVM go and say so.
		msg := fmt.Sprintf("Cluster %s is no longer registered; VirtualMachine %s/%s could not be removed from it.", vm.Status.Cluster, vm.Namespace, vm.Status.InstanceName)
		if err := c.report(ctx, vm, ticket, gov.TicketFailed, msg); err != nil {
			return err
		}
		return c.release(ctx, vm)
	}
	if err := c.infra.DeleteVM(ctx, vm.Status.Cluster, vm.Namespace, vm.Status.InstanceName); err != nil {
		return err
	}
	if _, err := c.infra.GetVM(ctx, vm.Status.Cluster, vm.Namespace, vm.Status.InstanceName); !errors.Is(err, vmprovider.ErrNotFound) {
		if err != nil {
			return err
		}
		c.EnqueueAfter(cache.MetaObjectToName(vm), c.poll) // still terminating
		return nil
	}
	if err := c.report(ctx, vm, ticket, gov.TicketSuccess, fmt.Sprintf("The VM was removed from cluster %s.", vm.Status.Cluster)); err != nil {
		return err
	}
	return c.release(ctx, vm)
}

// release removes the runtime's finalizer, letting the ManagedVM go.
func (c *Controller) release(ctx context.Context, vm *gov.ManagedVM) error {
	updated := vm.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == Finalizer })
	_, err := c.client.ManagedVMs(vm.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// executing is the VM's newest EXECUTING ticket: the change the VM should show now. Older
// EXECUTING tickets of the VM were overtaken by a later approved change before their effect
// was seen; they are reported FAILED, saying which ticket overtook them.
func (c *Controller) executing(ctx context.Context, vm *gov.ManagedVM) (*gov.ApprovalTicket, error) {
	all, err := c.listers.TicketIndex.ByIndex(TicketsByVM, vm.Namespace+"/"+vm.Name)
	if err != nil {
		return nil, err
	}
	var mine []*gov.ApprovalTicket
	for _, obj := range all {
		if t := obj.(*gov.ApprovalTicket); t.Status.State == gov.TicketExecuting {
			mine = append(mine, t)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	slices.SortFunc(mine, func(a, b *gov.ApprovalTicket) int {
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	newest := mine[len(mine)-1]
	for _, t := range mine[:len(mine)-1] {
		if err := c.report(ctx, vm, t, gov.TicketFailed, fmt.Sprintf("Overtaken by ticket %s before its effect was seen.", newest.Name)); err != nil {
			return nil, err
		}
	}
	return newest, nil
}

// report ends a ticket with the outcome the runtime saw, and records it on the VM.
func (c *Controller) report(ctx context.Context, vm *gov.ManagedVM, t *gov.ApprovalTicket, state gov.TicketState, message string) error {
	if t == nil {
		return nil
	}
	_, err := c.client.ApprovalTickets(t.Namespace).ReportExecution(ctx, t.Name, &gov.TicketExecution{State: state, Message: message}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Ticket executed", "ticket", klog.KObj(t), "operation", t.Spec.Operation, "state", state)
	reason := gov.ReasonExecuted
	if state == gov.TicketFailed {
		reason = gov.ReasonExecutionFailed
	}
	c.events.RecordRelated(vm, t, reason, "Execute", message)
	return nil
}

// clusterProblem names why the VM's cluster cannot be used now, or returns "".
func (c *Controller) clusterProblem(name string) (reason, message string, err error) {
	cl, err := c.listers.Clusters.Get(name)
	if apierrors.IsNotFound(err) {
		return gov.ReasonClusterNotFound, fmt.Sprintf("Cluster %s is not registered.", name), nil
	}
	if err != nil {
		return "", "", err
	}
	if cl.Status.Phase != platform.ClusterPhaseHealthy {
		phase := cmp.Or(cl.Status.Phase, platform.ClusterPhaseUnknown)
		return gov.ReasonClusterDegraded, fmt.Sprintf("Cluster %s is %s (CLUSTER_DEGRADED); the VM waits for it.", name, phase), nil
	}
	return "", "", nil
}

// writeStatus sets the VM's phase and Ready condition, writes them when they changed and
// records the phase the VM came to.
func (c *Controller) writeStatus(ctx context.Context, vm *gov.ManagedVM, phase gov.VMPhase, status metav1.ConditionStatus, reason, message string) error {
	updated := vm.DeepCopy()
	updated.Status.Phase = phase
	conditions.Set(&updated.Status.Conditions, vm.Generation, gov.ConditionReady, status, reason, message)
	if _, wrote, err := c.status.Write(ctx, vm, updated); err != nil || !wrote {
		return err
	}
	if reason, ok := phaseReasons[phase]; ok && phase != vm.Status.Phase {
		c.events.Record(vm, reason, "Observe", message)
	}
	return nil
}

// phaseReasons are the event reasons of the phases the runtime observes.
var phaseReasons = map[gov.VMPhase]string{
	gov.VMPhaseRunning: gov.ReasonRunning, gov.VMPhaseStopping: gov.ReasonStopping, gov.VMPhaseStopped: gov.ReasonStopped, gov.VMPhaseFailed: gov.ReasonFailed,
}

// stateReasons are the Ready condition's reasons for what the provider observes a VM doing.
var stateReasons = map[vmprovider.VMState]string{
	vmprovider.VMStateProvisioning: gov.ReasonProvisioning, vmprovider.VMStateStarting: gov.ReasonStarting,
	vmprovider.VMStateRunning: gov.ReasonRunning, vmprovider.VMStateStopping: gov.ReasonStopping,
	vmprovider.VMStateStopped: gov.ReasonStopped, vmprovider.VMStateFailed: gov.ReasonFailed, vmprovider.VMStateUnknown: gov.ReasonUnknown,
}

// stateReason is the Ready condition's reason for a state the provider observed; a state the
// API does not know is Unknown.
func stateReason(state vmprovider.VMState) string {
	if reason, ok := stateReasons[state]; ok {
		return reason
	}
	return gov.ReasonUnknown
}

// created says whether this pass is the first to see the VM on its cluster: it was being
// created (a VM that already ran keeps its phase while its cluster is degraded, so coming back
// is not a creation) and its Ready condition did not yet carry a state the provider observed.
func created(vm *gov.ManagedVM) bool {
	if vm.Status.Phase != "" && vm.Status.Phase != gov.VMPhaseCreating {
		return false
	}
	cond := apimeta.FindStatusCondition(vm.Status.Conditions, gov.ConditionReady)
	if cond == nil {
		return true
	}
	for _, reason := range stateReasons {
		if cond.Reason == reason {
			return false
		}
	}
	return true
}

// vmSpec is the domain spec of an approved ManagedVM spec.
func vmSpec(vm *gov.ManagedVM, spec gov.ManagedVMSpec) vmprovider.VMSpec {
	labels := gov.PlatformLabels(vm.Labels)
	if ticket, ok := vm.Labels[gov.LabelTicketID]; ok {
		labels[gov.LabelTicketID] = ticket // the ticket that created the VM, for tracing it back
	}
	out := vmprovider.VMSpec{
		Name: vm.Status.InstanceName, Namespace: vm.Namespace, Labels: labels, Hostname: vm.Status.Hostname,
		InstanceType: spec.InstanceType, Image: spec.Image, Template: spec.Template,
		DiskSize: spec.DiskSize, StorageClass: vm.Status.StorageClass, RunStrategy: string(spec.RunStrategy),
		UserData: spec.CloudInit,
	}
	if r := spec.Resources; r != nil {
		out.CPU, out.Memory = r.CPU, &r.Memory
	}
	return out
}

// phaseOf maps what the provider sees to the VM's phase. A VM on its way up stays CREATING
// until it first runs; once it ran, a restart or start in progress keeps the phase it had.
func phaseOf(state vmprovider.VMState, current gov.VMPhase) gov.VMPhase {
	switch state {
	case vmprovider.VMStateRunning:
		return gov.VMPhaseRunning
	case vmprovider.VMStateStopped:
		return gov.VMPhaseStopped
	case vmprovider.VMStateStopping:
		return gov.VMPhaseStopping
	case vmprovider.VMStateFailed:
		return gov.VMPhaseFailed
	case vmprovider.VMStateProvisioning, vmprovider.VMStateStarting:
		if current == "" || current == gov.VMPhaseCreating || current == gov.VMPhaseFailed {
			return gov.VMPhaseCreating
		}
	}
	return current
}

// done reports whether the VM shows that an operation took effect: it runs or is stopped as
// its run strategy says (Manual: at rest either way, since only a start request runs it), and
// a restart is recorded — or there was nothing to restart, the VM being halted.
func done(op gov.Operation, spec gov.ManagedVMSpec, vm *vmprovider.VM) bool {
	atRest := false
	switch spec.RunStrategy {
	case gov.RunStrategyHalted:
		atRest = vm.State == vmprovider.VMStateStopped
	case gov.RunStrategyManual:
		atRest = vm.State == vmprovider.VMStateStopped || vm.State == vmprovider.VMStateRunning
	default:
		atRest = vm.State == vmprovider.VMStateRunning
	}
	switch op {
	case gov.OperationCreate, gov.OperationModify, gov.OperationStart, gov.OperationStop:
		return atRest
	case gov.OperationRestart:
		if spec.RunStrategy == gov.RunStrategyHalted {
			return atRest
		}
		return vm.RestartRequestedAt == spec.RestartedAt && vm.State == vmprovider.VMStateRunning
	}
	return false
}

// refusal says in one neutral sentence why a cluster refused a VM: for an invalid VM, the
// field at fault.
func refusal(cluster string, err error) string {
	var status apierrors.APIStatus
	switch {
	case apierrors.IsInvalid(err) && errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0:
		return fmt.Sprintf("Cluster %s refused the VM: %s is invalid there.", cluster, status.Status().Details.Causes[0].Field)
	case apierrors.IsInvalid(err):
		return fmt.Sprintf("Cluster %s refused the VM as invalid.", cluster)
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("Cluster %s does not allow plinth-controller to create the VM there.", cluster)
	default:
		return fmt.Sprintf("Cluster %s refused the VM's request as malformed.", cluster)
	}
}
