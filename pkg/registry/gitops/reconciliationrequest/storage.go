// Package reconciliationrequest is the REST storage of gitops.plinth.dev
// ReconciliationRequests: records of "reconcile now" that plinth-controller carries out.
package reconciliationrequest

import (
	"context"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the ReconciliationRequest's validation for the generic strategies. A new
// request starts Pending, and is requested now unless the client said when: the server's
// clock, not the client's, is what the targets' reconcile annotation carries; a time the client
// set must be within validation.MaxRequestedAtSkew of the server's.
var Definition = strategy.Definition[*gitops.ReconciliationRequest]{
	NamespaceScoped: true,
	APIVersions:     []string{v1alpha1.SchemeGroupVersion.String()},
	Validate: func(r *gitops.ReconciliationRequest) field.ErrorList {
		return validation.ValidateReconciliationRequest(r, time.Now())
	},
	ValidateUpdate:       validation.ValidateReconciliationRequestUpdate,
	ValidateStatusUpdate: validation.ValidateReconciliationRequestStatusUpdate,
	PrepareForCreate: func(_ context.Context, r *gitops.ReconciliationRequest) {
		r.Status.Phase = gitops.ReconciliationPending
		if r.Spec.RequestedAt == nil || r.Spec.RequestedAt.IsZero() {
			now := metav1.NewMicroTime(time.Now())
			r.Spec.RequestedAt = &now
		}
	},
}

// NewREST returns the reconciliationrequests resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*gitops.ReconciliationRequest]{
		Resource:         gitops.Resource("reconciliationrequests"),
		Singular:         "reconciliationrequest",
		NewFunc:          func() *gitops.ReconciliationRequest { return &gitops.ReconciliationRequest{} },
		NewListFunc:      func() runtime.Object { return &gitops.ReconciliationRequestList{} },
		Definition:       Definition,
		SelectableFields: SelectableFields,
		Table:            Table,
		ShortNames:       []string{"recreq"},
		Categories:       []string{"plinth", "gitops"},
	})
}

// SelectableFields are the fields beyond metadata that list and watch select on, as
// v1alpha1.FieldSelectors registers them.
func SelectableFields(r *gitops.ReconciliationRequest) fields.Set {
	return fields.Set{
		"spec.mode":    string(r.Spec.Mode),
		"status.phase": string(r.Status.Phase),
	}
}

// Table prints MODE, PHASE, TARGETS and REQUESTED.
var Table = table.New([]table.Column{
	{Name: "Mode", Type: "string", Description: "Manual (a person asked) or Automatic (plinth-controller asked after a push)."},
	{Name: "Phase", Type: "string", Description: "Pending, InProgress, Succeeded or Failed."},
	{Name: "Targets", Type: "string", Description: "Targets that handled the request, of all targets."},
	{Name: "Requested", Type: "date", Description: "When the reconciliation was asked."},
}, func(r *gitops.ReconciliationRequest) []interface{} {
	handled := 0
	for _, t := range r.Status.Targets {
		if t.HandledAt != nil {
			handled++
		}
	}
	requested := "<unknown>"
	if at := r.Spec.RequestedAt; at != nil && !at.IsZero() {
		// As kubectl prints AGE: how long ago.
		requested = duration.HumanDuration(time.Since(at.Time))
	}
	return []interface{}{string(r.Spec.Mode), table.OrNone(string(r.Status.Phase)),
		strconv.Itoa(handled) + "/" + strconv.Itoa(len(r.Spec.Targets)), requested}
})
