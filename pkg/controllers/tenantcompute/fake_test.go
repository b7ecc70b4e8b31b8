package tenantcompute

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
)

// fakeProvider answers with whatever the test set and records what it was asked.
type fakeProvider struct {
	mu           sync.Mutex
	name         string
	validateErr  error
	provision    *v1alpha1.ProvisionResult
	provisionErr error
	update       *v1alpha1.UpdateResult
	updateErr    error
	destroyErr   error
	status       *compute.ComputeStatus
	statusErr    error
	// onDestroy, when set, is called with the tenant Destroy is given.
	onDestroy func(*v1alpha1.TenantCompute)
	calls     []string
}

func newFakeProvider() *fakeProvider {
	return &fakeProvider{
		name:      "fake",
		provision: &v1alpha1.ProvisionResult{Status: v1alpha1.ProvisionStatusSuccess, ResourceIDs: map[string]string{"deployment": "tenant-shop/shop"}},
		update:    &v1alpha1.UpdateResult{Status: v1alpha1.UpdateStatusNoChanges},
		status:    &compute.ComputeStatus{State: v1alpha1.ComputeStateStarting, Health: v1alpha1.HealthStatusUnknown},
	}
}

func (f *fakeProvider) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

// took returns the calls since the last took and forgets them.
func (f *fakeProvider) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

func (f *fakeProvider) Name() string                   { return f.name }
func (f *fakeProvider) Descriptor() compute.Descriptor { return compute.Descriptor{} }
func (f *fakeProvider) Validate(context.Context, *v1alpha1.TenantCompute) error {
	f.record("Validate")
	return f.validateErr
}
func (f *fakeProvider) Provision(context.Context, *v1alpha1.TenantCompute) (*v1alpha1.ProvisionResult, error) {
	f.record("Provision")
	if f.provisionErr != nil {
		return nil, f.provisionErr
	}
	return f.provision.DeepCopy(), nil
}
func (f *fakeProvider) Update(context.Context, *v1alpha1.TenantCompute) (*v1alpha1.UpdateResult, error) {
	f.record("Update")
	if f.updateErr != nil {
		return nil, f.updateErr
	}
	return f.update.DeepCopy(), nil
}
func (f *fakeProvider) Destroy(_ context.Context, tc *v1alpha1.TenantCompute) error {
	f.record("Destroy")
	if f.onDestroy != nil {
		f.onDestroy(tc)
	}
	return f.destroyErr
}
func (f *fakeProvider) GetStatus(context.Context, *v1alpha1.TenantCompute) (*compute.ComputeStatus, error) {
	f.record("GetStatus")
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	s := *f.status
	return &s, nil
}

// notifyingProvider is a fakeProvider that watches what it creates.
type notifyingProvider struct {
	*fakeProvider
	informers []cache.SharedIndexInformer
	tenantFor func(obj interface{}) (cache.ObjectName, bool)
}

func (n *notifyingProvider) Informers() []cache.SharedIndexInformer { return n.informers }
func (n *notifyingProvider) TenantFor(obj interface{}) (cache.ObjectName, bool) {
	return n.tenantFor(obj)
}

// registry is a fixed set of providers.
type registry []compute.Provider

func (r registry) Provider(name string) (compute.Provider, bool) {
	for _, p := range r {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

func (r registry) Providers() []compute.Provider { return r }
