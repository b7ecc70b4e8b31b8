// Package workloadplan is the REST storage of score.dev WorkloadPlans.
package workloadplan

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

// Definition is the WorkloadPlan's validation for the generic strategies.
var Definition = strategy.Definition[*score.WorkloadPlan]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1b1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateWorkloadPlan,
	ValidateUpdate:       validation.ValidateWorkloadPlanUpdate,
	ValidateStatusUpdate: validation.ValidateWorkloadPlanStatusUpdate,
}

// NewREST returns the workloadplans resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*score.WorkloadPlan]{
		Resource:    score.Resource("workloadplans"),
		Singular:    "workloadplan",
		NewFunc:     func() *score.WorkloadPlan { return &score.WorkloadPlan{} },
		NewListFunc: func() runtime.Object { return &score.WorkloadPlanList{} },
		Definition:  Definition,
		SelectableFields: func(p *score.WorkloadPlan) fields.Set {
			return fields.Set{
				"spec.workloadRef.name": p.Spec.WorkloadRef.Name,
				"spec.runtimeClass":     p.Spec.RuntimeClass,
				"status.phase":          string(p.Status.Phase),
			}
		},
		Table:      Table,
		ShortNames: []string{"wp"},
		Categories: []string{"score"},
	})
}

// Table prints RUNTIME and PHASE.
var Table = table.New([]table.Column{
	{Name: "Runtime", Type: "string", Description: "The runtime class that materializes the plan."},
	{Name: "Phase", Type: "string", Description: "Pending, Planning, Projected or Failed."},
}, func(p *score.WorkloadPlan) []interface{} {
	return []interface{}{p.Spec.RuntimeClass, table.OrNone(string(p.Status.Phase))}
})
