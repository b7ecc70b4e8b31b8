package tenantcompute

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/registry/compute/tenantidclaim"
	"github.com/plinth-dev/plinth/pkg/registry/store"
)

// releaseTimeout bounds the clean-up writes that run after a request has been answered or
// has failed; a claim left behind is taken over once stale.
const releaseTimeout = 10 * time.Second

// REST is the tenantcomputes resource: the generic storage, with creates that claim
// spec.tenantID first and deletes that free it.
type REST struct {
	*store.REST
	claims *tenantidclaim.Store
}

// Destroy releases the TenantComputes' and the claims' storage.
func (r *REST) Destroy() {
	r.REST.Destroy()
	r.claims.Destroy()
}

// Create stores a TenantCompute whose tenant ID no other TenantCompute holds. The claim is
// written after every other check of the request has passed (strategy validation and
// validating admission), so a refused request leaves none; when the store then fails, the
// claim is released again.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	c := &claimer{rest: r, dryRun: dryrun.IsDryRun(options.DryRun)}
	out, err := r.REST.Create(ctx, obj, c.validate(createValidation), options)
	c.finish(ctx, err == nil)
	return out, err
}

// Update changes a TenantCompute. A server-side apply that creates one (forceAllowCreate)
// claims its tenant ID as Create does; an update cannot change the ID (validation refuses it).
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	c := &claimer{rest: r, dryRun: dryrun.IsDryRun(options.DryRun)}
	out, created, err := r.REST.Update(ctx, name, objInfo, c.validate(createValidation), updateValidation, forceAllowCreate, options)
	c.finish(ctx, err == nil && created)
	return out, created, err
}

// afterDelete frees the tenant ID of a TenantCompute that is gone: deleted without
// finalizers, or when the last finalizer was removed.
func (r *REST) afterDelete(obj runtime.Object, options *metav1.DeleteOptions) {
	if options != nil && dryrun.IsDryRun(options.DryRun) {
		return
	}
	tc, ok := obj.(*compute.TenantCompute)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := r.claims.ReleaseHeld(ctx, tc.Spec.TenantID, tc.UID); err != nil {
		// The claim names a holder that no longer exists: it is taken over once stale.
		klog.ErrorS(err, "Releasing the tenant ID of a deleted TenantCompute", "tenantCompute", klog.KObj(tc), "tenantID", tc.Spec.TenantID)
	}
}

// holderUID reads the TenantCompute namespace/name from storage.
func (r *REST) holderUID(ctx context.Context, namespace, name string) (types.UID, bool, error) {
	obj, err := r.REST.Store.Get(request.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return obj.(*compute.TenantCompute).UID, true, nil
}

// claimer claims the tenant ID of one create request.
type claimer struct {
	rest   *REST
	dryRun bool
	// claim is the claim this request wrote, until the object is stored or the claim is
	// released.
	claim *compute.TenantIDClaim
}

// validate runs the request's own checks, then claims the tenant ID. The store calls it with
// the object as it will be stored, UID included; an update that creates may call it more than
// once (each storage retry makes a new UID), and each call replaces the previous claim.
func (c *claimer) validate(next rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		if next != nil {
			if err := next(ctx, obj); err != nil {
				return err
			}
		}
		tc, ok := obj.(*compute.TenantCompute)
		if !ok {
			return apierrors.NewInternalError(fmt.Errorf("unexpected object type %T", obj))
		}
		c.release(ctx)
		claim, err := c.rest.claims.Claim(ctx, tc.Spec.TenantID,
			tenantidclaim.Holder{Namespace: tc.Namespace, Name: tc.Name, UID: tc.UID}, c.rest.holderUID, c.dryRun)
		var held *tenantidclaim.HeldError
		if errors.As(err, &held) {
			return heldError(tc, held)
		}
		if err != nil {
			return err
		}
		c.claim = claim
		return nil
	}
}

// finish releases the claim when the object was not stored.
func (c *claimer) finish(ctx context.Context, stored bool) {
	if !stored {
		c.release(ctx)
	}
}

func (c *claimer) release(ctx context.Context) {
	if c.claim == nil {
		return
	}
	// The request may have been cancelled; the clean-up must still run.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := c.rest.claims.Release(ctx, c.claim); err != nil {
		klog.ErrorS(err, "Releasing the claim of a TenantCompute that was not stored", "tenantID", c.claim.Name)
	}
	c.claim = nil
}

// heldError is the 409 a create gets when another TenantCompute holds its tenant ID: reason
// AlreadyExists (the ID exists), with the cause on spec.tenantID. Not reason Conflict: kubectl
// apply --server-side reads a Conflict as a field-manager conflict and advises
// --force-conflicts, which cannot help. It names the holder only within the requester's
// namespace: tenants of other namespaces learn that the ID is taken, not who took it.
func heldError(tc *compute.TenantCompute, held *tenantidclaim.HeldError) error {
	if !held.InFlight && held.Holder.Namespace == tc.Namespace && held.Holder.Name == tc.Name {
		// The object itself exists: the usual answer to creating it twice.
		return apierrors.NewAlreadyExists(compute.Resource("tenantcomputes"), tc.Name)
	}
	var detail string
	switch {
	case held.InFlight:
		detail = "another TenantCompute with this tenant ID is being created; tenant IDs are unique across the cluster"
	case held.Holder.Namespace == tc.Namespace:
		detail = fmt.Sprintf("the tenant ID is already used by TenantCompute %s in this namespace; tenant IDs are unique across the cluster", held.Holder.Name)
	default:
		detail = "the tenant ID is already used by a TenantCompute in another namespace; tenant IDs are unique across the cluster"
	}
	fe := field.Duplicate(field.NewPath("spec", "tenantID"), tc.Spec.TenantID)
	fe.Detail = detail
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusConflict,
		Reason:  metav1.StatusReasonAlreadyExists,
		Message: fmt.Sprintf("TenantCompute %q cannot be created: %s", tc.Name, fe.Error()),
		Details: &metav1.StatusDetails{
			Group: compute.GroupName, Kind: "tenantcomputes", Name: tc.Name,
			Causes: []metav1.StatusCause{{Type: metav1.CauseType(fe.Type), Field: fe.Field, Message: fe.ErrorBody()}},
		},
	}}
}
