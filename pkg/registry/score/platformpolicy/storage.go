// Package platformpolicy is the REST storage of score.dev PlatformPolicies.
package platformpolicy

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/apis/score/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the PlatformPolicy's validation for the generic strategies.
var Definition = strategy.Definition[*score.PlatformPolicy]{
	NamespaceScoped:      false,
	APIVersions:          []string{v1b1.SchemeGroupVersion.String()},
	Validate:             validation.ValidatePlatformPolicy,
	ValidateUpdate:       validation.ValidatePlatformPolicyUpdate,
	ValidateStatusUpdate: validation.ValidatePlatformPolicyStatusUpdate,
}

// NewREST returns the platformpolicies resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*score.PlatformPolicy]{
		Resource:    score.Resource("platformpolicies"),
		Singular:    "platformpolicy",
		NewFunc:     func() *score.PlatformPolicy { return &score.PlatformPolicy{} },
		NewListFunc: func() runtime.Object { return &score.PlatformPolicyList{} },
		Definition:  Definition,
		Table:       Table,
		ShortNames:  []string{"pp"},
		Categories:  []string{"score"},
	})
}

// Table prints PRIORITY.
var Table = table.New([]table.Column{
	{Name: "Priority", Type: "integer", Description: "Higher priority policies apply first."},
}, func(p *score.PlatformPolicy) []interface{} {
	return []interface{}{int64(p.Spec.Priority)}
})
