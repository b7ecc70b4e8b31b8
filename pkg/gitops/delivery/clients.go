package delivery

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/plinth-dev/plinth/pkg/credentials"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
)

// TargetQPS and TargetBurst are the client-side rate limits of the clients of a target
// Cluster. client-go's defaults (5 requests a second, bursts of 10) are for controllers that
// watch; a Kubectl delivery sends about one request per object (an apply each, the reads
// are lists), so at 5/s a 200-object version takes 40 s, and at 50/s with bursts of 100 the
// client still waits 2 s on itself (the benchmark's pack took four times as long as helm
// install, whose client never waits). At 200/s with bursts of 400 a 200-object version goes
// through in one burst, and a 1000-object one, or a drift check's dry-runs, in seconds. That
// is no flood for a target's kube-apiserver: one delivery has at most 16 requests in flight
// (the Kubectl engine's workers), far below kube-apiserver's default of 200 mutating requests
// in flight (--max-mutating-requests-inflight), and API Priority and Fairness queues a client
// that asks for more than its share rather than let it starve the others.
const (
	TargetQPS   = 200
	TargetBurst = 400
)

// ClusterClients is the Clients of the registered Clusters: each Cluster's kubeconfig, from a
// credentials.Provider, becomes a dynamic client and a discovery-backed REST mapper, kept
// while the Cluster's name, UID and generation stay the same. A new kubeconfig bumps the
// generation, so the next call builds new clients from it; a Cluster deleted and registered
// again has a new UID.
type ClusterClients struct {
	creds    credentials.Provider
	clusters platformlisters.ClusterLister

	mu    sync.Mutex
	cache map[string]cachedClients
}

type cachedClients struct {
	uid        types.UID
	generation int64
	dynamic    dynamic.Interface
	mapper     *resettingMapper
}

var _ Clients = &ClusterClients{}

// NewClients returns the clients of the Clusters clusters lists, built from the kubeconfigs
// creds gives.
func NewClients(creds credentials.Provider, clusters platformlisters.ClusterLister) *ClusterClients {
	return &ClusterClients{creds: creds, clusters: clusters, cache: map[string]cachedClients{}}
}

// For returns a dynamic client and a REST mapper of the named Cluster. The mapper reads the
// cluster's discovery once and again whenever a kind is not found, so CustomResourceDefinitions
// created after the first call (by an artifact itself) are mapped.
func (c *ClusterClients) For(ctx context.Context, cluster string) (dynamic.Interface, meta.RESTMapper, error) {
	current, err := c.clusters.Get(cluster)
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("cluster %s is not registered", cluster)
	}
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	cached, ok := c.cache[cluster]
	c.mu.Unlock()
	if ok && cached.uid == current.UID && cached.generation == current.Generation {
		return cached.dynamic, cached.mapper, nil
	}
	cfg, err := c.creds.GetRESTConfig(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	cfg = withRateLimits(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("building a client of cluster %s: %w", cluster, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("building a discovery client of cluster %s: %w", cluster, err)
	}
	mapper := &resettingMapper{DeferredDiscoveryRESTMapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}
	c.mu.Lock()
	c.cache[cluster] = cachedClients{uid: current.UID, generation: current.Generation, dynamic: dyn, mapper: mapper}
	c.mu.Unlock()
	return dyn, mapper, nil
}

// withRateLimits is a copy of cfg with TargetQPS and TargetBurst, unless it sets its own
// limits; the credentials provider's config is not changed.
func withRateLimits(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = TargetQPS
	}
	if cfg.Burst == 0 && cfg.RateLimiter == nil {
		cfg.Burst = TargetBurst
	}
	return cfg
}

// Forget drops a Cluster's clients, when the Cluster is deleted.
func (c *ClusterClients) Forget(cluster string) {
	c.mu.Lock()
	delete(c.cache, cluster)
	c.mu.Unlock()
}

// resettingMapper reads discovery again when a kind or resource is not found and asks once
// more. The deferred mapper alone does not: once its memory-cached discovery is fresh it
// answers "no match" for a CRD created since, until something resets it.
type resettingMapper struct {
	*restmapper.DeferredDiscoveryRESTMapper
}

// retry calls f, and again after a reset when f found no match.
func retry[T any](m *resettingMapper, f func() (T, error)) (T, error) {
	v, err := f()
	if meta.IsNoMatchError(err) {
		m.Reset()
		return f()
	}
	return v, err
}

// KindFor implements meta.RESTMapper.
func (m *resettingMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return retry(m, func() (schema.GroupVersionKind, error) { return m.DeferredDiscoveryRESTMapper.KindFor(resource) })
}

// KindsFor implements meta.RESTMapper.
func (m *resettingMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return retry(m, func() ([]schema.GroupVersionKind, error) { return m.DeferredDiscoveryRESTMapper.KindsFor(resource) })
}

// ResourceFor implements meta.RESTMapper.
func (m *resettingMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return retry(m, func() (schema.GroupVersionResource, error) { return m.DeferredDiscoveryRESTMapper.ResourceFor(input) })
}

// ResourcesFor implements meta.RESTMapper.
func (m *resettingMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return retry(m, func() ([]schema.GroupVersionResource, error) {
		return m.DeferredDiscoveryRESTMapper.ResourcesFor(input)
	})
}

// RESTMapping implements meta.RESTMapper.
func (m *resettingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return retry(m, func() (*meta.RESTMapping, error) { return m.DeferredDiscoveryRESTMapper.RESTMapping(gk, versions...) })
}

// RESTMappings implements meta.RESTMapper.
func (m *resettingMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return retry(m, func() ([]*meta.RESTMapping, error) {
		return m.DeferredDiscoveryRESTMapper.RESTMappings(gk, versions...)
	})
}
