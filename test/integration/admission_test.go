package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/admission/plugin/platformpolicy"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

const danaPolicy = `apiVersion: score.dev/v1b1
kind: PlatformPolicy
metadata:
  name: team-a-defaults
spec:
  priority: 100
  selector:
    matchLabels: {team: a}
  defaults:
    runtimeClass: kubernetes
    labels: {cost-center: team-a}
    resources:
      postgres: {class: small}
  constraints:
    allowedRuntimeClasses: [kubernetes]
    resourceTypes:
      denied: [mysql]
    images:
      allowedRegistries: [registry.example.com]
`

const aliceWorkload = `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: shop
  labels: {team: a}
spec:
  containers:
    main:
      image: registry.example.com/shop:1.4
      variables:
        DB: ${resources.db.host}
  resources:
    db: {type: postgres}
`

// TestPlatformPolicyAdmission runs PlatformPolicy admission through the aggregator: dana's
// policy defaults alice's workload, rejects violations with 403 and PolicyViolation causes,
// shows defaults on a server-side dry run, and changes take effect on the next write.
func TestPlatformPolicyAdmission(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	if out, err := framework.KubectlStdin(p.Kubeconfig("dana"), danaPolicy, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("dana applies the policy: %v\n%s", err, out)
	}
	cfg, err := p.ConfigFor("alice")
	if err != nil {
		t.Fatal(err)
	}
	alice := clientset.NewForConfigOrDie(cfg).ScoreV1b1().Workloads("team-a")
	// The policy informer is fed by a watch; give it a moment after the write.
	waitFor(t, func() bool {
		out, _ := framework.KubectlStdin(p.Kubeconfig("alice"), aliceWorkload, "apply", "--dry-run=server", "-f", "-", "-o", "yaml")
		return strings.Contains(out, "runtimeClass: kubernetes")
	})

	t.Run("dry run shows the defaults and stores nothing", func(t *testing.T) {
		out, err := framework.KubectlStdin(p.Kubeconfig("alice"), aliceWorkload, "apply", "--server-side", "--dry-run=server", "-f", "-", "-o", "yaml")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var w v1b1.Workload
		if err := yaml.Unmarshal([]byte(out), &w); err != nil {
			t.Fatal(err)
		}
		if w.Spec.RuntimeClass != "kubernetes" || w.Labels["cost-center"] != "team-a" || w.Spec.Resources["db"].Class != "small" ||
			w.Annotations[platformpolicy.AppliedPoliciesAnnotation] != "team-a-defaults" {
			t.Errorf("dry run object lacks the defaults:\n%s", out)
		}
		if _, err := alice.Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run stored the workload: %v", err)
		}
	})

	t.Run("alice's workload gets dana's defaults", func(t *testing.T) {
		if out, err := framework.KubectlStdin(p.Kubeconfig("alice"), aliceWorkload, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		w, err := alice.Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w.Spec.RuntimeClass != "kubernetes" || w.Labels["cost-center"] != "team-a" || w.Spec.Resources["db"].Class != "small" {
			t.Errorf("stored workload lacks the defaults: %+v", w)
		}
		if got := w.Annotations[platformpolicy.AppliedPoliciesAnnotation]; got != "team-a-defaults" {
			t.Errorf("applied-policies annotation = %q", got)
		}
		// A workload the policy does not select is left alone.
		other := newWorkload("unlabelled", "")
		other.Labels = nil
		created, err := alice.Create(ctx, other, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.RuntimeClass != "" || created.Annotations[platformpolicy.AppliedPoliciesAnnotation] != "" {
			t.Errorf("unselected workload was defaulted: %+v", created.ObjectMeta)
		}
	})

	t.Run("violations are 403 with PolicyViolation causes", func(t *testing.T) {
		bad := newWorkload("miner", "")
		bad.Labels = map[string]string{"team": "a"}
		bad.Spec.Containers["main"] = v1b1.Container{Image: "docker.io/evil/miner:latest"}
		bad.Spec.Resources["db"] = v1b1.ResourceSpec{Type: "mysql"}
		_, err := alice.Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("violating workload: %v, want 403", err)
		}
		status := err.(apierrors.APIStatus).Status()
		if !strings.Contains(status.Message, `violates PlatformPolicy "team-a-defaults"`) {
			t.Errorf("message %q does not name the policy", status.Message)
		}
		fields := map[string]bool{}
		for _, c := range status.Details.Causes {
			if c.Type != platformpolicy.ReasonPolicyViolation {
				t.Errorf("cause %+v is not a PolicyViolation", c)
			}
			fields[c.Field] = true
		}
		for _, f := range []string{"spec.resources[db].type", "spec.containers[main].image"} {
			if !fields[f] {
				t.Errorf("causes %v lack %s", fields, f)
			}
		}
		if _, err := alice.Get(ctx, "miner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("rejected workload was stored: %v", err)
		}
		// kubectl shows the same sentence.
		manifest := strings.Replace(aliceWorkload, "registry.example.com/shop:1.4", "nginx:1.27", 1)
		manifest = strings.Replace(manifest, "name: shop", "name: shop2", 1)
		out, err := framework.KubectlStdin(p.Kubeconfig("alice"), manifest, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, `image "nginx:1.27" does not come from an allowed registry`) {
			t.Errorf("kubectl apply of a violating workload: %v\n%s", err, out)
		}
	})

	t.Run("a policy change is honoured by the next write", func(t *testing.T) {
		manifest := strings.Replace(aliceWorkload, "registry.example.com/shop:1.4", "nginx:1.27", 1)
		manifest = strings.Replace(manifest, "name: shop", "name: web-nginx", 1)
		relaxed := strings.Replace(danaPolicy, "allowedRegistries: [registry.example.com]", "allowedRegistries: [registry.example.com, docker.io/library]", 1)
		if out, err := framework.KubectlStdin(p.Kubeconfig("dana"), relaxed, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("dana relaxes the policy: %v\n%s", err, out)
		}
		waitFor(t, func() bool {
			_, err := framework.KubectlStdin(p.Kubeconfig("alice"), manifest, "apply", "-f", "-")
			return err == nil
		})
		// And tightening it again rejects the next update of that workload.
		if out, err := framework.KubectlStdin(p.Kubeconfig("dana"), danaPolicy, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("dana tightens the policy: %v\n%s", err, out)
		}
		waitFor(t, func() bool {
			w, err := alice.Get(ctx, "web-nginx", metav1.GetOptions{})
			if err != nil {
				return false
			}
			w.Spec.Containers["main"] = v1b1.Container{Image: "nginx:1.28"}
			_, err = alice.Update(ctx, w, metav1.UpdateOptions{})
			return apierrors.IsForbidden(err)
		})
	})

	t.Run("namespaceSelector targets teams", func(t *testing.T) {
		nsPolicy := `apiVersion: score.dev/v1b1
kind: PlatformPolicy
metadata: {name: team-b-only}
spec:
  priority: 1000
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: team-b}
  defaults:
    annotations: {owner: team-b}
`
		if out, err := framework.KubectlStdin(p.Kubeconfig("dana"), nsPolicy, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		bobCfg, _ := p.ConfigFor("bob")
		bob := clientset.NewForConfigOrDie(bobCfg).ScoreV1b1().Workloads("team-b")
		waitFor(t, func() bool {
			w := newWorkload("probe", "")
			w.Name = "probe-" + time.Now().Format("150405.000000")
			w.Name = strings.ReplaceAll(w.Name, ".", "-")
			created, err := bob.Create(ctx, w, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && created.Annotations["owner"] == "team-b"
		})
		created, err := alice.Create(ctx, newWorkload("not-team-b", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || created.Annotations["owner"] != "" {
			t.Errorf("team-b policy applied in team-a: %v %v", err, created.Annotations)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatal("condition not met within 20s")
	}
}
