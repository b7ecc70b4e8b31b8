// Package provisioner is the REST storage of score.dev Provisioners: one score-k8s template
// provisioner per object, written by platform administrators. The kind has no status (the
// object is configuration the controller reads), so only the main resource is served.
package provisioner

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/apis/score/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the Provisioner's validation for the generic strategies. No status
// subresource is served, so the status check is never reached; it is the update check, so
// that the strategy holds no nil function.
var Definition = strategy.Definition[*score.Provisioner]{
	NamespaceScoped:      false,
	APIVersions:          []string{v1b1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateProvisioner,
	ValidateUpdate:       validation.ValidateProvisionerUpdate,
	ValidateStatusUpdate: validation.ValidateProvisionerUpdate,
}

// NewREST returns the provisioners resource. It has no status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, error) {
	main, _, err := store.New(scheme, optsGetter, store.Options[*score.Provisioner]{
		Resource:    score.Resource("provisioners"),
		Singular:    "provisioner",
		NewFunc:     func() *score.Provisioner { return &score.Provisioner{} },
		NewListFunc: func() runtime.Object { return &score.ProvisionerList{} },
		Definition:  Definition,
		Table:       Table,
		ShortNames:  []string{"prov"},
		Categories:  []string{"score"},
	})
	return main, err
}

// AnyClass is what the CLASS column prints for a provisioner that matches every class, as
// score-k8s provisioners list does.
const AnyClass = "(any)"

// Table prints TYPE, CLASS, PARAMS, OUTPUTS and DESCRIPTION, the columns of score-k8s
// provisioners list: params and outputs sorted and joined by ", ".
var Table = table.New([]table.Column{
	{Name: "Type", Type: "string", Description: "The resource type the provisioner provides."},
	{Name: "Class", Type: "string", Description: "The resource class it is restricted to; (any) matches every class."},
	{Name: "Params", Type: "string", Description: "The resource params it supports (supported_params)."},
	{Name: "Outputs", Type: "string", Description: "The outputs it promises (expected_outputs)."},
	{Name: "Description", Type: "string", Description: "What it provisions."},
}, func(p *score.Provisioner) []interface{} {
	class := AnyClass
	if p.Spec.Class != nil {
		class = *p.Spec.Class
	}
	return []interface{}{p.Spec.Type, class, table.OrNone(sortedList(p.Spec.SupportedParams)),
		table.OrNone(sortedList(p.Spec.ExpectedOutputs)), table.OrNone(p.Spec.Description)}
})

// sortedList joins a sorted copy of names with ", ", leaving the object's slice as it is.
func sortedList(names []string) string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	return strings.Join(sorted, ", ")
}
