package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// provisionerYAML is a Provisioner: name, then its spec's fields (indented by two spaces).
const provisionerYAML = `apiVersion: score.dev/v1b1
kind: Provisioner
metadata:
  name: %s
spec:
%s`

func provisionerManifest(name, spec string) string {
	return fmt.Sprintf(provisionerYAML, name, spec)
}

// postgresLarge is one entry of a score-k8s provisioners file, unchanged, under spec.
const postgresLarge = `  uri: template://platform/postgres-large
  type: postgres
  class: large
  description: A dedicated PostgreSQL database on a large instance.
  init: |
    name: pg-{{ .Uid | sha256sum | trunc 8 }}
  state: |
    password: {{ dig "password" (randAlphaNum 16) .State | quote }}
  outputs: |
    host: {{ .Init.name }}
    port: 5432
    username: app
    password: {{ encodeSecretRef .Init.name "password" }}
  expected_outputs: [username, host, port, password]
  supported_params: [version, extensions]
`

// TestProvisionersAPI serves score.dev Provisioners through kube-apiserver, without
// plinth-controller: a platform administrator (dana) applies a provisioner in score-k8s's
// format and lists it with score-k8s provisioners list's columns; kubectl explain documents
// the fields; bad entries (cmd://, an unknown scheme, a template that does not parse, no type)
// are 422s with the field path and a sentence; a second provisioner of the same type, class
// and id is refused, another class is not; and a tenant (alice) is denied the kind with the
// internal API's neutral reason, whatever RBAC grants her.
func TestProvisionersAPI(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) { c.NoController = true })
	ctx := context.Background()
	kubectlAs := func(user string, args ...string) (string, error) {
		return framework.Kubectl(p.Kubeconfig(user), args...)
	}
	create := func(manifest string, args ...string) (string, error) {
		return framework.KubectlStdin(p.Kubeconfig("dana"), manifest, append([]string{"create", "-f", "-"}, args...)...)
	}
	clientFor := func(user string) *clientset.Clientset {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg)
	}
	dana, alice := clientFor("dana"), clientFor("alice")

	t.Run("dana applies a provisioner and lists it", func(t *testing.T) {
		out, err := framework.KubectlStdin(p.Kubeconfig("dana"), provisionerManifest("postgres-large", postgresLarge), "apply", "-f", "-")
		if err != nil || !strings.Contains(out, "provisioner.score.dev/postgres-large created") {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		out, err = kubectlAs("dana", "get", "provisioners")
		if err != nil {
			t.Fatalf("kubectl get provisioners: %v\n%s", err, out)
		}
		expectTable(t, out, []string{"NAME", "TYPE", "CLASS", "PARAMS", "OUTPUTS", "DESCRIPTION", "AGE"},
			[]string{"postgres-large", "postgres", "large", "extensions, version", "host, password, port, username",
				"A dedicated PostgreSQL database on a large instance."})
		// Server-side apply of a kind without status, with the short name to read it back.
		dns := "  uri: template://platform/dns\n  type: dns\n  outputs: |\n    host: {{ .SourceWorkload }}.example.com\n"
		if out, err := framework.KubectlStdin(p.Kubeconfig("dana"), provisionerManifest("dns", dns), "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply --server-side: %v\n%s", err, out)
		}
		out, err = kubectlAs("dana", "get", "prov", "dns")
		if err != nil {
			t.Fatalf("kubectl get prov dns: %v\n%s", err, out)
		}
		expectTable(t, out, []string{"NAME", "TYPE", "CLASS", "PARAMS", "OUTPUTS", "DESCRIPTION", "AGE"},
			[]string{"dns", "dns", "(any)", "<none>", "<none>", "<none>"})
		// The stored object keeps score-k8s's field names and the entry's lists as written.
		got, err := dana.ScoreV1b1().Provisioners().Get(ctx, "postgres-large", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Class == nil || *got.Spec.Class != "large" || got.Spec.ID != nil || strings.Join(got.Spec.SupportedParams, ",") != "version,extensions" ||
			!strings.Contains(got.Spec.Outputs, `encodeSecretRef .Init.name "password"`) || got.Generation != 1 {
			t.Errorf("stored provisioner: %+v", got)
		}
		// A change is an update of the same object.
		changed := strings.Replace(postgresLarge, "supported_params: [version, extensions]", "supported_params: [version]", 1)
		out, err = framework.KubectlStdin(p.Kubeconfig("dana"), provisionerManifest("postgres-large", changed), "apply", "-f", "-")
		if err != nil || !strings.Contains(out, "provisioner.score.dev/postgres-large configured") {
			t.Errorf("kubectl apply of a change: %v\n%s", err, out)
		}
		if got, err := dana.ScoreV1b1().Provisioners().Get(ctx, "postgres-large", metav1.GetOptions{}); err != nil || got.Generation != 2 {
			t.Errorf("after the change: %+v %v", got, err)
		}
	})

	t.Run("discovery and kubectl explain", func(t *testing.T) {
		resources, err := dana.Discovery().ServerResourcesForGroupVersion(v1b1.SchemeGroupVersion.String())
		if err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, r := range resources.APIResources {
			if strings.HasPrefix(r.Name, "provisioners") {
				found = append(found, fmt.Sprintf("%s namespaced=%v short=%v categories=%v", r.Name, r.Namespaced, r.ShortNames, r.Categories))
			}
		}
		if strings.Join(found, "; ") != "provisioners namespaced=false short=[prov] categories=[score]" {
			t.Errorf("discovery: %q, want provisioners alone, cluster-scoped, without status", found)
		}
		for query, wants := range map[string][]string{
			"provisioner.spec.expected_outputs": {"expected_outputs", "<[]string>", "ExpectedOutputs lists the outputs the provisioner promises"},
			"provisioner.spec.uri":              {"uri", "<string>", "cmd:// is refused"},
		} {
			out, err := kubectlAs("dana", "explain", query)
			if err != nil {
				t.Fatalf("kubectl explain %s: %v\n%s", query, err, out)
			}
			flat := strings.Join(strings.Fields(out), " ")
			for _, want := range wants {
				if !strings.Contains(flat, want) {
					t.Errorf("kubectl explain %s lacks %q:\n%s", query, want, out)
				}
			}
		}
	})

	t.Run("bad entries are refused with the field path", func(t *testing.T) {
		for name, tc := range map[string]struct {
			spec, field, message string
			cause                metav1.CauseType
		}{
			"a cmd:// provisioner": {strings.Replace(postgresLarge, "template://platform/postgres-large", "cmd://./postgres.sh", 1),
				"spec.uri", "cmd:// provisioners are not supported because plinth-controller runs no commands", metav1.CauseTypeFieldValueInvalid},
			"an unknown scheme": {strings.Replace(postgresLarge, "template://", "https://", 1),
				"spec.uri", "the scheme https:// is not supported", metav1.CauseTypeFieldValueInvalid},
			"outputs that do not parse": {strings.Replace(postgresLarge, "host: {{ .Init.name }}", "host: {{ .Init.name", 1),
				"spec.outputs", "the template does not parse", metav1.CauseTypeFieldValueInvalid},
			"no type": {strings.Replace(postgresLarge, "  type: postgres\n", "", 1),
				"spec.type", "the resource type the provisioner provides is required", metav1.CauseTypeFieldValueRequired},
		} {
			manifest := provisionerManifest("bad", tc.spec)
			out, err := create(manifest)
			if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, tc.field+": ") || !strings.Contains(out, tc.message) {
				t.Errorf("%s: kubectl create: %v\n%s", name, err, out)
			}
			status := postProvisionerStatus(t, ctx, dana, manifest)
			if status.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Details == nil ||
				len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != tc.field || status.Details.Causes[0].Type != tc.cause {
				t.Errorf("%s: status %+v, want one %s cause at %s", name, status, tc.cause, tc.field)
			}
		}
		if _, err := dana.ScoreV1b1().Provisioners().Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a refused provisioner was stored: %v", err)
		}
	})

	t.Run("type, class and id are unique", func(t *testing.T) {
		// Admission reads provisioners from plinth-apiserver's informer: wait (with server-side
		// dry runs, which store nothing) until it has seen postgres-large.
		same := provisionerManifest("postgres-large-2", strings.Replace(postgresLarge, "platform/postgres-large", "platform/postgres-large-2", 1))
		var out string
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			out, _ = create(same, "--dry-run=server")
			return strings.Contains(out, "is invalid"), nil
		}); err != nil {
			t.Fatalf("the second postgres/large was never refused:\n%s", out)
		}
		out, err := create(same)
		if err == nil || !strings.Contains(out, "spec.type: Duplicate value: \"postgres\"") || !strings.Contains(out, "Provisioner postgres-large already provides this type") {
			t.Errorf("kubectl create of the same type and class: %v\n%s", err, out)
		}
		status := postProvisionerStatus(t, ctx, dana, same)
		if status.Code != http.StatusUnprocessableEntity || status.Details == nil || len(status.Details.Causes) != 1 ||
			status.Details.Causes[0].Field != "spec.type" || status.Details.Causes[0].Type != metav1.CauseTypeFieldValueDuplicate {
			t.Errorf("the duplicate's status %+v", status)
		}
		// Another class, or the same class for one shared resource (an id), is more or less
		// specific, not ambiguous.
		for name, spec := range map[string]string{
			"postgres-small": strings.Replace(postgresLarge, "class: large", "class: small", 1),
			"postgres-main":  strings.Replace(postgresLarge, "class: large", "class: large\n  id: main-db", 1),
		} {
			if out, err := create(provisionerManifest(name, spec)); err != nil {
				t.Errorf("%s: %v\n%s", name, err, out)
			}
		}
	})

	t.Run("tenants cannot reach provisioners", func(t *testing.T) {
		// Without RBAC, kube-apiserver refuses alice before plinth-apiserver sees her.
		_, err := alice.ScoreV1b1().Provisioners().List(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice lists provisioners without RBAC")
		// Granted provisioners by RBAC, she still gets plinth-apiserver's neutral refusal.
		const grant = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: alice-provisioners}
rules:
- {apiGroups: [score.dev], resources: [provisioners], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-provisioners}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: alice-provisioners}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`
		if out, err := framework.KubectlStdin(p.AdminKubeconfig(), grant, "apply", "-f", "-"); err != nil {
			t.Fatalf("granting alice: %v\n%s", err, out)
		}
		var canI string
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			canI, _ = kubectlAs("alice", "auth", "can-i", "create", "provisioners.score.dev", "--all-namespaces")
			return strings.TrimSpace(canI) == "yes", nil
		}); err != nil {
			t.Fatalf("RBAC grant did not take: can-i = %q", canI)
		}
		a := alice.ScoreV1b1().Provisioners()
		_, err = a.Get(ctx, "postgres-large", metav1.GetOptions{})
		expectDenied(t, err, "alice gets a provisioner")
		_, err = a.List(ctx, metav1.ListOptions{})
		expectDenied(t, err, "alice lists provisioners")
		_, err = a.Create(ctx, &v1b1.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
			Spec: v1b1.ProvisionerSpec{URI: "template://alice/redis", Type: "redis"}}, metav1.CreateOptions{})
		expectDenied(t, err, "alice creates a provisioner")
		if out, err := kubectlAs("alice", "get", "provisioners"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("kubectl get provisioners as alice: %v\n%s", err, out)
		}
		// The platform administrator reads the same objects.
		if _, err := dana.ScoreV1b1().Provisioners().Get(ctx, "postgres-large", metav1.GetOptions{}); err != nil {
			t.Errorf("dana gets the provisioner: %v", err)
		}
		if l, err := dana.ScoreV1b1().Provisioners().List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 4 {
			t.Errorf("dana lists provisioners: %+v %v", l, err)
		}
	})
}

// postProvisionerStatus creates the provisioner of a YAML manifest through the REST client and
// returns the Status the server refused it with.
func postProvisionerStatus(t *testing.T, ctx context.Context, c *clientset.Clientset, manifest string) metav1.Status {
	t.Helper()
	body, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	err = c.ScoreV1b1().RESTClient().Post().Resource("provisioners").
		Body(body).SetHeader("Content-Type", "application/json").Do(ctx).Error()
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("creating a provisioner: %v, want a Status", err)
	}
	return status.Status()
}
