package integration

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// inlineWorkload has a container in spec and one in its inline Score document, whose metadata
// carries annotations Plinth does not model (the server keeps them verbatim).
const inlineWorkload = `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: shop
  namespace: demo
spec:
  runtimeClass: kubernetes
  containers:
    web:
      image: registry.example.com/web:1
  source:
    inline:
      apiVersion: score.dev/v1b1
      metadata:
        name: shop
        annotations:
          team: sales
      containers:
        main:
          image: registry.example.com/shop:1
          variables:
            A: "1"
            B: "2"
`

// kubectlRun is one kubectl run with its output streams apart: warnings go to stderr.
type kubectlRun struct {
	stdout, stderr string
	exitCode       int
}

func runKubectl(t *testing.T, kubeconfig, stdin string, args ...string) kubectlRun {
	t.Helper()
	cmd := exec.Command(filepath.Join(framework.BinDir(), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return kubectlRun{stdout: stdout.String(), stderr: stderr.String(), exitCode: cmd.ProcessState.ExitCode()}
}

// TestKubectlClientSideApplyWithoutWarnings applies a Workload with an inline Score document
// the way most users do (client-side kubectl apply, kubectl diff), changing and removing
// fields inside the document and in spec: kubectl prints no warning, every change is stored,
// a removed key is removed, and an unchanged apply is "unchanged". The server offers no
// strategic merge patch, in its OpenAPI or on PATCH, so kubectl uses a JSON merge patch.
func TestKubectlClientSideApplyWithoutWarnings(t *testing.T) {
	p := framework.StartPlinth(t, framework.Options{})
	ctx := context.Background()
	stored := func() *v1b1.Workload {
		t.Helper()
		w, err := p.Client.ScoreV1b1().Workloads("demo").Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	// check runs kubectl apply or diff on a manifest: nothing on stderr, the exit code (diff
	// exits 1 when it finds differences) and lines of the output.
	check := func(verb, manifest string, wantExit int, wantStdout ...string) kubectlRun {
		t.Helper()
		run := runKubectl(t, p.Kubeconfig, manifest, verb, "-f", "-")
		if run.stderr != "" {
			t.Errorf("kubectl %s printed on stderr:\n%s", verb, run.stderr)
		}
		if run.exitCode != wantExit {
			t.Errorf("kubectl %s exited %d, want %d:\n%s", verb, run.exitCode, wantExit, run.stdout)
		}
		for _, want := range wantStdout {
			if !strings.Contains(run.stdout, want) {
				t.Errorf("kubectl %s output lacks %q:\n%s", verb, want, run.stdout)
			}
		}
		return run
	}

	check("apply", inlineWorkload, 0, "workload.score.dev/shop created")
	check("apply", inlineWorkload, 0, "workload.score.dev/shop unchanged")

	// A change inside the document: diff shows it, apply stores it, diff is then empty.
	changed := strings.Replace(inlineWorkload, "shop:1", "shop:2", 1)
	check("diff", changed, 1, "-          image: registry.example.com/shop:1", "+          image: registry.example.com/shop:2")
	check("apply", changed, 0, "workload.score.dev/shop configured")
	if run := check("diff", changed, 0); run.stdout != "" {
		t.Errorf("kubectl diff after apply:\n%s", run.stdout)
	}
	doc, err := stored().Spec.Source.Inline.Object()
	if err != nil {
		t.Fatal(err)
	}
	main := doc["containers"].(map[string]interface{})["main"].(map[string]interface{})
	if main["image"] != "registry.example.com/shop:2" {
		t.Errorf("stored inline image %v, want shop:2", main["image"])
	}

	// A key removed inside the document and a change in spec's container, in one apply.
	removed := strings.Replace(changed, "            B: \"2\"\n", "", 1)
	removed = strings.Replace(removed, "web:1", "web:2", 1)
	check("diff", removed, 1, "-            B: \"2\"", "+      image: registry.example.com/web:2")
	check("apply", removed, 0, "workload.score.dev/shop configured")
	if run := check("diff", removed, 0); run.stdout != "" {
		t.Errorf("kubectl diff after apply:\n%s", run.stdout)
	}
	w := stored()
	if got := w.Spec.Containers["web"].Image; got != "registry.example.com/web:2" {
		t.Errorf("stored spec image %q, want web:2", got)
	}
	if doc, err = w.Spec.Source.Inline.Object(); err != nil {
		t.Fatal(err)
	}
	variables := doc["containers"].(map[string]interface{})["main"].(map[string]interface{})["variables"].(map[string]interface{})
	if _, kept := variables["B"]; kept || variables["A"] != "1" {
		t.Errorf("stored inline variables %v, want A only", variables)
	}
	if team := doc["metadata"].(map[string]interface{})["annotations"]; team == nil {
		t.Errorf("the document's annotations were dropped: %v", doc["metadata"])
	}
	check("apply", removed, 0, "workload.score.dev/shop unchanged")

	t.Run("published OpenAPI offers no strategic merge patch", func(t *testing.T) {
		for _, path := range []string{"/openapi/v2", "/openapi/v3/apis/score.dev/v1b1", "/openapi/v3/apis/compute.plinth.dev/v1alpha1"} {
			body, err := p.Client.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			if !bytes.Contains(body, []byte("application/merge-patch+json")) {
				t.Errorf("%s lists no merge patch", path)
			}
			if bytes.Contains(body, []byte("application/strategic-merge-patch+json")) {
				t.Errorf("%s still offers strategic merge patch", path)
			}
		}
	})

	t.Run("kubectl patch names the patch types to use", func(t *testing.T) {
		run := runKubectl(t, p.Kubeconfig, "", "patch", "wl", "shop", "-n", "demo", "-p", `{"spec":{"runtimeClass":"kubevirt"}}`)
		if run.exitCode == 0 || !strings.Contains(run.stderr, "application/merge-patch+json") {
			t.Errorf("kubectl patch (strategic): exit %d\n%s%s", run.exitCode, run.stdout, run.stderr)
		}
		run = runKubectl(t, p.Kubeconfig, "", "patch", "wl", "shop", "-n", "demo", "--type", "merge",
			"-p", `{"spec":{"source":{"inline":{"containers":{"main":{"variables":{"C":"3"}}}}}}}`)
		if run.exitCode != 0 || run.stderr != "" {
			t.Fatalf("kubectl patch --type merge: exit %d\n%s%s", run.exitCode, run.stdout, run.stderr)
		}
		doc, err := stored().Spec.Source.Inline.Object()
		if err != nil {
			t.Fatal(err)
		}
		variables := doc["containers"].(map[string]interface{})["main"].(map[string]interface{})["variables"].(map[string]interface{})
		if variables["A"] != "1" || variables["C"] != "3" {
			t.Errorf("inline variables after a merge patch %v, want A and C", variables)
		}
	})
}
