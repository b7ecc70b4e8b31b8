package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtclient "kubevirt.io/client-go/kubevirt"

	"github.com/plinth-dev/plinth/internal/localplatform"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	govclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestVMRuntime follows a governed VM of a production system from approval to a KubeVirt
// VirtualMachine on Cluster local (the simulated KubeVirt) and back: created with the
// platform's labels and RUNNING, stopped, started and restarted through tickets, a stop
// approved while plinth-controller is down and carried out when it returns, deleted; then
// adoption of a labelled VM found on the cluster.
func TestVMRuntime(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=2s", "--adoption-scan-interval=1s", "--vm-poll-interval=500ms")
	})
	ctx := context.Background()
	govFor := func(user string) govclient.GovernanceV1alpha1Interface {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg).GovernanceV1alpha1()
	}
	alice, carol, dana := govFor("alice"), govFor("carol"), govFor("dana")
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kv := kubevirtclient.NewForConfigOrDie(adminCfg).KubevirtV1()
	const ns = "team-a"

	if _, err := alice.Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "bank"}, Spec: gov.SystemSpec{Environment: gov.EnvironmentProd}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "bank"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	approve := func(vmName string) string {
		t.Helper()
		vm, err := alice.ManagedVMs(ns).Get(ctx, vmName, metav1.GetOptions{})
		if err != nil || vm.Status.PendingApproval == nil {
			t.Fatalf("no pending request on %s: %+v %v", vmName, vm.Status, err)
		}
		ticket := vm.Status.PendingApproval.Ticket
		if _, err := carol.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove, Cluster: "local", StorageClass: "standard"}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("approving %s: %v", ticket, err)
		}
		return ticket
	}
	waitVM := func(name string, phase gov.VMPhase) *gov.ManagedVM {
		t.Helper()
		var vm *gov.ManagedVM
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			var err error
			vm, err = alice.ManagedVMs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return vm.Status.Phase == phase, fmt.Sprintf("%+v", vm.Status)
		})
		return vm
	}
	waitTicket := func(name string, state gov.TicketState) *gov.ApprovalTicket {
		t.Helper()
		var tk *gov.ApprovalTicket
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			var err error
			tk, err = alice.ApprovalTickets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return tk.Status.State == state, fmt.Sprintf("%s: %s", tk.Status.State, tk.Status.Message)
		})
		return tk
	}
	onCluster := func(name string) *kubevirtv1.VirtualMachine {
		t.Helper()
		vm, err := kv.VirtualMachines(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("VirtualMachine %s: %v", name, err)
		}
		return vm
	}
	request := func(name string, change func(*gov.ManagedVMSpec)) {
		t.Helper()
		vm, err := alice.ManagedVMs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(&vm.Spec)
		if _, err := alice.ManagedVMs(ns).Update(ctx, vm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	disk := resource.MustParse("20Gi")
	var createTicket string
	t.Run("an approved VM becomes a labelled VirtualMachine on the cluster and RUNNING; the ticket succeeds", func(t *testing.T) {
		_, err := alice.ManagedVMs(ns).Create(ctx, &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "ledger"},
			Spec: gov.ManagedVMSpec{SystemServiceRef: gov.LocalObjectReference{Name: "db"}, InstanceType: "u1.medium", DiskSize: &disk,
				Image: "quay.io/containerdisks/fedora:40", RequiredFeatures: []string{"LiveMigration"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		createTicket = approve("ledger")
		vm := waitVM("ledger", gov.VMPhaseRunning)
		tk := waitTicket(createTicket, gov.TicketSuccess)
		if !strings.Contains(tk.Status.Message, "Running on cluster local") {
			t.Errorf("ticket message %q", tk.Status.Message)
		}
		if vm.Status.InstanceName != "team-a-bank-db-01" || !hasFinalizer(vm.Finalizers, "governance.plinth.dev/vm-cleanup") {
			t.Errorf("VM: %+v finalizers %v", vm.Status, vm.Finalizers)
		}
		found := onCluster("team-a-bank-db-01")
		for k, v := range map[string]string{
			"kubevirt-shepherd.io/managed-by": "plinth", "kubevirt-shepherd.io/system": "bank", "kubevirt-shepherd.io/service": "db",
			"kubevirt-shepherd.io/instance": "01", "kubevirt-shepherd.io/ticket-id": createTicket,
		} {
			if found.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, found.Labels[k], v)
			}
		}
		if found.Spec.Instancetype == nil || found.Spec.Instancetype.Name != "u1.medium" || *found.Spec.RunStrategy != kubevirtv1.RunStrategyAlways ||
			found.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusRunning {
			t.Errorf("VirtualMachine: %+v %+v", found.Spec, found.Status)
		}
		claim, err := kubernetes.NewForConfigOrDie(adminCfg).CoreV1().PersistentVolumeClaims(ns).Get(ctx, "team-a-bank-db-01-disk", metav1.GetOptions{})
		if err != nil || *claim.Spec.StorageClassName != "standard" || claim.Spec.Resources.Requests[corev1.ResourceStorage] != disk {
			t.Errorf("disk claim: %+v %v", claim, err)
		}
		audits, err := alice.AuditLogs(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.action=execution.success"})
		if err != nil || len(audits.Items) == 0 || audits.Items[0].Spec.Actor != localplatform.ControllerUser {
			t.Errorf("execution audit: %+v %v", audits, err)
		}
	})

	t.Run("tenants cannot report executions or drop the runtime's finalizer", func(t *testing.T) {
		vm, err := alice.ManagedVMs(ns).Get(ctx, "ledger", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, f := range vm.Finalizers {
			if f != "governance.plinth.dev/vm-cleanup" {
				kept = append(kept, f)
			}
		}
		vm.Finalizers = kept
		_, err = alice.ManagedVMs(ns).Update(ctx, vm, metav1.UpdateOptions{})
		expectCode(t, err, apperror.PlatformLabel, "alice removes the runtime's finalizer")
		_, err = alice.ApprovalTickets(ns).ReportExecution(ctx, createTicket, &gov.TicketExecution{State: gov.TicketFailed}, metav1.CreateOptions{})
		expectForbidden(t, err, "alice reports an execution")
		_, err = dana.ApprovalTickets(ns).ReportExecution(ctx, createTicket, &gov.TicketExecution{State: gov.TicketFailed}, metav1.CreateOptions{})
		expectForbidden(t, err, "dana reports an execution")
	})

	t.Run("stop, start and restart tickets drive the run strategy", func(t *testing.T) {
		request("ledger", func(s *gov.ManagedVMSpec) { s.RunStrategy = gov.RunStrategyHalted })
		stop := approve("ledger")
		waitVM("ledger", gov.VMPhaseStopped)
		waitTicket(stop, gov.TicketSuccess)
		if vm := onCluster("team-a-bank-db-01"); *vm.Spec.RunStrategy != kubevirtv1.RunStrategyHalted {
			t.Errorf("run strategy %s", *vm.Spec.RunStrategy)
		}
		request("ledger", func(s *gov.ManagedVMSpec) { s.RunStrategy = gov.RunStrategyAlways })
		start := approve("ledger")
		waitVM("ledger", gov.VMPhaseRunning)
		waitTicket(start, gov.TicketSuccess)
		at := time.Now().UTC().Format(time.RFC3339)
		request("ledger", func(s *gov.ManagedVMSpec) { s.RestartedAt = at })
		restart := approve("ledger")
		waitTicket(restart, gov.TicketSuccess)
		if vm := onCluster("team-a-bank-db-01"); vm.Annotations["kubevirt-shepherd.io/restarted-at"] != at {
			t.Errorf("restart not recorded on the VM: %v", vm.Annotations)
		}
		waitVM("ledger", gov.VMPhaseRunning)
	})

	t.Run("the VM's owner reads its transitions as events; the cluster's carry no credential", func(t *testing.T) {
		var out string
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			var err error
			out, err = framework.Kubectl(p.Kubeconfig("alice"), "events", "--for", "managedvm/ledger", "-n", ns)
			return err == nil && strings.Contains(out, "Stopped") && strings.Count(out, "Executed") >= 4, nil
		}); err != nil {
			t.Fatalf("kubectl events as alice:\n%s", out)
		}
		for _, want := range []string{"Created", "VirtualMachine team-a-bank-db-01 was created on cluster local.", "Running", "Stopped", "Executed"} {
			if !strings.Contains(out, want) {
				t.Errorf("events lack %q:\n%s", want, out)
			}
		}
		// A cluster-scoped object's events live in the default namespace; none carries the
		// kubeconfig.
		clusterEvents, err := framework.Kubectl(p.AdminKubeconfig(), "events", "--for", "cluster/local", "-n", "default")
		if err != nil || !strings.Contains(clusterEvents, "Healthy") || strings.Contains(clusterEvents, "BEGIN") || strings.Contains(clusterEvents, "token") {
			t.Errorf("cluster events: %v\n%s", err, clusterEvents)
		}
	})

	t.Run("a stop approved while the controller is down is carried out when it returns", func(t *testing.T) {
		p.KillController()
		request("ledger", func(s *gov.ManagedVMSpec) { s.RunStrategy = gov.RunStrategyHalted })
		stop := approve("ledger")
		if tk, _ := alice.ApprovalTickets(ns).Get(ctx, stop, metav1.GetOptions{}); tk.Status.State != gov.TicketExecuting {
			t.Errorf("ticket %s without a runtime", tk.Status.State)
		}
		if vm := onCluster("team-a-bank-db-01"); *vm.Spec.RunStrategy != kubevirtv1.RunStrategyAlways {
			t.Errorf("something stopped the VM without the controller")
		}
		if err := p.StartController(); err != nil {
			t.Fatal(err)
		}
		waitVM("ledger", gov.VMPhaseStopped)
		waitTicket(stop, gov.TicketSuccess)
	})

	t.Run("an approved delete removes the VirtualMachine, then the ManagedVM", func(t *testing.T) {
		if err := alice.ManagedVMs(ns).Delete(ctx, "ledger", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		del := approve("ledger")
		waitTicket(del, gov.TicketSuccess)
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			_, err := kv.VirtualMachines(ns).Get(ctx, "team-a-bank-db-01", metav1.GetOptions{})
			_, vmErr := alice.ManagedVMs(ns).Get(ctx, "ledger", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && apierrors.IsNotFound(vmErr), fmt.Sprintf("VirtualMachine: %v, ManagedVM: %v", err, vmErr)
		})
	})

	t.Run("a labelled VM without a ManagedVM is found, and adopted with its instance number", func(t *testing.T) {
		labelled := func(name, system, service, instance string) *kubevirtv1.VirtualMachine {
			always := kubevirtv1.RunStrategyAlways
			mem := resource.MustParse("1Gi")
			return &kubevirtv1.VirtualMachine{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
					"kubevirt-shepherd.io/managed-by": "plinth", "kubevirt-shepherd.io/system": system,
					"kubevirt-shepherd.io/service": service, "kubevirt-shepherd.io/instance": instance,
				}},
				Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &always, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
					Spec: kubevirtv1.VirtualMachineInstanceSpec{
						Domain:  kubevirtv1.DomainSpec{CPU: &kubevirtv1.CPU{Cores: 2}, Memory: &kubevirtv1.Memory{Guest: &mem}},
						Volumes: []kubevirtv1.Volume{{Name: "root", VolumeSource: kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:40"}}}},
					},
				}},
			}
		}
		for _, vm := range []*kubevirtv1.VirtualMachine{
			labelled("team-a-bank-db-07", "bank", "db", "07"),
			labelled("team-a-bank-cache-02", "bank", "cache", "02"), // no such service: ignored
			labelled("team-a-shop-db-03", "shop", "db", "03"),       // db belongs to bank: ignored
		} {
			if _, err := kv.VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var pa *gov.PendingAdoption
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			var err error
			pa, err = dana.PendingAdoptions(ns).Get(ctx, "local-team-a-bank-db-07", metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
		if pa.Spec.Instance != 7 || pa.Spec.SystemServiceRef.Name != "db" || pa.Spec.VMSpec.Resources == nil || pa.Spec.VMSpec.Resources.CPU != 2 {
			t.Errorf("candidate: %+v", pa.Spec)
		}
		time.Sleep(3 * time.Second) // a few scans more: nothing else is proposed
		list, err := dana.PendingAdoptions(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("candidates: %v %v", list, err)
		}

		_, err = alice.PendingAdoptions(ns).Adopt(ctx, pa.Name, &gov.AdoptionRequest{}, metav1.CreateOptions{})
		expectForbidden(t, err, "alice adopts")
		_, err = dana.PendingAdoptions(ns).Adopt(ctx, pa.Name, &gov.AdoptionRequest{VMName: "Not_A_Name"}, metav1.CreateOptions{})
		expectInvalid(t, err, "vmName")
		adopted, err := dana.PendingAdoptions(ns).Adopt(ctx, pa.Name, &gov.AdoptionRequest{VMName: "ledger-7", Reason: "found after the outage"}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if adopted.Status.Instance != 7 || adopted.Status.InstanceName != "team-a-bank-db-07" || adopted.Labels["kubevirt-shepherd.io/instance"] != "07" {
			t.Errorf("adopted: %+v %v", adopted.Status, adopted.Labels)
		}
		waitVM("ledger-7", gov.VMPhaseRunning)
		// A cluster that hosts VMs stays registered: without its credentials nothing could
		// remove them.
		err = clientset.NewForConfigOrDie(danaCfg(t, p)).PlatformV1alpha1().Clusters().Delete(ctx, "local", metav1.DeleteOptions{})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "team-a/ledger-7") {
			t.Errorf("deleting a cluster that hosts VMs: %v", err)
		}
		if _, err := dana.PendingAdoptions(ns).Get(ctx, pa.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the candidate stays: %v", err)
		}
		_, err = dana.PendingAdoptions(ns).Adopt(ctx, pa.Name, &gov.AdoptionRequest{}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("adopting twice: %v", err)
		}
		svc, err := alice.SystemServices(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil || svc.Status.NextInstanceIndex != 8 {
			t.Errorf("the counter must move past an adopted number: %+v %v", svc.Status, err)
		}
		// The adopted VM is governed like any other: a stop in prod needs a ticket.
		_, err = alice.ManagedVMs(ns).Patch(ctx, "ledger-7", types.MergePatchType, []byte(`{"spec":{"runStrategy":"Halted"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		vm, _ := alice.ManagedVMs(ns).Get(ctx, "ledger-7", metav1.GetOptions{})
		if vm.Status.PendingApproval == nil || vm.Status.PendingApproval.Operation != gov.OperationStop {
			t.Errorf("adopted VM: %+v", vm.Status)
		}
	})

	t.Run("a create that needs no approval is placed on a HEALTHY cluster that offers what it needs", func(t *testing.T) {
		policy := &gov.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "free-lab-creates"},
			Spec: gov.ApprovalPolicySpec{Environment: gov.EnvironmentTest, Operations: []gov.Operation{gov.OperationCreate}, ApprovalRequired: false}}
		if _, err := dana.ApprovalPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = dana.ApprovalPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{}) }()
		if _, err := alice.Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "lab"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := alice.SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "box"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "lab"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		newBox := func(name string, features ...string) *gov.ManagedVM {
			return &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gov.ManagedVMSpec{SystemServiceRef: gov.LocalObjectReference{Name: "box"},
				InstanceType: "u1.small", Image: "quay.io/containerdisks/fedora:40", RequiredFeatures: features}}
		}
		_, err := alice.ManagedVMs(ns).Create(ctx, newBox("box-gpu", "GPU"), metav1.CreateOptions{})
		expectCode(t, err, apperror.ClusterDegraded, "an approval-free create no cluster can take")
		if _, err := alice.ManagedVMs(ns).Get(ctx, "box-gpu", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the refused VM was stored: %v", err)
		}
		vm, err := alice.ManagedVMs(ns).Create(ctx, newBox("box-1", "Snapshot"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if vm.Status.Cluster != "local" || vm.Status.PendingApproval != nil {
			t.Errorf("approval-free create: %+v", vm.Status)
		}
		waitVM("box-1", gov.VMPhaseRunning)
	})
}

func danaCfg(t *testing.T, p *localplatform.Platform) *rest.Config {
	cfg, err := p.ConfigFor("dana")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func hasFinalizer(finalizers []string, f string) bool {
	for _, x := range finalizers {
		if x == f {
			return true
		}
	}
	return false
}
