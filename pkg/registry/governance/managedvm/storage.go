// Package managedvm is the REST storage of governance.plinth.dev ManagedVMs. Its writes go
// through the approval flow; its status subresource is for the platform's runtime.
package managedvm

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
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

// Definition is the ManagedVM's validation; the approval flow's status changes are applied in
// the same write as the spec they belong to.
var Definition = strategy.Definition[*governance.ManagedVM]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateManagedVM,
	ValidateUpdate:       validation.ValidateManagedVMUpdate,
	ValidateStatusUpdate: validation.ValidateManagedVMStatusUpdate,
	PrepareForCreate:     func(ctx context.Context, vm *governance.ManagedVM) { approval.ApplyMutation(ctx, vm) },
	PrepareForUpdate:     func(ctx context.Context, vm, _ *governance.ManagedVM) { approval.ApplyMutation(ctx, vm) },
}

// NewREST returns the managedvms storage and its status subresource; Governed wraps the
// storage's writes in the approval flow once the flow exists.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*governance.ManagedVM]{
		Resource:    governance.Resource("managedvms"),
		Singular:    "managedvm",
		NewFunc:     func() *governance.ManagedVM { return &governance.ManagedVM{} },
		NewListFunc: func() runtime.Object { return &governance.ManagedVMList{} },
		Definition:  Definition,
		SelectableFields: func(vm *governance.ManagedVM) fields.Set {
			return fields.Set{"spec.systemServiceRef.name": vm.Spec.SystemServiceRef.Name, "status.phase": string(vm.Status.Phase)}
		},
		Table:      Table,
		ShortNames: []string{"mvm"},
		Categories: []string{"governance"},
	})
}

// Governed is the managedvms resource as clients see it: every write goes through flow.
func Governed(main *store.REST, flow *approval.Flow) *store.GuardedREST {
	return store.Guarded(main, store.Writes{
		Create: func(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
			return flow.CreateVM(ctx, obj.(*governance.ManagedVM), createValidation, options)
		},
		Update: func(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
			updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
			return flow.UpdateVM(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
		},
		Delete: flow.DeleteVM,
	})
}

// Table prints SERVICE, PHASE, INSTANCE, PENDING and TICKET.
var Table = table.New([]table.Column{
	{Name: "Service", Type: "string", Description: "The SystemService the VM belongs to."},
	{Name: "Phase", Type: "string", Description: "The VM's lifecycle phase."},
	{Name: "Instance", Type: "string", Description: "The VM's instance name, once its creation is approved."},
	{Name: "Pending", Type: "string", Description: "The operation waiting for approval."},
	{Name: "Ticket", Type: "string", Description: "The VM's most recent ApprovalTicket."},
	{Name: "Revision", Type: "integer", Description: "The approved revision.", Wide: true},
	{Name: "Cluster", Type: "string", Description: "The target cluster.", Wide: true},
}, func(vm *governance.ManagedVM) []interface{} {
	pending := ""
	if p := vm.Status.PendingApproval; p != nil {
		pending = fmt.Sprint(p.Operation)
	}
	return []interface{}{
		vm.Spec.SystemServiceRef.Name, table.OrNone(string(vm.Status.Phase)), table.OrNone(vm.Status.InstanceName),
		table.OrNone(pending), table.OrNone(vm.Status.LastTicket), vm.Status.ApprovedRevision, table.OrNone(vm.Status.Cluster),
	}
})
