package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	govclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestGovernance runs the VM governance flow on the local platform, through kube-apiserver's
// aggregator, as alice (tenant of team-a), carol (platform:approvers), dana (platform:admins)
// and the cluster admin: requests, approvals from both sides, numbering, policies, deletes
// held for approval, restrictions, immutable records and concurrent approvals.
func TestGovernance(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	clientFor := func(user string) govclient.GovernanceV1alpha1Interface {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg).GovernanceV1alpha1()
	}
	alice, carol, dana, admin := clientFor("alice"), clientFor("carol"), clientFor("dana"), clientFor("admin")
	const ns = "team-a"

	mustCreate := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	newVM := func(name, service string) *gov.ManagedVM {
		disk := resource.MustParse("20Gi")
		return &gov.ManagedVM{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gov.ManagedVMSpec{
				SystemServiceRef: gov.LocalObjectReference{Name: service},
				InstanceType:     "u1.medium", DiskSize: &disk, Image: "quay.io/containerdisks/fedora:40", Reason: "cache for the shop",
			},
		}
	}
	approve := func(c govclient.GovernanceV1alpha1Interface, ticket string) (*gov.ApprovalTicket, error) {
		return c.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove, Cluster: "local"}, metav1.CreateOptions{})
	}
	vmTicket := func(name string) string {
		t.Helper()
		vm, err := alice.ManagedVMs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if vm.Status.PendingApproval == nil {
			t.Fatalf("VM %s has no pending approval: %+v", name, vm.Status)
		}
		return vm.Status.PendingApproval.Ticket
	}

	_, err := alice.Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: gov.SystemSpec{CreatedBy: "mallory"}}, metav1.CreateOptions{})
	mustCreate("alice creates System shop", err)
	_, err = alice.SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "redis"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "shop"}}}, metav1.CreateOptions{})
	mustCreate("alice creates SystemService redis", err)

	t.Run("systems and services are self-service; createdBy is the requester", func(t *testing.T) {
		sys, err := alice.Systems(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil || sys.Spec.CreatedBy != "alice" || sys.Spec.Environment != gov.EnvironmentTest {
			t.Fatalf("system: %+v %v", sys.Spec, err)
		}
		svc, err := alice.SystemServices(ns).Get(ctx, "redis", metav1.GetOptions{})
		if err != nil || svc.Status.NextInstanceIndex != 1 || svc.Spec.CreatedBy != "alice" {
			t.Fatalf("service: %+v %+v %v", svc.Spec, svc.Status, err)
		}
		_, err = alice.SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "nope"}}}, metav1.CreateOptions{})
		expectCode(t, err, apperror.SystemNotFound, "service of a missing system")
		_, err = alice.Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "a-name-longer-than-15"}}, metav1.CreateOptions{})
		expectInvalid(t, err, "metadata.name")
		_, err = alice.Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "stage"}, Spec: gov.SystemSpec{Environment: "staging"}}, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.environment")
	})

	var first string
	t.Run("alice requests a VM: pending ticket, audit record, domain event, nothing allocated", func(t *testing.T) {
		vm, err := alice.ManagedVMs(ns).Create(ctx, newVM("cache-1", "redis"), metav1.CreateOptions{})
		mustCreate("alice requests cache-1", err)
		if vm.Status.Instance != 0 || vm.Status.PendingApproval == nil || vm.Status.PendingApproval.Operation != gov.OperationCreate {
			t.Fatalf("new VM status: %+v", vm.Status)
		}
		if vm.Labels["kubevirt-shepherd.io/system"] != "shop" || vm.Labels["kubevirt-shepherd.io/service"] != "redis" || vm.Labels["kubevirt-shepherd.io/managed-by"] != "plinth" {
			t.Errorf("labels: %v", vm.Labels)
		}
		first = vm.Status.PendingApproval.Ticket
		ticket, err := alice.ApprovalTickets(ns).Get(ctx, first, metav1.GetOptions{})
		if err != nil || ticket.Status.State != gov.TicketPending || ticket.Spec.Requester != "alice" || ticket.Spec.Operation != gov.OperationCreate {
			t.Fatalf("ticket: %+v %+v %v", ticket.Spec, ticket.Status, err)
		}
		audits, err := alice.AuditLogs(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.action=vm.request,spec.target.name=cache-1"})
		if err != nil || len(audits.Items) != 1 || audits.Items[0].Spec.Actor != "alice" || audits.Items[0].Spec.Details["ticket"] != first {
			t.Fatalf("audit records: %+v %v", audits, err)
		}
		events, err := alice.DomainEvents(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.type=VMRequested,spec.aggregate.name=cache-1"})
		if err != nil || len(events.Items) != 1 {
			t.Fatalf("domain events: %+v %v", events, err)
		}
		svc, _ := alice.SystemServices(ns).Get(ctx, "redis", metav1.GetOptions{})
		if svc.Status.NextInstanceIndex != 1 {
			t.Errorf("a pending request allocated an instance: next %d", svc.Status.NextInstanceIndex)
		}
	})

	t.Run("alice cannot approve her own ticket, edit status or set platform fields", func(t *testing.T) {
		_, err := approve(alice, first)
		expectCode(t, err, apperror.ApproverNotAuthorized, "alice approves")
		vm, _ := alice.ManagedVMs(ns).Get(ctx, "cache-1", metav1.GetOptions{})
		vm.Status.Instance = 7
		_, err = alice.ManagedVMs(ns).UpdateStatus(ctx, vm, metav1.UpdateOptions{})
		expectForbidden(t, err, "alice updates VM status")
		_, err = alice.ManagedVMs(ns).Patch(ctx, "cache-1", types.MergePatchType, []byte(`{"metadata":{"labels":{"kubevirt-shepherd.io/instance":"99"}}}`), metav1.PatchOptions{})
		expectCode(t, err, apperror.PlatformLabel, "alice sets the instance label")
		// dana (platform admin, not an approver) may not even reach the subresource.
		_, err = approve(dana, first)
		expectForbidden(t, err, "dana approves")
		_, err = alice.ManagedVMs(ns).Create(ctx, newVM("cache-x", "missing"), metav1.CreateOptions{})
		expectCode(t, err, apperror.ServiceNotFound, "VM of a missing service")
		bad := newVM("cache-y", "redis")
		bad.Spec.Image, bad.Spec.Template = "", ""
		_, err = alice.ManagedVMs(ns).Create(ctx, bad, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.image")
	})

	t.Run("carol approves: instance 01, name team-a-shop-redis-01", func(t *testing.T) {
		ticket, err := approve(carol, first)
		if err != nil {
			t.Fatal(err)
		}
		if ticket.Status.State != gov.TicketExecuting || len(ticket.Status.Decisions) != 1 || ticket.Status.Decisions[0].User != "carol" {
			t.Fatalf("ticket after approval: %+v", ticket.Status)
		}
		vm, err := alice.ManagedVMs(ns).Get(ctx, "cache-1", metav1.GetOptions{})
		if err != nil || vm.Status.Instance != 1 || vm.Status.InstanceName != "team-a-shop-redis-01" ||
			(vm.Status.Phase != gov.VMPhaseCreating && vm.Status.Phase != gov.VMPhaseRunning) ||
			vm.Status.PendingApproval != nil || vm.Status.ApprovedRevision != 1 || vm.Labels["kubevirt-shepherd.io/instance"] != "01" || vm.Status.Cluster != "local" {
			t.Fatalf("VM after approval: %+v labels %v %v", vm.Status, vm.Labels, err)
		}
		if _, err := alice.VMRevisions(ns).Get(ctx, "cache-1-r1", metav1.GetOptions{}); err != nil {
			t.Errorf("revision 1: %v", err)
		}
		_, err = approve(carol, first)
		expectCode(t, err, apperror.TicketNotPending, "second approval of a decided ticket")
	})

	t.Run("numbers are never reused: 02, then 03 after deleting 01", func(t *testing.T) {
		_, err := alice.ManagedVMs(ns).Create(ctx, newVM("cache-2", "redis"), metav1.CreateOptions{})
		mustCreate("cache-2", err)
		if _, err := approve(carol, vmTicket("cache-2")); err != nil {
			t.Fatal(err)
		}
		// Delete 01: held by the finalizer until the delete ticket is approved.
		if err := alice.ManagedVMs(ns).Delete(ctx, "cache-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		held, err := alice.ManagedVMs(ns).Get(ctx, "cache-1", metav1.GetOptions{})
		if err != nil || held.DeletionTimestamp == nil || held.Status.PendingApproval == nil || held.Status.PendingApproval.Operation != gov.OperationDelete {
			t.Fatalf("deletion not held for approval: %+v %v", held, err)
		}
		err = alice.ManagedVMs(ns).Delete(ctx, "cache-1", metav1.DeleteOptions{})
		expectCode(t, err, apperror.DuplicatePendingRequest, "second delete")
		if audits, _ := alice.AuditLogs(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.action=vm.delete_submitted"}); len(audits.Items) != 1 {
			t.Errorf("vm.delete_submitted records: %d", len(audits.Items))
		}
		if _, err := approve(carol, held.Status.PendingApproval.Ticket); err != nil {
			t.Fatal(err)
		}
		// The runtime removes the VirtualMachine, then lets the ManagedVM go.
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			_, err := alice.ManagedVMs(ns).Get(ctx, "cache-1", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprintf("cache-1 after approved delete: %v", err)
		})
		_, err = alice.ManagedVMs(ns).Create(ctx, newVM("cache-3", "redis"), metav1.CreateOptions{})
		mustCreate("cache-3", err)
		if _, err := approve(carol, vmTicket("cache-3")); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"cache-2": "team-a-shop-redis-02", "cache-3": "team-a-shop-redis-03"} {
			vm, _ := alice.ManagedVMs(ns).Get(ctx, name, metav1.GetOptions{})
			if vm.Status.InstanceName != want {
				t.Errorf("%s: instance name %q, want %q", name, vm.Status.InstanceName, want)
			}
		}
	})

	t.Run("modify: duplicate pending, rejection restores the approved spec", func(t *testing.T) {
		_, err := alice.ManagedVMs(ns).Patch(ctx, "cache-2", types.MergePatchType, []byte(`{"spec":{"instanceType":"u1.large"}}`), metav1.PatchOptions{})
		mustCreate("modify cache-2", err)
		ticket := vmTicket("cache-2")
		_, err = alice.ManagedVMs(ns).Patch(ctx, "cache-2", types.MergePatchType, []byte(`{"spec":{"instanceType":"u1.xlarge"}}`), metav1.PatchOptions{})
		expectCode(t, err, apperror.DuplicatePendingRequest, "second modify")
		rejected, err := carol.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionReject, Comment: "too large"}, metav1.CreateOptions{})
		if err != nil || rejected.Status.State != gov.TicketRejected {
			t.Fatalf("reject: %+v %v", rejected, err)
		}
		vm, _ := alice.ManagedVMs(ns).Get(ctx, "cache-2", metav1.GetOptions{})
		if vm.Spec.InstanceType != "u1.medium" || vm.Status.PendingApproval != nil || vm.Status.ApprovedRevision != 1 {
			t.Fatalf("after rejection: spec %q status %+v", vm.Spec.InstanceType, vm.Status)
		}
		// A modify the approver replaces: the approved spec is the approver's.
		_, err = alice.ManagedVMs(ns).Patch(ctx, "cache-2", types.MergePatchType, []byte(`{"spec":{"instanceType":"u1.xlarge"}}`), metav1.PatchOptions{})
		mustCreate("modify cache-2 again", err)
		modified := vm.Spec.DeepCopy()
		modified.InstanceType = "u1.large"
		_, err = carol.ApprovalTickets(ns).Decide(ctx, vmTicket("cache-2"), &gov.TicketDecision{Decision: gov.DecisionApprove, ModifiedSpec: modified}, metav1.CreateOptions{})
		mustCreate("approve with a modified spec", err)
		vm, _ = alice.ManagedVMs(ns).Get(ctx, "cache-2", metav1.GetOptions{})
		rev, err := alice.VMRevisions(ns).Get(ctx, "cache-2-r2", metav1.GetOptions{})
		if vm.Spec.InstanceType != "u1.large" || vm.Status.ApprovedRevision != 2 || err != nil || rev.Spec.VMSpec.InstanceType != "u1.large" {
			t.Fatalf("after approval with modifiedSpec: %q rev %d %v", vm.Spec.InstanceType, vm.Status.ApprovedRevision, err)
		}
	})

	t.Run("cancel: only the requester, only while pending", func(t *testing.T) {
		_, err := alice.ManagedVMs(ns).Patch(ctx, "cache-3", types.MergePatchType, []byte(`{"spec":{"diskSize":"40Gi"}}`), metav1.PatchOptions{})
		mustCreate("modify cache-3", err)
		ticket := vmTicket("cache-3")
		_, err = carol.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionCancel}, metav1.CreateOptions{})
		expectCode(t, err, apperror.NotRequester, "carol cancels")
		cancelled, err := alice.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionCancel}, metav1.CreateOptions{})
		if err != nil || cancelled.Status.State != gov.TicketCancelled {
			t.Fatalf("alice cancels: %+v %v", cancelled, err)
		}
		vm, _ := alice.ManagedVMs(ns).Get(ctx, "cache-3", metav1.GetOptions{})
		if vm.Spec.DiskSize.String() != "20Gi" || vm.Status.PendingApproval != nil {
			t.Errorf("after cancel: disk %s pending %+v", vm.Spec.DiskSize, vm.Status.PendingApproval)
		}
		_, err = approve(carol, ticket)
		expectCode(t, err, apperror.TicketNotPending, "approve a cancelled ticket")
	})

	t.Run("power: test needs no ticket, prod does", func(t *testing.T) {
		vm, err := alice.ManagedVMs(ns).Patch(ctx, "cache-3", types.MergePatchType, []byte(`{"spec":{"runStrategy":"Halted"}}`), metav1.PatchOptions{})
		if err != nil || vm.Status.PendingApproval != nil || vm.Status.ApprovedRevision != 2 {
			t.Fatalf("stop in test: %+v %v", vm.Status, err)
		}
		if audits, _ := alice.AuditLogs(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.action=vm.stop,spec.target.name=cache-3"}); len(audits.Items) != 1 {
			t.Errorf("vm.stop audit records: %d", len(audits.Items))
		}
		_, err = alice.Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "bank"}, Spec: gov.SystemSpec{Environment: gov.EnvironmentProd}}, metav1.CreateOptions{})
		mustCreate("prod system", err)
		_, err = alice.SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "ledger"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "bank"}}}, metav1.CreateOptions{})
		mustCreate("prod service", err)
		_, err = alice.ManagedVMs(ns).Create(ctx, newVM("ledger-1", "ledger"), metav1.CreateOptions{})
		mustCreate("prod VM", err)
		if _, err := approve(carol, vmTicket("ledger-1")); err != nil {
			t.Fatal(err)
		}
		vm, err = alice.ManagedVMs(ns).Patch(ctx, "ledger-1", types.MergePatchType, []byte(`{"spec":{"runStrategy":"Halted"}}`), metav1.PatchOptions{})
		if err != nil || vm.Status.PendingApproval == nil || vm.Status.PendingApproval.Operation != gov.OperationStop {
			t.Fatalf("stop in prod: %+v %v", vm.Status, err)
		}
		if _, err := approve(carol, vm.Status.PendingApproval.Ticket); err != nil {
			t.Fatal(err)
		}
		vm, _ = alice.ManagedVMs(ns).Get(ctx, "ledger-1", metav1.GetOptions{})
		if vm.Spec.RunStrategy != gov.RunStrategyHalted || vm.Status.ApprovedRevision != 2 {
			t.Errorf("after approved stop: %s rev %d", vm.Spec.RunStrategy, vm.Status.ApprovedRevision)
		}
	})

	t.Run("dual approval policy needs two distinct approvers", func(t *testing.T) {
		_, err := alice.ApprovalPolicies().Create(ctx, &gov.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dual"}}, metav1.CreateOptions{})
		expectForbidden(t, err, "alice creates a policy")
		_, err = dana.ApprovalPolicies().Create(ctx, &gov.ApprovalPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "dual"},
			Spec:       gov.ApprovalPolicySpec{Environment: gov.EnvironmentProd, Operations: []gov.Operation{gov.OperationCreate}, ApprovalRequired: true, RequiredApprovals: 2},
		}, metav1.CreateOptions{})
		mustCreate("dana creates the dual policy", err)
		_, err = dana.ApprovalPolicies().Create(ctx, &gov.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: gov.ApprovalPolicySpec{RequiredApprovals: 11, Operations: []gov.Operation{"reboot"}}}, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.requiredApprovals", "spec.operations[0]")

		_, err = alice.ManagedVMs(ns).Create(ctx, newVM("ledger-2", "ledger"), metav1.CreateOptions{})
		mustCreate("ledger-2", err)
		ticket := vmTicket("ledger-2")
		one, err := approve(carol, ticket)
		if err != nil || one.Status.State != gov.TicketPending {
			t.Fatalf("after one approval: %+v %v", one.Status, err)
		}
		_, err = approve(carol, ticket)
		expectCode(t, err, apperror.AlreadyDecided, "carol approves twice")
		two, err := approve(admin, ticket)
		if err != nil || two.Status.State != gov.TicketExecuting {
			t.Fatalf("after two approvals: %+v %v", two, err)
		}
		vm, _ := alice.ManagedVMs(ns).Get(ctx, "ledger-2", metav1.GetOptions{})
		if vm.Status.InstanceName != "team-a-bank-ledger-02" {
			t.Errorf("ledger-2 instance name %q", vm.Status.InstanceName)
		}

		// A second approver who replaces the spec sets the first approval aside: carol approved
		// u1.medium, not the u1.large she has not seen.
		_, err = alice.ManagedVMs(ns).Create(ctx, newVM("ledger-3", "ledger"), metav1.CreateOptions{})
		mustCreate("ledger-3", err)
		ticket = vmTicket("ledger-3")
		if _, err := approve(carol, ticket); err != nil {
			t.Fatal(err)
		}
		large := newVM("ledger-3", "ledger").Spec
		large.InstanceType = "u1.large"
		replaced, err := admin.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove, ModifiedSpec: &large}, metav1.CreateOptions{})
		if err != nil || replaced.Status.State != gov.TicketPending || !strings.Contains(replaced.Status.Message, "1 of 2 approvals") ||
			len(replaced.Status.Decisions) != 2 || replaced.Status.Decisions[0].SpecHash == replaced.Status.Decisions[1].SpecHash {
			t.Fatalf("after a replacement on the second approval: %+v %v", replaced, err)
		}
		final, err := approve(carol, ticket)
		if err != nil || final.Status.State != gov.TicketExecuting {
			t.Fatalf("carol approves the replacement: %+v %v", final, err)
		}
		if vm, _ := alice.ManagedVMs(ns).Get(ctx, "ledger-3", metav1.GetOptions{}); vm.Spec.InstanceType != "u1.large" || vm.Status.ApprovedRevision != 1 {
			t.Errorf("ledger-3 after two approvals of u1.large: %s rev %d", vm.Spec.InstanceType, vm.Status.ApprovedRevision)
		}
	})

	t.Run("self-approval, approver groups, quota, and deleting an unapproved VM", func(t *testing.T) {
		// The cluster admin may approve, but not what the admin requested.
		vm, err := admin.ManagedVMs(ns).Create(ctx, newVM("admin-vm", "redis"), metav1.CreateOptions{})
		mustCreate("admin requests a VM", err)
		_, err = approve(admin, vm.Status.PendingApproval.Ticket)
		expectCode(t, err, apperror.SelfApprovalForbidden, "admin approves own ticket")
		// Deleting a VM that was never approved needs no ticket and cancels its create ticket.
		if err := admin.ManagedVMs(ns).Delete(ctx, "admin-vm", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.ManagedVMs(ns).Get(ctx, "admin-vm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("unapproved VM after delete: %v", err)
		}
		ticket, _ := admin.ApprovalTickets(ns).Get(ctx, vm.Status.PendingApproval.Ticket, metav1.GetOptions{})
		if ticket.Status.State != gov.TicketCancelled {
			t.Errorf("create ticket of a deleted VM: %s", ticket.Status.State)
		}

		_, err = dana.ApprovalPolicies().Create(ctx, &gov.ApprovalPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "sre-only"},
			Spec:       gov.ApprovalPolicySpec{Environment: gov.EnvironmentTest, Operations: []gov.Operation{gov.OperationModify}, ApprovalRequired: true, ApproverGroups: []string{"sre"}},
		}, metav1.CreateOptions{})
		mustCreate("sre-only policy", err)
		_, err = alice.ManagedVMs(ns).Patch(ctx, "cache-3", types.MergePatchType, []byte(`{"spec":{"image":"quay.io/containerdisks/fedora:41"}}`), metav1.PatchOptions{})
		mustCreate("modify under the sre-only policy", err)
		_, err = approve(carol, vmTicket("cache-3"))
		expectCode(t, err, apperror.ApproverNotEligible, "carol is not in sre")
		if _, err := alice.ApprovalTickets(ns).Decide(ctx, vmTicket("cache-3"), &gov.TicketDecision{Decision: gov.DecisionCancel}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		three := int32(3)
		_, err = dana.ApprovalPolicies().Create(ctx, &gov.ApprovalPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "quota"},
			Spec:       gov.ApprovalPolicySpec{Environment: gov.EnvironmentTest, Operations: []gov.Operation{gov.OperationCreate}, ApprovalRequired: true, VMQuotaPerNamespace: &three},
		}, metav1.CreateOptions{})
		mustCreate("quota policy", err)
		_, err = alice.ManagedVMs(ns).Create(ctx, newVM("cache-4", "redis"), metav1.CreateOptions{})
		expectCode(t, err, apperror.QuotaExceeded, "a VM beyond the quota")
		for _, name := range []string{"sre-only", "quota"} {
			if err := dana.ApprovalPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("DELETE_RESTRICTED for a service with VMs and a system with services", func(t *testing.T) {
		err := alice.SystemServices(ns).Delete(ctx, "redis", metav1.DeleteOptions{})
		expectCode(t, err, apperror.DeleteRestricted, "delete service with VMs")
		err = alice.Systems(ns).Delete(ctx, "shop", metav1.DeleteOptions{})
		expectCode(t, err, apperror.DeleteRestricted, "delete system with services")
		if _, err := alice.Systems(ns).Get(ctx, "shop", metav1.GetOptions{}); err != nil {
			t.Errorf("system after refused delete: %v", err)
		}
	})

	t.Run("audit records cannot be changed or deleted, not even by admins", func(t *testing.T) {
		audits, err := alice.AuditLogs(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(audits.Items) == 0 {
			t.Fatalf("alice lists audit records: %v", err)
		}
		name := audits.Items[0].Name
		for user, c := range map[string]govclient.GovernanceV1alpha1Interface{"alice": alice, "dana": dana, "admin": admin} {
			err := c.RESTClient().Delete().Namespace(ns).Resource("auditlogs").Name(name).Do(ctx).Error()
			if !apierrors.IsForbidden(err) && !apierrors.IsMethodNotSupported(err) {
				t.Errorf("%s deletes an audit record: %v", user, err)
			}
			err = c.RESTClient().Put().Namespace(ns).Resource("auditlogs").Name(name).Body(&audits.Items[0]).Do(ctx).Error()
			if !apierrors.IsForbidden(err) && !apierrors.IsMethodNotSupported(err) {
				t.Errorf("%s updates an audit record: %v", user, err)
			}
		}
		if _, err := alice.AuditLogs(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("record after the attempts: %v", err)
		}
		bob := clientFor("bob")
		if _, err := bob.AuditLogs(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("bob (team-b) lists team-a's audit records: %v", err)
		}
	})

	t.Run("50 parallel approvals get unique, dense instance numbers", func(t *testing.T) {
		_, err := alice.SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "shop"}}}, metav1.CreateOptions{})
		mustCreate("service web", err)
		const n = 50
		tickets := make([]string, n)
		for i := range n {
			vm, err := alice.ManagedVMs(ns).Create(ctx, newVM(fmt.Sprintf("web-%d", i), "web"), metav1.CreateOptions{})
			mustCreate("web VM", err)
			tickets[i] = vm.Status.PendingApproval.Ticket
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, ticket := range tickets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := approve(carol, ticket); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		list, err := alice.ManagedVMs(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.systemServiceRef.name=web"})
		if err != nil {
			t.Fatal(err)
		}
		var numbers []int
		for _, vm := range list.Items {
			numbers = append(numbers, int(vm.Status.Instance))
		}
		slices.Sort(numbers)
		for i, got := range numbers {
			if got != i+1 {
				t.Fatalf("instance numbers are not 1..%d: %v", n, numbers)
			}
		}
		svc, _ := alice.SystemServices(ns).Get(ctx, "web", metav1.GetOptions{})
		if svc.Status.NextInstanceIndex != n+1 {
			t.Errorf("next instance index %d, want %d", svc.Status.NextInstanceIndex, n+1)
		}
	})

	t.Run("the README tour with kubectl", func(t *testing.T) {
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "apply", "-n", ns, "-f", filepath.Join(framework.RepoRoot(), "artifacts", "examples", "governance.yaml"))
		if err != nil || !strings.Contains(out, "APPROVAL_REQUIRED") {
			t.Fatalf("alice applies the example: %v\n%s", err, out)
		}
		ticket := vmTicket("cache-1")
		decision := `{"apiVersion":"governance.plinth.dev/v1alpha1","kind":"TicketDecision","decision":"Approve","cluster":"local"}`
		path := "/apis/governance.plinth.dev/v1alpha1/namespaces/team-a/approvaltickets/" + ticket + "/approval"
		out, err = framework.KubectlStdin(p.Kubeconfig("alice"), decision, "create", "--raw", path, "-f", "-")
		if err == nil || !strings.Contains(out, "may not approve") {
			t.Errorf("alice approves with kubectl: %v\n%s", err, out)
		}
		out, err = framework.KubectlStdin(p.Kubeconfig("carol"), decision, "create", "--raw", path, "-f", "-")
		if err != nil || !strings.Contains(out, `"state":"EXECUTING"`) {
			t.Fatalf("carol approves with kubectl: %v\n%s", err, out)
		}
		// The tour ends with alice's VM running on cluster local.
		out, err = framework.Kubectl(p.Kubeconfig("alice"), "wait", "managedvm/cache-1", "-n", ns, "--for=jsonpath={.status.phase}=RUNNING", "--timeout=60s")
		if err != nil {
			t.Fatalf("kubectl wait for RUNNING: %v\n%s", err, out)
		}
		out, err = framework.Kubectl(p.Kubeconfig("alice"), "get", "managedvm", "cache-1", "-n", ns)
		if err != nil || !strings.Contains(out, "RUNNING") || !strings.Contains(out, "team-a-shop-redis-04") {
			t.Errorf("kubectl get managedvm after approval: %v\n%s", err, out)
		}
		out, err = framework.Kubectl(p.AdminKubeconfig(), "get", "virtualmachines", "-n", ns, "team-a-shop-redis-04", "-L", "kubevirt-shepherd.io/instance")
		if err != nil || !strings.Contains(out, "Running") || !strings.Contains(out, "04") {
			t.Errorf("kubectl get virtualmachines: %v\n%s", err, out)
		}
	})

	t.Run("kubectl shows the story", func(t *testing.T) {
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "get", "managedvms", "-n", ns, "cache-2")
		if err != nil || !strings.Contains(out, "team-a-shop-redis-02") {
			t.Errorf("kubectl get managedvms: %v\n%s", err, out)
		}
		out, err = framework.Kubectl(p.Kubeconfig("alice"), "explain", "managedvms.spec.runStrategy", "--api-version=governance.plinth.dev/v1alpha1")
		if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "Changing only the run strategy is a start") {
			t.Errorf("kubectl explain: %v\n%s", err, out)
		}
		for field, want := range map[string]string{
			"approvaltickets.spec.submittedBy":          "made the request for the requester",
			"approvaltickets.status.decisions.specHash": "sets the earlier approvals aside",
			"approvaltickets.status.executionStartedAt": "resumes an execution that was interrupted",
		} {
			out, err = framework.Kubectl(p.Kubeconfig("alice"), "explain", field, "--api-version=governance.plinth.dev/v1alpha1")
			if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
				t.Errorf("kubectl explain %s: %v\n%s", field, err, out)
			}
		}
	})
}

// expectCode checks that err carries the governance error code.
func expectCode(t *testing.T, err error, code apperror.Code, what string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want %s", what, code)
		return
	}
	if got := apperror.CodeOf(err); got != code {
		t.Errorf("%s: code %q, want %s (%v)", what, got, code, err)
	}
}
