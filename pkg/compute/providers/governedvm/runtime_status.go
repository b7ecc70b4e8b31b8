package governedvm

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
)

// instanceLabel is the label KubeVirt puts on the pod a VM instance runs in, with the
// instance's name as its value: the label it offers for Service selectors.
const instanceLabel = "vmi.kubevirt.io/id"

// operationWords name a pending operation in a workload's status.
var operationWords = map[gov.Operation]string{
	gov.OperationCreate: "creation", gov.OperationModify: "change", gov.OperationStart: "start",
	gov.OperationStop: "stop", gov.OperationRestart: "restart", gov.OperationDelete: "deletion",
}

// planStatus reports the plan's VM in the workload vocabulary. While a request of the VM waits
// for approval the runtime is RuntimeSelecting, naming the ticket; a rejected request of the
// plan's spec is PermissionDenied (the platform's approvers refused it: the workload has to
// change, or be applied again, to ask anew); once approved the VM runtime's phase decides:
// Succeeded when the VM runs and is ready, RuntimeDegraded when it is stopped or failed,
// RuntimeProvisioning otherwise.
func planStatus(plan *v1b1.WorkloadPlan, vm *gov.ManagedVM, w *wanted) compute.Status {
	details := map[string]string{"managedVM": vm.Namespace + "/" + vm.Name, "system": WorkloadSystem, "systemService": vm.Spec.SystemServiceRef.Name}
	for k, v := range map[string]string{"cluster": vm.Status.Cluster, "instanceName": vm.Status.InstanceName, "ticket": vm.Status.LastTicket} {
		if v != "" {
			details[k] = v
		}
	}
	st := compute.Status{State: string(vm.Status.Phase), Details: details, Reason: v1b1.ReasonRuntimeProvisioning}
	if st.State == "" {
		st.State = "REQUESTED"
	}
	ready := apimeta.IsStatusConditionTrue(vm.Status.Conditions, conditionReady)
	switch p := vm.Status.PendingApproval; {
	case p != nil:
		st.State = "PENDING_APPROVAL"
		st.Reason = v1b1.ReasonRuntimeSelecting
		st.Message = fmt.Sprintf("The virtual machine waits for approval of ticket %s.", p.Ticket)
		if p.Operation != gov.OperationCreate {
			st.Message = fmt.Sprintf("The %s of the virtual machine waits for approval of ticket %s.", operationWords[p.Operation], p.Ticket)
		}
	case vm.DeletionTimestamp != nil:
		st.Message = "The virtual machine is being deleted; it is asked for again once it is gone."
	case rejectionStandsFor(vm, plan, w):
		st.State, st.Reason = "REJECTED", v1b1.ReasonPermissionDenied
		word := "rejected"
		if c := apimeta.FindStatusCondition(vm.Status.Conditions, conditionApproved); c.Reason == reasonCancelled {
			word = "cancelled"
		}
		st.Message = fmt.Sprintf("The virtual machine was %s in ticket %s.", word, vm.Status.LastTicket)
		if vm.Status.Instance != 0 {
			st.Message = fmt.Sprintf("The change of the virtual machine was %s in ticket %s; it runs as approved before.", word, vm.Status.LastTicket)
		}
	case vm.Status.Phase == "":
		st.Reason, st.Message = v1b1.ReasonRuntimeSelecting, "The virtual machine waits for approval."
	case vm.Status.Phase == gov.VMPhaseRunning && ready:
		st.Ready, st.Reason, st.Message = true, v1b1.ReasonSucceeded, "The workload runs in its virtual machine."
	case vm.Status.Phase == gov.VMPhaseRunning:
		st.Message = "The virtual machine is starting."
	case vm.Status.Phase == gov.VMPhaseStopping || vm.Status.Phase == gov.VMPhaseStopped:
		st.Reason, st.Message = v1b1.ReasonRuntimeDegraded, "The virtual machine is stopped."
	case vm.Status.Phase == gov.VMPhaseFailed:
		st.Reason, st.Message = v1b1.ReasonRuntimeDegraded, "The virtual machine has failed."
	case vm.Status.Phase == gov.VMPhaseDeleting:
		st.Message = "The virtual machine is being deleted."
	default:
		st.Message = "The virtual machine is being created."
	}
	return st
}

// rejectionStandsFor says whether the plan's current spec was asked for and rejected: the VM
// never was approved, or still has another spec than the one the plan asks for.
func rejectionStandsFor(vm *gov.ManagedVM, plan *v1b1.WorkloadPlan, w *wanted) bool {
	return rejected(vm) && vm.Annotations[AnnotationRequestedSpec] == w.fingerprint &&
		vm.Annotations[AnnotationRequestedGeneration] == planGeneration(plan) && (vm.Status.Instance == 0 || !applied(vm, w))
}

// ensureEndpoint keeps a Service named after the plan, in the plan's namespace, in front of the
// VM's instance once governance has named it, when the plan declares ports: the workload's
// endpoint (http://NAME.NAMESPACE.svc) is that Service. It selects the pod KubeVirt runs the
// instance in, so it reaches the VM when the VM runs on the cluster plinth-controller's
// namespaces are on (Cluster local, on the local platform); for a VM an approver placed on
// another cluster it selects nothing. Each service port goes to its target port on the VM,
// where the container listens (the containers share the VM's network).
func (r *Runtime) ensureEndpoint(ctx context.Context, plan *v1b1.WorkloadPlan, vm *gov.ManagedVM) error {
	svc := plan.Spec.Projection.Service
	if svc == nil || len(svc.Ports) == 0 || vm.Status.InstanceName == "" || vm.DeletionTimestamp != nil || !metav1.IsControlledBy(vm, plan) {
		return nil
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: plan.Name, Namespace: plan.Namespace, Annotations: svc.Annotations,
			Labels:          map[string]string{"app.kubernetes.io/name": plan.Name, "app.kubernetes.io/managed-by": "plinth", v1b1.WorkloadLabel: plan.Spec.WorkloadRef.Name},
			OwnerReferences: []metav1.OwnerReference{planOwner(plan)}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{instanceLabel: vm.Status.InstanceName}},
	}
	for _, name := range sets.List(sets.KeySet(svc.Ports)) {
		p := svc.Ports[name]
		target := p.TargetPort
		if target == 0 {
			target = p.Port
		}
		protocol := corev1.ProtocolTCP
		if p.Protocol != "" {
			protocol = corev1.Protocol(p.Protocol)
		}
		want.Spec.Ports = append(want.Spec.Ports, corev1.ServicePort{Name: name, Port: p.Port, TargetPort: intstr.FromInt32(target), Protocol: protocol})
	}
	live, err := r.kubeServices.Services(plan.Namespace).Get(plan.Name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = r.kube.CoreV1().Services(plan.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: runtimeFieldManager})
		return err
	case err != nil:
		return err
	case !metav1.IsControlledBy(live, plan):
		return refuse("Another service of the namespace has the workload's name.")
	case endpointCurrent(live, want):
		return nil
	}
	updated := live.DeepCopy()
	updated.Labels, updated.Annotations, updated.OwnerReferences = want.Labels, want.Annotations, want.OwnerReferences
	updated.Spec.Selector = want.Spec.Selector
	updated.Spec.Ports = want.Spec.Ports
	_, err = r.kube.CoreV1().Services(plan.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: runtimeFieldManager})
	return err
}

// endpointCurrent says whether a live Service is the one wanted, in the fields the runtime sets.
func endpointCurrent(live, want *corev1.Service) bool {
	if len(live.Spec.Ports) != len(want.Spec.Ports) {
		return false
	}
	for i, p := range want.Spec.Ports {
		l := live.Spec.Ports[i]
		if l.Name != p.Name || l.Port != p.Port || l.TargetPort != p.TargetPort || l.Protocol != p.Protocol {
			return false
		}
	}
	return apiequality.Semantic.DeepEqual(live.Spec.Selector, want.Spec.Selector) && apiequality.Semantic.DeepEqual(live.Labels, want.Labels) &&
		apiequality.Semantic.DeepEqual(live.Annotations, want.Annotations) && apiequality.Semantic.DeepEqual(live.OwnerReferences, want.OwnerReferences)
}
