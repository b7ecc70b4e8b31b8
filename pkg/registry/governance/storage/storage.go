// Package storage wires the governance.plinth.dev resources as plinth-apiserver serves them:
// the plain stores, the approval flow over them and the client-facing resources that route
// writes through the flow. plinth-apiserver and governancetest both build them here, so tests
// exercise the wiring the server runs.
package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/governance/approval"
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

// Storage is the governance.plinth.dev resources.
type Storage struct {
	// Resources maps each resource and subresource to its storage, as the API group serves it.
	Resources map[string]rest.Storage
	// Flow is the approval flow over Stores.
	Flow   *approval.Flow
	Stores approval.Stores

	destroyers []interface{ Destroy() }
}

// New builds the governance.plinth.dev resources: the plain stores first, then the approval
// flow over them, then the client-facing resources that route writes through the flow. authz
// answers the flow's "may this user approve" questions. clusters is platform's clusters
// resource, which the flow reads and whose deletes it guards; it stays the caller's to destroy.
func New(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, authz authorizer.Authorizer, clusters *cluster.REST, runtimeUsers []string) (*Storage, error) {
	systems, systemsStatus, err := system.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	services, servicesStatus, err := systemservice.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	vms, vmsStatus, err := managedvm.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	revisions, err := vmrevision.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	tickets, ticketsStatus, err := approvalticket.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	policies, policiesStatus, err := approvalpolicy.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	audit, err := auditlog.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	events, eventsStatus, err := domainevent.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	adoptions, adoptionsStatus, err := pendingadoption.NewREST(scheme, optsGetter)
	if err != nil {
		return nil, err
	}

	s := &Storage{destroyers: []interface{ Destroy() }{systems, services, vms, revisions, tickets, policies, audit, events, adoptions}}
	s.Stores = approval.Stores{
		Systems: systems.Store, Services: services.Store, ServiceStatus: servicesStatus.Store(),
		VMs: vms.Store, VMStatus: vmsStatus.Store(), Revisions: revisions.Store,
		Tickets: tickets.Store, TicketStatus: ticketsStatus.Store(), Policies: policies.Store,
		AuditLogs: audit.Store, Events: events.Store, Clusters: clusters.Store, Adoptions: adoptions.Store,
	}
	flow := approval.New(s.Stores, authz, runtimeUsers)
	s.Flow = flow
	clusters.GuardDeletion(flow.VMsOnCluster)

	s.Resources = map[string]rest.Storage{
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
	}
	return s, nil
}

// Destroy releases the stores New made; the caller's clusters resource is left alone. A server
// need not call it: the generic API server destroys the storage it installed on shutdown.
func (s *Storage) Destroy() {
	for _, d := range s.destroyers {
		d.Destroy()
	}
}
