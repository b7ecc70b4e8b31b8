// Package vmrevision is the REST storage of governance.plinth.dev VMRevisions: immutable
// records of approved specs, written by the approval flow only.
package vmrevision

import (
	"strings"

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

// Definition refuses every update: revisions are immutable.
var Definition = strategy.Definition[*governance.VMRevision]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             func(r *governance.VMRevision) field.ErrorList { return validation.ValidateRecordMeta(r) },
	ValidateUpdate:       func(r, old *governance.VMRevision) field.ErrorList { return validation.ValidateImmutableRecord(r, old) },
	ValidateStatusUpdate: func(r, old *governance.VMRevision) field.ErrorList { return validation.ValidateImmutableRecord(r, old) },
}

// NewREST returns the vmrevisions storage; clients reach it through store.ReadOnly.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, error) {
	main, _, err := store.New(scheme, optsGetter, store.Options[*governance.VMRevision]{
		Resource:    governance.Resource("vmrevisions"),
		Singular:    "vmrevision",
		NewFunc:     func() *governance.VMRevision { return &governance.VMRevision{} },
		NewListFunc: func() runtime.Object { return &governance.VMRevisionList{} },
		Definition:  Definition,
		SelectableFields: func(r *governance.VMRevision) fields.Set {
			return fields.Set{"spec.vmName": r.Spec.VMName}
		},
		Table:      Table,
		ShortNames: []string{"vmrev"},
		Categories: []string{"governance"},
	})
	return main, err
}

// Table prints VM, REVISION, OPERATION, TICKET and APPROVED-BY.
var Table = table.New([]table.Column{
	{Name: "VM", Type: "string", Description: "The ManagedVM."},
	{Name: "Revision", Type: "integer", Description: "The revision number."},
	{Name: "Operation", Type: "string", Description: "The operation that produced it."},
	{Name: "Ticket", Type: "string", Description: "The approving ticket."},
	{Name: "Approved-By", Type: "string", Description: "The approvers."},
}, func(r *governance.VMRevision) []interface{} {
	return []interface{}{
		r.Spec.VMName, r.Spec.Revision, string(r.Spec.Operation), table.OrNone(r.Spec.Ticket), table.OrNone(strings.Join(r.Spec.ApprovedBy, ",")),
	}
})
