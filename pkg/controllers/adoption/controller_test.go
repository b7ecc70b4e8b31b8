package adoption

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
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

// fakeInfra lists the VMs it holds, or fails with err.
type fakeInfra struct {
	vmprovider.InfrastructureProvider
	vms []vmprovider.VM
	err error
}

func (f *fakeInfra) ListVMs(context.Context, string, map[string]string) ([]vmprovider.VM, error) {
	return f.vms, f.err
}

func setupScan(t *testing.T, infra vmprovider.InfrastructureProvider) (*Adopter, *fake.Clientset, *events.FakeRecorder) {
	t.Helper()
	cluster := &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Status: platform.ClusterStatus{Phase: platform.ClusterPhaseHealthy}}
	service := &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "redis", Namespace: "team-a"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "shop"}}}
	client := fake.NewSimpleClientset(cluster, service)
	factory := informers.NewSharedInformerFactory(client, 0)
	g, p := factory.Governance().V1alpha1(), factory.Platform().V1alpha1()
	recorder := events.NewFakeRecorder(10)
	a, err := NewController(client.GovernanceV1alpha1(), recorder, g.ManagedVMs(), g.SystemServices(), g.PendingAdoptions(), p.Clusters(), infra, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Clusters().Informer().GetIndexer().Add(cluster); err != nil {
		t.Fatal(err)
	}
	if err := g.SystemServices().Informer().GetIndexer().Add(service); err != nil {
		t.Fatal(err)
	}
	return a, client, recorder
}

// A VM found without a ManagedVM becomes a PendingAdoption, created under the adopter's field
// manager, with a Normal Found event.
func TestScanProposesUnmanagedVMs(t *testing.T) {
	mem := resource.MustParse("1Gi")
	vm := vmprovider.VM{Name: "team-a-shop-redis-02", Namespace: "team-a", Labels: map[string]string{
		gov.LabelSystem: "shop", gov.LabelService: "redis", gov.LabelInstance: "02",
	}, Spec: vmprovider.VMSpec{CPU: 1, Memory: &mem}}
	a, client, recorder := setupScan(t, &fakeInfra{vms: []vmprovider.VM{vm}})
	if err := a.reconcile(context.Background(), cache.NewObjectName("", "local")); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, action := range client.Actions() {
		if create, ok := action.(clienttesting.CreateActionImpl); ok && action.GetResource().Resource == "pendingadoptions" {
			managers = append(managers, create.CreateOptions.FieldManager)
		}
	}
	if len(managers) != 1 || managers[0] != FieldManager {
		t.Errorf("PendingAdoption creates by field manager %v, want one by %s", managers, FieldManager)
	}
	if got := <-recorder.Events; got != "Normal Found VirtualMachine team-a-shop-redis-02 on cluster local has the platform's labels but no ManagedVM." {
		t.Errorf("event %q", got)
	}
}

// A cluster that stopped answering since its last probe is scanned again after the interval,
// not retried as a failure.
func TestScanWaitsForAnUnreachableCluster(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	a, _, _ := setupScan(t, &fakeInfra{err: fmt.Errorf("listing VMs: %w", refused)})
	err := a.reconcile(context.Background(), cache.NewObjectName("", "local"))
	if after, waiting := errkind.WaitFor(err); !waiting || after != time.Minute {
		t.Errorf("an unreachable cluster: %v (waiting %v, after %s)", err, waiting, after)
	}
}
