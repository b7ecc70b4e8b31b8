package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/localplatform"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// vmWorkload runs on runtime class kubevirt: one container with a plain output of its redis
// and a file, and a port.
const vmWorkload = `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: vmweb
spec:
  runtimeClass: kubevirt
  containers:
    web:
      image: nginx:1.27
      variables:
        CACHE_HOST: ${resources.cache.host}
        GREETING: hello
      files:
      - target: /etc/vmweb/config.yaml
        content: "name: ${metadata.name}\nhome: $${HOME}\n"
  resources:
    cache: {type: redis}
  service:
    ports:
      web: {port: 80, targetPort: 8080}
`

// vmSecretWorkload needs its redis password in a VM, which cannot receive it without showing it.
const vmSecretWorkload = `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: vmsecret
spec:
  runtimeClass: kubevirt
  containers:
    web:
      image: nginx:1.27
      variables:
        CACHE_PASSWORD: ${resources.cache.password}
  resources:
    cache: {type: redis}
`

// TestWorkloadOnKubeVirt follows a Workload of runtime class kubevirt on the local platform:
// the kubevirt runtime asks for a governed ManagedVM as a tenant would, the workload waits with
// RuntimeSelecting naming the ticket, carol approves it, and the workload is Ready once the VM
// runs on Cluster local (the simulated KubeVirt), with its endpoint. A workload that needs a
// secret output in its VM is refused and nothing holds the secret; deleting the workload asks
// for the VM's deletion, which waits for approval too.
func TestWorkloadOnKubeVirt(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=2s", "--vm-poll-interval=500ms")
	})
	ctx := context.Background()
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	admin := clientset.NewForConfigOrDie(adminCfg)
	kube := kubernetes.NewForConfigOrDie(adminCfg)
	carolCfg, err := p.ConfigFor("carol")
	if err != nil {
		t.Fatal(err)
	}
	carol := clientset.NewForConfigOrDie(carolCfg).GovernanceV1alpha1()
	const ns = "team-a"
	alice := func(stdin string, args ...string) {
		t.Helper()
		if out, err := framework.KubectlStdin(p.Kubeconfig("alice"), stdin, args...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	runtimeReady := func(w *v1b1.Workload) *metav1.Condition {
		return meta.FindStatusCondition(w.Status.Conditions, v1b1.ConditionRuntimeReady)
	}

	alice(vmWorkload, "apply", "-n", ns, "-f", "-")
	var ticket string
	t.Run("the workload waits for the approval of its VM, naming the ticket", func(t *testing.T) {
		w := waitWorkload(t, admin, ns, "vmweb", 120*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := runtimeReady(w)
			return c != nil && c.Reason == v1b1.ReasonRuntimeSelecting && strings.Contains(c.Message, "tkt-"), fmt.Sprintf("%+v", w.Status.Conditions)
		})
		vm, err := admin.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, "vmweb", metav1.GetOptions{})
		if err != nil || vm.Status.PendingApproval == nil || vm.Status.PendingApproval.Operation != gov.OperationCreate {
			t.Fatalf("ManagedVM vmweb: %+v %v", vm, err)
		}
		ticket = vm.Status.PendingApproval.Ticket
		want := "The virtual machine waits for approval of ticket " + ticket + "."
		if c := runtimeReady(w); c.Message != want {
			t.Errorf("RuntimeReady message %q, want %q", c.Message, want)
		}
		if c := meta.FindStatusCondition(w.Status.Conditions, v1b1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1b1.ReasonRuntimeSelecting {
			t.Errorf("Ready %+v", c)
		}
		if vm.Spec.SystemServiceRef.Name != "vmweb" || !strings.Contains(vm.Spec.CloudInit, "CACHE_HOST=vmweb-cache.team-a.svc") ||
			!strings.Contains(vm.Spec.CloudInit, `"content":"name: vmweb\nhome: ${HOME}\n"`) {
			t.Errorf("VM spec: service %s, cloud-init:\n%s", vm.Spec.SystemServiceRef.Name, vm.Spec.CloudInit)
		}
		tk, err := admin.GovernanceV1alpha1().ApprovalTickets(ns).Get(ctx, ticket, metav1.GetOptions{})
		if err != nil || tk.Status.State != gov.TicketPending || tk.Spec.Operation != gov.OperationCreate {
			t.Fatalf("ticket %+v %v", tk, err)
		}
		// alice caused the request by applying the workload: she is its requester, and
		// plinth-controller, which wrote it, its submitter.
		if tk.Spec.Requester != "alice" || tk.Spec.SubmittedBy != localplatform.ControllerUser {
			t.Errorf("the ticket's requester is %q, submitted by %q; want alice, submitted by plinth-controller", tk.Spec.Requester, tk.Spec.SubmittedBy)
		}
		svc, err := admin.GovernanceV1alpha1().SystemServices(ns).Get(ctx, "vmweb", metav1.GetOptions{})
		if err != nil || svc.Spec.SystemRef.Name != "workloads" {
			t.Errorf("SystemService vmweb %+v %v", svc, err)
		}
	})
	if ticket == "" {
		t.FailNow()
	}

	t.Run("alice, also an approver, may not approve the VM her workload asked for", func(t *testing.T) {
		// alice as a member of platform:approvers (impersonated by the cluster admin).
		cfg := rest.CopyConfig(adminCfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"platform:approvers", "system:authenticated"}}
		aliceApprover := clientset.NewForConfigOrDie(cfg).GovernanceV1alpha1()
		_, err := aliceApprover.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove, Cluster: "local", StorageClass: "standard"}, metav1.CreateOptions{})
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Code != http.StatusForbidden || apperror.CodeOf(err) != apperror.SelfApprovalForbidden ||
			status.Status().Message != "User alice requested ticket "+ticket+" and may not decide on it." {
			t.Fatalf("alice approves her workload's VM: %v, want 403 %s", err, apperror.SelfApprovalForbidden)
		}
		// Nor may she say someone else asked for it.
		_, err = aliceApprover.ManagedVMs(ns).Patch(ctx, "vmweb", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"governance.plinth.dev/on-behalf-of":"bob"}}}`), metav1.PatchOptions{})
		if apperror.CodeOf(err) != apperror.PlatformLabel {
			t.Errorf("alice names bob as the requester: %v, want %s", err, apperror.PlatformLabel)
		}
		tk, err := admin.GovernanceV1alpha1().ApprovalTickets(ns).Get(ctx, ticket, metav1.GetOptions{})
		if err != nil || tk.Status.State != gov.TicketPending || len(tk.Status.Decisions) != 0 {
			t.Errorf("the ticket after alice's attempts: %+v %v", tk.Status, err)
		}
	})

	t.Run("carol approves; the workload is Ready once the VM runs", func(t *testing.T) {
		if _, err := carol.ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove, Cluster: "local", StorageClass: "standard"}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w := waitWorkload(t, admin, ns, "vmweb", 90*time.Second, func(w *v1b1.Workload) (bool, string) {
			return meta.IsStatusConditionTrue(w.Status.Conditions, v1b1.ConditionReady), fmt.Sprintf("%+v", w.Status.Conditions)
		})
		if w.Status.Endpoint == nil || *w.Status.Endpoint != "http://vmweb.team-a.svc" {
			t.Errorf("endpoint %v", w.Status.Endpoint)
		}
		vm, err := admin.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, "vmweb", metav1.GetOptions{})
		if err != nil || vm.Status.Phase != gov.VMPhaseRunning || vm.Status.InstanceName != "team-a-workloads-vmweb-01" {
			t.Fatalf("VM %+v %v", vm.Status, err)
		}
		svc, err := kube.CoreV1().Services(ns).Get(ctx, "vmweb", metav1.GetOptions{})
		if err != nil || svc.Spec.Selector["vmi.kubevirt.io/id"] != "team-a-workloads-vmweb-01" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 {
			t.Errorf("the endpoint's Service %+v %v", svc, err)
		}
		plan, err := admin.ScoreV1b1().WorkloadPlans(ns).Get(ctx, "vmweb", metav1.GetOptions{})
		if err != nil || plan.Status.RuntimeInfo == nil || plan.Status.RuntimeInfo.Controller != "kubevirt" || plan.Status.RuntimeInfo.State != "RUNNING" {
			t.Errorf("plan status %+v %v", plan.Status, err)
		}
	})

	alice(vmSecretWorkload, "apply", "-n", ns, "-f", "-")
	t.Run("a secret output is refused, and no governed object holds a secret", func(t *testing.T) {
		w := waitWorkload(t, admin, ns, "vmsecret", 120*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := runtimeReady(w)
			return c != nil && c.Reason == v1b1.ReasonProjectionError, fmt.Sprintf("%+v", w.Status.Conditions)
		})
		want := "Container web uses a secret output of resource cache, which a virtual machine cannot receive without showing it to its approvers."
		if c := runtimeReady(w); c.Message != want {
			t.Errorf("message %q, want %q", c.Message, want)
		}
		if _, err := admin.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, "vmsecret", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a VM was asked for the refused workload: %v", err)
		}
		var passwords []string
		for _, name := range []string{"vmweb-cache", "vmsecret-cache"} {
			s, err := kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(s.Data["password"]) == 0 {
				t.Fatalf("Secret %s: %v", name, err)
			}
			passwords = append(passwords, string(s.Data["password"]))
		}
		g := admin.GovernanceV1alpha1()
		var lists []any
		for _, list := range []func() (any, error){
			func() (any, error) { return g.ManagedVMs(ns).List(ctx, metav1.ListOptions{}) },
			func() (any, error) { return g.ApprovalTickets(ns).List(ctx, metav1.ListOptions{}) },
			func() (any, error) { return g.VMRevisions(ns).List(ctx, metav1.ListOptions{}) },
			func() (any, error) { return g.AuditLogs(ns).List(ctx, metav1.ListOptions{}) },
			func() (any, error) { return g.DomainEvents(ns).List(ctx, metav1.ListOptions{}) },
			func() (any, error) { return admin.ScoreV1b1().WorkloadPlans(ns).List(ctx, metav1.ListOptions{}) },
		} {
			l, err := list()
			if err != nil {
				t.Fatal(err)
			}
			lists = append(lists, l)
		}
		all, err := json.Marshal(lists)
		if err != nil {
			t.Fatal(err)
		}
		for _, pw := range passwords {
			if strings.Contains(string(all), pw) {
				t.Errorf("a generated password appears in a governed object or plan")
			}
		}
	})

	t.Run("deleting the workload asks for the VM's deletion; once approved, VM and service are gone", func(t *testing.T) {
		alice("", "delete", "workload", "vmweb", "-n", ns, "--wait=false")
		var deleteTicket string
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			vm, err := admin.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, "vmweb", metav1.GetOptions{})
			if err != nil || vm.Status.PendingApproval == nil || vm.Status.PendingApproval.Operation != gov.OperationDelete {
				return false, fmt.Sprintf("%+v %v", vm, err)
			}
			deleteTicket = vm.Status.PendingApproval.Ticket
			return true, ""
		})
		if _, err := carol.ApprovalTickets(ns).Decide(ctx, deleteTicket, &gov.TicketDecision{Decision: gov.DecisionApprove}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForCondition(t, 90*time.Second, func() (bool, string) {
			_, vmErr := admin.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, "vmweb", metav1.GetOptions{})
			_, svcErr := admin.GovernanceV1alpha1().SystemServices(ns).Get(ctx, "vmweb", metav1.GetOptions{})
			return apierrors.IsNotFound(vmErr) && apierrors.IsNotFound(svcErr), fmt.Sprint(vmErr, svcErr)
		})
	})
}

// waitWorkload waits until check accepts the workload, and returns it.
func waitWorkload(t *testing.T, client clientset.Interface, ns, name string, timeout time.Duration, check func(w *v1b1.Workload) (bool, string)) *v1b1.Workload {
	t.Helper()
	var w *v1b1.Workload
	waitForCondition(t, timeout, func() (bool, string) {
		var err error
		if w, err = client.ScoreV1b1().Workloads(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return check(w)
	})
	return w
}
