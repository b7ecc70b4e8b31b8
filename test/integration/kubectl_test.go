package integration

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	compute "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	kubernetescompute "github.com/plinth-dev/plinth/pkg/compute/providers/kubernetes"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

const workloadManifest = `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: hello
  namespace: demo
spec:
  runtimeClass: kubernetes
  containers:
    main:
      image: registry.example.com/hello:1.0
      variables:
        DB_HOST: ${resources.db.host}
  resources:
    db:
      type: postgres
      class: small
  service:
    ports:
      web:
        port: 80
        targetPort: 8080
`

// TestKubectl drives the server with the real kubectl v1.37.1: apply, printer columns,
// categories, short names, explain and field selectors.
func TestKubectl(t *testing.T) {
	p := framework.StartPlinth(t, framework.Options{})
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := framework.Kubectl(p.Kubeconfig, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if out, err := framework.KubectlStdin(p.Kubeconfig, workloadManifest, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	ctx := context.Background()
	w, err := p.Client.ScoreV1b1().Workloads("demo").Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Status.Endpoint = ptrTo("http://hello.demo.example.com")
	w.Status.Conditions = []metav1.Condition{
		{Type: "Ready", Status: "False", Reason: "BindingPending", Message: "Resources are being provisioned.", LastTransitionTime: metav1.Now()},
		{Type: "InputsValid", Status: "True", Reason: "Succeeded", Message: "The specification is valid.", LastTransitionTime: metav1.Now()},
	}
	w.Status.Bindings = []v1b1.BindingSummary{{Key: "db", Phase: v1b1.BindingPhaseBound}}
	if _, err := p.Client.ScoreV1b1().Workloads("demo").UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := newBinding("hello-db", "hello", "db")
	if _, err := p.Client.ScoreV1b1().ResourceBindings("demo").Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Client.ScoreV1b1().WorkloadPlans("demo").Create(ctx, newPlan("hello"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Client.ScoreV1b1().PlatformPolicies().Create(ctx, newPolicy("defaults", 7), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("get columns", func(t *testing.T) {
		expectTable(t, kubectl("get", "workloads", "-n", "demo"),
			[]string{"NAME", "RUNTIME", "READY", "ENDPOINT", "AGE"},
			[]string{"hello", "kubernetes", "False (BindingPending)", "http://hello.demo.example.com"})
		expectTable(t, kubectl("get", "wl", "-n", "demo", "-o", "wide"),
			[]string{"NAME", "RUNTIME", "READY", "ENDPOINT", "INPUTS", "BINDINGS", "AGE"},
			[]string{"hello", "kubernetes", "False (BindingPending)", "http://hello.demo.example.com", "True", "1/1"})
		expectTable(t, kubectl("get", "rb", "-n", "demo"),
			[]string{"NAME", "TYPE", "CLASS", "PHASE", "AGE"},
			[]string{"hello-db", "postgres", "small", "<none>"})
		expectTable(t, kubectl("get", "wp", "-n", "demo"),
			[]string{"NAME", "RUNTIME", "PHASE", "AGE"},
			[]string{"hello", "kubernetes", "<none>"})
		expectTable(t, kubectl("get", "pp"),
			[]string{"NAME", "PRIORITY", "AGE"},
			[]string{"defaults", "7"})
	})

	t.Run("BINDINGS counts the resources of the inline document", func(t *testing.T) {
		// Two resources, both declared only in the Score document; the status is what the
		// orchestrator writes for them, one bound.
		shop := &v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "demo"},
			Spec: v1b1.WorkloadSpec{RuntimeClass: "kubernetes", Source: &v1b1.WorkloadSource{Inline: &common.RawObject{Raw: []byte(
				`{"apiVersion":"score.dev/v1b1","metadata":{"name":"shop"},"containers":{"main":{"image":"registry.example.com/shop:1"}},` +
					`"resources":{"cache":{"type":"redis"},"queue":{"type":"amqp"}}}`)}}}}
		shop, err := p.Client.ScoreV1b1().Workloads("demo").Create(ctx, shop, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		shop.Status.Bindings = []v1b1.BindingSummary{{Key: "cache", Phase: v1b1.BindingPhaseBound}, {Key: "queue", Phase: v1b1.BindingPhasePending}}
		if _, err := p.Client.ScoreV1b1().Workloads("demo").UpdateStatus(ctx, shop, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		expectTable(t, kubectl("get", "wl", "shop", "-n", "demo", "-o", "wide"),
			[]string{"NAME", "RUNTIME", "READY", "ENDPOINT", "INPUTS", "BINDINGS", "AGE"},
			[]string{"shop", "kubernetes", "Unknown", "<none>", "Unknown", "1/2"})
	})

	t.Run("score category lists every kind", func(t *testing.T) {
		out := kubectl("get", "score", "-A")
		for _, want := range []string{"workload.score.dev/hello", "resourcebinding.score.dev/hello-db", "workloadplan.score.dev/hello", "platformpolicy.score.dev/defaults"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get score lacks %s:\n%s", want, out)
			}
		}
	})

	t.Run("explain shows the doc comments", func(t *testing.T) {
		out := kubectl("explain", "workloads.spec.containers")
		for _, want := range []string{
			"Containers are the workload's containers keyed by container name",
			"Image is the OCI image reference to run",
			"Variables are environment variables",
		} {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
				t.Errorf("kubectl explain workloads.spec.containers lacks %q:\n%s", want, out)
			}
		}
		out = kubectl("explain", "resourcebindings.status.phase")
		if !strings.Contains(out, "Pending, Binding, Bound or Failed") {
			t.Errorf("explain resourcebindings.status.phase:\n%s", out)
		}
		out = kubectl("explain", "workloads.spec.source.inline")
		if !strings.Contains(out, "Score document") {
			t.Errorf("explain workloads.spec.source.inline:\n%s", out)
		}
	})

	t.Run("field selector", func(t *testing.T) {
		out := kubectl("get", "resourcebindings", "-n", "demo", "--field-selector", "spec.workloadRef.name=hello", "-o", "name")
		if strings.TrimSpace(out) != "resourcebinding.score.dev/hello-db" {
			t.Errorf("field selector output: %q", out)
		}
	})

	t.Run("invalid apply is refused with field paths", func(t *testing.T) {
		bad := strings.Replace(workloadManifest, "port: 80", "port: 0", 1)
		bad = strings.Replace(bad, "name: hello", "name: broken", 1)
		out, err := framework.KubectlStdin(p.Kubeconfig, bad, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.service.ports[web].port: Required value") {
			t.Errorf("kubectl apply of an invalid workload: %v\n%s", err, out)
		}
		if out, _ := framework.Kubectl(p.Kubeconfig, "get", "wl", "broken", "-n", "demo"); !strings.Contains(out, "NotFound") {
			t.Errorf("invalid workload was stored: %s", out)
		}
	})

	t.Run("wait and jsonpath", func(t *testing.T) {
		out := kubectl("wait", "--for=jsonpath={.status.endpoint}=http://hello.demo.example.com", "workload/hello", "-n", "demo", "--timeout=10s")
		if !strings.Contains(out, "condition met") {
			t.Errorf("kubectl wait: %s", out)
		}
		out = kubectl("get", "wl", "hello", "-n", "demo", "-o", "jsonpath={.metadata.generation}")
		if out != "1" {
			t.Errorf("generation = %q", out)
		}
	})

	t.Run("the examples in artifacts apply", func(t *testing.T) {
		// No plinth-controller runs here: register the kubernetes compute provider as it does,
		// so that the TenantCompute example names a Ready provider.
		d := kubernetescompute.NewProvider(nil, nil, nil, nil).Descriptor()
		cp, err := p.Client.ComputeV1alpha1().ComputeProviders().Create(ctx, &compute.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: kubernetescompute.ProviderName},
			Spec: compute.ComputeProviderSpec{Controller: "plinth.dev/plinth-controller"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cp.Status = compute.ComputeProviderStatus{ConfigSchema: &common.RawObject{Raw: d.ConfigSchema}, SupportedSecretSources: d.SecretSources,
			SupportedHealthChecks: d.HealthChecks, Conditions: []metav1.Condition{{Type: compute.ConditionProviderReady, Status: metav1.ConditionTrue,
				Reason: "Registered", Message: "Registered by the test.", LastTransitionTime: metav1.Now()}}}
		if _, err := p.Client.ComputeV1alpha1().ComputeProviders().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForCondition(t, 10*time.Second, func() (bool, string) { // until the admission plugin's informer has it
			out, err := framework.Kubectl(p.Kubeconfig, "apply", "--server-side", "--dry-run=server", "-n", "demo",
				"-f", filepath.Join(framework.RepoRoot(), "artifacts", "examples", "tenantcompute.yaml"))
			return err == nil, out
		})
		// The OCIArtifact example targets Cluster local, which the local platform registers:
		// register one here too (this server's own admin kubeconfig, with its files inlined as a
		// Cluster requires, will do; nothing dials it).
		cfg, err := clientcmd.LoadFromFile(p.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if err := clientcmdapi.FlattenConfig(cfg); err != nil {
			t.Fatal(err)
		}
		kubeconfig, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		// The examples target the local platform's clusters: local, and edge for packs.
		for _, name := range []string{"local", "edge"} {
			if _, err := p.Client.PlatformV1alpha1().Clusters().Create(ctx, &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: platform.ClusterSpec{Kubeconfig: string(kubeconfig)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitForCondition(t, 10*time.Second, func() (bool, string) { // until the admission plugin's informer has it
			out, err := framework.Kubectl(p.Kubeconfig, "apply", "--server-side", "--dry-run=server", "-n", "demo",
				"-f", filepath.Join(framework.RepoRoot(), "artifacts", "examples", "ociartifact.yaml"),
				"-f", filepath.Join(framework.RepoRoot(), "artifacts", "examples", "clusterpack.yaml"))
			return err == nil, out
		})
		out := kubectl("apply", "--server-side", "-n", "demo", "-f", filepath.Join(framework.RepoRoot(), "artifacts", "examples"))
		for _, want := range []string{"workload.score.dev/hello", "workload.score.dev/inline", "platformpolicy.score.dev/team-a-defaults",
			"system.governance.plinth.dev/shop", "systemservice.governance.plinth.dev/redis", "managedvm.governance.plinth.dev/cache-1",
			"tenantcompute.compute.plinth.dev/blog", "ociartifact.gitops.plinth.dev/hello",
			"infrastructureclusterpack.infrastructure.ontai.dev/hello"} {
			if !strings.Contains(out, want) {
				t.Errorf("apply output lacks %s:\n%s", want, out)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		kubectl("delete", "workloads", "--all", "-n", "demo")
		if out, _ := framework.Kubectl(p.Kubeconfig, "get", "wl", "-n", "demo", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("workloads left after delete: %q", out)
		}
	})
}

// expectTable checks the header and first row of kubectl get output, ignoring the AGE value.
func expectTable(t *testing.T, out string, header, row []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		t.Fatalf("table has no rows:\n%s", out)
	}
	split := regexp.MustCompile(`\s{2,}`)
	if got := split.Split(strings.TrimSpace(lines[0]), -1); strings.Join(got, "|") != strings.Join(header, "|") {
		t.Errorf("header %q, want %q", got, header)
	}
	got := split.Split(strings.TrimSpace(lines[1]), -1)
	if len(got) != len(header) || strings.Join(got[:len(row)], "|") != strings.Join(row, "|") {
		t.Errorf("row %q, want %q then AGE", got, row)
	}
}
