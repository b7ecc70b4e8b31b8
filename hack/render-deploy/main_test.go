package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	sigsyaml "sigs.k8s.io/yaml"
)

// The chart and the artifacts it renders, from this package's directory.
const (
	chartDir     = "../../charts/plinth"
	artifactsDir = "../../artifacts/deploy"
)

// loadChart loads charts/plinth.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return chrt
}

// valuesFile reads a values file of the chart.
func valuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	vals, err := chartutil.ReadValuesFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// parseValues reads values written as YAML in a test.
func parseValues(t *testing.T, doc string) map[string]any {
	t.Helper()
	vals, err := chartutil.ReadValues([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// objects renders the chart with vals through e and decodes every object of every template.
func objects(t *testing.T, e engine.Engine, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	rendered, err := Render(e, loadChart(t), vals)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for name, content := range rendered {
		if strings.HasSuffix(name, ".yaml") {
			out = append(out, decodeAll(t, name, content)...)
		}
	}
	return out
}

// find returns the objects of a kind, or the one of that name when name is not empty.
func find(objs []*unstructured.Unstructured, kind, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			out = append(out, o)
		}
	}
	return out
}

// one is the single object of a kind and name, failing the test otherwise.
func one(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	found := find(objs, kind, name)
	if len(found) != 1 {
		t.Fatalf("want one %s %s, found %d", kind, name, len(found))
	}
	return found[0]
}

// into converts an object to a typed one.
func into[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	var typed T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &typed); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return &typed
}

// apiServices are the group versions plinth-apiserver serves behind kube-apiserver.
var apiServices = []string{"v1b1.score.dev", "v1alpha1.governance.plinth.dev", "v1alpha1.platform.plinth.dev",
	"v1alpha1.compute.plinth.dev", "v1alpha1.gitops.plinth.dev", "v1alpha1.infrastructure.ontai.dev"}

// TestLint runs helm lint (the SDK's action.Lint) on the chart with its defaults, the HA
// profile and the artifacts' values: no warning and no error.
func TestLint(t *testing.T) {
	for _, values := range []string{"values.yaml", "values-ha.yaml", "deploy-values.yaml"} {
		t.Run(values, func(t *testing.T) {
			lint := action.NewLint()
			lint.Namespace = Release.Namespace
			lint.Strict = true
			result := lint.Run([]string{chartDir}, valuesFile(t, values))
			for _, msg := range result.Messages {
				t.Log(msg)
			}
			if len(result.Errors) > 0 || action.HasWarningsOrErrors(result) {
				t.Fatalf("helm lint: %v", result.Errors)
			}
		})
	}
}

// TestArtifactsAreRendered checks that artifacts/deploy is what the chart renders with
// deploy-values.yaml (hack/verify-deploy.sh says the same with a diff), twice alike.
func TestArtifactsAreRendered(t *testing.T) {
	chrt, vals := loadChart(t), valuesFile(t, "deploy-values.yaml")
	first, err := Artifacts(chrt, vals)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Artifacts(loadChart(t), valuesFile(t, "deploy-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	existing, err := filepath.Glob(filepath.Join(artifactsDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(existing) != len(first) {
		t.Errorf("artifacts/deploy has %d files, the chart renders %d: run hack/update-deploy.sh", len(existing), len(first))
	}
	for name, content := range first {
		if !bytes.Equal(content, second[name]) {
			t.Errorf("%s: two renderings differ", name)
		}
		onDisk, err := os.ReadFile(filepath.Join(artifactsDir, name))
		if err != nil || !bytes.Equal(onDisk, content) {
			t.Errorf("artifacts/deploy/%s is not what the chart renders: run hack/update-deploy.sh", name)
		}
	}
	// What only an installation of the chart has must not reach the artifacts.
	for _, name := range []string{"55-serving-certificate.yaml", "56-encryption-keys.yaml", "58-etcd.yaml"} {
		if _, ok := first[name]; ok {
			t.Errorf("deploy-values.yaml renders %s", name)
		}
	}
}

// TestDefaults renders the defaults: a generated CA in every APIService that verifies the
// serving certificate for plinth-apiserver.plinth-system.svc, two apiservers spread over nodes
// with a disruption budget, two leader-elected controllers, all nonroot on read-only roots, a
// random key file, and a one-member bundled etcd.
func TestDefaults(t *testing.T) {
	objs := objects(t, engine.Engine{}, nil)

	serving := into[corev1.Secret](t, one(t, objs, "Secret", "plinth-apiserver-serving"))
	pair, err := tls.X509KeyPair(serving.Data["tls.crt"], serving.Data["tls.key"])
	if err != nil {
		t.Fatalf("tls.crt and tls.key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range apiServices {
		apiService := one(t, objs, "APIService", name)
		caBundle, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle")
		caPEM, err := base64.StdEncoding.DecodeString(caBundle)
		if err != nil || caBundle == "" {
			t.Fatalf("APIService %s: caBundle %q: %v", name, caBundle, err)
		}
		if !bytes.Equal(caPEM, serving.Data["ca.crt"]) {
			t.Errorf("APIService %s: caBundle is not the Secret's ca.crt", name)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caPEM) {
			t.Fatalf("APIService %s: caBundle holds no certificate", name)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "plinth-apiserver.plinth-system.svc", Roots: roots,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("APIService %s: the serving certificate does not verify against caBundle: %v", name, err)
		}
		if service, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name"); service != "plinth-apiserver" {
			t.Errorf("APIService %s: service %q", name, service)
		}
	}

	apiserver := into[appsv1.Deployment](t, one(t, objs, "Deployment", "plinth-apiserver"))
	if apiserver.Spec.Replicas == nil || *apiserver.Spec.Replicas != 2 {
		t.Errorf("plinth-apiserver replicas: %v", apiserver.Spec.Replicas)
	}
	pod := apiserver.Spec.Template.Spec
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("plinth-apiserver: no preferred anti-affinity on kubernetes.io/hostname: %+v", pod.Affinity)
	}
	container := pod.Containers[0]
	if p := container.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("plinth-apiserver readiness probe: %+v", p)
	}
	if p := container.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/livez" {
		t.Errorf("plinth-apiserver liveness probe: %+v", p)
	}
	if container.Image != "ghcr.io/plinth-dev/plinth-apiserver:0.1.0" {
		t.Errorf("plinth-apiserver image %s, want the appVersion's", container.Image)
	}
	wantEtcd := "--etcd-servers=http://plinth-etcd-0.plinth-etcd.plinth-system.svc:2379"
	if !slices.Contains(container.Args, wantEtcd) {
		t.Errorf("plinth-apiserver args %v lack %s", container.Args, wantEtcd)
	}
	checkSecure(t, "plinth-apiserver", pod)
	// A replica being stopped serves on until its endpoints are gone, then drains.
	if !slices.Contains(container.Args, "--shutdown-delay-duration=5s") {
		t.Errorf("plinth-apiserver args %v lack --shutdown-delay-duration=5s", container.Args)
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g != 35 {
		t.Errorf("plinth-apiserver terminationGracePeriodSeconds %v, want the delay and 30 s", g)
	}

	pdb := one(t, objs, "PodDisruptionBudget", "plinth-apiserver")
	if max, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); fmt.Sprint(max) != "1" {
		t.Errorf("PodDisruptionBudget maxUnavailable %v (%T)", max, max)
	}
	if sel, _, _ := unstructured.NestedString(pdb.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/name"); sel != "plinth-apiserver" {
		t.Errorf("PodDisruptionBudget selects %q", sel)
	}

	controller := into[appsv1.Deployment](t, one(t, objs, "Deployment", "plinth-controller"))
	if controller.Spec.Replicas == nil || *controller.Spec.Replicas != 2 {
		t.Errorf("plinth-controller replicas: %v", controller.Spec.Replicas)
	}
	if !slices.Contains(controller.Spec.Template.Spec.Containers[0].Args, "--leader-elect=true") {
		t.Errorf("plinth-controller is not leader-elected: %v", controller.Spec.Template.Spec.Containers[0].Args)
	}
	checkSecure(t, "plinth-controller", controller.Spec.Template.Spec)

	keys := into[corev1.Secret](t, one(t, objs, "Secret", "plinth-encryption-keys"))
	if keys.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("plinth-encryption-keys is not kept: %v", keys.Annotations)
	}
	checkKeyFile(t, keys.Data["keys.yaml"])

	etcd := into[appsv1.StatefulSet](t, one(t, objs, "StatefulSet", "plinth-etcd"))
	if etcd.Spec.Replicas == nil || *etcd.Spec.Replicas != 1 {
		t.Errorf("plinth-etcd replicas %v, want 1", etcd.Spec.Replicas)
	}
	if len(find(objs, "Namespace", "")) != 0 {
		t.Error("the defaults render a Namespace, which helm install --create-namespace makes")
	}
}

// checkSecure checks a pod runs as 65532, nonroot, on a read-only root without capabilities.
func checkSecure(t *testing.T, name string, pod corev1.PodSpec) {
	t.Helper()
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("%s: pod security context %+v", name, sc)
	}
	for _, c := range pod.Containers {
		csc := c.SecurityContext
		if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem || csc.Capabilities == nil ||
			!slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
			t.Errorf("%s/%s: container security context %+v", name, c.Name, csc)
		}
	}
}

// keyFile is the format of keys.yaml (docs/platform.md).
type keyFile struct {
	Keys []struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	} `json:"keys"`
}

// checkKeyFile checks keys.yaml holds one key k1 of 32 bytes.
func checkKeyFile(t *testing.T, data []byte) keyFile {
	t.Helper()
	var kf keyFile
	if err := sigsyaml.UnmarshalStrict(data, &kf); err != nil {
		t.Fatalf("keys.yaml %q: %v", data, err)
	}
	if len(kf.Keys) != 1 || kf.Keys[0].ID != "k1" {
		t.Fatalf("keys.yaml: %+v", kf)
	}
	if secret, err := base64.StdEncoding.DecodeString(kf.Keys[0].Secret); err != nil || len(secret) != 32 {
		t.Errorf("keys.yaml: the key is not 32 bytes in base64: %d, %v", len(secret), err)
	}
	return kf
}

// TestCertManager renders certificates.mode certManager: the Issuers and Certificates, the
// inject annotation on every APIService, no caBundle and no Secret of the chart's.
func TestCertManager(t *testing.T) {
	objs := objects(t, engine.Engine{}, parseValues(t, "certificates: {mode: certManager}"))
	if n := len(find(objs, "Issuer", "")); n != 2 {
		t.Errorf("want the self-signed and the CA Issuer, found %d Issuers", n)
	}
	one(t, objs, "Certificate", "plinth-apiserver-ca")
	serving := one(t, objs, "Certificate", "plinth-apiserver-serving")
	if dns, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames"); !slices.Contains(dns, "plinth-apiserver.plinth-system.svc") {
		t.Errorf("serving Certificate dnsNames %v", dns)
	}
	if secret, _, _ := unstructured.NestedString(serving.Object, "spec", "secretName"); secret != "plinth-apiserver-serving" {
		t.Errorf("serving Certificate secretName %q", secret)
	}
	for _, name := range apiServices {
		apiService := one(t, objs, "APIService", name)
		if got := apiService.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "plinth-system/plinth-apiserver-serving" {
			t.Errorf("APIService %s: inject-ca-from %q", name, got)
		}
		if _, found, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle"); found {
			t.Errorf("APIService %s has a caBundle", name)
		}
	}
	if len(find(objs, "Secret", "plinth-apiserver-serving")) != 0 {
		t.Error("certManager mode renders the generated Secret")
	}
}

// TestHAProfile renders values-ha.yaml: three etcd members in a StatefulSet, all named in
// --etcd-servers and in the initial cluster, with a disruption budget, and 2+2 replicas.
func TestHAProfile(t *testing.T) {
	objs := objects(t, engine.Engine{}, valuesFile(t, "values-ha.yaml"))
	etcd := into[appsv1.StatefulSet](t, one(t, objs, "StatefulSet", "plinth-etcd"))
	if etcd.Spec.Replicas == nil || *etcd.Spec.Replicas != 3 {
		t.Fatalf("plinth-etcd replicas %v, want 3", etcd.Spec.Replicas)
	}
	one(t, objs, "Service", "plinth-etcd")
	one(t, objs, "PodDisruptionBudget", "plinth-etcd")
	var initialCluster string
	for _, arg := range etcd.Spec.Template.Spec.Containers[0].Command {
		if v, ok := strings.CutPrefix(arg, "--initial-cluster="); ok {
			initialCluster = v
		}
	}
	apiserver := into[appsv1.Deployment](t, one(t, objs, "Deployment", "plinth-apiserver"))
	var servers string
	for _, arg := range apiserver.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(arg, "--etcd-servers="); ok {
			servers = v
		}
	}
	for _, member := range []string{"plinth-etcd-0", "plinth-etcd-1", "plinth-etcd-2"} {
		if !strings.Contains(servers, "http://"+member+".plinth-etcd.plinth-system.svc:2379") {
			t.Errorf("--etcd-servers=%s lacks %s", servers, member)
		}
		if !strings.Contains(initialCluster, member+"=http://"+member+".plinth-etcd.plinth-system.svc:2380") {
			t.Errorf("--initial-cluster=%s lacks %s", initialCluster, member)
		}
	}
	if n := strings.Count(servers, ","); n != 2 {
		t.Errorf("--etcd-servers=%s names %d servers", servers, n+1)
	}
	controller := into[appsv1.Deployment](t, one(t, objs, "Deployment", "plinth-controller"))
	if *apiserver.Spec.Replicas != 2 || *controller.Spec.Replicas != 2 {
		t.Errorf("replicas %d+%d, want 2+2", *apiserver.Spec.Replicas, *controller.Spec.Replicas)
	}
}

// TestSchemaRefusesBadValues checks that values.schema.json refuses bad values before anything
// renders, with a message naming the field.
func TestSchemaRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ values, field string }{
		{"apiserver: {replicas: 0}", "/apiserver/replicas"},
		{`apiserver: {replicas: "two"}`, "/apiserver/replicas"},
		{"controller: {replicas: 1.5}", "/controller/replicas"},
		{"certificates: {mode: bogus}", "/certificates/mode"},
		{"etcd: {mode: external}", "/etcd/external/endpoints"},
		{"etcd: {mode: external, external: {endpoints: []}}", "/etcd/external/endpoints"},
		{"etcd: {mode: etcdish}", "/etcd/mode"},
		{"etcd: {replicas: 2}", "/etcd/replicas"},
		{"image: {tag: 1.0}", "/image/tag"},
		{"apiserver: {replica: 3}", "replica"},
		{"apiserver: {shutdownDelaySeconds: -1}", "/apiserver/shutdownDelaySeconds"},
		{"apiserver: {shutdownDelaySeconds: 90}", "/apiserver/shutdownDelaySeconds"},
	} {
		t.Run(tc.values, func(t *testing.T) {
			_, err := Render(engine.Engine{}, loadChart(t), parseValues(t, tc.values))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("the message does not name %s: %v", tc.field, err)
			}
			t.Log(err)
		})
	}
}

// TestNamespaceIsPlinthSystem checks that a release outside plinth-system fails with a reason.
func TestNamespaceIsPlinthSystem(t *testing.T) {
	chrt := loadChart(t)
	options := Release
	options.Namespace = "elsewhere"
	vals, err := chartutil.ToRenderValues(chrt, nil, options, Capabilities)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Render(chrt, vals); err == nil || !strings.Contains(err.Error(), "plinth-system") {
		t.Fatalf("want a failure naming plinth-system, got %v", err)
	}
}

// fakeCluster is a ClientProvider over a fake dynamic client holding Secrets, which is what
// the chart's lookups read.
type fakeCluster struct{ client dynamic.Interface }

// GetClientFor serves v1 Secrets (namespaced) and refuses anything else.
func (f fakeCluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	if apiVersion != "v1" || kind != "Secret" {
		return nil, false, errors.New("the fake cluster has only Secrets")
	}
	return f.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}), true, nil
}

// newFakeCluster is a cluster holding secrets.
func newFakeCluster(t *testing.T, secrets ...*corev1.Secret) engine.ClientProvider {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]runtime.Object, len(secrets))
	for i, s := range secrets {
		objs[i] = s
	}
	return fakeCluster{dynamicfake.NewSimpleDynamicClient(scheme, objs...)}
}

// TestUpgradeReusesSecrets renders against a cluster that holds the key file and serving
// certificate of an earlier release (lookup finds them): both are rendered unchanged and the
// APIServices keep trusting the existing CA. Against an empty cluster two renderings make
// different keys, which is what the reuse protects.
func TestUpgradeReusesSecrets(t *testing.T) {
	first := objects(t, engine.Engine{}, nil)
	keys := into[corev1.Secret](t, one(t, first, "Secret", "plinth-encryption-keys"))
	serving := into[corev1.Secret](t, one(t, first, "Secret", "plinth-apiserver-serving"))
	fresh := objects(t, engine.Engine{}, nil)
	if bytes.Equal(into[corev1.Secret](t, one(t, fresh, "Secret", "plinth-encryption-keys")).Data["keys.yaml"], keys.Data["keys.yaml"]) {
		t.Fatal("two installs made the same key")
	}
	if bytes.Equal(into[corev1.Secret](t, one(t, fresh, "Secret", "plinth-apiserver-serving")).Data["ca.crt"], serving.Data["ca.crt"]) {
		t.Fatal("two installs made the same CA")
	}

	// The key file as an administrator left it after a rotation: two keys, not the chart's format.
	rotated := []byte("keys:\n- id: k2\n  secret: " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32)) +
		"\n- id: k1\n  secret: " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)) + "\n")
	keys.Data["keys.yaml"] = rotated
	upgraded, err := engine.RenderWithClientProvider(loadChart(t), renderValues(t, nil), newFakeCluster(t, keys, serving))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for name, content := range upgraded {
		if strings.HasSuffix(name, ".yaml") {
			objs = append(objs, decodeAll(t, name, content)...)
		}
	}
	gotKeys := into[corev1.Secret](t, one(t, objs, "Secret", "plinth-encryption-keys"))
	if !bytes.Equal(gotKeys.Data["keys.yaml"], rotated) {
		t.Errorf("the upgrade replaced the key file:\n%s", gotKeys.Data["keys.yaml"])
	}
	gotServing := into[corev1.Secret](t, one(t, objs, "Secret", "plinth-apiserver-serving"))
	for _, key := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if !bytes.Equal(gotServing.Data[key], serving.Data[key]) {
			t.Errorf("the upgrade replaced the serving Secret's %s", key)
		}
	}
	for _, name := range apiServices {
		caBundle, _, _ := unstructured.NestedString(one(t, objs, "APIService", name).Object, "spec", "caBundle")
		if caBundle != base64.StdEncoding.EncodeToString(serving.Data["ca.crt"]) {
			t.Errorf("APIService %s: caBundle is not the existing CA", name)
		}
	}
	block, _ := pem.Decode(serving.Data["tls.crt"])
	if block == nil {
		t.Fatal("tls.crt is no PEM")
	}
}

// renderValues are vals prepared for the engine as Release.
func renderValues(t *testing.T, vals map[string]any) chartutil.Values {
	t.Helper()
	renderVals, err := chartutil.ToRenderValues(loadChart(t), vals, Release, Capabilities)
	if err != nil {
		t.Fatal(err)
	}
	return renderVals
}

// decodeAll decodes the objects of one rendered template.
func decodeAll(t *testing.T, name, content string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	decoder := yaml.NewYAMLOrJSONDecoder(strings.NewReader(content), 4096)
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", name, err)
		}
		if obj != nil {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	return out
}

// TestShutdownDelayZeroStopsAtOnce: shutdownDelaySeconds 0 leaves the server's own default
// (stop listening at SIGTERM) and the usual grace period.
func TestShutdownDelayZeroStopsAtOnce(t *testing.T) {
	objs := objects(t, engine.Engine{}, parseValues(t, "apiserver: {shutdownDelaySeconds: 0}"))
	pod := into[appsv1.Deployment](t, one(t, objs, "Deployment", "plinth-apiserver")).Spec.Template.Spec
	for _, arg := range pod.Containers[0].Args {
		if strings.HasPrefix(arg, "--shutdown-") {
			t.Errorf("plinth-apiserver has %s with shutdownDelaySeconds 0", arg)
		}
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("terminationGracePeriodSeconds %v, want 30", g)
	}
}
