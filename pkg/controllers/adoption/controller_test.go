package adoption

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	govlisters "github.com/plinth-dev/plinth/pkg/generated/listers/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/vmprovider"
)

func TestAdoptionCandidates(t *testing.T) {
	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	vms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, VMIndexers)
	_ = services.Add(&gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "redis", Namespace: "team-a"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "shop"}}})
	_ = vms.Add(&gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "cache-1", Namespace: "team-a"},
		Spec: gov.ManagedVMSpec{SystemServiceRef: gov.LocalObjectReference{Name: "redis"}}, Status: gov.ManagedVMStatus{Instance: 1, InstanceName: "team-a-shop-redis-01"}})
	a := &Adopter{listers: Listers{Services: govlisters.NewSystemServiceLister(services), VMIndex: vms}}
	a.now = metav1.Now().Time.UTC
	found := func(name, system, service, instance string) *vmprovider.VM {
		mem := resource.MustParse("1Gi")
		return &vmprovider.VM{Name: name, Namespace: "team-a", Labels: map[string]string{
			"kubevirt-shepherd.io/system": system, "kubevirt-shepherd.io/service": service, "kubevirt-shepherd.io/instance": instance,
		}, Spec: vmprovider.VMSpec{CPU: 2, Memory: &mem, Image: "img"}}
	}
	pa, err := a.candidate("local", found("team-a-shop-redis-04", "shop", "redis", "04"))
	if err != nil || pa == nil || pa.Name != "local-team-a-shop-redis-04" || pa.Spec.Instance != 4 || pa.Spec.VMSpec.Resources.CPU != 2 || pa.Spec.VMSpec.RunStrategy != gov.RunStrategyAlways {
		t.Fatalf("candidate: %+v", pa)
	}
	for what, vm := range map[string]*vmprovider.VM{
		"managed already":      found("team-a-shop-redis-01", "shop", "redis", "01"),
		"same instance":        found("other-name", "shop", "redis", "01"),
		"no such service":      found("team-a-shop-db-02", "shop", "db", "02"),
		"service of another":   found("team-a-bank-redis-02", "bank", "redis", "02"),
		"no instance number":   found("team-a-shop-redis-xx", "shop", "redis", "xx"),
		"instance number zero": found("team-a-shop-redis-00", "shop", "redis", "00"),
	} {
		if pa, err := a.candidate("local", vm); err != nil || pa != nil {
			t.Errorf("%s: proposed %v (%v)", what, pa, err)
		}
	}
}
