package governedvm

import (
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	govclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/governance/v1alpha1"
	govinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/governance/v1alpha1"
	govlisters "github.com/plinth-dev/plinth/pkg/generated/listers/governance/v1alpha1"
)

// Name is the provider's registered name, the spec.providerType of its tenants.
const Name = "kubevirt"

// SystemName is the System, in each TenantCompute's namespace, that holds the tenants'
// SystemServices. A tenant may create it beforehand (for example with environment prod, so that
// starting and stopping need approval too); the provider then uses it and never deletes it.
const SystemName = "tenant-compute"

// maxNamePart is governance's limit on a namespace, System or SystemService name: each is a part
// of the VM's name {namespace}-{system}-{service}-{NN} (governance validation.MaxNamePart).
const maxNamePart = 15

const (
	// LabelProvider marks what the provider created (value kubevirt): a System with it is
	// deleted with the namespace's last tenant of the provider.
	LabelProvider = "compute.plinth.dev/provider"
	// AnnotationRequestedSpec is the fingerprint of the VM spec the provider last asked for:
	// a spec is asked for when the tenant's differs from it, so what an approver made of a
	// request (a modified spec) stands until the tenant asks for something else.
	AnnotationRequestedSpec = "compute.plinth.dev/requested-spec"
	// AnnotationRequestedGeneration is the TenantCompute generation of that request: after a
	// rejection the same spec is asked for again only for a newer generation.
	AnnotationRequestedGeneration = "compute.plinth.dev/requested-generation"
	// AnnotationTenantLabels lists the label keys the provider set on the ManagedVM, so that a
	// label the tenant drops from spec.labels is removed.
	AnnotationTenantLabels = "compute.plinth.dev/labels"
)

// Provider is the kubevirt tenant-compute provider. Create it with NewProvider.
type Provider struct {
	client   govclient.GovernanceV1alpha1Interface
	vms      govlisters.ManagedVMLister
	informer cache.SharedIndexInformer
	// now is the clock of restart requests.
	now func() time.Time
}

var (
	_ compute.Provider = &Provider{}
	_ compute.Notifier = &Provider{}
)

// NewProvider returns the provider. It writes through client and reads ManagedVMs from the
// informer (plinth-controller's shared governance informer; the VM runtime reads the same):
// the tenant-compute controller waits for it and is woken by its changes (compute.Notifier).
func NewProvider(client versioned.Interface, managedVMs govinformers.ManagedVMInformer) *Provider {
	return &Provider{
		client: client.GovernanceV1alpha1(), vms: managedVMs.Lister(), informer: managedVMs.Informer(), now: time.Now,
	}
}

// Name is "kubevirt".
func (p *Provider) Name() string { return Name }

// Descriptor is what the provider publishes in its ComputeProvider.
func (p *Provider) Descriptor() compute.Descriptor { return descriptor }

// Informers is the ManagedVM informer.
func (p *Provider) Informers() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{p.informer}
}

// TenantFor names the TenantCompute of a ManagedVM the provider created, from its labels.
func (p *Provider) TenantFor(obj interface{}) (cache.ObjectName, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	vm, ok := obj.(*gov.ManagedVM)
	if !ok || vm.Labels[LabelProvider] != Name {
		return cache.ObjectName{}, false
	}
	ns, name := vm.Labels[v1alpha1.LabelTenantComputeNamespace], vm.Labels[v1alpha1.LabelTenantComputeName]
	if ns == "" || name == "" {
		return cache.ObjectName{}, false
	}
	return cache.NewObjectName(ns, name), true
}

// vmName is the tenant's ManagedVM: the tenant ID, unique across the cluster.
func vmName(tc *v1alpha1.TenantCompute) string { return tc.Spec.TenantID }

// serviceName is the tenant's SystemService: the tenant ID too.
func serviceName(tc *v1alpha1.TenantCompute) string { return tc.Spec.TenantID }

// ours says whether obj's labels name tc as the tenant it was created for.
func ours(labels map[string]string, tc *v1alpha1.TenantCompute) bool {
	return labels[LabelProvider] == Name && labels[v1alpha1.LabelTenantID] == tc.Spec.TenantID &&
		labels[v1alpha1.LabelTenantComputeNamespace] == tc.Namespace && labels[v1alpha1.LabelTenantComputeName] == tc.Name
}
