package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	gitops "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// gitopsNamespace is where the test keeps its gitops objects: the platform's own namespace, as
// a platform administrator would.
const gitopsNamespace = "plinth-system"

const gitopsRegistryYAML = `apiVersion: gitops.plinth.dev/v1alpha1
kind: OCIRegistry
metadata:
  name: local-registry
  namespace: plinth-system
spec:
  endpoint: %s
  port: 5999
  retention:
    keepVersions: 3
`

const gitopsArtifactYAML = `apiVersion: gitops.plinth.dev/v1alpha1
kind: OCIArtifact
metadata:
  name: %s
  namespace: plinth-system
spec:
  registryRef: {name: local-registry}
  name: workloads/%[1]s
  version: "%s"
  manifests:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: app-config, namespace: apps}
    data: {color: %s}
  targets:
  - cluster: %s
`

const gitopsRequestYAML = `apiVersion: gitops.plinth.dev/v1alpha1
kind: ReconciliationRequest
metadata:
  name: %s
  namespace: plinth-system
spec:
  targets:
  - {cluster: local, kind: OCIRepository, name: app}
  - {cluster: local, kind: Kustomization, name: app, namespace: %s}
`

// TestGitOpsAPI serves gitops.plinth.dev through kube-apiserver, without plinth-controller:
// kubectl explain prints the doc comments; platform administrators (dana) create and list every
// kind while tenants (alice) are denied, as kubectl auth can-i says; each bad input is refused
// with the field path; and changing the manifests of a pushed version is a 409 Conflict.
func TestGitOpsAPI(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) { c.NoController = true })
	ctx := context.Background()
	kubectlAs := func(user string, args ...string) (string, error) {
		return framework.Kubectl(p.Kubeconfig(user), args...)
	}
	create := func(user, manifest string) (string, error) {
		return framework.KubectlStdin(p.Kubeconfig(user), manifest, "create", "-f", "-")
	}
	clientsFor := func(user string) (*clientset.Clientset, kubernetes.Interface) {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg)
	}
	dana, danaKube := clientsFor("dana")
	alice, aliceKube := clientsFor("alice")
	admin, _ := clientsFor("admin")

	t.Run("kubectl explain prints the doc comments", func(t *testing.T) {
		for query, wants := range map[string][]string{
			"ociartifact.spec.targets": {"Targets are the Clusters to deliver the artifact to", "cluster", "Cluster names a Cluster",
				"targetNamespace", "prune"},
			"ocireg.spec.endpoint": {"Endpoint is where the registry listens", "localhost:<port>"},
			"recreq.spec.mode":     {"Manual", "Automatic"},
		} {
			out, err := kubectlAs("dana", "explain", query)
			if err != nil {
				t.Fatalf("kubectl explain %s: %v\n%s", query, err, out)
			}
			for _, want := range wants {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl explain %s lacks %q:\n%s", query, want, out)
				}
			}
		}
	})

	t.Run("dana creates and lists every kind", func(t *testing.T) {
		for _, manifest := range []string{
			fmt.Sprintf(gitopsRegistryYAML, "localhost:5999"),
			fmt.Sprintf(gitopsArtifactYAML, "web", "1.0.0", "blue", localplatform.LocalCluster),
			fmt.Sprintf(gitopsRequestYAML, "now", "flux-system"),
		} {
			if out, err := create("dana", manifest); err != nil {
				t.Fatalf("dana creates: %v\n%s", err, out)
			}
		}
		out, err := kubectlAs("dana", "get", "gitops", "-n", gitopsNamespace)
		if err != nil {
			t.Fatalf("kubectl get gitops: %v\n%s", err, out)
		}
		for _, want := range []string{"ociregistry.gitops.plinth.dev/local-registry", "ociartifact.gitops.plinth.dev/web", "reconciliationrequest.gitops.plinth.dev/now"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get gitops lacks %s:\n%s", want, out)
			}
		}
		out, err = kubectlAs("dana", "get", "ociart", "-n", gitopsNamespace)
		if err != nil {
			t.Fatal(err)
		}
		expectTable(t, out, []string{"NAME", "REPOSITORY", "VERSION", "DIGEST", "TARGETS", "READY", "AGE"},
			[]string{"web", "workloads/web", "1.0.0", "<none>", "0/1", "Unknown"})
		out, err = kubectlAs("dana", "get", "ocireg", "-n", gitopsNamespace)
		if err != nil {
			t.Fatal(err)
		}
		expectTable(t, out, []string{"NAME", "ENDPOINT", "PHASE", "KEEP", "AGE"}, []string{"local-registry", "localhost:5999", "NotProvisioned", "3"})
		out, err = kubectlAs("dana", "get", "recreq", "-n", gitopsNamespace)
		if err != nil {
			t.Fatal(err)
		}
		expectTable(t, out, []string{"NAME", "MODE", "PHASE", "TARGETS", "REQUESTED", "AGE"}, []string{"now", "Manual", "Pending", "0/2"})

		registries, err := dana.GitopsV1alpha1().OCIRegistries(gitopsNamespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(registries.Items) != 1 {
			t.Errorf("dana lists OCIRegistries: %v %v", registries, err)
		}
		artifacts, err := dana.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.version=1.0.0"})
		if err != nil || len(artifacts.Items) != 1 || artifacts.Items[0].Spec.Tag != "1.0.0" || artifacts.Items[0].Spec.Repository != "workloads/web" {
			t.Errorf("dana lists OCIArtifacts of version 1.0.0, defaulted: %+v %v", artifacts, err)
		}
		requests, err := dana.GitopsV1alpha1().ReconciliationRequests(gitopsNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.mode=Manual"})
		if err != nil || len(requests.Items) != 1 {
			t.Fatalf("dana lists Manual ReconciliationRequests: %+v %v", requests, err)
		}
		// The server dates the request and defaults what the seed leaves open.
		r := requests.Items[0]
		if r.Spec.RequestedAt == nil || r.Spec.Timeout == nil || r.Spec.Targets[0].Namespace != gitops.DefaultFluxNamespace {
			t.Errorf("request as stored: %+v", r.Spec)
		}
	})

	t.Run("tenants cannot reach the gitops kinds, and can-i says so", func(t *testing.T) {
		for _, resource := range []string{"ociregistries", "ociartifacts", "reconciliationrequests"} {
			for _, verb := range []string{"list", "create"} {
				for _, who := range []struct {
					name string
					kube kubernetes.Interface
					want bool
				}{{"dana", danaKube, true}, {"alice", aliceKube, false}} {
					for _, ns := range []string{gitopsNamespace, "team-a"} {
						review, err := who.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
							Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
								Namespace: ns, Verb: verb, Group: gitops.GroupName, Resource: resource}},
						}, metav1.CreateOptions{})
						if err != nil {
							t.Fatal(err)
						}
						if review.Status.Allowed != who.want {
							t.Errorf("can-i %s %s -n %s as %s: %v, want %v", verb, resource, ns, who.name, review.Status.Allowed, who.want)
						}
					}
				}
			}
		}
		g := alice.GitopsV1alpha1()
		for ns, what := range map[string]string{gitopsNamespace: "the platform's namespace", "team-a": "her own namespace"} {
			_, err := g.OCIRegistries(ns).List(ctx, metav1.ListOptions{})
			expectForbidden(t, err, "alice lists OCIRegistries in "+what)
			_, err = g.OCIArtifacts(ns).List(ctx, metav1.ListOptions{})
			expectForbidden(t, err, "alice lists OCIArtifacts in "+what)
			_, err = g.ReconciliationRequests(ns).List(ctx, metav1.ListOptions{})
			expectForbidden(t, err, "alice lists ReconciliationRequests in "+what)
			_, err = g.OCIRegistries(ns).Create(ctx, &gitops.OCIRegistry{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
				Spec: gitops.OCIRegistrySpec{Endpoint: "localhost:5998", Port: 5998}}, metav1.CreateOptions{})
			expectForbidden(t, err, "alice creates an OCIRegistry in "+what)
			_, err = g.OCIArtifacts(ns).Create(ctx, &gitops.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
				Spec: gitops.OCIArtifactSpec{RegistryRef: gitops.LocalObjectReference{Name: "local-registry"}, Name: "mine", Version: "1.0.0",
					Manifests: []common.RawObject{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}}}}, metav1.CreateOptions{})
			expectForbidden(t, err, "alice creates an OCIArtifact in "+what)
			_, err = g.ReconciliationRequests(ns).Create(ctx, &gitops.ReconciliationRequest{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
				Spec: gitops.ReconciliationRequestSpec{Targets: []gitops.ReconciliationTarget{{Cluster: "local", Kind: gitops.TargetKindOCIArtifact, Name: "web"}}}},
				metav1.CreateOptions{})
			expectForbidden(t, err, "alice creates a ReconciliationRequest in "+what)
		}
		if out, err := kubectlAs("alice", "get", "ociartifacts", "-n", "team-a"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("kubectl get ociartifacts as alice: %v\n%s", err, out)
		}
	})

	t.Run("bad inputs are refused with the field path", func(t *testing.T) {
		artifact := func(name, version, cluster string) string {
			return fmt.Sprintf(gitopsArtifactYAML, name, version, "blue", cluster)
		}
		for name, tc := range map[string]struct {
			manifest, field string
			cause           metav1.CauseType
		}{
			"endpoint not localhost": {fmt.Sprintf(gitopsRegistryYAML, "registry.example.com:5999"), "spec.endpoint", metav1.CauseTypeFieldValueInvalid},
			"version not semver":     {artifact("bad-version", "1.0", localplatform.LocalCluster), "spec.version", metav1.CauseTypeFieldValueInvalid},
			"unknown target cluster": {artifact("nowhere", "1.0.0", "nowhere"), "spec.targets[0].cluster", metav1.CauseTypeFieldValueNotFound},
			"manifests and configMapRef": {strings.Replace(artifact("both", "1.0.0", localplatform.LocalCluster), "  targets:",
				"  configMapRef: {name: app-manifests}\n  targets:", 1), "spec.configMapRef", metav1.CauseTypeForbidden},
			"Kustomization target with a bad namespace": {fmt.Sprintf(gitopsRequestYAML, "bad-namespace", "Flux_System"),
				"spec.targets[1].namespace", metav1.CauseTypeFieldValueInvalid},
		} {
			out, err := create("dana", tc.manifest)
			if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, tc.field+": ") {
				t.Errorf("%s: kubectl create: %v\n%s", name, err, out)
			}
			// The Status behind kubectl's message: 422 Invalid, the cause at the field.
			status := postStatus(t, ctx, dana, tc.manifest)
			if status.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Details == nil ||
				len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != tc.field || status.Details.Causes[0].Type != tc.cause {
				t.Errorf("%s: status %+v, want one %s cause at %s", name, status, tc.cause, tc.field)
			}
		}
	})

	t.Run("the manifests of a pushed version cannot change", func(t *testing.T) {
		apply := func(color, version string) (string, error) {
			return framework.KubectlStdin(p.Kubeconfig("dana"), fmt.Sprintf(gitopsArtifactYAML, "app", version, color, localplatform.LocalCluster),
				"apply", "--server-side", "-f", "-")
		}
		if out, err := apply("blue", "1.0.0"); err != nil {
			t.Fatalf("dana applies app 1.0.0: %v\n%s", err, out)
		}
		// Before the push, 1.0.0 may still change.
		if out, err := apply("green", "1.0.0"); err != nil {
			t.Fatalf("changing the unpushed 1.0.0: %v\n%s", err, out)
		}
		// As plinth-controller after a push: through the status subresource, as admin.
		a, err := admin.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a.Status.RegistryEndpoint, a.Status.PushedVersion = "localhost:5999", "1.0.0"
		a.Status.URL = "oci://localhost:5999/workloads/app:1.0.0"
		a.Status.Digest = "sha256:" + strings.Repeat("0123456789abcdef", 4)
		if _, err := admin.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		out, err := kubectlAs("dana", "get", "ociart", "app", "-n", gitopsNamespace)
		if err != nil {
			t.Fatal(err)
		}
		expectTable(t, out, []string{"NAME", "REPOSITORY", "VERSION", "DIGEST", "TARGETS", "READY", "AGE"},
			[]string{"app", "workloads/app", "1.0.0", "sha256:0123456789ab", "0/1", "Unknown"})

		const refusal = "version 1.0.0 of workloads/app is pushed and cannot change; set a new spec.version"
		if out, err := apply("red", "1.0.0"); err == nil || !strings.Contains(out, refusal) {
			t.Errorf("kubectl apply of new manifests for the pushed 1.0.0: %v\n%s", err, out)
		}
		stored, err := dana.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored.Spec.Manifests = stored.Spec.Manifests[:0]
		stored.Spec.ConfigMapRef = &gitops.LocalObjectReference{Name: "app-manifests"}
		_, err = dana.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).Update(ctx, stored, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), refusal) {
			t.Errorf("an update switching the pushed 1.0.0 to a ConfigMap: %v, want 409 Conflict", err)
		} else if s := err.(apierrors.APIStatus).Status(); s.Code != http.StatusConflict || s.Details == nil || s.Details.Kind != "ociartifacts" {
			t.Errorf("conflict status %+v", s)
		}
		// A new version carries new content.
		if out, err := apply("red", "1.1.0"); err != nil {
			t.Fatalf("applying 1.1.0 with new manifests: %v\n%s", err, out)
		}
	})
}

// postStatus creates the object of a YAML manifest through the REST client and returns the
// Status the server refused it with.
func postStatus(t *testing.T, ctx context.Context, c *clientset.Clientset, manifest string) metav1.Status {
	t.Helper()
	body, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	resource := map[string]string{"OCIRegistry": "ociregistries", "OCIArtifact": "ociartifacts", "ReconciliationRequest": "reconciliationrequests"}
	var kind string
	for k := range resource {
		if strings.Contains(manifest, "kind: "+k+"\n") {
			kind = k
		}
	}
	err = c.GitopsV1alpha1().RESTClient().Post().Namespace(gitopsNamespace).Resource(resource[kind]).
		Body(body).SetHeader("Content-Type", "application/json").Do(ctx).Error()
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("creating a %s: %v, want a Status", kind, err)
	}
	return status.Status()
}
