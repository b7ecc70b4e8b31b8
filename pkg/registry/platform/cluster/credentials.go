package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
)

// CredentialsREST is clusters/credentials: the sealed kubeconfig, for plinth-controller. It
// never decrypts: the caller needs the RBAC grant (get on clusters/credentials, which the
// internal-API authorizer also restricts to platform identities) and the key file.
type CredentialsREST struct {
	store *genericregistry.Store
}

var _ rest.Getter = &CredentialsREST{}

// New allocates an empty ClusterCredentials.
func (r *CredentialsREST) New() runtime.Object { return &platform.ClusterCredentials{} }

// Destroy does nothing: the main resource owns the storage.
func (r *CredentialsREST) Destroy() {}

// Get returns the cluster's sealed kubeconfig with the cluster's name, UID and generation.
func (r *CredentialsREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	c := obj.(*platform.Cluster)
	keyID, sealed, ok := openEnvelope(c.Spec.Kubeconfig)
	if !ok {
		return nil, apierrors.NewNotFound(platform.Resource("clusters/credentials"), name)
	}
	return &platform.ClusterCredentials{
		ObjectMeta: metav1.ObjectMeta{
			Name: c.Name, UID: c.UID, Generation: c.Generation, ResourceVersion: c.ResourceVersion, CreationTimestamp: c.CreationTimestamp,
		},
		EncryptionKeyID:  keyID,
		SealedKubeconfig: sealed,
	}, nil
}
