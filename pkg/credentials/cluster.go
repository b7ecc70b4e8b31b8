package credentials

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	platformclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/platform/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/kubeconfig"
)

// ClusterProvider reads kubeconfigs from Cluster objects: the sealed value through the
// clusters/credentials subresource, opened with the key file plinth-controller shares with
// plinth-apiserver. The trust boundary is the pair: a client with the RBAC grant but without
// the key file gets ciphertext, a holder of the key file without the grant gets nothing.
//
// Configs are cached per Cluster UID and generation. A new kubeconfig bumps the generation,
// so the next call reads and decrypts it again: changing a cluster's credentials takes effect
// without restarting anything.
type ClusterProvider struct {
	client platformclient.ClustersGetter
	lister platformlisters.ClusterLister
	keys   keyring.Source

	mu    sync.Mutex
	cache map[string]cachedConfig
}

type cachedConfig struct {
	uid        types.UID
	generation int64
	config     *rest.Config
}

var _ Provider = &ClusterProvider{}

// NewClusterProvider returns a provider over Cluster objects. keys may be nil: every cluster's
// credentials are then reported as sealed with an unknown key.
func NewClusterProvider(client platformclient.ClustersGetter, lister platformlisters.ClusterLister, keys keyring.Source) *ClusterProvider {
	return &ClusterProvider{client: client, lister: lister, keys: keys, cache: map[string]cachedConfig{}}
}

// Type is "kubeconfig": the credentials are a kubeconfig uploaded through the API.
func (p *ClusterProvider) Type() string { return "kubeconfig" }

// GetRESTConfig returns a copy of the named cluster's REST config.
func (p *ClusterProvider) GetRESTConfig(ctx context.Context, clusterName string) (*rest.Config, error) {
	current, err := p.lister.Get(clusterName)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	cached, ok := p.cache[clusterName]
	p.mu.Unlock()
	if ok && cached.uid == current.UID && cached.generation >= current.Generation {
		return rest.CopyConfig(cached.config), nil
	}
	if p.keys == nil {
		return nil, &Error{Reason: ReasonUnknownKey, Message: "plinth-controller was started without --encryption-key-file and cannot open any cluster's kubeconfig."}
	}
	keys := p.keys.Keyring()
	creds, err := p.client.Clusters().GetCredentials(ctx, clusterName, metav1.GetOptions{})
	if err != nil {
		return nil, &Error{Reason: ReasonUnavailable, Message: fmt.Sprintf("Reading the credentials of cluster %s failed: %v", clusterName, err)}
	}
	if !keys.Has(creds.EncryptionKeyID) {
		return nil, &Error{Reason: ReasonUnknownKey, Message: fmt.Sprintf("The kubeconfig is sealed with key %q, which plinth-controller's key file does not hold.", creds.EncryptionKeyID)}
	}
	plain, err := keys.Open(creds.EncryptionKeyID, creds.SealedKubeconfig, AdditionalData(creds.Name, creds.UID))
	if err != nil {
		return nil, &Error{Reason: ReasonDecryptionFailed, Message: fmt.Sprintf("The kubeconfig does not decrypt with key %q.", creds.EncryptionKeyID)}
	}
	cfg, err := kubeconfig.RESTConfig(plain)
	if err != nil {
		return nil, &Error{Reason: ReasonInvalidKubeconfig, Message: fmt.Sprintf("The kubeconfig is not usable: %v", err)}
	}
	p.mu.Lock()
	p.cache[clusterName] = cachedConfig{uid: creds.UID, generation: creds.Generation, config: cfg}
	p.mu.Unlock()
	return rest.CopyConfig(cfg), nil
}

// Forget drops a cluster's cached config, when the Cluster is deleted.
func (p *ClusterProvider) Forget(clusterName string) {
	p.mu.Lock()
	delete(p.cache, clusterName)
	p.mu.Unlock()
}
