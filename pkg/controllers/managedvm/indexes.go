package managedvm

import (
	"k8s.io/client-go/tools/cache"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
)

// TicketsByVM indexes ApprovalTickets by namespace/target VM name: the runtime looks up a VM's
// tickets on every poll, and tickets accumulate, so it does not list the namespace.
const TicketsByVM = "managedvm.plinth.dev/vm"

// TicketIndexers are the indexes NewController adds to the ticket informer.
var TicketIndexers = cache.Indexers{TicketsByVM: func(obj interface{}) ([]string, error) {
	t, ok := obj.(*gov.ApprovalTicket)
	if !ok {
		return nil, nil
	}
	return []string{t.Namespace + "/" + t.Spec.TargetRef.Name}, nil
}}
