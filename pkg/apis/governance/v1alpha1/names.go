package v1alpha1

import "fmt"

// The naming rules that plinth-apiserver (which approves VMs and writes their records) and
// plinth-controller (which materializes them) must agree on. They live here, next to the
// types, so that both processes import one definition and the controller needs no internal
// type.

// Labels the platform puts on every object it manages for a governed VM (the ManagedVM, its
// tickets and revisions, and the VirtualMachine on the target cluster). Tenants may not set or
// change them. The identity of a VM is cluster + namespace + system + service + instance.
const (
	LabelManagedBy = "kubevirt-shepherd.io/managed-by"
	LabelSystem    = "kubevirt-shepherd.io/system"
	LabelService   = "kubevirt-shepherd.io/service"
	LabelInstance  = "kubevirt-shepherd.io/instance"
	LabelTicketID  = "kubevirt-shepherd.io/ticket-id"

	// LabelPrefix is the prefix of every platform-owned label.
	LabelPrefix = "kubevirt-shepherd.io/"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "plinth"
)

// FinalizerDeleteApproval holds a ManagedVM's deletion until a delete ticket is approved.
const FinalizerDeleteApproval = "governance.plinth.dev/delete-approval"

// FinalizerVMCleanup holds a ManagedVM's deletion until the runtime has removed its VM from the
// target cluster. The runtime adds it before it creates anything there.
const FinalizerVMCleanup = "governance.plinth.dev/vm-cleanup"

// AnnotationOnBehalfOf names, on a ManagedVM that plinth-controller writes, the user its
// request is made for: the user who last wrote the spec of the Workload or TenantCompute the VM
// is for (common.AnnotationRequestedBy). The ticket the write opens names that user as its
// requester, who may not approve it, and plinth-controller as the submitter. plinth-apiserver
// takes it from plinth-controller's identities only: anyone else may keep it as it is or
// remove it, and a write that sets or changes it is refused (PLATFORM_FIELD_FORBIDDEN).
const AnnotationOnBehalfOf = "governance.plinth.dev/on-behalf-of"

// PlatformLabels are the platform's labels for the objects it manages for a VM with these
// labels: managed-by, and those of system, service and instance the VM has.
func PlatformLabels(vmLabels map[string]string) map[string]string {
	out := map[string]string{LabelManagedBy: ManagedByValue}
	for _, k := range []string{LabelSystem, LabelService, LabelInstance} {
		if v, ok := vmLabels[k]; ok {
			out[k] = v
		}
	}
	return out
}

// InstanceLabelValue is the value of LabelInstance: the instance number, two digits at least.
func InstanceLabelValue(instance int32) string { return fmt.Sprintf("%02d", instance) }

// InstanceName is the name of a VM instance on its cluster: {namespace}-{system}-{service}-{NN}.
func InstanceName(namespace, system, service string, instance int32) string {
	return fmt.Sprintf("%s-%s-%s-%s", namespace, system, service, InstanceLabelValue(instance))
}

// RevisionName is the name of the VMRevision that records revision n of a ManagedVM's
// approved spec: {vm}-r{n}.
func RevisionName(vm string, revision int64) string { return fmt.Sprintf("%s-r%d", vm, revision) }

// MaxCloudInit is the longest ManagedVM spec.cloudInit, in bytes: KubeVirt refuses inline
// cloud-init user data above 2048 bytes, so the API refuses it before anyone approves a VM that
// no cluster would accept.
const MaxCloudInit = 2048
