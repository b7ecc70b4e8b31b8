// Package pendingadoption is the REST storage of governance.plinth.dev PendingAdoptions.
package pendingadoption

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/governance/approval"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the PendingAdoption's validation.
var Definition = strategy.Definition[*governance.PendingAdoption]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidatePendingAdoption,
	ValidateUpdate:       validation.ValidatePendingAdoptionUpdate,
	ValidateStatusUpdate: validation.ValidatePendingAdoptionStatusUpdate,
}

// NewREST returns the pendingadoptions resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*governance.PendingAdoption]{
		Resource:    governance.Resource("pendingadoptions"),
		Singular:    "pendingadoption",
		NewFunc:     func() *governance.PendingAdoption { return &governance.PendingAdoption{} },
		NewListFunc: func() runtime.Object { return &governance.PendingAdoptionList{} },
		Definition:  Definition,
		Table:       Table,
		Categories:  []string{"governance"},
	})
}

// Table prints CLUSTER, VM, SERVICE and INSTANCE.
var Table = table.New([]table.Column{
	{Name: "Cluster", Type: "string", Description: "The cluster the VM runs on."},
	{Name: "VM", Type: "string", Description: "The VirtualMachine's name on the cluster."},
	{Name: "Service", Type: "string", Description: "The SystemService its labels point at."},
	{Name: "Instance", Type: "integer", Description: "The instance number from its labels."},
}, func(p *governance.PendingAdoption) []interface{} {
	return []interface{}{p.Spec.Cluster, p.Spec.VMName, p.Spec.SystemServiceRef.Name, int64(p.Spec.Instance)}
})

// AdoptREST is the adopt subresource: an administrator POSTs an AdoptionRequest and gets the
// new ManagedVM.
type AdoptREST struct {
	flow *approval.Flow
}

var _ rest.NamedCreater = &AdoptREST{}

// NewAdoptREST returns the adopt subresource.
func NewAdoptREST(flow *approval.Flow) *AdoptREST { return &AdoptREST{flow: flow} }

// New allocates the request body.
func (r *AdoptREST) New() runtime.Object { return &governance.AdoptionRequest{} }

// Destroy does nothing: the pendingadoptions resource owns the storage.
func (r *AdoptREST) Destroy() {}

// Create adopts the candidate name, after validating admission has seen the request; a dry
// run answers with the ManagedVM it would create and changes nothing.
func (r *AdoptREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.flow.Adopt(ctx, name, obj.(*governance.AdoptionRequest), createValidation, options)
}
