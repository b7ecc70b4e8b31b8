package governedvm

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	"github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// fixture is a provider over a fake clientset, whose ManagedVM cache the test fills (sync)
// instead of an informer, so that what the provider sees is exactly what the test put there.
type fixture struct {
	t      *testing.T
	p      *Provider
	client *fake.Clientset
	cache  cache.Indexer
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	client := fake.NewSimpleClientset(objects...)
	vms := externalversions.NewSharedInformerFactory(client, 0).Governance().V1alpha1().ManagedVMs()
	p := NewProvider(client, vms)
	p.now = func() time.Time { return time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC) }
	return &fixture{t: t, p: p, client: client, cache: vms.Informer().GetIndexer()}
}

// sync copies the stored ManagedVMs into the cache, as the informer would.
func (f *fixture) sync() {
	f.t.Helper()
	for _, obj := range f.cache.List() {
		_ = f.cache.Delete(obj)
	}
	list, err := f.client.GovernanceV1alpha1().ManagedVMs(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range list.Items {
		if err := f.cache.Add(&list.Items[i]); err != nil {
			f.t.Fatal(err)
		}
	}
}

// vm returns the stored ManagedVM.
func (f *fixture) vm(name string) *gov.ManagedVM {
	f.t.Helper()
	vm, err := f.client.GovernanceV1alpha1().ManagedVMs("team-a").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return vm
}

// govern stands in for the approval flow and the VM runtime: it writes the VM's status.
func (f *fixture) govern(name string, change func(vm *gov.ManagedVM)) {
	f.t.Helper()
	vm := f.vm(name)
	change(vm)
	if _, err := f.client.GovernanceV1alpha1().ManagedVMs("team-a").Update(context.Background(), vm, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.sync()
}

// writes lists the write actions since the last call.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	f.client.ClearActions()
	return out
}

func tenant() *v1alpha1.TenantCompute {
	return &v1alpha1.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", Generation: 1},
		Spec: v1alpha1.TenantComputeSpec{
			TenantID: "shop", ProviderType: Name,
			Containers: []v1alpha1.ContainerSpec{
				{Name: "web", Image: "nginx:1.27", Env: map[string]string{"MODE": "prod"},
					Ports: []v1alpha1.PortMapping{{ContainerPort: 80, HostPort: 8080, Protocol: "tcp", Name: "http"}}},
				{Name: "worker", Image: "ghcr.io/acme/worker:2", Command: []string{"/worker"}, Args: []string{"--queue", "orders"}},
			},
			Resources: v1alpha1.ResourceRequirements{CPU: 1500, Memory: 512},
			Labels:    map[string]string{"team": "a"},
		},
	}
}

// pending, approved and rejected are the statuses governance gives a VM.
func pending(op gov.Operation, ticket string) func(*gov.ManagedVM) {
	return func(vm *gov.ManagedVM) {
		vm.Status.PendingApproval = &gov.PendingApproval{Ticket: ticket, Operation: op}
		vm.Status.LastTicket = ticket
		apimeta.SetStatusCondition(&vm.Status.Conditions, metav1.Condition{Type: "Approved", Status: metav1.ConditionFalse, Reason: "PendingApproval"})
	}
}

func approved(phase gov.VMPhase, ready bool) func(*gov.ManagedVM) {
	return func(vm *gov.ManagedVM) {
		vm.Status.PendingApproval = nil
		vm.Status.Phase, vm.Status.Instance, vm.Status.Cluster = phase, 1, "local"
		vm.Status.InstanceName, vm.Status.Hostname = "team-a-tenant-compute-shop-01", "team-a-tenant-compute-shop-01"
		apimeta.SetStatusCondition(&vm.Status.Conditions, metav1.Condition{Type: "Approved", Status: metav1.ConditionTrue, Reason: "Approved"})
		status, msg := metav1.ConditionFalse, "The VM is Starting on cluster local."
		if ready {
			status, msg = metav1.ConditionTrue, "The VM is Running on cluster local."
		}
		apimeta.SetStatusCondition(&vm.Status.Conditions, metav1.Condition{Type: "Ready", Status: status, Reason: "Observed", Message: msg})
	}
}

func rejectedBy(reason string) func(*gov.ManagedVM) {
	return func(vm *gov.ManagedVM) {
		vm.Status.PendingApproval = nil
		apimeta.SetStatusCondition(&vm.Status.Conditions, metav1.Condition{Type: "Approved", Status: metav1.ConditionFalse, Reason: reason})
	}
}

func TestProvisionCreatesSystemServiceAndVM(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	res, err := f.p.Provision(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != v1alpha1.ProvisionStatusInProgress || res.ResourceIDs["managedVM"] != "team-a/shop" || res.ResourceIDs["systemService"] != "team-a/shop" {
		t.Errorf("result %+v", res)
	}
	if got := strings.Join(f.writes(), ","); got != "create systems,create systemservices,create managedvms" {
		t.Errorf("writes %s", got)
	}

	sys, err := f.client.GovernanceV1alpha1().Systems("team-a").Get(ctx, SystemName, metav1.GetOptions{})
	if err != nil || sys.Labels[LabelProvider] != Name {
		t.Errorf("system %+v %v", sys, err)
	}
	svc, err := f.client.GovernanceV1alpha1().SystemServices("team-a").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil || svc.Spec.SystemRef.Name != SystemName || !ours(svc.Labels, tc) {
		t.Errorf("service %+v %v", svc, err)
	}
	vm := f.vm("shop")
	if !ours(vm.Labels, tc) || vm.Labels["team"] != "a" || vm.Spec.SystemServiceRef.Name != "shop" {
		t.Errorf("VM metadata %+v", vm.ObjectMeta)
	}
	if vm.Spec.Resources.CPU != 2 || vm.Spec.Resources.Memory.String() != "512Mi" || vm.Spec.Image != DefaultImage ||
		vm.Spec.RunStrategy != gov.RunStrategyAlways || vm.Spec.RestartedAt != "" || !strings.Contains(vm.Spec.Reason, "TenantCompute team-a/shop") {
		t.Errorf("VM spec %+v", vm.Spec)
	}
	for _, want := range []string{
		"#cloud-config\n", "packages:\n- podman\n",
		`["podman","run","-d","--name","web","--restart=always","-p","8080:80/tcp","-e","MODE=prod","docker.io/library/nginx:1.27"]`,
		`["podman","run","-d","--name","worker","--restart=always","--entrypoint","[\"/worker\"]","ghcr.io/acme/worker:2","--queue","orders"]`,
	} {
		if !strings.Contains(vm.Spec.CloudInit, want) {
			t.Errorf("cloud-init lacks %s:\n%s", want, vm.Spec.CloudInit)
		}
	}

	// Governance opens a ticket; the next pass writes nothing and names the ticket.
	f.govern("shop", pending(gov.OperationCreate, "tkt-1"))
	f.writes()
	res, err = f.p.Provision(ctx, tc)
	if err != nil || res.Status != v1alpha1.ProvisionStatusInProgress || !strings.Contains(res.Message, "tkt-1") {
		t.Errorf("waiting: %+v %v", res, err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("a second provision wrote %v", w)
	}

	// Approved and running: success, with the endpoint, still without a write.
	f.govern("shop", approved(gov.VMPhaseRunning, true))
	f.writes()
	res, err = f.p.Provision(ctx, tc)
	if err != nil || res.Status != v1alpha1.ProvisionStatusSuccess || len(res.Endpoints) != 1 || res.Endpoints[0].URL != "http://team-a-tenant-compute-shop-01:8080" ||
		res.ResourceIDs["virtualMachine"] != "local/team-a/team-a-tenant-compute-shop-01" {
		t.Errorf("running: %+v %v", res, err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("provisioning a running tenant wrote %v", w)
	}
}

// The cache may not show the provider's own write yet: the stored VM decides, and the pass
// writes nothing it already wrote.
func TestProvisionDecidesOnTheStoredVMWhenTheCacheLags(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	if _, err := f.p.Provision(ctx, tc); err != nil {
		t.Fatal(err)
	}
	f.writes()
	res, err := f.p.Provision(ctx, tc) // the cache is still empty
	if err != nil || res.Status != v1alpha1.ProvisionStatusInProgress {
		t.Errorf("%+v %v", res, err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("wrote %v", w)
	}
}

func TestProvisionRefusesAnotherTenantsObjects(t *testing.T) {
	ctx := context.Background()
	foreign := &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: SystemName}}}
	f := newFixture(t, foreign)
	if _, err := f.p.Provision(ctx, tenant()); !errkind.IsStalled(err) || !strings.Contains(err.Error(), "SystemService shop") {
		t.Errorf("a tenant's own SystemService of the name: %v", err)
	}

	vm := &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}}
	f = newFixture(t, vm)
	f.sync()
	if _, err := f.p.Provision(ctx, tenant()); !errkind.IsStalled(err) || !strings.Contains(err.Error(), "ManagedVM shop") {
		t.Errorf("a ManagedVM of the name: %v", err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("wrote %v", w)
	}
}

func TestRejectedCreationFailsUntilTheSpecChanges(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	if _, err := f.p.Provision(ctx, tc); err != nil {
		t.Fatal(err)
	}
	f.govern("shop", pending(gov.OperationCreate, "tkt-1"))
	f.govern("shop", rejectedBy("Rejected"))
	f.writes()

	if _, err := f.p.Provision(ctx, tc); !errkind.IsStalled(err) || err.Error() != "The creation of the VM was rejected in ticket tkt-1." {
		t.Errorf("rejected: %v", err)
	}
	st, _ := f.p.GetStatus(ctx, tc)
	if st.State != v1alpha1.ComputeStateFailed || !strings.Contains(st.Message, "tkt-1") {
		t.Errorf("status %+v", st)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("asked again for a rejected spec: %v", w)
	}

	// A new generation asks again: the never-approved VM is replaced by a new request.
	tc.Generation = 2
	if res, err := f.p.Provision(ctx, tc); err != nil || res.Status != v1alpha1.ProvisionStatusInProgress {
		t.Errorf("asked again: %+v %v", res, err)
	}
	if got := strings.Join(f.writes(), ","); got != "delete managedvms,create managedvms" {
		t.Errorf("writes %s", got)
	}
	if vm := f.vm("shop"); vm.Annotations[AnnotationRequestedGeneration] != "2" || rejected(vm) {
		t.Errorf("new request %+v", vm)
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	if _, err := f.p.Provision(ctx, tc); err != nil {
		t.Fatal(err)
	}
	f.govern("shop", approved(gov.VMPhaseRunning, true))
	f.writes()

	res, err := f.p.Update(ctx, tc)
	if err != nil || res.Status != v1alpha1.UpdateStatusNoChanges || len(f.writes()) != 0 {
		t.Errorf("unchanged: %+v %v", res, err)
	}

	// Suspending is a stop: only the run strategy changes, nothing restarts.
	tc.Spec.Suspended, tc.Generation = true, 2
	res, err = f.p.Update(ctx, tc)
	if err != nil || res.Status != v1alpha1.UpdateStatusSuccess || strings.Join(res.Changes, ",") != "run strategy: Always → Halted" {
		t.Errorf("suspend: %+v %v", res, err)
	}
	if vm := f.vm("shop"); vm.Spec.RunStrategy != gov.RunStrategyHalted || vm.Spec.RestartedAt != "" {
		t.Errorf("suspended spec %+v", vm.Spec)
	}
	f.sync()
	f.govern("shop", approved(gov.VMPhaseStopped, false))
	st, _ := f.p.GetStatus(ctx, tc)
	if st.State != v1alpha1.ComputeStateStopped || st.Containers[0].State != "stopped" || st.Containers[0].Ready {
		t.Errorf("stopped status %+v", st)
	}

	// Resuming with a new image for one container: a modify with a restart, which waits for
	// approval; the result names the ticket.
	tc.Spec.Suspended, tc.Generation = false, 3
	tc.Spec.Containers[0].Image = "nginx:1.28"
	f.writes()
	res, err = f.p.Update(ctx, tc)
	if err != nil || res.Status != v1alpha1.UpdateStatusSuccess ||
		strings.Join(res.Changes, ",") != "container web: changed,run strategy: Halted → Always" {
		t.Errorf("change: %+v %v", res, err)
	}
	vm := f.vm("shop")
	if vm.Spec.RestartedAt != "2026-11-24T09:30:00Z" || !strings.Contains(vm.Spec.CloudInit, "docker.io/library/nginx:1.28") {
		t.Errorf("changed spec %+v", vm.Spec)
	}
	f.govern("shop", pending(gov.OperationModify, "tkt-2"))
	f.writes()
	res, err = f.p.Update(ctx, tc)
	if err != nil || res.Status != v1alpha1.UpdateStatusInProgress || !strings.Contains(res.Message, "ticket tkt-2 to modify") {
		t.Errorf("pending: %+v %v", res, err)
	}
	// A newer spec waits for that decision.
	tc.Spec.Containers[1].Args, tc.Generation = []string{"--queue", "refunds"}, 4
	res, err = f.p.Update(ctx, tc)
	if err != nil || res.Status != v1alpha1.UpdateStatusInProgress || !strings.Contains(res.Message, "once that is decided") {
		t.Errorf("blocked: %+v %v", res, err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("wrote while a request was pending: %v", w)
	}
}

// A rejected change fails the update until the tenant changes its spec; then it is asked for
// again, once.
func TestRejectedChange(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	if _, err := f.p.Provision(ctx, tc); err != nil {
		t.Fatal(err)
	}
	f.govern("shop", approved(gov.VMPhaseRunning, true))
	approvedSpec := f.vm("shop").Spec
	tc.Spec.Resources.CPU, tc.Generation = 4000, 2
	if _, err := f.p.Update(ctx, tc); err != nil {
		t.Fatal(err)
	}
	// Rejected: governance puts the approved spec back.
	f.govern("shop", func(vm *gov.ManagedVM) {
		vm.Spec = approvedSpec
		vm.Status.LastTicket = "tkt-3"
		rejectedBy("Rejected")(vm)
	})
	f.writes()
	if _, err := f.p.Update(ctx, tc); !errkind.IsStalled(err) || !strings.Contains(err.Error(), "rejected in ticket tkt-3") {
		t.Errorf("rejected: %v", err)
	}
	if st, _ := f.p.GetStatus(ctx, tc); st.State != v1alpha1.ComputeStateRunning || !strings.Contains(st.Message, "tkt-3") {
		t.Errorf("a rejected change leaves the VM running: %+v", st)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("asked again: %v", w)
	}
	tc.Generation = 3
	if res, err := f.p.Update(ctx, tc); err != nil || res.Status != v1alpha1.UpdateStatusSuccess {
		t.Errorf("new generation: %+v %v", res, err)
	}
	if vm := f.vm("shop"); vm.Spec.Resources.CPU != 4 {
		t.Errorf("asked for %+v", vm.Spec.Resources)
	}
}

// What an approver made of a request stands: a modified spec is not asked back.
func TestApproversModifiedSpecStands(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	if _, err := f.p.Provision(ctx, tc); err != nil {
		t.Fatal(err)
	}
	f.govern("shop", func(vm *gov.ManagedVM) {
		vm.Spec.Resources.CPU = 1
		approved(gov.VMPhaseRunning, true)(vm)
	})
	f.writes()
	if res, err := f.p.Update(ctx, tc); err != nil || res.Status != v1alpha1.UpdateStatusNoChanges || len(f.writes()) != 0 {
		t.Errorf("%+v %v", res, err)
	}
}

func TestLabelsFollowTheTenant(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	tc.Spec.Labels["kubevirt-shepherd.io/system"] = "mine"
	if _, err := f.p.Provision(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if vm := f.vm("shop"); vm.Labels["kubevirt-shepherd.io/system"] != "" {
		t.Errorf("a governance label was copied: %v", vm.Labels)
	}
	f.sync()
	tc.Spec.Labels = map[string]string{"tier": "gold"}
	res, err := f.p.Update(ctx, tc)
	if err != nil || res.Status != v1alpha1.UpdateStatusSuccess || strings.Join(res.Changes, ",") != "labels" {
		t.Errorf("%+v %v", res, err)
	}
	vm := f.vm("shop")
	if vm.Labels["team"] != "" || vm.Labels["tier"] != "gold" || !ours(vm.Labels, tc) || vm.Annotations[AnnotationRequestedGeneration] != "1" {
		t.Errorf("labels %v annotations %v", vm.Labels, vm.Annotations)
	}
}

func TestDestroy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	if err := f.p.Destroy(ctx, tc); err != nil {
		t.Errorf("destroying a tenant with nothing: %v", err)
	}
	if _, err := f.p.Provision(ctx, tc); err != nil {
		t.Fatal(err)
	}
	f.govern("shop", approved(gov.VMPhaseRunning, true))
	f.govern("shop", pending(gov.OperationStop, "tkt-4"))
	var decided []string
	f.client.PrependReactor("create", "approvaltickets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c := a.(clienttesting.CreateAction)
		decided = append(decided, c.GetSubresource()+" "+string(c.GetObject().(*gov.TicketDecision).Decision)+" "+c.(clienttesting.CreateActionImpl).Name)
		return true, &gov.ApprovalTicket{}, nil
	})
	// Governance holds a VM's deletion with its finalizer until the delete is approved.
	f.client.PrependReactor("delete", "managedvms", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := f.client.Tracker().Get(a.GetResource(), "team-a", "shop")
		if err != nil {
			return true, nil, err
		}
		vm := obj.(*gov.ManagedVM)
		vm.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		pending(gov.OperationDelete, "tkt-5")(vm)
		return true, nil, f.client.Tracker().Update(a.GetResource(), vm, "team-a")
	})
	err := f.p.Destroy(ctx, tc)
	if !errkind.IsWaiting(err) || !strings.Contains(err.Error(), "ticket tkt-5 to delete") {
		t.Errorf("waiting for the delete's approval: %v", err)
	}
	if strings.Join(decided, ",") != "approval Cancel tkt-4" {
		t.Errorf("the pending stop was not withdrawn first: %v", decided)
	}
	f.client.ReactionChain = f.client.ReactionChain[2:]

	// Rejected: the VM stays; asking again is the tenant's (or an admin's) decision.
	f.govern("shop", rejectedBy("Rejected"))
	if err := f.p.Destroy(ctx, tc); !errkind.IsStalled(err) || !strings.Contains(err.Error(), "deletion of the VM was rejected") {
		t.Errorf("rejected delete: %v", err)
	}
	// Approved: the runtime removes the VM.
	f.govern("shop", approved(gov.VMPhaseDeleting, false))
	if err := f.p.Destroy(ctx, tc); !errkind.IsWaiting(err) || !strings.Contains(err.Error(), "removed from cluster local") {
		t.Errorf("being removed: %v", err)
	}

	// Gone from the API, still in the cache: the service waits for the cache.
	if err := f.client.Tracker().Delete(gov.SchemeGroupVersion.WithResource("managedvms"), "team-a", "shop"); err != nil {
		t.Fatal(err)
	}
	if err := f.p.Destroy(ctx, tc); !errkind.IsWaiting(err) {
		t.Errorf("cache lag: %v", err)
	}
	f.sync()
	f.writes()
	if err := f.p.Destroy(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.writes(), ","); got != "delete systemservices,delete systems" {
		t.Errorf("cleanup writes %s", got)
	}
	if err := f.p.Destroy(ctx, tc); err != nil || len(f.writes()) != 0 {
		t.Errorf("destroying again: %v", err)
	}
}

// A System the tenant made, or one still holding another tenant's service, stays.
func TestDestroyKeepsSharedAndForeignSystems(t *testing.T) {
	ctx := context.Background()
	other := tenant()
	other.Name, other.Spec.TenantID = "blog", "blog"
	f := newFixture(t)
	for _, tc := range []*v1alpha1.TenantCompute{tenant(), other} {
		if _, err := f.p.Provision(ctx, tc); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.client.Tracker().Delete(gov.SchemeGroupVersion.WithResource("managedvms"), "team-a", "shop"); err != nil {
		t.Fatal(err)
	}
	f.sync()
	f.writes()
	if err := f.p.Destroy(ctx, tenant()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.writes(), ","); got != "delete systemservices" {
		t.Errorf("writes %s", got)
	}

	own := &gov.System{ObjectMeta: metav1.ObjectMeta{Name: SystemName, Namespace: "team-a"}}
	f = newFixture(t, own)
	if err := f.p.Destroy(ctx, tenant()); err != nil || len(f.writes()) != 0 {
		t.Errorf("the tenant's own System: %v", err)
	}
}

func TestGetStatusMapsTheManagedVM(t *testing.T) {
	tc := tenant()
	deleting := metav1.Now()
	for _, tc2 := range []struct {
		name    string
		govern  []func(*gov.ManagedVM)
		del     bool
		state   v1alpha1.ComputeState
		health  v1alpha1.HealthStatus
		ready   bool
		message string
	}{
		{"creation pending", []func(*gov.ManagedVM){pending(gov.OperationCreate, "tkt-1")}, false, v1alpha1.ComputeStateStarting, v1alpha1.HealthStatusUnknown, false, "Waiting for approval of ticket tkt-1 to create the VM."},
		{"creation rejected", []func(*gov.ManagedVM){pending(gov.OperationCreate, "tkt-1"), rejectedBy("Rejected")}, false, v1alpha1.ComputeStateFailed, v1alpha1.HealthStatusUnhealthy, false, "The creation of the VM was rejected in ticket tkt-1."},
		{"creation cancelled", []func(*gov.ManagedVM){pending(gov.OperationCreate, "tkt-1"), rejectedBy("Cancelled")}, false, v1alpha1.ComputeStateFailed, v1alpha1.HealthStatusUnhealthy, false, "The creation of the VM was cancelled in ticket tkt-1."},
		{"creating", []func(*gov.ManagedVM){approved(gov.VMPhaseCreating, false)}, false, v1alpha1.ComputeStateStarting, v1alpha1.HealthStatusUnknown, false, "The VM is Starting on cluster local."},
		{"running", []func(*gov.ManagedVM){approved(gov.VMPhaseRunning, true)}, false, v1alpha1.ComputeStateRunning, v1alpha1.HealthStatusHealthy, true, ""},
		{"running, not ready", []func(*gov.ManagedVM){approved(gov.VMPhaseRunning, false)}, false, v1alpha1.ComputeStateRunning, v1alpha1.HealthStatusUnhealthy, false, "The VM is Starting on cluster local."},
		{"stopping", []func(*gov.ManagedVM){approved(gov.VMPhaseStopping, false)}, false, v1alpha1.ComputeStateStopping, v1alpha1.HealthStatusUnknown, false, "The VM is Starting on cluster local."},
		{"stopped", []func(*gov.ManagedVM){approved(gov.VMPhaseStopped, false)}, false, v1alpha1.ComputeStateStopped, v1alpha1.HealthStatusUnknown, false, "The VM is Starting on cluster local."},
		{"failed", []func(*gov.ManagedVM){approved(gov.VMPhaseFailed, false)}, false, v1alpha1.ComputeStateFailed, v1alpha1.HealthStatusUnhealthy, false, "The VM is Starting on cluster local."},
		{"modify pending while running", []func(*gov.ManagedVM){approved(gov.VMPhaseRunning, true), pending(gov.OperationModify, "tkt-2")}, false, v1alpha1.ComputeStateRunning, v1alpha1.HealthStatusHealthy, true, "Waiting for approval of ticket tkt-2 to modify the VM."},
		{"delete pending", []func(*gov.ManagedVM){approved(gov.VMPhaseRunning, true), pending(gov.OperationDelete, "tkt-3")}, true, v1alpha1.ComputeStateRunning, v1alpha1.HealthStatusHealthy, true, "Waiting for approval of ticket tkt-3 to delete the VM."},
		{"deleting", []func(*gov.ManagedVM){approved(gov.VMPhaseDeleting, false)}, true, v1alpha1.ComputeStateStopping, v1alpha1.HealthStatusUnknown, false, "ManagedVM shop is being deleted."},
	} {
		t.Run(tc2.name, func(t *testing.T) {
			f := newFixture(t)
			if _, err := f.p.Provision(context.Background(), tc); err != nil {
				t.Fatal(err)
			}
			for _, g := range tc2.govern {
				f.govern("shop", g)
			}
			if tc2.del {
				vm := f.vm("shop")
				vm.DeletionTimestamp = &deleting
				_ = f.cache.Update(vm)
			}
			st, err := f.p.GetStatus(context.Background(), tc)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tc2.state || st.Health != tc2.health || st.Message != tc2.message {
				t.Errorf("got %s/%s %q, want %s/%s %q", st.State, st.Health, st.Message, tc2.state, tc2.health, tc2.message)
			}
			if len(st.Containers) != 2 || st.Containers[1].Name != "worker" || st.Containers[1].Ready != tc2.ready {
				t.Errorf("containers %+v", st.Containers)
			}
		})
	}
}

func TestGetStatusWithoutAVM(t *testing.T) {
	f := newFixture(t)
	st, err := f.p.GetStatus(context.Background(), tenant())
	if err != nil || st.State != v1alpha1.ComputeStateUnknown || !strings.Contains(st.Message, "not been requested") {
		t.Errorf("%+v %v", st, err)
	}
}

func TestTenantFor(t *testing.T) {
	f := newFixture(t)
	tc := tenant()
	vm := &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", Labels: ownLabels(tc)}}
	if key, ok := f.p.TenantFor(vm); !ok || key != cache.NewObjectName("team-a", "shop") {
		t.Errorf("%v %v", key, ok)
	}
	if key, ok := f.p.TenantFor(cache.DeletedFinalStateUnknown{Key: "team-a/shop", Obj: vm}); !ok || key.Name != "shop" {
		t.Errorf("tombstone: %v %v", key, ok)
	}
	if _, ok := f.p.TenantFor(&gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "cache-1", Namespace: "team-a"}}); ok {
		t.Error("a tenant's own VM mapped to a TenantCompute")
	}
	if len(f.p.Informers()) != 1 {
		t.Error("informers")
	}
}

func TestConfig(t *testing.T) {
	tc := tenant()
	tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"image":"quay.io/containerdisks/ubuntu:24.04"}`)}
	if cfg, err := configOf(tc); err != nil || cfg.Image != "quay.io/containerdisks/ubuntu:24.04" {
		t.Errorf("%+v %v", cfg, err)
	}
	for _, raw := range []string{`{"cluster":"local"}`, `{"image":"a b"}`, `{"image":""}`, `[]`} {
		tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(raw)}
		if _, err := configOf(tc); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
}

func TestWriteOutcomes(t *testing.T) {
	ctx := context.Background()

	// Update of a tenant whose VM is gone asks for it again.
	f := newFixture(t)
	res, err := f.p.Update(ctx, tenant())
	if err != nil || res.Status != v1alpha1.UpdateStatusInProgress || strings.Join(res.Changes, ",") != "ManagedVM shop: requested" {
		t.Errorf("update without a VM: %+v %v", res, err)
	}

	// A VM being deleted is asked for again once gone: retried, not failed.
	f.govern("shop", func(vm *gov.ManagedVM) { vm.DeletionTimestamp = &metav1.Time{Time: time.Now()} })
	tc := tenant()
	tc.Generation = 2
	tc.Spec.Suspended = true
	if _, err := f.p.Update(ctx, tc); err == nil || errkind.IsStalled(err) || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("VM being deleted: %v", err)
	}

	// The API refusing the VM the provider built cannot be fixed by retrying.
	f = newFixture(t)
	f.client.PrependReactor("create", "managedvms", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(gov.SchemeGroupVersion.WithKind("ManagedVM").GroupKind(), "shop", field.ErrorList{field.TooLong(field.NewPath("spec", "cloudInit"), "", 2048)})
	})
	if _, err := f.p.Provision(ctx, tenant()); !errkind.IsStalled(err) || !strings.Contains(err.Error(), "spec.cloudInit") {
		t.Errorf("refused VM: %v", err)
	}
	// Anything else is retried.
	f = newFixture(t)
	f.client.PrependReactor("create", "managedvms", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is away")
	})
	if _, err := f.p.Provision(ctx, tenant()); err == nil || errkind.IsStalled(err) {
		t.Errorf("unavailable: %v", err)
	}
}

// The VM requests the provider makes name the tenant's last spec writer, as the server recorded
// it on the TenantCompute, so that governance makes that user the requester; without a
// recorded user they name nobody.
func TestRequestsNameWhoCausedThem(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tc := tenant()
	tc.Annotations = map[string]string{common.AnnotationRequestedBy: "alice"}
	if _, err := f.p.Provision(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if got := f.vm("shop").Annotations[gov.AnnotationOnBehalfOf]; got != "alice" {
		t.Errorf("the creation is on behalf of %q, want alice", got)
	}
	f.govern("shop", approved(gov.VMPhaseRunning, true))

	tc.Spec.Resources.CPU, tc.Generation, tc.Annotations[common.AnnotationRequestedBy] = 3000, 2, "bob"
	if _, err := f.p.Update(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if got := f.vm("shop").Annotations[gov.AnnotationOnBehalfOf]; got != "bob" {
		t.Errorf("the change is on behalf of %q, want bob", got)
	}
	f.govern("shop", approved(gov.VMPhaseRunning, true))

	tc.Spec.Resources.CPU, tc.Generation, tc.Annotations = 4000, 3, nil
	if _, err := f.p.Update(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if got, ok := f.vm("shop").Annotations[gov.AnnotationOnBehalfOf]; ok {
		t.Errorf("a change without a recorded writer is on behalf of %q", got)
	}
}
