// Package resourcebinding is the REST storage of score.dev ResourceBindings.
package resourcebinding

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/apis/score/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the ResourceBinding's validation for the generic strategies.
var Definition = strategy.Definition[*score.ResourceBinding]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1b1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateResourceBinding,
	ValidateUpdate:       validation.ValidateResourceBindingUpdate,
	ValidateStatusUpdate: validation.ValidateResourceBindingStatusUpdate,
}

// NewREST returns the resourcebindings resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*score.ResourceBinding]{
		Resource:    score.Resource("resourcebindings"),
		Singular:    "resourcebinding",
		NewFunc:     func() *score.ResourceBinding { return &score.ResourceBinding{} },
		NewListFunc: func() runtime.Object { return &score.ResourceBindingList{} },
		Definition:  Definition,
		SelectableFields: func(b *score.ResourceBinding) fields.Set {
			return fields.Set{
				"spec.workloadRef.name": b.Spec.WorkloadRef.Name,
				"spec.type":             b.Spec.Type,
				"status.phase":          string(b.Status.Phase),
			}
		},
		Table:      Table,
		ShortNames: []string{"rb"},
		Categories: []string{"score"},
	})
}

// Table prints TYPE, CLASS and PHASE.
var Table = table.New([]table.Column{
	{Name: "Type", Type: "string", Description: "The resource type."},
	{Name: "Class", Type: "string", Description: "The resource class."},
	{Name: "Phase", Type: "string", Description: "Pending, Binding, Bound or Failed."},
}, func(b *score.ResourceBinding) []interface{} {
	return []interface{}{b.Spec.Type, table.OrNone(b.Spec.Class), table.OrNone(string(b.Status.Phase))}
})
