// Package approval is the governance flow plinth-apiserver enforces for ManagedVMs: every
// create, modify and delete (and, per ApprovalPolicy, start, stop and restart) becomes an
// ApprovalTicket, an AuditLog record and a DomainEvent instead of taking effect; approvers
// decide through the tickets' approval subresource; on approval the flow allocates the VM's
// instance number, records a VMRevision and hands the VM to a runtime.
//
// It runs inside the server, on the registry's stores, so no client can skip it: the
// ManagedVM REST calls it for every write, and the records it writes have no write verbs at
// all in the API. Writes that span several objects are ordered so that a failure leaves
// nothing half-done for the tenant: the VM change and its ticket are undone together.
package approval

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	"github.com/plinth-dev/plinth/pkg/governance/policy"
)

// Stores are the registry stores the flow reads and writes. The *Status stores write status
// only (their strategy keeps spec and metadata).
type Stores struct {
	Systems       *genericregistry.Store
	Services      *genericregistry.Store
	ServiceStatus *genericregistry.Store
	VMs           *genericregistry.Store
	VMStatus      *genericregistry.Store
	Revisions     *genericregistry.Store
	Tickets       *genericregistry.Store
	TicketStatus  *genericregistry.Store
	Policies      *genericregistry.Store
	AuditLogs     *genericregistry.Store
	Events        *genericregistry.Store
	// Clusters are the target clusters approvers place VMs on (read only: their status).
	Clusters *genericregistry.Store
	// Adoptions are the VMs found on clusters without a ManagedVM.
	Adoptions *genericregistry.Store
}

// Flow carries out the approval flow.
type Flow struct {
	stores Stores
	authz  authorizer.Authorizer
	now    func() time.Time
	// runtimeUsers are the identities of the VM runtime (plinth-controller): only they may
	// add or remove the runtime's finalizer.
	runtimeUsers sets.Set[string]
}

// New returns the flow over stores; authz answers whether a user may approve; runtimeUsers
// are the VM runtime's identities.
func New(stores Stores, authz authorizer.Authorizer, runtimeUsers []string) *Flow {
	return &Flow{stores: stores, authz: authz, now: time.Now, runtimeUsers: sets.New(runtimeUsers...)}
}

// isRuntime reports whether the request comes from the VM runtime.
func (f *Flow) isRuntime(ctx context.Context) bool { return f.runtimeUsers.Has(userName(ctx)) }

// requester is who asks for a change of vm, and the platform identity that submitted it for
// them: the request's user, unless plinth-controller (a runtime identity) writes the VM for the
// user its annotation names — the last writer of the Workload's or TenantCompute's spec, as the
// server recorded it. Only a runtime identity may name someone else (forbidPlatformFields
// refuses the annotation from anyone else), and it stays visible as the submitter.
func (f *Flow) requester(ctx context.Context, vm *governance.ManagedVM) (requester, submitter string) {
	user := userName(ctx)
	if onBehalfOf := vm.Annotations[v1alpha1.AnnotationOnBehalfOf]; onBehalfOf != "" && onBehalfOf != user && f.isRuntime(ctx) {
		return onBehalfOf, user
	}
	return user, ""
}

var (
	vmResource     = governance.Resource("managedvms")
	ticketResource = governance.Resource("approvaltickets")
)

// mutationKey carries, from the flow to the ManagedVM strategy, the changes the flow makes to
// a VM's status in the same write as its spec. The generic strategy keeps the stored status
// on main-resource writes; the hook re-applies the flow's changes after it.
type mutationKey struct{}

func withMutation(ctx context.Context, fn func(*governance.ManagedVM)) context.Context {
	return context.WithValue(ctx, mutationKey{}, fn)
}

// ApplyMutation applies the flow's changes for this write, if any. The ManagedVM strategy
// calls it from PrepareForCreate and PrepareForUpdate.
func ApplyMutation(ctx context.Context, vm *governance.ManagedVM) {
	if fn, ok := ctx.Value(mutationKey{}).(func(*governance.ManagedVM)); ok && fn != nil {
		fn(vm)
	}
}

func inNamespace(ctx context.Context, namespace string) context.Context {
	return genericapirequest.WithNamespace(ctx, namespace)
}

func userName(ctx context.Context) string {
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		return u.GetName()
	}
	return ""
}

func isDryRun(dryRun []string) bool { return len(dryRun) > 0 }

// dryRunKey marks a request whose writes are all dry runs: the stores run every check
// (validation, preconditions, conflicts) and persist nothing. It travels in the context, as
// the namespace and the user do, so that every write the flow makes for one request, however
// deep in the flow, is dry alike; createOptions, updateOptions and deleteOptions are the only
// readers, and every write of the flow takes its options from them.
type dryRunKey struct{}

// withDryRun returns ctx in which the flow's writes are dry runs when dryRun asks for one.
func withDryRun(ctx context.Context, dryRun []string) context.Context {
	if !isDryRun(dryRun) {
		return ctx
	}
	return context.WithValue(ctx, dryRunKey{}, true)
}

// dryRun is the dryRun option of the flow's writes for the request of ctx.
func dryRun(ctx context.Context) []string {
	if dry, _ := ctx.Value(dryRunKey{}).(bool); dry {
		return []string{metav1.DryRunAll}
	}
	return nil
}

func createOptions(ctx context.Context) *metav1.CreateOptions {
	return &metav1.CreateOptions{DryRun: dryRun(ctx)}
}

func updateOptions(ctx context.Context) *metav1.UpdateOptions {
	return &metav1.UpdateOptions{DryRun: dryRun(ctx)}
}

func deleteOptions(ctx context.Context) *metav1.DeleteOptions {
	return &metav1.DeleteOptions{DryRun: dryRun(ctx)}
}

// matchURLName makes a subresource body's metadata.name the name in the request's URL, as
// kube-apiserver's pods/eviction requires, so that admission judges the object the flow acts
// on: a body that names another object is refused, an unnamed one is given the URL's name.
func matchURLName(kind string, body *metav1.ObjectMeta, name string) error {
	if body.Name != "" && body.Name != name {
		return apierrors.NewBadRequest(fmt.Sprintf("The %s's metadata.name %q differs from the name %q in the request URL.", kind, body.Name, name))
	}
	body.Name = name
	return nil
}

// admit runs validating admission (webhooks and ValidatingAdmissionPolicies) on the body of a
// subresource request, before the flow acts on it, as kube-apiserver's pods/eviction does: a
// subresource the flow carries out is a write like any other and admission must see it. It
// gets a copy, since admission may not change the request.
func admit(ctx context.Context, createValidation rest.ValidateObjectFunc, body runtime.Object) error {
	if createValidation == nil {
		return nil
	}
	return createValidation(ctx, body.DeepCopyObject())
}

// lineage returns the VM's service and system, or the error that names the missing one.
func (f *Flow) lineage(ctx context.Context, namespace, vmName, serviceName string) (*governance.SystemService, *governance.System, error) {
	obj, err := f.stores.Services.Get(inNamespace(ctx, namespace), serviceName, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, apperror.New(apperror.ServiceNotFound, vmResource, vmName, apperror.Params{"service": serviceName, "namespace": namespace},
			"SystemService %q does not exist in namespace %q.", serviceName, namespace)
	}
	if err != nil {
		return nil, nil, err
	}
	svc := obj.(*governance.SystemService)
	obj, err = f.stores.Systems.Get(inNamespace(ctx, namespace), svc.Spec.SystemRef.Name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, apperror.New(apperror.SystemNotFound, vmResource, vmName, apperror.Params{"system": svc.Spec.SystemRef.Name, "namespace": namespace},
			"System %q does not exist in namespace %q.", svc.Spec.SystemRef.Name, namespace)
	}
	if err != nil {
		return nil, nil, err
	}
	return svc, obj.(*governance.System), nil
}

func (f *Flow) policies(ctx context.Context) ([]governance.ApprovalPolicy, error) {
	obj, err := f.stores.Policies.List(inNamespace(ctx, ""), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*governance.ApprovalPolicyList).Items, nil
}

func (f *Flow) requirement(ctx context.Context, env governance.Environment, op governance.Operation) (policy.Requirement, error) {
	policies, err := f.policies(ctx)
	if err != nil {
		return policy.Requirement{}, err
	}
	return policy.For(policies, env, op), nil
}

func (f *Flow) getVM(ctx context.Context, namespace, name string) (*governance.ManagedVM, error) {
	obj, err := f.stores.VMs.Get(inNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apperror.New(apperror.VMNotFound, vmResource, name, apperror.Params{"vm": name, "namespace": namespace},
			"ManagedVM %q does not exist in namespace %q.", name, namespace)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*governance.ManagedVM), nil
}

// update changes one object of store by fn, applied to the current stored version; the store
// retries fn on conflicts, so fn sees every concurrent change and its checks hold atomically.
func update(ctx context.Context, store *genericregistry.Store, namespace, name string, fn func(obj runtime.Object) error) (runtime.Object, error) {
	obj, _, err := store.Update(inNamespace(ctx, namespace), name,
		rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			obj := old.DeepCopyObject()
			if err := fn(obj); err != nil {
				return nil, err
			}
			return obj, nil
		}),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, updateOptions(ctx))
	return obj, err
}

// updateVM changes a VM's spec, metadata and status in one write. fn must be idempotent: it
// runs on the stored object and again after the strategy restored the stored status.
func (f *Flow) updateVM(ctx context.Context, namespace, name string, fn func(vm *governance.ManagedVM)) (*governance.ManagedVM, error) {
	obj, err := update(withMutation(ctx, fn), f.stores.VMs, namespace, name, func(obj runtime.Object) error {
		fn(obj.(*governance.ManagedVM))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obj.(*governance.ManagedVM), nil
}

func vmTarget(vm *governance.ManagedVM) governance.TargetReference {
	return governance.TargetReference{Kind: "ManagedVM", Namespace: vm.Namespace, Name: vm.Name}
}

func setCondition(vm *governance.ManagedVM, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&vm.Status.Conditions, metav1.Condition{
		Type: "Approved", Status: status, Reason: reason, Message: message, ObservedGeneration: vm.Generation,
	})
}
