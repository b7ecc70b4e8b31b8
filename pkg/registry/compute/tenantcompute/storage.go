// Package tenantcompute is the REST storage of compute.plinth.dev TenantComputes. Beyond the
// generic storage it keeps spec.tenantID unique across the cluster (unique.go): every create,
// including a server-side apply that creates, claims the ID first, and the last delete frees
// it.
package tenantcompute

import (
	"context"
	"net"
	"strconv"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/compute/validation"
	"github.com/plinth-dev/plinth/pkg/registry/compute/tenantidclaim"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the TenantCompute's validation for the generic strategies. A new TenantCompute
// starts in phase Requested, as a new Pod starts Pending: stored, not yet acted on.
var Definition = strategy.Definition[*compute.TenantCompute]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateTenantCompute,
	ValidateUpdate:       validation.ValidateTenantComputeUpdate,
	ValidateStatusUpdate: validation.ValidateTenantComputeStatusUpdate,
	// The kubevirt provider's VM requests for it name its last spec writer as the requester.
	RecordRequester: true,
	PrepareForCreate: func(_ context.Context, tc *compute.TenantCompute) {
		tc.Status.Phase = compute.PhaseRequested
	},
}

// NewREST returns the tenantcomputes resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, *store.StatusREST, error) {
	main, status, err := store.New(scheme, optsGetter, store.Options[*compute.TenantCompute]{
		Resource:         compute.Resource("tenantcomputes"),
		Singular:         "tenantcompute",
		NewFunc:          func() *compute.TenantCompute { return &compute.TenantCompute{} },
		NewListFunc:      func() runtime.Object { return &compute.TenantComputeList{} },
		Definition:       Definition,
		SelectableFields: SelectableFields,
		Table:            Table,
		ShortNames:       []string{"tcomp"},
		Categories:       []string{"plinth"},
	})
	if err != nil {
		return nil, nil, err
	}
	claims, err := tenantidclaim.New(scheme, optsGetter)
	if err != nil {
		main.Destroy()
		return nil, nil, err
	}
	r := &REST{REST: main, claims: claims}
	// Both stores share the objects; either may carry out the final delete of one.
	main.Store.AfterDelete = r.afterDelete
	status.Store().AfterDelete = r.afterDelete
	return r, status, nil
}

// SelectableFields are the fields beyond metadata that list and watch select on, as
// v1alpha1.FieldSelectors registers them.
func SelectableFields(tc *compute.TenantCompute) fields.Set {
	return fields.Set{
		"spec.tenantID":     tc.Spec.TenantID,
		"spec.providerType": tc.Spec.ProviderType,
		"status.phase":      string(tc.Status.Phase),
	}
}

// Table prints TENANT, PROVIDER, PHASE, STATE, HEALTH and ENDPOINT.
var Table = table.New([]table.Column{
	{Name: "Tenant", Type: "string", Description: "The tenant ID."},
	{Name: "Provider", Type: "string", Description: "The ComputeProvider that provisions the tenant."},
	{Name: "Phase", Type: "string", Description: "Where the tenant is in its lifecycle."},
	{Name: "State", Type: "string", Description: "The deployment's state as the provider reports it."},
	{Name: "Health", Type: "string", Description: "The tenant's health as the provider reports it."},
	{Name: "Endpoint", Type: "string", Description: "Where the tenant is reachable: the first endpoint of the last provision."},
}, func(tc *compute.TenantCompute) []interface{} {
	s := tc.Status
	return []interface{}{tc.Spec.TenantID, tc.Spec.ProviderType, table.OrNone(string(s.Phase)),
		table.OrNone(string(s.State)), table.OrNone(string(s.Health)), endpoint(s.ProvisionResult)}
})

// endpoint is the first endpoint of a provision: its URL, else address:port, else its address.
func endpoint(r *compute.ProvisionResult) string {
	if r == nil || len(r.Endpoints) == 0 {
		return "<none>"
	}
	e := r.Endpoints[0]
	switch {
	case e.URL != "":
		return e.URL
	case e.Address != "" && e.Port != 0:
		return net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port)))
	}
	return table.OrNone(e.Address)
}
