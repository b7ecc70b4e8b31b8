// Package systemservice is the REST storage of governance.plinth.dev SystemServices.
package systemservice

import (
	"context"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the SystemService's validation; createdBy comes from the request's user and
// the instance counter starts at 1.
var Definition = strategy.Definition[*governance.SystemService]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateSystemService,
	ValidateUpdate:       validation.ValidateSystemServiceUpdate,
	ValidateStatusUpdate: validation.ValidateSystemServiceStatusUpdate,
	PrepareForCreate: func(ctx context.Context, s *governance.SystemService) {
		if u, ok := genericapirequest.UserFrom(ctx); ok {
			s.Spec.CreatedBy = u.GetName()
		}
		s.Status.NextInstanceIndex = 1
	},
}

// NewREST returns the systemservices resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*governance.SystemService]{
		Resource:    governance.Resource("systemservices"),
		Singular:    "systemservice",
		NewFunc:     func() *governance.SystemService { return &governance.SystemService{} },
		NewListFunc: func() runtime.Object { return &governance.SystemServiceList{} },
		Definition:  Definition,
		SelectableFields: func(s *governance.SystemService) fields.Set {
			return fields.Set{"spec.systemRef.name": s.Spec.SystemRef.Name}
		},
		Table:      Table,
		ShortNames: []string{"ssvc"},
		Categories: []string{"governance"},
	})
}

// Table prints SYSTEM, NEXT-INSTANCE and CREATED-BY.
var Table = table.New([]table.Column{
	{Name: "System", Type: "string", Description: "The System the service belongs to."},
	{Name: "Next-Instance", Type: "integer", Description: "The instance number the next approved VM gets."},
	{Name: "Created-By", Type: "string", Description: "The user who created the service."},
}, func(s *governance.SystemService) []interface{} {
	return []interface{}{s.Spec.SystemRef.Name, int64(s.Status.NextInstanceIndex), s.Spec.CreatedBy}
})
