package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtclient "kubevirt.io/client-go/kubevirt"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestSimulatedKubeVirtPlaysDroppedStagesAfterEtcdRestarts: kwok, which stands in for
// KubeVirt's controllers, drops a VirtualMachine's stage whose status write was refused with
// anything but a connection or availability error, and only an event for that VM would bring it
// back. etcd dying under a write is such a refusal (500). The platform restarts kwok once etcd
// is back, as KubeVirt's resync would, so the VM runs. Here an admission policy refuses the
// write (422) instead of an etcd death, which cannot be timed; the test then kills etcd.
func TestSimulatedKubeVirtPlaysDroppedStagesAfterEtcdRestarts(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) { c.KubernetesOnly, c.Nodes = true, 1 })
	ctx := context.Background()
	cfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	vms := kubevirtclient.NewForConfigOrDie(cfg).KubevirtV1().VirtualMachines("default")
	always := kubevirtv1.RunStrategyAlways
	create := func(name string) {
		t.Helper()
		if _, err := vms.Create(ctx, &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &always, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := func(name string) string {
		vm, err := vms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return string(vm.Status.PrintableStatus)
	}

	// The policy refuses every status write to VirtualMachines whose name begins with "held".
	const policy = "hold-virtualmachine-status"
	fail := admissionregistrationv1.Fail
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"kubevirt.io"}, APIVersions: []string{"*"},
						Resources: []string{"virtualmachines/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "!object.metadata.name.startsWith('held')", Message: "held"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// In force once a status write of our own to a held VM is refused.
	create("held-probe")
	waitForCondition(t, 60*time.Second, func() (bool, string) {
		_, err := vms.Patch(ctx, "held-probe", types.MergePatchType, []byte(`{"status":{"printableStatus":"Provisioning"}}`), metav1.PatchOptions{}, "status")
		return apierrors.IsInvalid(err), fmt.Sprintf("status write to held-probe: %v", err)
	})

	create("held")
	create("free")
	waitForCondition(t, 30*time.Second, func() (bool, string) {
		s := status("free")
		return s == string(kubevirtv1.VirtualMachineStatusRunning), "free: " + s
	})
	waitForCondition(t, 30*time.Second, func() (bool, string) {
		log, _ := os.ReadFile(filepath.Join(p.LogDir(), "kwok.log"))
		return strings.Contains(string(log), "default/held\""), "kwok has not logged its refused write to held"
	})
	if err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, policy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// kwok does not try again: held stays without a status while nothing touches it.
	time.Sleep(3 * time.Second)
	if s := status("held"); s != "" {
		t.Fatalf("held is %q before etcd restarts; the premise (kwok drops a refused stage) no longer holds", s)
	}

	killed, err := p.KillComponent(localplatform.ComponentEtcd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitComponentBack(ctx, localplatform.ComponentEtcd, killed); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, 60*time.Second, func() (bool, string) {
		s := status("held")
		return s == string(kubevirtv1.VirtualMachineStatusRunning), "held after etcd's restart: " + s
	})
	if s := status("free"); s != string(kubevirtv1.VirtualMachineStatusRunning) {
		t.Errorf("free is %q after kwok's restart", s)
	}
}
