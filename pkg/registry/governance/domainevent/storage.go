// Package domainevent is the REST storage of governance.plinth.dev DomainEvents: append-only
// events written by the approval flow; consumers may archive them through the status
// subresource.
package domainevent

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition keeps the payload immutable; only the archive mark may be set.
var Definition = strategy.Definition[*governance.DomainEvent]{
	NamespaceScoped: true,
	APIVersions:     []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:        func(e *governance.DomainEvent) field.ErrorList { return validation.ValidateRecordMeta(e) },
	ValidateUpdate: func(e, old *governance.DomainEvent) field.ErrorList {
		return validation.ValidateImmutableRecord(e.Spec, old.Spec)
	},
	ValidateStatusUpdate: validation.ValidateDomainEventStatusUpdate,
}

// NewREST returns the domainevents storage and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*governance.DomainEvent]{
		Resource:    governance.Resource("domainevents"),
		Singular:    "domainevent",
		NewFunc:     func() *governance.DomainEvent { return &governance.DomainEvent{} },
		NewListFunc: func() runtime.Object { return &governance.DomainEventList{} },
		Definition:  Definition,
		SelectableFields: func(e *governance.DomainEvent) fields.Set {
			return fields.Set{"spec.type": e.Spec.Type, "spec.aggregate.name": e.Spec.Aggregate.Name}
		},
		Table:      Table,
		ShortNames: []string{"devt"},
		Categories: []string{"governance"},
	})
}

// Table prints TYPE, AGGREGATE and ARCHIVED.
var Table = table.New([]table.Column{
	{Name: "Type", Type: "string", Description: "The event type."},
	{Name: "Aggregate", Type: "string", Description: "The object the event belongs to."},
	{Name: "Archived", Type: "string", Description: "Whether the event was archived."},
}, func(e *governance.DomainEvent) []interface{} {
	archived := "false"
	if e.Status.ArchivedAt != nil {
		archived = "true"
	}
	return []interface{}{e.Spec.Type, e.Spec.Aggregate.Kind + "/" + e.Spec.Aggregate.Name, archived}
})
