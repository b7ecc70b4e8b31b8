package governedvm

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
)

// Condition types and reasons governance and the VM runtime set on a ManagedVM.
const (
	conditionApproved = "Approved"
	conditionReady    = "Ready"
	reasonRejected    = "Rejected"
	reasonCancelled   = "Cancelled"
)

// GetStatus reports the tenant's compute as its ManagedVM shows it (from the informer's cache).
func (p *Provider) GetStatus(_ context.Context, tc *v1alpha1.TenantCompute) (*compute.ComputeStatus, error) {
	vm, err := p.vms.ManagedVMs(tc.Namespace).Get(vmName(tc))
	switch {
	case apierrors.IsNotFound(err):
		return &compute.ComputeStatus{State: v1alpha1.ComputeStateUnknown, Health: v1alpha1.HealthStatusUnknown,
			Containers: containers(tc, v1alpha1.ComputeStateUnknown, false, ""),
			Message:    fmt.Sprintf("ManagedVM %s has not been requested yet.", vmName(tc))}, nil
	case err != nil:
		return nil, err
	case !ours(vm.Labels, tc):
		return &compute.ComputeStatus{State: v1alpha1.ComputeStateUnknown, Health: v1alpha1.HealthStatusUnknown,
			Message: notOurs(tc).Error()}, nil
	}
	return statusOf(tc, vm), nil
}

// statusOf maps a ManagedVM to the tenant's compute status. A VM whose creation waits for
// approval is starting, one whose creation was rejected or cancelled is failed; once approved,
// the state follows the phase the VM runtime reports, and a pending or rejected change of an
// approved VM is named in the message while the VM goes on as approved.
func statusOf(tc *v1alpha1.TenantCompute, vm *gov.ManagedVM) *compute.ComputeStatus {
	ready := apimeta.IsStatusConditionTrue(vm.Status.Conditions, conditionReady)
	var state v1alpha1.ComputeState
	var message string
	switch vm.Status.Phase {
	case "":
		state = v1alpha1.ComputeStateStarting
		if rejected(vm) {
			state = v1alpha1.ComputeStateFailed
		}
	case gov.VMPhaseCreating:
		state = v1alpha1.ComputeStateStarting
	case gov.VMPhaseRunning:
		state = v1alpha1.ComputeStateRunning
	case gov.VMPhaseStopping, gov.VMPhaseDeleting:
		state = v1alpha1.ComputeStateStopping
	case gov.VMPhaseStopped:
		state = v1alpha1.ComputeStateStopped
	case gov.VMPhaseFailed:
		state = v1alpha1.ComputeStateFailed
	default:
		state = v1alpha1.ComputeStateUnknown
	}
	switch {
	case vm.Status.PendingApproval != nil:
		message = waiting(vm)
	case rejected(vm):
		message = rejection(vm)
	case vm.Status.Phase == gov.VMPhaseDeleting:
		message = fmt.Sprintf("ManagedVM %s is being deleted.", vm.Name)
	case state != v1alpha1.ComputeStateRunning || !ready:
		if c := apimeta.FindStatusCondition(vm.Status.Conditions, conditionReady); c != nil {
			message = c.Message
		}
	}
	health := v1alpha1.HealthStatusUnknown
	switch {
	case state == v1alpha1.ComputeStateRunning && ready:
		health = v1alpha1.HealthStatusHealthy
	case state == v1alpha1.ComputeStateRunning, state == v1alpha1.ComputeStateFailed:
		health = v1alpha1.HealthStatusUnhealthy
	}
	metadata := map[string]string{
		"managedVM": vm.Namespace + "/" + vm.Name, "system": SystemName, "systemService": vm.Spec.SystemServiceRef.Name,
	}
	for k, v := range map[string]string{"phase": string(vm.Status.Phase), "cluster": vm.Status.Cluster,
		"instanceName": vm.Status.InstanceName, "ticket": vm.Status.LastTicket} {
		if v != "" {
			metadata[k] = v
		}
	}
	return &compute.ComputeStatus{
		State: state, Health: health, Message: message, Metadata: metadata,
		Containers: containers(tc, state, ready, message),
		Endpoints:  endpoints(tc, vm),
	}
}

// containers mirror the VM: each tenant container is in the VM's state, and ready when the VM
// is. podman's view inside the guest does not reach the platform.
func containers(tc *v1alpha1.TenantCompute, state v1alpha1.ComputeState, ready bool, message string) []v1alpha1.ContainerStatus {
	out := make([]v1alpha1.ContainerStatus, 0, len(tc.Spec.Containers))
	for _, c := range tc.Spec.Containers {
		s := v1alpha1.ContainerStatus{Name: c.Name, State: string(state), Ready: state == v1alpha1.ComputeStateRunning && ready}
		if state == v1alpha1.ComputeStateStopping {
			s.State = string(v1alpha1.ComputeStateStopped)
		}
		if !s.Ready {
			s.Message = message
		}
		out = append(out, s)
	}
	return out
}

// endpoints are the published container ports at the VM's hostname, once the VM has one.
func endpoints(tc *v1alpha1.TenantCompute, vm *gov.ManagedVM) []v1alpha1.Endpoint {
	host := vm.Status.Hostname
	if host == "" {
		return nil
	}
	var out []v1alpha1.Endpoint
	for _, c := range tc.Spec.Containers {
		for _, p := range c.Ports {
			e := v1alpha1.Endpoint{Type: protocol(p), Address: host, Port: hostPort(p)}
			if name := strings.ToLower(p.Name); protocol(p) == v1alpha1.ProtocolTCP && (name == "http" || name == "https" || name == "grpc") {
				e.Type = name
				if name != "grpc" {
					e.URL = fmt.Sprintf("%s://%s:%d", name, host, e.Port)
				}
			}
			out = append(out, e)
		}
	}
	return out
}

// rejected says whether the VM's latest request was rejected or cancelled (governance's
// Approved condition), with nothing pending since.
func rejected(vm *gov.ManagedVM) bool {
	c := apimeta.FindStatusCondition(vm.Status.Conditions, conditionApproved)
	return vm.Status.PendingApproval == nil && c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == reasonRejected || c.Reason == reasonCancelled)
}

// waiting names the ticket a VM's pending request waits for.
func waiting(vm *gov.ManagedVM) string {
	p := vm.Status.PendingApproval
	return fmt.Sprintf("Waiting for approval of ticket %s to %s the VM.", p.Ticket, p.Operation)
}

// rejection names the ticket that rejected a VM's latest request.
func rejection(vm *gov.ManagedVM) string {
	c := apimeta.FindStatusCondition(vm.Status.Conditions, conditionApproved)
	word := "rejected"
	if c.Reason == reasonCancelled {
		word = "cancelled"
	}
	switch {
	case vm.Status.Phase == "":
		return fmt.Sprintf("The creation of the VM was %s in ticket %s.", word, vm.Status.LastTicket)
	case vm.DeletionTimestamp != nil:
		return fmt.Sprintf("The deletion of the VM was %s in ticket %s; deleting ManagedVM %s asks again.", word, vm.Status.LastTicket, vm.Name)
	}
	return fmt.Sprintf("The change of the VM was %s in ticket %s; the VM keeps its approved spec.", word, vm.Status.LastTicket)
}
