package vmruntime

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
)

// Informer indexes the runtime and the adopter look things up by, instead of listing a whole
// namespace on every reconcile: tickets and VMs accumulate, and the lookups run every poll.
const (
	// TicketsByVM indexes ApprovalTickets by namespace/target VM name.
	TicketsByVM = "vmruntime.plinth.dev/vm"
	// VMsByIdentity indexes ManagedVMs by what identifies their VirtualMachine on a cluster:
	// namespace/instance name, and namespace/service/instance number.
	VMsByIdentity = "vmruntime.plinth.dev/identity"
)

// Indexers are the indexes to add to the ticket and ManagedVM informers before they start.
var (
	TicketIndexers = cache.Indexers{TicketsByVM: func(obj interface{}) ([]string, error) {
		t, ok := obj.(*gov.ApprovalTicket)
		if !ok {
			return nil, nil
		}
		return []string{t.Namespace + "/" + t.Spec.TargetRef.Name}, nil
	}}
	VMIndexers = cache.Indexers{VMsByIdentity: func(obj interface{}) ([]string, error) {
		vm, ok := obj.(*gov.ManagedVM)
		if !ok || vm.Status.Instance == 0 {
			return nil, nil
		}
		return []string{
			byInstanceName(vm.Namespace, vm.Status.InstanceName),
			byServiceInstance(vm.Namespace, vm.Spec.SystemServiceRef.Name, int(vm.Status.Instance)),
		}, nil
	}}
)

func byInstanceName(namespace, instanceName string) string {
	return namespace + "/name/" + instanceName
}

func byServiceInstance(namespace, service string, instance int) string {
	return fmt.Sprintf("%s/service/%s/%d", namespace, service, instance)
}
