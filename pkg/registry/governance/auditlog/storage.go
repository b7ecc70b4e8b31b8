// Package auditlog is the REST storage of governance.plinth.dev AuditLogs: immutable records
// that only the approval flow writes; clients can get, list and watch them.
package auditlog

import (
	"slices"
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

// Definition refuses every update: records are immutable.
var Definition = strategy.Definition[*governance.AuditLog]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             func(a *governance.AuditLog) field.ErrorList { return validation.ValidateRecordMeta(a) },
	ValidateUpdate:       func(a, old *governance.AuditLog) field.ErrorList { return validation.ValidateImmutableRecord(a, old) },
	ValidateStatusUpdate: func(a, old *governance.AuditLog) field.ErrorList { return validation.ValidateImmutableRecord(a, old) },
}

// NewREST returns the auditlogs storage; clients reach it through store.ReadOnly.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, error) {
	main, _, err := store.New(scheme, optsGetter, store.Options[*governance.AuditLog]{
		Resource:    governance.Resource("auditlogs"),
		Singular:    "auditlog",
		NewFunc:     func() *governance.AuditLog { return &governance.AuditLog{} },
		NewListFunc: func() runtime.Object { return &governance.AuditLogList{} },
		Definition:  Definition,
		SelectableFields: func(a *governance.AuditLog) fields.Set {
			return fields.Set{"spec.actor": a.Spec.Actor, "spec.action": a.Spec.Action, "spec.target.name": a.Spec.Target.Name}
		},
		Table:      Table,
		ShortNames: []string{"audit"},
		Categories: []string{"governance"},
	})
	return main, err
}

// Table prints TIME, ACTOR, ACTION, TARGET and DETAILS.
var Table = table.New([]table.Column{
	{Name: "Time", Type: "string", Description: "When the action happened."},
	{Name: "Actor", Type: "string", Description: "Who acted."},
	{Name: "Action", Type: "string", Description: "The canonical action."},
	{Name: "Target", Type: "string", Description: "The object acted on."},
	{Name: "Details", Type: "string", Description: "Action-specific facts.", Wide: true},
}, func(a *governance.AuditLog) []interface{} {
	var details []string
	for _, k := range sortedKeys(a.Spec.Details) {
		details = append(details, k+"="+a.Spec.Details[k])
	}
	return []interface{}{
		a.Spec.Time.UTC().Format("2006-01-02T15:04:05Z"), a.Spec.Actor, a.Spec.Action,
		strings.ToLower(a.Spec.Target.Kind) + "/" + a.Spec.Target.Name, table.OrNone(strings.Join(details, ",")),
	}
})

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
