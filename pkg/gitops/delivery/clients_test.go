package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
)

// discoveryServer serves legacy discovery: core v1 with ConfigMaps, and the groups added.
type discoveryServer struct {
	*httptest.Server
	mu       sync.Mutex
	groups   map[string]metav1.APIResource // group → its one resource, at version v1
	requests atomic.Int32
}

func newDiscoveryServer(t *testing.T) *discoveryServer {
	d := &discoveryServer{groups: map[string]metav1.APIResource{}}
	d.Server = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.Close)
	return d
}

func (d *discoveryServer) add(group string, r metav1.APIResource) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.groups[group] = r
}

func (d *discoveryServer) serve(w http.ResponseWriter, r *http.Request) {
	d.requests.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	var body interface{}
	switch path := r.URL.Path; {
	case path == "/api":
		body = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case path == "/api/v1":
		body = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get", "patch"}}}}
	case path == "/apis":
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for g := range d.groups {
			gv := metav1.GroupVersionForDiscovery{GroupVersion: g + "/v1", Version: "v1"}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
		}
		body = list
	case strings.HasPrefix(path, "/apis/"):
		g := strings.TrimSuffix(strings.TrimPrefix(path, "/apis/"), "/v1")
		res, ok := d.groups[g]
		if !ok {
			http.NotFound(w, r)
			return
		}
		body = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: g + "/v1",
			APIResources: []metav1.APIResource{res}}
	default:
		http.NotFound(w, r)
		return
	}
	_ = json.NewEncoder(w).Encode(body)
}

// fakeCreds gives every cluster the REST config of its server, and counts the calls.
type fakeCreds struct {
	hosts map[string]string
	err   error
	calls atomic.Int32
}

func (f *fakeCreds) Type() string { return "fake" }
func (f *fakeCreds) GetRESTConfig(_ context.Context, name string) (*rest.Config, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return &rest.Config{Host: f.hosts[name]}, nil
}

func clusterLister(t *testing.T, clusters ...*platformv1alpha1.Cluster) (platformlisters.ClusterLister, cache.Indexer) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range clusters {
		if err := indexer.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return platformlisters.NewClusterLister(indexer), indexer
}

func cluster(name string, uid string, generation int64) *platformv1alpha1.Cluster {
	return &platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Generation: generation}}
}

func TestClientsAreCachedPerClusterGeneration(t *testing.T) {
	srv := newDiscoveryServer(t)
	creds := &fakeCreds{hosts: map[string]string{"east": srv.URL}}
	lister, indexer := clusterLister(t, cluster("east", "uid-1", 1))
	c := NewClients(creds, lister)
	ctx := context.Background()

	dyn1, mapper1, err := c.For(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	dyn2, mapper2, err := c.For(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	if dyn1 != dyn2 || mapper1 != mapper2 || creds.calls.Load() != 1 {
		t.Fatalf("the same generation built new clients (credentials read %d times)", creds.calls.Load())
	}

	// A new kubeconfig bumps the generation: new clients from the new config.
	if err := indexer.Update(cluster("east", "uid-1", 2)); err != nil {
		t.Fatal(err)
	}
	dyn3, _, err := c.For(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	if dyn3 == dyn1 || creds.calls.Load() != 2 {
		t.Fatalf("a new generation kept the old clients (credentials read %d times)", creds.calls.Load())
	}

	// Deleted and registered again under the same name: a new UID.
	if err := indexer.Update(cluster("east", "uid-2", 2)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.For(ctx, "east"); err != nil {
		t.Fatal(err)
	}
	if creds.calls.Load() != 3 {
		t.Fatalf("a new UID kept the old clients (credentials read %d times)", creds.calls.Load())
	}

	c.Forget("east")
	if _, _, err := c.For(ctx, "east"); err != nil {
		t.Fatal(err)
	}
	if creds.calls.Load() != 4 {
		t.Fatalf("Forget kept the clients (credentials read %d times)", creds.calls.Load())
	}
}

func TestClientsOfAnUnknownClusterOrUnreadableCredentials(t *testing.T) {
	lister, _ := clusterLister(t, cluster("east", "uid-1", 1))
	creds := &fakeCreds{err: errors.New("The kubeconfig does not decrypt with key \"k1\".")}
	c := NewClients(creds, lister)
	if _, _, err := c.For(context.Background(), "west"); err == nil || err.Error() != "cluster west is not registered" {
		t.Errorf("unknown cluster: %v", err)
	}
	if _, _, err := c.For(context.Background(), "east"); err == nil || !strings.Contains(err.Error(), "does not decrypt") {
		t.Errorf("unreadable credentials: %v", err)
	}
	// A failure is not cached: the next call tries again.
	creds.err = nil
	creds.hosts = map[string]string{"east": "https://127.0.0.1:1"}
	if _, _, err := c.For(context.Background(), "east"); err != nil {
		t.Errorf("after the credentials became readable: %v", err)
	}
}

// A CustomResourceDefinition created after the mapper first read discovery (by the artifact
// that also holds its custom resources) is found: a no-match reads discovery again.
func TestMapperFindsKindsAddedLater(t *testing.T) {
	srv := newDiscoveryServer(t)
	lister, _ := clusterLister(t, cluster("east", "uid-1", 1))
	c := NewClients(&fakeCreds{hosts: map[string]string{"east": srv.URL}}, lister)
	_, mapper, err := c.For(context.Background(), "east")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
		t.Fatalf("ConfigMap: %v", err)
	}
	widgets := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	if _, err := mapper.RESTMapping(widgets, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("Widget before its CRD: %v, want no match", err)
	}

	srv.add("example.com", metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"get", "patch"}})
	m, err := mapper.RESTMapping(widgets, "v1")
	if err != nil {
		t.Fatalf("Widget after its CRD: %v", err)
	}
	if m.Resource.Resource != "widgets" || m.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("mapping %+v", m)
	}
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	if err != nil || gvk.Kind != "Widget" {
		t.Errorf("KindFor widgets: %v %v", gvk, err)
	}

	// A known kind is answered from the cache.
	before := srv.requests.Load()
	if _, err := mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
		t.Fatal(err)
	}
	if srv.requests.Load() != before {
		t.Errorf("a known kind read discovery again")
	}
}

// A target's clients allow a Kubectl delivery's many requests: 150 reads in a row finish well
// within 5 seconds, where client-go's default limits (5/s, bursts of 10) would need 28.
func TestClientsAllowManyRequests(t *testing.T) {
	srv := newDiscoveryServer(t)
	lister, _ := clusterLister(t, cluster("east", "uid-1", 1))
	c := NewClients(&fakeCreds{hosts: map[string]string{"east": srv.URL}}, lister)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dyn, _, err := c.For(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for i := range 150 {
		_, err := dyn.Resource(configMaps).Namespace("shop").Get(ctx, fmt.Sprintf("settings-%d", i), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("read %d: %v, want the server's 404", i, err)
		}
	}
}

func TestRateLimitsLeaveTheProvidersConfigAndItsOwnLimits(t *testing.T) {
	given := &rest.Config{Host: "https://east:6443"}
	got := withRateLimits(given)
	if got.QPS != TargetQPS || got.Burst != TargetBurst || got.Host != given.Host {
		t.Errorf("config %+v", got)
	}
	if given.QPS != 0 || given.Burst != 0 {
		t.Error("the provider's config was changed")
	}
	own := withRateLimits(&rest.Config{QPS: 7, Burst: 9})
	if own.QPS != 7 || own.Burst != 9 {
		t.Errorf("a config's own limits were replaced: %v/%v", own.QPS, own.Burst)
	}
}
