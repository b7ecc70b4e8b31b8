package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	govclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/governance/v1alpha1"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

const frozenMessage = "Approvals are frozen in this namespace."

// TestAdmissionPolicyOnApprovals checks that the approval subresource is a write admission
// sees: a ValidatingAdmissionPolicy in kube-apiserver, bound to team-b, denies carol's
// approvals there with the policy's message (and lets her reject), while approvals in team-a
// go through; and that a dry-run approval answers with what the approval would do and leaves
// the ticket PENDING without an audit record or an instance number.
func TestAdmissionPolicyOnApprovals(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	govFor := func(user string) govclient.GovernanceV1alpha1Interface {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg).GovernanceV1alpha1()
	}
	carol := govFor("carol")
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(adminCfg)

	// request has tenant ask for a VM of a new service in its namespace and returns the ticket.
	request := func(tenant, ns string) string {
		t.Helper()
		c := govFor(tenant)
		if _, err := c.Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "redis"},
			Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "shop"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		disk := resource.MustParse("20Gi")
		vm, err := c.ManagedVMs(ns).Create(ctx, &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "cache-1"}, Spec: gov.ManagedVMSpec{
			SystemServiceRef: gov.LocalObjectReference{Name: "redis"}, InstanceType: "u1.medium", DiskSize: &disk,
			Image: "quay.io/containerdisks/fedora:40", Reason: "cache for the shop",
		}}, metav1.CreateOptions{})
		if err != nil || vm.Status.PendingApproval == nil {
			t.Fatalf("%s requests cache-1: %+v %v", tenant, vm, err)
		}
		return vm.Status.PendingApproval.Ticket
	}
	approve := func(ns, ticket string, opts metav1.CreateOptions) (*gov.ApprovalTicket, error) {
		return carol.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove, Cluster: "local"}, opts)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	teamA, teamB := request("alice", "team-a"), request("bob", "team-b")

	fail := admissionregistrationv1.Fail
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-approvals"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{gov.GroupName}, APIVersions: []string{"v1alpha1"},
						Resources: []string{"approvaltickets/approval"}},
				},
			}}},
			// The request body decides: rejections stay possible.
			Validations: []admissionregistrationv1.Validation{{Expression: "object.decision != 'Approve'", Message: frozenMessage}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-approvals-team-b"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "freeze-approvals",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": "team-b"},
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// plinth-apiserver reads policies through its informers: wait, with dry runs that change
	// nothing, until the policy is in force.
	waitForCondition(t, 60*time.Second, func() (bool, string) {
		_, err := approve("team-b", teamB, dryRun)
		return err != nil && strings.Contains(err.Error(), frozenMessage), fmt.Sprintf("dry-run approval in team-b: %v", err)
	})

	t.Run("the policy denies approvals in team-b with its message, and lets carol reject", func(t *testing.T) {
		_, err := approve("team-b", teamB, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), frozenMessage) {
			t.Fatalf("approval in team-b: %v", err)
		}
		if tk, err := carol.ApprovalTickets("team-b").Get(ctx, teamB, metav1.GetOptions{}); err != nil || tk.Status.State != gov.TicketPending {
			t.Fatalf("the denied ticket: %+v %v", tk, err)
		}
		tk, err := carol.ApprovalTickets("team-b").Decide(ctx, teamB, &gov.TicketDecision{Decision: gov.DecisionReject, Comment: "frozen"}, metav1.CreateOptions{})
		if err != nil || tk.Status.State != gov.TicketRejected {
			t.Fatalf("rejection in team-b: %+v %v", tk, err)
		}
	})

	t.Run("a dry-run approval in team-a answers EXECUTING and leaves the ticket PENDING, unaudited", func(t *testing.T) {
		tk, err := approve("team-a", teamA, dryRun)
		if err != nil || tk.Status.State != gov.TicketExecuting || len(tk.Status.Decisions) != 1 || tk.Status.Decisions[0].User != "carol" {
			t.Fatalf("dry-run approval in team-a: %+v %v", tk, err)
		}
		stored, err := carol.ApprovalTickets("team-a").Get(ctx, teamA, metav1.GetOptions{})
		if err != nil || stored.Status.State != gov.TicketPending || len(stored.Status.Decisions) != 0 {
			t.Fatalf("the ticket after a dry run: %+v %v", stored.Status, err)
		}
		audits, err := govFor("alice").AuditLogs("team-a").List(ctx, metav1.ListOptions{FieldSelector: "spec.action=approval.approve"})
		if err != nil || len(audits.Items) != 0 {
			t.Fatalf("audit records of a dry run: %+v %v", audits, err)
		}
		svc, err := govFor("alice").SystemServices("team-a").Get(ctx, "redis", metav1.GetOptions{})
		if err != nil || svc.Status.NextInstanceIndex != 1 {
			t.Fatalf("a dry run took an instance number: %+v %v", svc.Status, err)
		}
	})

	t.Run("approvals in team-a go through", func(t *testing.T) {
		tk, err := approve("team-a", teamA, metav1.CreateOptions{})
		if err != nil || tk.Status.State != gov.TicketExecuting {
			t.Fatalf("approval in team-a: %+v %v", tk, err)
		}
		audits, err := govFor("alice").AuditLogs("team-a").List(ctx, metav1.ListOptions{FieldSelector: "spec.action=approval.approve"})
		if err != nil || len(audits.Items) != 1 {
			t.Fatalf("audit records of the approval: %+v %v", audits, err)
		}
	})
}
