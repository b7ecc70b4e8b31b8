package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/registry/governance/approval"
	"github.com/plinth-dev/plinth/pkg/registry/governance/approvalpolicy"
	"github.com/plinth-dev/plinth/pkg/registry/governance/approvalticket"
	"github.com/plinth-dev/plinth/pkg/registry/governance/auditlog"
	"github.com/plinth-dev/plinth/pkg/registry/governance/domainevent"
	"github.com/plinth-dev/plinth/pkg/registry/governance/managedvm"
	"github.com/plinth-dev/plinth/pkg/registry/governance/pendingadoption"
	"github.com/plinth-dev/plinth/pkg/registry/governance/system"
	"github.com/plinth-dev/plinth/pkg/registry/governance/systemservice"
	"github.com/plinth-dev/plinth/pkg/registry/governance/vmrevision"
	"github.com/plinth-dev/plinth/pkg/registry/platform/cluster"
	"github.com/plinth-dev/plinth/pkg/registry/store"
)

// governanceStorage builds the governance.plinth.dev resources: the plain stores first, then
// the approval flow over them, then the client-facing resources that route writes through
// the flow. authz answers the flow's "may this user approve" questions.
func governanceStorage(optsGetter generic.RESTOptionsGetter, authz authorizer.Authorizer, clusters *cluster.REST, runtimeUsers []string) (map[string]rest.Storage, error) {
	systems, systemsStatus, err := system.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	services, servicesStatus, err := systemservice.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	vms, vmsStatus, err := managedvm.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	revisions, err := vmrevision.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	tickets, ticketsStatus, err := approvalticket.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	policies, policiesStatus, err := approvalpolicy.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	audit, err := auditlog.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	events, eventsStatus, err := domainevent.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	adoptions, adoptionsStatus, err := pendingadoption.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}

	flow := approval.New(approval.Stores{
		Systems: systems.Store, Services: services.Store, ServiceStatus: servicesStatus.Store(),
		VMs: vms.Store, VMStatus: vmsStatus.Store(), Revisions: revisions.Store,
		Tickets: tickets.Store, TicketStatus: ticketsStatus.Store(), Policies: policies.Store,
		AuditLogs: audit.Store, Events: events.Store, Clusters: clusters.Store, Adoptions: adoptions.Store,
	}, authz, runtimeUsers)
	clusters.GuardDeletion(flow.VMsOnCluster)

	return map[string]rest.Storage{
		"systems":                   store.Guarded(systems, store.Writes{Delete: flow.DeleteSystem}),
		"systems/status":            systemsStatus,
		"systemservices":            store.Guarded(services, store.Writes{Create: flow.CreateService, Delete: flow.DeleteService}),
		"systemservices/status":     servicesStatus,
		"managedvms":                managedvm.Governed(vms, flow),
		"managedvms/status":         vmsStatus,
		"vmrevisions":               store.ReadOnly(revisions),
		"approvaltickets":           store.ReadOnly(tickets),
		"approvaltickets/approval":  approvalticket.NewApprovalREST(flow),
		"approvaltickets/execution": approvalticket.NewExecutionREST(flow),
		"approvalpolicies":          policies,
		"approvalpolicies/status":   policiesStatus,
		"auditlogs":                 store.ReadOnly(audit),
		"domainevents":              store.ReadOnly(events),
		"domainevents/status":       eventsStatus,
		"pendingadoptions":          adoptions,
		"pendingadoptions/status":   adoptionsStatus,
		"pendingadoptions/adopt":    pendingadoption.NewAdoptREST(flow),
	}, nil
}

func (c completedConfig) installGovernance(s *genericapiserver.GenericAPIServer, clusters *cluster.REST) error {
	group := genericapiserver.NewDefaultAPIGroupInfo(governance.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.NegotiatedSerializer = Serializer
	storage, err := governanceStorage(c.GenericConfig.RESTOptionsGetter, c.GenericConfig.Authorization.Authorizer, clusters, c.RuntimeUsers)
	if err != nil {
		return err
	}
	group.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = storage
	return s.InstallAPIGroup(&group)
}
