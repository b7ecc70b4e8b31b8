package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/internal/ociimage"
	"github.com/plinth-dev/plinth/pkg/oci/artifact/artifacttest"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// installNamespace is where the chart is installed, as docs/install.md says.
const installNamespace = "plinth-system"

// installWorkload asks for a postgres database: the Workload is Ready once the database and
// the workload run, and the database's generated password must survive an upgrade.
const installWorkload = `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: shop
spec:
  containers:
    main:
      image: registry.example.com/shop:1.4
      variables:
        DB_PASSWORD: ${resources.db.password}
  resources:
    db: {type: postgres}
`

// TestHelmInstallOnRealNode is docs/install.md's install on a cluster with nothing else: the
// local platform's bare cluster with a real node (kubelet, containerd, runc), Plinth's images
// built by make images' builder and pushed to a registry, and `helm install` of charts/plinth
// through the Helm SDK. The images are pulled and run by the node as the chart says (non-root,
// read-only root, the generated serving certificate, the key Secret, the bundled etcd found
// by its Service's name through the cluster's DNS), and:
// kubectl reaches every group through kube-apiserver, `kubectl explain` documents the kinds,
// a Workload becomes Ready, a Cluster with a sealed kubeconfig is probed HEALTHY by the
// controller in its pod, and `helm upgrade` to a changed chart keeps every object, the key and
// the certificate (the new controller pods still decrypt the Cluster). An install whose image
// does not exist is reported by the rollout, naming the image.
func TestHelmInstallOnRealNode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root")
	}
	ctx := context.Background()
	reg := artifacttest.Start(t)
	_, port, err := net.SplitHostPort(reg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	// containerd pulls from localhost over plain HTTP without being configured.
	registry := "localhost:" + port
	dir := t.TempDir()
	pause := pushNodeImage(t, dir, registry+"/pause:plinth", "pause", buildGo(t, dir, "pause", "./hack/pause"))
	// The chart's bundled etcd, from the etcd binary the platform runs: quay.io cannot be
	// reached from here.
	etcdTag := etcdVersion(t)
	etcdBinary, err := os.ReadFile(filepath.Join(framework.BinDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	pushNodeImage(t, dir, registry+"/etcd:"+etcdTag, "etcd", etcdBinary)
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.KubernetesOnly, c.Nodes = true, 1
		c.RealNode = &localplatform.RealNodeConfig{SandboxImage: pause}
	})
	admin := p.AdminKubeconfig()
	client := adminClientset(t, admin)

	const release = "v0.0.0-installtest"
	images := exec.Command("go", "run", "./hack/images", "--out", filepath.Join(dir, "images"), "--repo", registry+"/plinth", "--release", release)
	images.Dir = framework.RepoRoot()
	if out, err := images.CombinedOutput(); err != nil {
		t.Fatalf("make images: %v\n%s", err, out)
	}

	helm := newHelm(t, admin)
	onNode := map[string]any{
		"nodeSelector": map[string]any{"kubernetes.io/hostname": localplatform.RealNode},
		"tolerations":  []any{map[string]any{"key": localplatform.RealNodeTaint.Key, "operator": "Exists", "effect": string(localplatform.RealNodeTaint.Effect)}},
	}
	values := func(extra map[string]any) map[string]any {
		v := map[string]any{
			"image":      map[string]any{"registry": registry + "/plinth", "tag": release},
			"apiserver":  copyMap(onNode),
			"controller": copyMap(onNode),
			"etcd": map[string]any{"image": map[string]any{"repository": registry + "/etcd", "tag": etcdTag},
				"nodeSelector": onNode["nodeSelector"], "tolerations": onNode["tolerations"]},
		}
		v["controller"].(map[string]any)["extraArgs"] = []any{"--cluster-probe-interval=2s"}
		for k, e := range extra {
			for ek, ev := range e.(map[string]any) {
				v[k].(map[string]any)[ek] = ev
			}
		}
		return v
	}
	install := action.NewInstall(helm)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "plinth", installNamespace, true
	install.Timeout = 3 * time.Minute
	rel, err := install.Run(loadInstallChart(t), values(nil))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("helm install: release %s revision %d", rel.Name, rel.Version)
	waitRollout(t, admin, "plinth-apiserver", "plinth-controller", "statefulset/plinth-etcd")

	t.Run("the pods run the images on the real node, as non-root", func(t *testing.T) {
		pods, err := client.CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, pod := range pods.Items {
			if pod.Status.Phase != corev1.PodRunning {
				continue
			}
			running++
			if pod.Spec.NodeName != localplatform.RealNode || !strings.HasPrefix(pod.Status.PodIP, "10.251.") {
				t.Errorf("pod %s runs on %q at %q, not on the real node", pod.Name, pod.Spec.NodeName, pod.Status.PodIP)
			}
			for _, c := range pod.Status.ContainerStatuses {
				if strings.HasPrefix(pod.Name, "plinth-etcd-") {
					continue
				}
				if !strings.HasPrefix(c.Image, registry+"/plinth/") || !strings.HasSuffix(c.Image, ":"+release) || c.ImageID == "" {
					t.Errorf("pod %s container %s: image %q (%q)", pod.Name, c.Name, c.Image, c.ImageID)
				}
			}
		}
		if running != 5 {
			t.Errorf("%d pods running in %s, want 2 apiservers, 2 controllers and an etcd member", running, installNamespace)
		}
	})

	groups := []string{"score.dev", "governance.plinth.dev", "platform.plinth.dev", "compute.plinth.dev", "gitops.plinth.dev", "infrastructure.ontai.dev"}
	t.Run("kubectl reaches every group and explains its kinds", func(t *testing.T) {
		for _, g := range groups {
			out, err := framework.Kubectl(admin, "api-resources", "--api-group", g, "-o", "name")
			if err != nil || strings.TrimSpace(out) == "" {
				t.Errorf("kubectl api-resources --api-group %s: %v\n%s", g, err, out)
			}
		}
		out, err := framework.Kubectl(admin, "explain", "workloads.spec.containers.image")
		if err != nil || !strings.Contains(out, "GROUP:      score.dev") || !strings.Contains(out, "DESCRIPTION:") {
			t.Errorf("kubectl explain: %v\n%s", err, out)
		}
	})

	// What the upgrade must keep.
	if _, err := framework.Kubectl(admin, "create", "namespace", "shop"); err != nil {
		t.Fatal(err)
	}
	kubectlApply(t, admin, "shop", installWorkload)
	kubeconfig, err := p.NodeAdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := localplatform.ClusterManifest("self", "The cluster Plinth is installed on, reached from its pods.", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := framework.KubectlStdin(admin, cluster, "create", "-f", "-"); err != nil {
		t.Fatalf("creating Cluster self: %v\n%s", err, out)
	}
	waitKubectl(t, admin, 3*time.Minute, "wait", "-n", "shop", "--for=condition=Ready", "workload/shop", "--timeout=10s")
	waitKubectl(t, admin, 2*time.Minute, "wait", "--for=jsonpath={.status.phase}=HEALTHY", "cluster/self", "--timeout=10s")
	kept := func() map[string]string {
		m := map[string]string{}
		for _, s := range []string{"plinth-encryption-keys", "plinth-apiserver-serving"} {
			secret, err := client.CoreV1().Secrets(installNamespace).Get(ctx, s, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m["secret/"+s] = fmt.Sprint(secret.Data)
		}
		for _, obj := range []string{"workload/shop", "cluster/self"} {
			out, err := framework.Kubectl(admin, "get", "-n", "shop", obj, "-o", "jsonpath={.metadata.uid} {.spec}")
			if err != nil {
				t.Fatal(err)
			}
			m[obj] = out
		}
		return m
	}
	before := kept()

	t.Run("helm upgrade to a changed chart keeps every object and the key", func(t *testing.T) {
		changed := loadInstallChart(t)
		changed.Metadata.Version += "-upgrade"
		upgrade := action.NewUpgrade(helm)
		upgrade.Namespace, upgrade.Timeout = installNamespace, 3*time.Minute
		// A changed pod template: every pod is replaced, the controller's leader among them.
		env := map[string]any{"env": []any{map[string]any{"name": "GOGC", "value": "150"}}}
		upgradedAt := time.Now()
		rel, err := upgrade.Run("plinth", changed, values(map[string]any{"apiserver": env, "controller": env}))
		if err != nil {
			t.Fatalf("helm upgrade: %v", err)
		}
		if rel.Version != 2 {
			t.Errorf("revision %d after the upgrade", rel.Version)
		}
		waitRollout(t, admin, "plinth-apiserver", "plinth-controller")
		after := kept()
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s changed in the upgrade:\nbefore %s\nafter  %s", k, v, after[k])
			}
		}
		// The new pods still open the sealed kubeconfig: a probe after the upgrade succeeds.
		waitKubectl(t, admin, 2*time.Minute, "wait", "--for=jsonpath={.status.phase}=HEALTHY", "cluster/self", "--timeout=10s")
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
			out, err := framework.Kubectl(admin, "get", "cluster/self", "-o", "jsonpath={.status.lastProbeTime} {.status.phase}")
			if err != nil {
				return false, nil
			}
			probed, phase, _ := strings.Cut(out, " ")
			at, err := time.Parse(time.RFC3339, probed)
			return err == nil && at.After(upgradedAt) && phase == "HEALTHY", nil
		}); err != nil {
			t.Error("Cluster self was not probed HEALTHY by the upgraded controller")
		}
		waitKubectl(t, admin, time.Minute, "wait", "-n", "shop", "--for=condition=Ready", "workload/shop", "--timeout=10s")
	})

	t.Run("an image that is not there is named by the rollout", func(t *testing.T) {
		bad := action.NewUpgrade(helm)
		bad.Namespace, bad.Timeout = installNamespace, time.Minute
		bad.Wait = true
		_, err := bad.Run("plinth", loadInstallChart(t), values(map[string]any{"image": map[string]any{"tag": "v0.0.0-missing"}}))
		if err == nil {
			t.Fatal("an upgrade to an image that does not exist succeeded")
		}
		out, _ := framework.Kubectl(admin, "get", "pods", "-n", installNamespace, "-o", "jsonpath={range .items[*]}{.status.containerStatuses[*].state.waiting.message}{\"\\n\"}{end}")
		if !strings.Contains(out, "plinth-apiserver:v0.0.0-missing") {
			t.Errorf("the pods do not say which image is missing:\n%s", out)
		}
		// The replicas of the last good revision keep serving.
		if out, err := framework.Kubectl(admin, "get", "workloads", "-n", "shop"); err != nil {
			t.Errorf("the API is gone after a failed upgrade: %v\n%s", err, out)
		}
	})
}

// etcdVersion is the release of the etcd the platform runs: v3.6.x.
func etcdVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(framework.BinDir(), "etcd"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd Version: "); ok {
			return "v" + strings.TrimSpace(v)
		}
	}
	t.Fatalf("etcd --version: %s", out)
	return ""
}

// buildGo builds a static binary of this repository's package pkg.
func buildGo(t *testing.T, dir, name, pkg string) []byte {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir, cmd.Env = framework.RepoRoot(), append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// pushNodeImage packs binary into an image (internal/ociimage, as make images does) and
// pushes it as ref; it returns ref.
func pushNodeImage(t *testing.T, dir, ref, title string, binary []byte) string {
	t.Helper()
	img, err := ociimage.Build(ociimage.Spec{
		Name: title, Binary: binary, Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Release: "test", Created: time.Unix(0, 0).UTC(),
	})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return ref
}

// newHelm is Helm's action configuration for the cluster of kubeconfig, with releases
// stored in Secrets of installNamespace, as the helm CLI does.
func newHelm(t *testing.T, kubeconfig string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := installNamespace
	flags.Namespace = &ns
	cfg := new(action.Configuration)
	var logs bytes.Buffer
	if err := cfg.Init(flags, installNamespace, "secret", func(format string, v ...any) { fmt.Fprintf(&logs, format+"\n", v...) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("helm:\n%s", logs.String())
		}
	})
	return cfg
}

func loadInstallChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(filepath.Join(framework.RepoRoot(), "charts", "plinth"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func adminClientset(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// waitRollout waits until every Deployment named (or kind/name) is rolled out in installNamespace; on failure
// it logs the namespace's pods and events.
func waitRollout(t *testing.T, kubeconfig string, deployments ...string) {
	t.Helper()
	for _, d := range deployments {
		if !strings.Contains(d, "/") {
			d = "deployment/" + d
		}
		if out, err := framework.Kubectl(kubeconfig, "rollout", "status", "-n", installNamespace, d, "--timeout=4m"); err != nil {
			pods, _ := framework.Kubectl(kubeconfig, "get", "pods", "-n", installNamespace, "-o", "wide")
			events, _ := framework.Kubectl(kubeconfig, "get", "events", "-n", installNamespace)
			t.Fatalf("deployment %s: %v\n%s\n%s\n%s", d, err, out, pods, events)
		}
	}
}

// waitKubectl runs kubectl until it succeeds or timeout passes.
func waitKubectl(t *testing.T, kubeconfig string, timeout time.Duration, args ...string) {
	t.Helper()
	var out string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(context.Context) (bool, error) {
		var err error
		out, err = framework.Kubectl(kubeconfig, args...)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kubectl %s: %s", strings.Join(args, " "), out)
	}
}

func copyMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
