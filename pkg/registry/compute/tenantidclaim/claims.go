// Package tenantidclaim keeps a TenantCompute's spec.tenantID unique across the cluster. Each
// tenant ID in use has one TenantIDClaim, named after the ID and naming the TenantCompute that
// holds it; the claim is written with etcd's create-if-absent before the TenantCompute is
// stored, so of any number of concurrent creates (on any number of plinth-apiserver replicas)
// exactly one gets the ID. Claims are storage only: never served, never listed or watched.
package tenantidclaim

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/apis/compute/validation"
)

// StaleAfter is how old a claim whose holder does not exist must be before another
// TenantCompute may take it over. A younger one belongs to a create in flight (the claim is
// written just before the TenantCompute); an older one was left by a server that stopped
// between the two writes, or by a delete whose clean-up failed. It is longer than any request
// may take (the generic server's request timeout is 60 s): a slow create must never lose its
// claim while it is still writing, or two TenantComputes would hold one ID.
const StaleAfter = 2 * time.Minute

// maxAttempts bounds how often Claim re-reads a claim that others keep changing under it.
const maxAttempts = 3

// Holder identifies the TenantCompute that holds, or asks for, a tenant ID.
type Holder struct {
	Namespace, Name string
	UID             types.UID
}

// Lookup returns the UID of the TenantCompute namespace/name, or found false when there is
// none. It must read from storage, not from a cache.
type Lookup func(ctx context.Context, namespace, name string) (uid types.UID, found bool, err error)

// HeldError says that a tenant ID is held by another TenantCompute.
type HeldError struct {
	TenantID string
	// Holder is the TenantCompute holding the ID; empty when InFlight is set and others kept
	// changing the claim.
	Holder Holder
	// InFlight is set when the holder does not exist yet: another create is in progress.
	InFlight bool
}

func (e *HeldError) Error() string {
	if e.InFlight {
		return fmt.Sprintf("tenant ID %q is being claimed by another create in progress", e.TenantID)
	}
	return fmt.Sprintf("tenant ID %q is held by TenantCompute %s/%s", e.TenantID, e.Holder.Namespace, e.Holder.Name)
}

// Store reads and writes TenantIDClaims.
type Store struct {
	store *genericregistry.Store
	// staleAfter is StaleAfter; tests shorten it.
	staleAfter time.Duration
}

// New returns the claims' storage, a cluster-scoped resource tenantidclaims.compute.plinth.dev
// that the server never installs.
func New(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*Store, error) {
	strategy := claimStrategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator}
	s := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &compute.TenantIDClaim{} },
		NewListFunc:               func() runtime.Object { return &compute.TenantIDClaimList{} },
		DefaultQualifiedResource:  compute.Resource("tenantidclaims"),
		SingularQualifiedResource: compute.Resource("tenantidclaim"),
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(compute.Resource("tenantidclaims")),
	}
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: uncached{optsGetter}}); err != nil {
		return nil, err
	}
	return &Store{store: s, staleAfter: StaleAfter}, nil
}

// Destroy releases the storage.
func (s *Store) Destroy() { s.store.Destroy() }

// uncached gives the claims storage without a watch cache: nobody lists or watches claims,
// and every decision reads etcd itself.
type uncached struct{ generic.RESTOptionsGetter }

func (u uncached) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := u.RESTOptionsGetter.GetRESTOptions(resource, example)
	opts.Decorator = generic.UndecoratedStorage
	return opts, err
}

// Claim makes h the holder of tenantID and returns the claim written. When another
// TenantCompute holds the ID it returns a *HeldError: the holder exists with the claim's UID,
// or the claim is younger than StaleAfter (a create in flight). An older claim whose holder is
// gone is taken over: deleted with a resourceVersion precondition and created anew, so that
// etcd decides between concurrent takers. With dryRun Claim only checks: it writes nothing and
// returns a nil claim.
func (s *Store) Claim(ctx context.Context, tenantID string, h Holder, lookup Lookup, dryRun bool) (*compute.TenantIDClaim, error) {
	ctx = genericapirequest.WithNamespace(ctx, "")
	want := &compute.TenantIDClaim{ObjectMeta: metav1.ObjectMeta{Name: tenantID},
		HolderNamespace: h.Namespace, HolderName: h.Name, HolderUID: string(h.UID)}
	for range maxAttempts {
		if !dryRun {
			out, err := s.store.Create(ctx, want.DeepCopy(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			if err == nil {
				return out.(*compute.TenantIDClaim), nil
			}
			if !apierrors.IsAlreadyExists(err) {
				return nil, err
			}
		}
		existing, err := s.get(ctx, tenantID)
		if apierrors.IsNotFound(err) {
			if dryRun {
				return nil, nil
			}
			continue // released since: create again
		}
		if err != nil {
			return nil, err
		}
		if err := s.held(ctx, existing, lookup); err != nil {
			return nil, err
		}
		if dryRun {
			return nil, nil // stale: a real create would take it over
		}
		uid, rv := existing.UID, existing.ResourceVersion
		_, _, err = s.store.Delete(ctx, tenantID, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, err
		}
		// Deleted, or changed by another taker: either way the next create decides.
	}
	return nil, &HeldError{TenantID: tenantID, InFlight: true}
}

// held returns a *HeldError unless the claim is stale: its holder is gone (or is another
// object of the same name) and the claim is older than StaleAfter.
func (s *Store) held(ctx context.Context, c *compute.TenantIDClaim, lookup Lookup) error {
	holder := Holder{Namespace: c.HolderNamespace, Name: c.HolderName, UID: types.UID(c.HolderUID)}
	uid, found, err := lookup(ctx, c.HolderNamespace, c.HolderName)
	if err != nil {
		return err
	}
	if found && uid == holder.UID {
		return &HeldError{TenantID: c.Name, Holder: holder}
	}
	if time.Since(c.CreationTimestamp.Time) < s.staleAfter {
		return &HeldError{TenantID: c.Name, Holder: holder, InFlight: true}
	}
	return nil
}

// Release deletes a claim this server wrote, unless it has been replaced since.
func (s *Store) Release(ctx context.Context, c *compute.TenantIDClaim) error {
	uid := c.UID
	_, _, err := s.store.Delete(genericapirequest.WithNamespace(ctx, ""), c.Name, rest.ValidateAllObjectFunc,
		&metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// ReleaseHeld deletes the claim of tenantID if holderUID holds it: the holder is gone.
func (s *Store) ReleaseHeld(ctx context.Context, tenantID string, holderUID types.UID) error {
	ctx = genericapirequest.WithNamespace(ctx, "")
	c, err := s.get(ctx, tenantID)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if types.UID(c.HolderUID) != holderUID {
		return nil // taken over by another TenantCompute since
	}
	uid, rv := c.UID, c.ResourceVersion
	_, _, err = s.store.Delete(ctx, tenantID, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// Get returns the claim of tenantID.
func (s *Store) Get(ctx context.Context, tenantID string) (*compute.TenantIDClaim, error) {
	return s.get(genericapirequest.WithNamespace(ctx, ""), tenantID)
}

func (s *Store) get(ctx context.Context, tenantID string) (*compute.TenantIDClaim, error) {
	obj, err := s.store.Get(ctx, tenantID, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*compute.TenantIDClaim), nil
}

// claimStrategy stores claims as written; a claim is never changed, only deleted and created
// anew (ValidateTenantIDClaimUpdate refuses a new holder).
type claimStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

var (
	_ rest.RESTCreateStrategy = claimStrategy{}
	_ rest.RESTUpdateStrategy = claimStrategy{}
	_ rest.RESTDeleteStrategy = claimStrategy{}
)

// NamespaceScoped is false: a tenant ID is unique across the cluster.
func (claimStrategy) NamespaceScoped() bool { return false }

// PrepareForCreate keeps the claim as the registry built it.
func (claimStrategy) PrepareForCreate(context.Context, runtime.Object) {}

// Validate checks a new claim.
func (claimStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateTenantIDClaim(obj.(*compute.TenantIDClaim))
}

// WarningsOnCreate has nothing to say: no client writes claims.
func (claimStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize does nothing.
func (claimStrategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: claims are created with create-if-absent only.
func (claimStrategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is false: every write of a claim is conditional.
func (claimStrategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// PrepareForUpdate does nothing.
func (claimStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// ValidateUpdate refuses any change of the holder.
func (claimStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateTenantIDClaimUpdate(obj.(*compute.TenantIDClaim), old.(*compute.TenantIDClaim))
}

// WarningsOnUpdate has nothing to say.
func (claimStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
