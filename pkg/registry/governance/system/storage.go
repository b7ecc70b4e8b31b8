// Package system is the REST storage of governance.plinth.dev Systems.
package system

import (
	"context"

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

// Definition is the System's validation; createdBy comes from the request's user.
var Definition = strategy.Definition[*governance.System]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateSystem,
	ValidateUpdate:       validation.ValidateSystemUpdate,
	ValidateStatusUpdate: validation.ValidateSystemStatusUpdate,
	PrepareForCreate: func(ctx context.Context, s *governance.System) {
		s.Spec.CreatedBy = requestUser(ctx)
	},
}

func requestUser(ctx context.Context) string {
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		return u.GetName()
	}
	return ""
}

// NewREST returns the systems resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*governance.System]{
		Resource:    governance.Resource("systems"),
		Singular:    "system",
		NewFunc:     func() *governance.System { return &governance.System{} },
		NewListFunc: func() runtime.Object { return &governance.SystemList{} },
		Definition:  Definition,
		Table:       Table,
		ShortNames:  []string{"sys"},
		Categories:  []string{"governance"},
	})
}

// Table prints ENVIRONMENT and CREATED-BY.
var Table = table.New([]table.Column{
	{Name: "Environment", Type: "string", Description: "test or prod."},
	{Name: "Created-By", Type: "string", Description: "The user who created the system."},
}, func(s *governance.System) []interface{} {
	return []interface{}{string(s.Spec.Environment), s.Spec.CreatedBy}
})
