// Package computeprovider is the REST storage of compute.plinth.dev ComputeProviders: one
// cluster-scoped object per registered provider, written by the controller that serves it.
package computeprovider

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/compute/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the ComputeProvider's validation for the generic strategies.
var Definition = strategy.Definition[*compute.ComputeProvider]{
	NamespaceScoped:      false,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateComputeProvider,
	ValidateUpdate:       validation.ValidateComputeProviderUpdate,
	ValidateStatusUpdate: validation.ValidateComputeProviderStatusUpdate,
}

// NewREST returns the computeproviders resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*compute.ComputeProvider]{
		Resource:    compute.Resource("computeproviders"),
		Singular:    "computeprovider",
		NewFunc:     func() *compute.ComputeProvider { return &compute.ComputeProvider{} },
		NewListFunc: func() runtime.Object { return &compute.ComputeProviderList{} },
		Definition:  Definition,
		Table:       Table,
		ShortNames:  []string{"cprov"},
		Categories:  []string{"plinth"},
	})
}

// Table prints CONTROLLER, READY and SECRET-SOURCES.
var Table = table.New([]table.Column{
	{Name: "Controller", Type: "string", Description: "The controller that serves the provider."},
	{Name: "Ready", Type: "string", Description: "Whether the provider's controller serves it: the Ready condition's status."},
	{Name: "Secret-Sources", Type: "string", Description: "The secret sources the provider resolves."},
}, func(p *compute.ComputeProvider) []interface{} {
	ready := string(metav1.ConditionUnknown)
	if c := meta.FindStatusCondition(p.Status.Conditions, compute.ConditionProviderReady); c != nil {
		ready = string(c.Status)
	}
	return []interface{}{p.Spec.Controller, ready, table.OrNone(strings.Join(p.Status.SupportedSecretSources, ","))}
})
