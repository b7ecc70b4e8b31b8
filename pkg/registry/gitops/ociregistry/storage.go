// Package ociregistry is the REST storage of gitops.plinth.dev OCIRegistries: the registries
// plinth-controller runs on localhost.
package ociregistry

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the OCIRegistry's validation for the generic strategies. A new registry starts
// NotProvisioned: stored, not yet started by plinth-controller.
var Definition = strategy.Definition[*gitops.OCIRegistry]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateOCIRegistry,
	ValidateUpdate:       validation.ValidateOCIRegistryUpdate,
	ValidateStatusUpdate: validation.ValidateOCIRegistryStatusUpdate,
	PrepareForCreate: func(_ context.Context, r *gitops.OCIRegistry) {
		r.Status.Phase = gitops.RegistryPhaseNotProvisioned
	},
}

// NewREST returns the ociregistries resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*gitops.OCIRegistry]{
		Resource:         gitops.Resource("ociregistries"),
		Singular:         "ociregistry",
		NewFunc:          func() *gitops.OCIRegistry { return &gitops.OCIRegistry{} },
		NewListFunc:      func() runtime.Object { return &gitops.OCIRegistryList{} },
		Definition:       Definition,
		SelectableFields: SelectableFields,
		Table:            Table,
		ShortNames:       []string{"ocireg"},
		Categories:       []string{"plinth", "gitops"},
	})
}

// SelectableFields are the fields beyond metadata that list and watch select on, as
// v1alpha1.FieldSelectors registers them.
func SelectableFields(r *gitops.OCIRegistry) fields.Set {
	return fields.Set{"status.phase": string(r.Status.Phase)}
}

// Table prints ENDPOINT, PHASE and KEEP.
var Table = table.New([]table.Column{
	{Name: "Endpoint", Type: "string", Description: "Where the registry listens: localhost:<port>."},
	{Name: "Phase", Type: "string", Description: "NotProvisioned, Provisioning, Running or Error."},
	{Name: "Keep", Type: "string", Description: "How many versions each repository keeps; all when unlimited."},
}, func(r *gitops.OCIRegistry) []interface{} {
	keep := "all"
	if r.Spec.Retention != nil && r.Spec.Retention.KeepVersions > 0 {
		keep = strconv.Itoa(int(r.Spec.Retention.KeepVersions))
	}
	return []interface{}{r.Spec.Endpoint, table.OrNone(string(r.Status.Phase)), keep}
})
