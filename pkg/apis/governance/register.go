package governance

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of governed VMs.
const GroupName = "governance.plinth.dev"

// SchemeGroupVersion is the internal version of the group.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

// Kind takes an unqualified kind and returns a group-qualified GroupKind.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the internal types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the internal types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&System{}, &SystemList{},
		&SystemService{}, &SystemServiceList{},
		&ManagedVM{}, &ManagedVMList{},
		&VMRevision{}, &VMRevisionList{},
		&ApprovalTicket{}, &ApprovalTicketList{}, &TicketDecision{},
		&ApprovalPolicy{}, &ApprovalPolicyList{},
		&AuditLog{}, &AuditLogList{},
		&DomainEvent{}, &DomainEventList{},
		&PendingAdoption{}, &PendingAdoptionList{},
		&TicketExecution{}, &AdoptionRequest{},
	)
	return nil
}
