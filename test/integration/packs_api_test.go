package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/internal/localplatform"
	infrastructure "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/authorization"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// packsNamespace is where the test keeps its packs: the platform's own namespace, as a
// platform administrator would.
const packsNamespace = "plinth-system"

// packYAML is a raw pack: name, version, target cluster, then more of its spec.
const packYAML = `apiVersion: infrastructure.ontai.dev/v1alpha1
kind: InfrastructureClusterPack
metadata:
  name: %s
  namespace: plinth-system
spec:
  version: "%s"
  targetClusters: [%s]
  manifests:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: ingress-config, namespace: ingress}
    data: {color: blue}
%s`

func packManifest(name, version, cluster, more string) string {
	return fmt.Sprintf(packYAML, name, version, cluster, more)
}

// TestPacksAPI serves infrastructure.ontai.dev through kube-apiserver, without
// plinth-controller: a platform administrator (dana) applies a raw pack for Cluster local and
// reads it and its instances in kubectl's tables; kubectl explain prints the doc comments; bad
// inputs (a bad version, an unknown cluster, an invalid onDrift, a dependency cycle, an
// instance's pack changed) are 422s with the field path; and a tenant (alice) is denied both
// kinds with the internal API's neutral reason.
func TestPacksAPI(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) { c.NoController = true })
	ctx := context.Background()
	kubectlAs := func(user string, args ...string) (string, error) {
		return framework.Kubectl(p.Kubeconfig(user), args...)
	}
	create := func(user, manifest string, args ...string) (string, error) {
		return framework.KubectlStdin(p.Kubeconfig(user), manifest, append([]string{"create", "-f", "-"}, args...)...)
	}
	clientsFor := func(user string) (*clientset.Clientset, kubernetes.Interface) {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg)
	}
	dana, _ := clientsFor("dana")
	alice, _ := clientsFor("alice")
	admin, adminKube := clientsFor("admin")
	instanceNamespace := infrastructure.InstanceNamespacePrefix + localplatform.LocalCluster

	t.Run("dana applies a raw pack for Cluster local", func(t *testing.T) {
		out, err := framework.KubectlStdin(p.Kubeconfig("dana"), packManifest("ingress", "v1.0.0", localplatform.LocalCluster, ""), "apply", "-f", "-")
		if err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		out, err = kubectlAs("dana", "get", "clusterpacks", "-n", packsNamespace)
		if err != nil {
			t.Fatalf("kubectl get clusterpacks: %v\n%s", err, out)
		}
		expectTable(t, out, []string{"NAME", "VERSION", "REVISION", "CONTENT", "CLUSTERS", "DRIFTED", "READY", "AGE"},
			[]string{"ingress", "v1.0.0", "0", "manifests", "0/0", "0", "Unknown"})
		// Stored with the seed's defaults, and selectable on its version.
		packs, err := dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.version=v1.0.0"})
		if err != nil || len(packs.Items) != 1 {
			t.Fatalf("dana lists packs of v1.0.0: %+v %v", packs, err)
		}
		s := packs.Items[0].Spec
		if s.DriftPolicy != infrastructure.DriftPolicyDetect || s.DependencyPolicy == nil || s.DependencyPolicy.OnDrift != infrastructure.OnDriftWarn ||
			s.TargetNamespace != "default" || s.RevisionHistoryLimit == nil || *s.RevisionHistoryLimit != 10 {
			t.Errorf("pack as stored: %+v", s)
		}
		out, err = kubectlAs("dana", "get", "packs", "-n", packsNamespace)
		if err != nil || !strings.Contains(out, "infrastructureclusterpack.infrastructure.ontai.dev/ingress") {
			t.Errorf("kubectl get packs (the category): %v\n%s", err, out)
		}
	})

	t.Run("kubectl explain prints the doc comments", func(t *testing.T) {
		for query, wants := range map[string][]string{
			// kubectl wraps descriptions at 80 columns: each want fits in one line.
			"infrastructureclusterpacks.spec.chart": {"Chart is a Helm chart to render with Values", "PackChart is a Helm chart in a chart repository",
				"url\t<string> -required-", "oci://host[:port]/path", "caBundle\t<string>", "a semver constraint such as"},
			"infrastructurepackinstances.status.upgradeDirection": {"UpgradeDirection is the direction of the last version transition",
				"Upgrade, Rollback or Redeploy, by comparing [major, minor, patch, revision]"},
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

	t.Run("bad inputs are refused with the field path", func(t *testing.T) {
		for name, tc := range map[string]struct {
			manifest, field string
			cause           metav1.CauseType
		}{
			"version without v":      {packManifest("bad-version", "1.0.0", localplatform.LocalCluster, ""), "spec.version", metav1.CauseTypeFieldValueInvalid},
			"unknown target cluster": {packManifest("nowhere", "v1.0.0", "local, nowhere", ""), "spec.targetClusters[1]", metav1.CauseTypeFieldValueNotFound},
			"onDrift Stop": {packManifest("stop", "v1.0.0", localplatform.LocalCluster, "  dependencyPolicy: {onDrift: Stop}\n"),
				"spec.dependencyPolicy.onDrift", metav1.CauseTypeFieldValueNotSupported},
			"a chart and manifests": {packManifest("both", "v1.0.0", localplatform.LocalCluster,
				"  chart: {url: \"https://charts.example.com\", name: ingress, version: 1.0.0}\n"), "spec", metav1.CauseTypeFieldValueInvalid},
		} {
			out, err := create("dana", tc.manifest)
			if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, tc.field+": ") {
				t.Errorf("%s: kubectl create: %v\n%s", name, err, out)
			}
			status := postPackStatus(t, ctx, dana, tc.manifest)
			if status.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Details == nil ||
				len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != tc.field || status.Details.Causes[0].Type != tc.cause {
				t.Errorf("%s: status %+v, want one %s cause at %s", name, status, tc.cause, tc.field)
			}
		}
		packs, err := dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNamespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(packs.Items) != 1 {
			t.Errorf("packs stored after the refusals: %+v %v", packs, err)
		}
	})

	t.Run("a dependency cycle is refused", func(t *testing.T) {
		local := localplatform.LocalCluster
		if out, err := create("dana", packManifest("crds", "v1.0.0", local, "  dependsOn: [cert-manager]\n")); err != nil {
			t.Fatalf("crds depending on a pack not created yet: %v\n%s", err, out)
		}
		// Admission reads packs from plinth-apiserver's informer: wait (with server-side dry
		// runs, which store nothing) until it has seen crds.
		cycle := packManifest("cert-manager", "v1.0.0", local, "  dependsOn: [crds]\n")
		var out string
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			out, _ = create("dana", cycle, "--dry-run=server")
			return strings.Contains(out, "is invalid"), nil
		}); err != nil {
			t.Fatalf("the cycle was never refused:\n%s", out)
		}
		out, err := create("dana", cycle)
		if err == nil || !strings.Contains(out, "spec.dependsOn: ") || !strings.Contains(out, "cert-manager → crds → cert-manager") {
			t.Errorf("kubectl create of the cycle: %v\n%s", err, out)
		}
		status := postPackStatus(t, ctx, dana, cycle)
		if status.Code != http.StatusUnprocessableEntity || status.Details == nil || len(status.Details.Causes) != 1 ||
			status.Details.Causes[0].Field != "spec.dependsOn" || status.Details.Causes[0].Type != metav1.CauseTypeFieldValueInvalid {
			t.Errorf("the cycle's status %+v", status)
		}
		// Without the edge back, the same pack is fine.
		if out, err := create("dana", packManifest("cert-manager", "v1.0.0", local, "")); err != nil {
			t.Errorf("cert-manager without dependencies: %v\n%s", err, out)
		}
	})

	t.Run("instances are listed with kubectl get packinstances -A", func(t *testing.T) {
		_, err := adminKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: instanceNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		// As plinth-controller would, with the platform's administrator identity.
		instances := admin.InfrastructureV1alpha1().InfrastructurePackInstances(instanceNamespace)
		_, err = instances.Create(ctx, &infrastructure.InfrastructurePackInstance{
			ObjectMeta: metav1.ObjectMeta{Name: "ingress-" + localplatform.LocalCluster, Namespace: instanceNamespace},
			Spec:       infrastructure.InfrastructurePackInstanceSpec{ClusterPackRef: "ingress", Version: "v1.0.0", TargetClusterRef: localplatform.LocalCluster},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := kubectlAs("dana", "get", "packinstances", "-A")
		if err != nil {
			t.Fatalf("kubectl get packinstances -A: %v\n%s", err, out)
		}
		expectTable(t, out, []string{"NAMESPACE", "NAME", "PACK", "CLUSTER", "VERSION", "DIRECTION", "READY", "DRIFTED", "AGE"},
			[]string{instanceNamespace, "ingress-local", "ingress", "local", "v1.0.0", "<none>", "Unknown", "Unknown"})

		// An instance is named after its pack and cluster, and never changes them.
		_, err = instances.Create(ctx, &infrastructure.InfrastructurePackInstance{
			ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: instanceNamespace},
			Spec:       infrastructure.InfrastructurePackInstanceSpec{ClusterPackRef: "ingress", TargetClusterRef: localplatform.LocalCluster},
		}, metav1.CreateOptions{})
		expectCause(t, err, "an instance with another name", "metadata.name", metav1.CauseTypeFieldValueInvalid)
		out, err = kubectlAs("admin", "patch", "packinstance", "ingress-local", "-n", instanceNamespace, "--type=merge", "-p", `{"spec":{"clusterPackRef":"cert-manager"}}`)
		if err == nil || !strings.Contains(out, "spec.clusterPackRef: Invalid value") || !strings.Contains(out, "immutable") {
			t.Errorf("an instance's pack changed: %v\n%s", err, out)
		}
	})

	t.Run("tenants cannot reach packs or instances", func(t *testing.T) {
		// Without RBAC, kube-apiserver refuses alice before plinth-apiserver sees her.
		_, err := alice.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNamespace).List(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice lists packs without RBAC")
		// Granted everything in the group by RBAC, she still gets plinth-apiserver's neutral
		// refusal: the group is internal whatever RBAC says.
		const grant = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: alice-packs}
rules:
- {apiGroups: [infrastructure.ontai.dev], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-packs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: alice-packs}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`
		if out, err := framework.KubectlStdin(p.AdminKubeconfig(), grant, "apply", "-f", "-"); err != nil {
			t.Fatalf("granting alice: %v\n%s", err, out)
		}
		var canI string
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			canI, _ = kubectlAs("alice", "auth", "can-i", "create", "infrastructureclusterpacks.infrastructure.ontai.dev", "-n", packsNamespace)
			return strings.TrimSpace(canI) == "yes", nil
		}); err != nil {
			t.Fatalf("RBAC grant did not take: can-i = %q", canI)
		}
		i := alice.InfrastructureV1alpha1()
		for _, ns := range []string{packsNamespace, instanceNamespace, "team-a"} {
			_, err := i.InfrastructureClusterPacks(ns).Get(ctx, "ingress", metav1.GetOptions{})
			expectDenied(t, err, "alice gets a pack in "+ns)
			_, err = i.InfrastructureClusterPacks(ns).List(ctx, metav1.ListOptions{})
			expectDenied(t, err, "alice lists packs in "+ns)
			_, err = i.InfrastructureClusterPacks(ns).Create(ctx, &infrastructure.InfrastructureClusterPack{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
				Spec: infrastructure.InfrastructureClusterPackSpec{Version: "v1.0.0", TargetClusters: []string{localplatform.LocalCluster}}}, metav1.CreateOptions{})
			expectDenied(t, err, "alice creates a pack in "+ns)
			_, err = i.InfrastructurePackInstances(ns).Get(ctx, "ingress-local", metav1.GetOptions{})
			expectDenied(t, err, "alice gets an instance in "+ns)
			_, err = i.InfrastructurePackInstances(ns).List(ctx, metav1.ListOptions{})
			expectDenied(t, err, "alice lists instances in "+ns)
			_, err = i.InfrastructurePackInstances(ns).Create(ctx, &infrastructure.InfrastructurePackInstance{ObjectMeta: metav1.ObjectMeta{Name: "mine-local"},
				Spec: infrastructure.InfrastructurePackInstanceSpec{ClusterPackRef: "mine", TargetClusterRef: localplatform.LocalCluster}}, metav1.CreateOptions{})
			expectDenied(t, err, "alice creates an instance in "+ns)
		}
		if out, err := kubectlAs("alice", "get", "packinstances", "-A"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("kubectl get packinstances -A as alice: %v\n%s", err, out)
		}
		// The platform administrator is allowed the same reads.
		d := dana.InfrastructureV1alpha1()
		if _, err := d.InfrastructureClusterPacks(packsNamespace).Get(ctx, "ingress", metav1.GetOptions{}); err != nil {
			t.Errorf("dana gets the pack: %v", err)
		}
		if _, err := d.InfrastructurePackInstances(instanceNamespace).Get(ctx, "ingress-local", metav1.GetOptions{}); err != nil {
			t.Errorf("dana gets the instance: %v", err)
		}
		if l, err := d.InfrastructurePackInstances("").List(ctx, metav1.ListOptions{FieldSelector: "spec.targetClusterRef=local"}); err != nil || len(l.Items) != 1 {
			t.Errorf("dana lists the instances of Cluster local: %+v %v", l, err)
		}
	})
}

// expectDenied fails unless err is the internal API's 403 with its neutral reason.
func expectDenied(t *testing.T, err error, what string) {
	t.Helper()
	if msg := expectForbidden(t, err, what); msg != "" && !strings.Contains(msg, authorization.DeniedReason) {
		t.Errorf("%s: %s lacks the reason %q", what, msg, authorization.DeniedReason)
	}
}

// expectCause fails unless err is a 422 with one cause of type cause at field.
func expectCause(t *testing.T, err error, what, field string, cause metav1.CauseType) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want 422", what, err)
		return
	}
	c := err.(apierrors.APIStatus).Status().Details.Causes
	if len(c) != 1 || c[0].Field != field || c[0].Type != cause {
		t.Errorf("%s: causes %+v, want one %s at %s", what, c, cause, field)
	}
}

// postPackStatus creates the pack of a YAML manifest through the REST client and returns the
// Status the server refused it with.
func postPackStatus(t *testing.T, ctx context.Context, c *clientset.Clientset, manifest string) metav1.Status {
	t.Helper()
	body, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	err = c.InfrastructureV1alpha1().RESTClient().Post().Namespace(packsNamespace).Resource("infrastructureclusterpacks").
		Body(body).SetHeader("Content-Type", "application/json").Do(ctx).Error()
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("creating a pack: %v, want a Status", err)
	}
	return status.Status()
}
