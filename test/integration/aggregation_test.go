package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/authorization"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestAggregatedPlatform runs the local platform of `make run` — etcd, kube-apiserver with
// RBAC and a front proxy, kube-controller-manager, plinth-apiserver behind an APIService — and
// checks what users see through kube-apiserver, tenancy from both sides, the internal-API
// authorizer and a plinth-apiserver restart (front-proxy trust: TestAuthorizationMatrix).
func TestAggregatedPlatform(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	kubectlAs := func(user string, args ...string) (string, error) {
		return framework.Kubectl(p.Kubeconfig(user), args...)
	}
	mustKubectl := func(user string, args ...string) string {
		t.Helper()
		out, err := kubectlAs(user, args...)
		if err != nil {
			t.Fatalf("kubectl (%s) %s: %v\n%s", user, strings.Join(args, " "), err, out)
		}
		return out
	}
	clientFor := func(user string) clientset.Interface {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg)
	}
	admin, alice, bob, dana, controller := clientFor("admin"), clientFor("alice"), clientFor("bob"), clientFor("dana"), clientFor(localplatform.ControllerUser)

	t.Run("discovery and explain through the aggregator", func(t *testing.T) {
		out := mustKubectl("admin", "api-resources", "--api-group=score.dev", "-o", "name")
		for _, want := range []string{"workloads.score.dev", "platformpolicies.score.dev", "resourcebindings.score.dev", "workloadplans.score.dev"} {
			if !strings.Contains(out, want) {
				t.Errorf("api-resources lacks %s:\n%s", want, out)
			}
		}
		out = mustKubectl("admin", "explain", "workloads.spec.containers", "--api-version=score.dev/v1b1")
		if !strings.Contains(strings.Join(strings.Fields(out), " "), "Image is the OCI image reference to run") {
			t.Errorf("explain through the aggregator:\n%s", out)
		}
		out = mustKubectl("admin", "get", "apiservice", "v1b1.score.dev", "-o", "jsonpath={.status.conditions[?(@.type==\"Available\")].status}")
		if out != "True" {
			t.Errorf("APIService Available = %q", out)
		}
	})

	t.Run("kubectl through the aggregator", func(t *testing.T) {
		// A watch started first sees the workload arrive.
		watch := exec.Command(filepath.Join(framework.BinDir(), "kubectl"), "--kubeconfig", p.Kubeconfig("alice"),
			"get", "workloads", "-n", "team-a", "--watch", "-o", "name")
		stdout, _ := watch.StdoutPipe()
		watch.Stderr = os.Stderr
		if err := watch.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
		lines := make(chan string, 10)
		go func() {
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				lines <- s.Text()
			}
		}()
		time.Sleep(time.Second)

		examples := filepath.Join(framework.RepoRoot(), "artifacts", "examples", "workload.yaml")
		mustKubectl("alice", "apply", "--server-side", "-n", "team-a", "-f", examples)
		select {
		case line := <-lines:
			if line != "workload.score.dev/hello" {
				t.Errorf("watch line %q", line)
			}
		case <-time.After(15 * time.Second):
			t.Error("kubectl get --watch saw nothing within 15s")
		}
		out := mustKubectl("alice", "get", "wl", "-n", "team-a", "-o", "wide")
		if !strings.Contains(out, "RUNTIME") || !strings.Contains(out, "BINDINGS") || !strings.Contains(out, "hello") {
			t.Errorf("get -o wide:\n%s", out)
		}
		out = mustKubectl("admin", "get", "score", "-A")
		if !strings.Contains(out, "workload.score.dev/hello") {
			t.Errorf("get score -A:\n%s", out)
		}
		mustKubectl("alice", "delete", "wl", "hello", "-n", "team-a")
		if out, _ := kubectlAs("alice", "get", "wl", "-n", "team-a", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("left after delete: %s", out)
		}
	})

	t.Run("tenants reach their own namespace only", func(t *testing.T) {
		for _, tc := range []struct {
			user       string
			client     clientset.Interface
			own, other string
		}{{"alice", alice, "team-a", "team-b"}, {"bob", bob, "team-b", "team-a"}} {
			if _, err := tc.client.ScoreV1b1().Workloads(tc.own).Create(ctx, newWorkload(tc.user+"-web", "kubernetes"), metav1.CreateOptions{}); err != nil {
				t.Errorf("%s create in %s: %v", tc.user, tc.own, err)
			}
			if _, err := tc.client.ScoreV1b1().Workloads(tc.own).List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("%s list in %s: %v", tc.user, tc.own, err)
			}
			w, err := tc.client.ScoreV1b1().Workloads(tc.own).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Errorf("%s watch in %s: %v", tc.user, tc.own, err)
			} else {
				w.Stop()
			}
			_, err = tc.client.ScoreV1b1().Workloads(tc.other).Create(ctx, newWorkload(tc.user+"-web", "kubernetes"), metav1.CreateOptions{})
			expectForbidden(t, err, tc.user+" create in "+tc.other)
			_, err = tc.client.ScoreV1b1().Workloads(tc.other).List(ctx, metav1.ListOptions{})
			expectForbidden(t, err, tc.user+" list in "+tc.other)
			_, err = tc.client.ScoreV1b1().Workloads(tc.other).Watch(ctx, metav1.ListOptions{})
			expectForbidden(t, err, tc.user+" watch in "+tc.other)

			for ns, want := range map[string]string{tc.own: "yes", tc.other: "no"} {
				for _, verb := range []string{"create", "list", "watch"} {
					out, _ := kubectlAs(tc.user, "auth", "can-i", verb, "workloads.score.dev", "-n", ns)
					if strings.TrimSpace(out) != want {
						t.Errorf("%s: kubectl auth can-i %s workloads -n %s = %q, want %s", tc.user, verb, ns, strings.TrimSpace(out), want)
					}
				}
			}
		}
		// The other tenant's workload stays invisible and intact.
		if _, err := alice.ScoreV1b1().Workloads("team-b").Get(ctx, "bob-web", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("alice get bob's workload: %v", err)
		}
	})

	t.Run("internal APIs are hidden whatever RBAC grants", func(t *testing.T) {
		// Platform identities create the internal objects.
		if _, err := dana.ScoreV1b1().ResourceBindings("team-a").Create(ctx, newBinding("web-db", "web", "db"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("dana creates a binding: %v", err)
		}
		if _, err := controller.ScoreV1b1().WorkloadPlans("team-a").Create(ctx, newPlan("web"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the controller creates a plan: %v", err)
		}
		if _, err := dana.ScoreV1b1().PlatformPolicies().Create(ctx, newPolicy("team-a", 5), metav1.CreateOptions{}); err != nil {
			t.Fatalf("dana creates a policy: %v", err)
		}
		for who, c := range map[string]clientset.Interface{"dana": dana, "controller": controller, "admin": admin} {
			if _, err := c.ScoreV1b1().ResourceBindings("team-a").List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("%s list bindings: %v", who, err)
			}
			if _, err := c.ScoreV1b1().WorkloadPlans("team-a").Get(ctx, "web", metav1.GetOptions{}); err != nil {
				t.Errorf("%s get plan: %v", who, err)
			}
			if _, err := c.ScoreV1b1().PlatformPolicies().List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("%s list policies: %v", who, err)
			}
		}

		// alice gets everything in team-a, and platform-admin cluster-wide, through RBAC.
		grant := `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: everything, namespace: team-a}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-everything, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: everything}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-platform-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "plinth:platform-admin"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`
		if out, err := framework.KubectlStdin(p.AdminKubeconfig(), grant, "apply", "-f", "-"); err != nil {
			t.Fatalf("granting alice: %v\n%s", err, out)
		}
		// RBAC really says yes (kube-apiserver answers can-i); plinth-apiserver still says no.
		if out, _ := kubectlAs("alice", "auth", "can-i", "list", "resourcebindings.score.dev", "-n", "team-a"); strings.TrimSpace(out) != "yes" {
			t.Fatalf("RBAC grant did not take: can-i = %q", out)
		}
		rb := alice.ScoreV1b1().ResourceBindings("team-a")
		wp := alice.ScoreV1b1().WorkloadPlans("team-a")
		pp := alice.ScoreV1b1().PlatformPolicies()
		_, err := rb.Get(ctx, "web-db", metav1.GetOptions{})
		existing := expectForbidden(t, err, "alice get existing binding")
		_, err = rb.Get(ctx, "no-such-binding", metav1.GetOptions{})
		missing := expectForbidden(t, err, "alice get missing binding")
		if strings.Replace(existing, "web-db", "X", 1) != strings.Replace(missing, "no-such-binding", "X", 1) {
			t.Errorf("denials differ between an existing and a missing object:\n%s\n%s", existing, missing)
		}
		if !strings.Contains(existing, authorization.DeniedReason) {
			t.Errorf("denial %q lacks the neutral reason", existing)
		}
		_, err = rb.List(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice list bindings")
		_, err = rb.Watch(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice watch bindings")
		_, err = wp.Get(ctx, "web", metav1.GetOptions{})
		expectForbidden(t, err, "alice get plan")
		_, err = wp.List(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice list plans")
		_, err = wp.Watch(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice watch plans")
		_, err = pp.Get(ctx, "team-a", metav1.GetOptions{})
		expectForbidden(t, err, "alice get policy")
		_, err = pp.List(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice list policies")
		_, err = pp.Watch(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice watch policies")
		err = rb.Delete(ctx, "web-db", metav1.DeleteOptions{})
		expectForbidden(t, err, "alice delete binding")
		// Her workloads still work.
		if _, err := alice.ScoreV1b1().Workloads("team-a").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("alice lost access to workloads: %v", err)
		}
		// And the binding survived her attempt.
		if _, err := dana.ScoreV1b1().ResourceBindings("team-a").Get(ctx, "web-db", metav1.GetOptions{}); err != nil {
			t.Errorf("binding after alice's delete: %v", err)
		}
	})

	t.Run("plinth-apiserver restart", func(t *testing.T) {
		before, err := admin.ScoreV1b1().Workloads("team-a").Get(ctx, "alice-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.StopPlinth()
		if out, _ := kubectlAs("admin", "get", "apiservice", "v1b1.score.dev", "-o", "jsonpath={.status.conditions[0].status}"); out == "True" {
			// The aggregator notices within its probe interval; not a failure either way.
			t.Logf("APIService still reported Available right after the stop")
		}
		restartCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if err := p.StartPlinth(restartCtx); err != nil {
			t.Fatal(err)
		}
		after, err := admin.ScoreV1b1().Workloads("team-a").Get(ctx, "alice-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.UID != before.UID || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("workload changed across restart: %s/%s → %s/%s", before.UID, before.ResourceVersion, after.UID, after.ResourceVersion)
		}
		if _, err := dana.ScoreV1b1().ResourceBindings("team-a").Get(ctx, "web-db", metav1.GetOptions{}); err != nil {
			t.Errorf("binding after restart: %v", err)
		}
	})
}

// expectForbidden checks for 403 and returns the message.
func expectForbidden(t *testing.T, err error, what string) string {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want 403 Forbidden", what, err)
		return ""
	}
	return fmt.Sprint(err)
}
