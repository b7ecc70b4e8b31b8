// Package governancetest builds the governance registry for tests: the real registry stores of
// every kind the approval flow touches, over an in-process etcd, the flow over them and its
// subresources, and helpers to seed objects and act as a user. Tests of the flow and of the
// REST handlers that call it use it instead of a running server.
package governancetest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	governanceinstall "github.com/plinth-dev/plinth/pkg/apis/governance/install"
	governancev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/platform"
	platforminstall "github.com/plinth-dev/plinth/pkg/apis/platform/install"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/embeddedetcd/etcdtest"
	"github.com/plinth-dev/plinth/pkg/governance/approval"
	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/registry/governance/approvalticket"
	"github.com/plinth-dev/plinth/pkg/registry/governance/pendingadoption"
	"github.com/plinth-dev/plinth/pkg/registry/governance/storage"
	"github.com/plinth-dev/plinth/pkg/registry/platform/cluster"
)

const (
	// Approvers is the group the Env's authorizer lets approve tickets, as RBAC lets
	// platform:approvers in a real deployment.
	Approvers = "platform:approvers"
	// RuntimeUser is the VM runtime's identity.
	RuntimeUser = "system:serviceaccount:plinth-system:plinth-controller"
)

var scheme = runtime.NewScheme()

func init() {
	governanceinstall.Install(scheme)
	platforminstall.Install(scheme)
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
}

// Etcd is an in-process etcd that several Envs of one test can share: each Env keeps its
// objects under its own key prefix.
type Etcd struct {
	*etcdtest.Etcd
}

// RunEtcd starts an etcd that stops when t ends, storing objects as JSON of the served
// versions, as plinth-apiserver stores them.
func RunEtcd(t testing.TB) *Etcd {
	t.Helper()
	return &Etcd{etcdtest.Run(t, serializer.NewCodecFactory(scheme).LegacyCodec(governancev1alpha1.SchemeGroupVersion, platformv1alpha1.SchemeGroupVersion))}
}

// Env is the governance registry of one test.
type Env struct {
	t testing.TB
	// Flow is the approval flow over Stores.
	Flow   *approval.Flow
	Stores approval.Stores
	// The subresources that call the flow.
	Approval  *approvalticket.ApprovalREST
	Execution *approvalticket.ExecutionREST
	Adopt     *pendingadoption.AdoptREST

	clusterStatus rest.Updater
}

// New builds the registry over etcd, wired as plinth-apiserver wires it.
func (e *Etcd) New(t testing.TB) *Env {
	t.Helper()
	getter := e.OptionsGetter()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	key, err := keyring.GenerateKey("k1")
	must(err)
	keys, err := keyring.New(keyring.File{Keys: []keyring.FileKey{key}})
	must(err)
	clusters, clusterStatus, _, err := cluster.NewREST(scheme, getter, keys)
	must(err)
	t.Cleanup(clusters.Destroy)
	s, err := storage.New(scheme, getter, approverAuthorizer, clusters, []string{RuntimeUser})
	must(err)
	t.Cleanup(s.Destroy)

	return &Env{
		t: t, Flow: s.Flow, Stores: s.Stores,
		Approval:      s.Resources["approvaltickets/approval"].(*approvalticket.ApprovalREST),
		Execution:     s.Resources["approvaltickets/execution"].(*approvalticket.ExecutionREST),
		Adopt:         s.Resources["pendingadoptions/adopt"].(*pendingadoption.AdoptREST),
		clusterStatus: clusterStatus,
	}
}

// approverAuthorizer lets members of Approvers approve, as the deployment's RBAC does.
var approverAuthorizer = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, g := range a.GetUser().GetGroups() {
		if g == Approvers && a.GetVerb() == "approve" && a.GetSubresource() == "approval" {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
})

// As is a request context of user (with groups) in namespace, as the server's filters make it.
var As = etcdtest.As

// VM is a ManagedVM request of service, as a tenant writes it.
func VM(name, service string) *governance.ManagedVM {
	disk := resource.MustParse("20Gi")
	return &governance.ManagedVM{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: governance.ManagedVMSpec{
			SystemServiceRef: governance.LocalObjectReference{Name: service}, InstanceType: "u1.medium", DiskSize: &disk,
			Image: "quay.io/containerdisks/fedora:40", RunStrategy: governance.RunStrategyAlways, Reason: "cache for the shop",
		},
	}
}

// SeedService creates System system in env and its SystemService service in namespace, as
// user admin.
func (e *Env) SeedService(namespace, system, service string, env governance.Environment) {
	e.t.Helper()
	ctx := As(namespace, "admin")
	if _, err := e.Stores.Systems.Create(ctx, &governance.System{ObjectMeta: metav1.ObjectMeta{Name: system}, Spec: governance.SystemSpec{Environment: env}},
		rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("seeding System %s: %v", system, err)
	}
	if _, err := e.Flow.CreateService(ctx, &governance.SystemService{ObjectMeta: metav1.ObjectMeta{Name: service}, Spec: governance.SystemServiceSpec{SystemRef: governance.LocalObjectReference{Name: system}}},
		rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("seeding SystemService %s: %v", service, err)
	}
}

// SeedPolicy creates an ApprovalPolicy.
func (e *Env) SeedPolicy(name string, spec governance.ApprovalPolicySpec) {
	e.t.Helper()
	if _, err := e.Stores.Policies.Create(As("", "admin"), &governance.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
		rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("seeding ApprovalPolicy %s: %v", name, err)
	}
}

// SeedCluster registers a target cluster whose last probe found it HEALTHY with KubeVirt
// available, enabling features.
func (e *Env) SeedCluster(name string, features ...string) {
	e.t.Helper()
	ctx := As("", "admin")
	c := &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: platform.ClusterSpec{Kubeconfig: kubeconfig(e.t)}}
	if _, err := e.Stores.Clusters.Create(ctx, c, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("seeding Cluster %s: %v", name, err)
	}
	_, _, err := e.clusterStatus.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		c := old.DeepCopyObject().(*platform.Cluster)
		c.Status.Phase = platform.ClusterPhaseHealthy
		c.Status.EnabledFeatures = features
		// The condition the cluster controller's probe writes when KubeVirt serves VMs.
		c.Status.Conditions = []metav1.Condition{{Type: "KubeVirtAvailable", Status: metav1.ConditionTrue,
			Reason: "Served", LastTransitionTime: metav1.Now()}}
		return c, nil
	}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatalf("seeding Cluster %s status: %v", name, err)
	}
}

// kubeconfig is a token kubeconfig of a cluster nobody calls.
func kubeconfig(t testing.TB) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://10.0.0.1:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Request asks, as user in namespace, for the VM: the flow's create.
func (e *Env) Request(namespace, user string, vm *governance.ManagedVM) (*governance.ManagedVM, error) {
	obj, err := e.Flow.CreateVM(As(namespace, user), vm, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*governance.ManagedVM), nil
}

// GetVM returns a stored VM, failing the test when it cannot be read.
func (e *Env) GetVM(namespace, name string) *governance.ManagedVM {
	e.t.Helper()
	obj, err := e.Stores.VMs.Get(As(namespace, "admin"), name, &metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("reading ManagedVM %s: %v", name, err)
	}
	return obj.(*governance.ManagedVM)
}

// PendingTicket is the ticket a VM's pending request waits in.
func (e *Env) PendingTicket(namespace, vm string) string {
	e.t.Helper()
	p := e.GetVM(namespace, vm).Status.PendingApproval
	if p == nil {
		e.t.Fatalf("ManagedVM %s has no pending request", vm)
	}
	return p.Ticket
}

// Decide posts a decision on ticket as user (with groups), through the approval subresource
// and without admission.
func (e *Env) Decide(namespace, ticket string, d governance.TicketDecision, user string, groups ...string) (*governance.ApprovalTicket, error) {
	obj, err := e.Approval.Create(As(namespace, user, groups...), ticket, &d, nil, &metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*governance.ApprovalTicket), nil
}

// Approve is Decide with an approval by carol, an approver, placing a create on cluster
// local.
func (e *Env) Approve(namespace, ticket string) *governance.ApprovalTicket {
	e.t.Helper()
	t, err := e.Decide(namespace, ticket, governance.TicketDecision{Decision: governance.DecisionApprove, Cluster: "local"}, "carol", Approvers)
	if err != nil {
		e.t.Fatalf("carol approves %s: %v", ticket, err)
	}
	return t
}

// Tickets lists the tickets of namespace.
func (e *Env) Tickets(namespace string) []governance.ApprovalTicket {
	e.t.Helper()
	return list[*governance.ApprovalTicketList](e, e.Stores.Tickets, namespace).Items
}

// AuditLogs lists the audit records of namespace.
func (e *Env) AuditLogs(namespace string) []governance.AuditLog {
	e.t.Helper()
	return list[*governance.AuditLogList](e, e.Stores.AuditLogs, namespace).Items
}

// DomainEvents lists the domain events of namespace.
func (e *Env) DomainEvents(namespace string) []governance.DomainEvent {
	e.t.Helper()
	return list[*governance.DomainEventList](e, e.Stores.Events, namespace).Items
}

// VMs lists the ManagedVMs of namespace.
func (e *Env) VMs(namespace string) []governance.ManagedVM {
	e.t.Helper()
	return list[*governance.ManagedVMList](e, e.Stores.VMs, namespace).Items
}

// Revisions lists the VMRevisions of namespace.
func (e *Env) Revisions(namespace string) []governance.VMRevision {
	e.t.Helper()
	return list[*governance.VMRevisionList](e, e.Stores.Revisions, namespace).Items
}

// NextInstance is a SystemService's next instance number.
func (e *Env) NextInstance(namespace, service string) int32 {
	e.t.Helper()
	obj, err := e.Stores.Services.Get(As(namespace, "admin"), service, &metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("reading SystemService %s: %v", service, err)
	}
	return obj.(*governance.SystemService).Status.NextInstanceIndex
}

type lister interface {
	List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error)
}

func list[L runtime.Object](e *Env, store lister, namespace string) L {
	e.t.Helper()
	obj, err := store.List(As(namespace, "admin"), &metainternalversion.ListOptions{})
	if err != nil {
		e.t.Fatalf("listing in %q: %v", namespace, err)
	}
	return obj.(L)
}

// Change updates a VM's spec by fn as user in namespace: the flow's update.
func (e *Env) Change(namespace, user, name string, fn func(*governance.ManagedVMSpec)) error {
	vm := e.GetVM(namespace, name)
	fn(&vm.Spec)
	_, _, err := e.Flow.UpdateVM(As(namespace, user), name, rest.DefaultUpdatedObjectInfo(vm),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return err
}

// Delete deletes a VM as user in namespace: the flow's delete.
func (e *Env) Delete(namespace, user, name string) error {
	_, _, err := e.Flow.DeleteVM(As(namespace, user), name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
	return err
}
