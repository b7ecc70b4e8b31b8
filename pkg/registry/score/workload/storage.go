// Package workload is the REST storage of score.dev Workloads.
package workload

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/apis/score/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the Workload's validation for the generic strategies.
var Definition = strategy.Definition[*score.Workload]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1b1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateWorkload,
	ValidateUpdate:       validation.ValidateWorkloadUpdate,
	ValidateStatusUpdate: validation.ValidateWorkloadStatusUpdate,
	// The kubevirt runtime's VM requests for it name its last spec writer as the requester.
	RecordRequester:  true,
	PrepareForCreate: func(_ context.Context, w *score.Workload) { syncEnvOnCreate(w) },
	PrepareForUpdate: func(ctx context.Context, w, old *score.Workload) {
		info, ok := genericapirequest.RequestInfoFrom(ctx)
		syncEnvOnUpdate(w, old, ok && info.Verb == "update")
	},
}

// NewREST returns the workloads resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*score.Workload]{
		Resource:    score.Resource("workloads"),
		Singular:    "workload",
		NewFunc:     func() *score.Workload { return &score.Workload{} },
		NewListFunc: func() runtime.Object { return &score.WorkloadList{} },
		Definition:  Definition,
		SelectableFields: func(w *score.Workload) fields.Set {
			return fields.Set{"spec.runtimeClass": w.Spec.RuntimeClass}
		},
		Table:      Table,
		ShortNames: []string{"wl"},
		Categories: []string{"score"},
	})
}

// Table prints RUNTIME, READY and ENDPOINT; -o wide adds INPUTS and BINDINGS.
var Table = table.New([]table.Column{
	{Name: "Runtime", Type: "string", Description: "The runtime class that materializes the workload."},
	{Name: "Ready", Type: "string", Description: "Status of the Ready condition."},
	{Name: "Endpoint", Type: "string", Description: "The workload's canonical URL."},
	{Name: "Inputs", Type: "string", Description: "Status of the InputsValid condition.", Wide: true},
	{Name: "Bindings", Type: "string", Description: "Bound resources out of all the resources the workload declares (spec.resources and its Score document), as status.bindings lists them.", Wide: true},
}, func(w *score.Workload) []interface{} {
	endpoint := ""
	if w.Status.Endpoint != nil {
		endpoint = *w.Status.Endpoint
	}
	bound, declared := bindingCounts(w)
	return []interface{}{
		table.OrNone(w.Spec.RuntimeClass),
		conditionStatus(w, score.ConditionReady),
		table.OrNone(endpoint),
		conditionStatus(w, score.ConditionInputsValid),
		fmt.Sprintf("%d/%d", bound, declared),
	}
})

// bindingCounts returns how many of the workload's resources are bound and how many it
// declares, both from status.bindings. The orchestrator writes one entry there per effective
// resource: spec.resources merged with the resources of the Score document, whether the
// document is inline or in a ConfigMap, which the registry cannot read. spec.resources alone
// misses every resource the document declares; counting the bound ones in status and the
// declared ones in spec would also mix two generations. Both numbers describe the generation
// in status.observedGeneration, like every other status column.
func bindingCounts(w *score.Workload) (bound, declared int) {
	for _, b := range w.Status.Bindings {
		if b.Phase == score.BindingPhaseBound {
			bound++
		}
	}
	return bound, len(w.Status.Bindings)
}

// conditionStatus is the condition's status, with its reason when it is not True.
func conditionStatus(w *score.Workload, condType string) string {
	c := meta.FindStatusCondition(w.Status.Conditions, condType)
	if c == nil {
		return "Unknown"
	}
	if c.Status != "True" && c.Reason != "" {
		return string(c.Status) + " (" + c.Reason + ")"
	}
	return string(c.Status)
}
