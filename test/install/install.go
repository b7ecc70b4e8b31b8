// Package install puts charts/plinth on the local platform's real node the way docs/install.md
// says a platform team does it on their cluster: Plinth's images built by make images' code and
// pushed to a registry, then `helm install` through the Helm SDK. The install test
// (test/integration) and the replica-loss test (test/faults) start from it.
package install

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
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/internal/ociimage"
	"github.com/plinth-dev/plinth/pkg/oci/artifact/artifacttest"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// Namespace is where the chart is installed, as docs/install.md says.
const Namespace = "plinth-system"

// ReleaseName is the Helm release's name.
const ReleaseName = "plinth"

// Target is a bare cluster with a real node and Plinth's images in a registry it pulls from.
type Target struct {
	Platform *localplatform.Platform
	// Admin is kube-apiserver's admin kubeconfig; Client its clientset.
	Admin  string
	Client kubernetes.Interface
	// Registry is localhost:<port>, which containerd pulls from over plain HTTP; Release the
	// tag of Plinth's images in it, EtcdTag the bundled etcd image's.
	Registry, Release, EtcdTag string
	// Helm stores releases in Namespace's Secrets, as the helm CLI does.
	Helm *action.Configuration
}

// Prepare starts a registry, pushes a pause image and an etcd image built from the etcd binary
// the platform runs (quay.io cannot be reached from here), starts a bare cluster with a real
// node (configured further by configure), and builds and pushes Plinth's images with
// hack/images as release.
func Prepare(t testing.TB, release string, configure ...func(*localplatform.Config)) *Target {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a real node needs root")
	}
	reg := artifacttest.Start(t)
	_, port, err := net.SplitHostPort(reg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	tg := &Target{Registry: "localhost:" + port, Release: release, EtcdTag: etcdVersion(t)}
	dir := t.TempDir()
	pause := pushImage(t, tg.Registry+"/pause:plinth", "pause", buildGo(t, dir, "pause", "./hack/pause"))
	etcdBinary, err := os.ReadFile(filepath.Join(framework.BinDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	pushImage(t, tg.Registry+"/etcd:"+tg.EtcdTag, "etcd", etcdBinary)
	tg.Platform = framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.KubernetesOnly, c.Nodes = true, 1
		c.RealNode = &localplatform.RealNodeConfig{SandboxImage: pause}
		for _, f := range configure {
			f(c)
		}
	})
	tg.Admin = tg.Platform.AdminKubeconfig()
	cfg, err := clientcmd.BuildConfigFromFlags("", tg.Admin)
	if err != nil {
		t.Fatal(err)
	}
	tg.Client = kubernetes.NewForConfigOrDie(cfg)

	images := exec.Command("go", "run", "./hack/images", "--out", filepath.Join(dir, "images"), "--repo", tg.Registry+"/plinth", "--release", release)
	images.Dir = framework.RepoRoot()
	if out, err := images.CombinedOutput(); err != nil {
		t.Fatalf("make images: %v\n%s", err, out)
	}
	tg.Helm = newHelm(t, tg.Admin)
	return tg
}

// Values are the chart's values for this target: its images, every pod on the real node, the
// controller probing Clusters every two seconds, then extra merged in (maps merge, other
// values replace).
func (tg *Target) Values(extra map[string]any) map[string]any {
	onNode := func() map[string]any {
		return map[string]any{
			"nodeSelector": map[string]any{"kubernetes.io/hostname": localplatform.RealNode},
			"tolerations": []any{map[string]any{"key": localplatform.RealNodeTaint.Key, "operator": "Exists",
				"effect": string(localplatform.RealNodeTaint.Effect)}},
		}
	}
	v := map[string]any{
		"image":      map[string]any{"registry": tg.Registry + "/plinth", "tag": tg.Release},
		"apiserver":  onNode(),
		"controller": chartutil.CoalesceTables(map[string]any{"extraArgs": []any{"--cluster-probe-interval=2s"}}, onNode()),
		"etcd":       chartutil.CoalesceTables(map[string]any{"image": map[string]any{"repository": tg.Registry + "/etcd", "tag": tg.EtcdTag}}, onNode()),
	}
	// Coalescing writes into its first map: a copy, so that maps extra shares (one env for
	// two components) do not carry one component's values into the other.
	return chartutil.CoalesceTables(copyValues(extra), v)
}

// copyValues copies the maps and lists of values, deeply.
func copyValues(values map[string]any) map[string]any {
	if values == nil {
		return nil
	}
	c := make(map[string]any, len(values))
	for k, v := range values {
		c[k] = copyValue(v)
	}
	return c
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyValues(v)
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = copyValue(e)
		}
		return c
	}
	return v
}

// Install runs `helm install plinth charts/plinth -n plinth-system --create-namespace` with
// values and waits for the rollout.
func (tg *Target) Install(t testing.TB, values map[string]any) {
	t.Helper()
	install := action.NewInstall(tg.Helm)
	install.ReleaseName, install.Namespace, install.CreateNamespace = ReleaseName, Namespace, true
	install.Timeout = 3 * time.Minute
	rel, err := install.Run(Chart(t), values)
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("helm install: release %s revision %d", rel.Name, rel.Version)
	WaitRollout(t, tg.Admin, "plinth-apiserver", "plinth-controller", "statefulset/plinth-etcd")
}

// HAValues are charts/plinth/values-ha.yaml, the highly available profile.
func HAValues(t testing.TB) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join(framework.RepoRoot(), "charts", "plinth", "values-ha.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return v.AsMap()
}

// Chart loads charts/plinth.
func Chart(t testing.TB) *chart.Chart {
	t.Helper()
	c, err := loader.Load(filepath.Join(framework.RepoRoot(), "charts", "plinth"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// WaitRollout waits until every Deployment named (or kind/name) is rolled out in Namespace; on
// failure it logs the namespace's pods and events.
func WaitRollout(t testing.TB, kubeconfig string, deployments ...string) {
	t.Helper()
	for _, d := range deployments {
		if !strings.Contains(d, "/") {
			d = "deployment/" + d
		}
		if out, err := framework.Kubectl(kubeconfig, "rollout", "status", "-n", Namespace, d, "--timeout=4m"); err != nil {
			pods, _ := framework.Kubectl(kubeconfig, "get", "pods", "-n", Namespace, "-o", "wide")
			events, _ := framework.Kubectl(kubeconfig, "get", "events", "-n", Namespace)
			t.Fatalf("%s: %v\n%s\n%s\n%s%s", d, err, out, pods, events, crashLogs(kubeconfig))
		}
	}
}

// crashLogs are the last lines each restarted container wrote before it ended.
func crashLogs(kubeconfig string) string {
	out, err := framework.Kubectl(kubeconfig, "get", "pods", "-n", Namespace, "-o",
		`jsonpath={range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[0].restartCount}{"\n"}{end}`)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		pod, restarts, _ := strings.Cut(line, " ")
		if restarts == "" || restarts == "0" {
			continue
		}
		logs, _ := framework.Kubectl(kubeconfig, "logs", "-n", Namespace, pod, "--previous", "--tail=30")
		fmt.Fprintf(&b, "\n==== %s, before its last restart:\n%s", pod, logs)
	}
	return b.String()
}

// WaitKubectl runs kubectl until it succeeds or timeout passes.
func WaitKubectl(t testing.TB, kubeconfig string, timeout time.Duration, args ...string) {
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

// etcdVersion is the release of the etcd the platform runs: v3.6.x.
func etcdVersion(t testing.TB) string {
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
func buildGo(t testing.TB, dir, name, pkg string) []byte {
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

// pushImage packs binary into an image (internal/ociimage, as make images does) and pushes it
// as ref; it returns ref.
func pushImage(t testing.TB, ref, title string, binary []byte) string {
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

// newHelm is Helm's action configuration for the cluster of kubeconfig.
func newHelm(t testing.TB, kubeconfig string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := Namespace
	flags.Namespace = &ns
	cfg := new(action.Configuration)
	var logs bytes.Buffer
	if err := cfg.Init(flags, Namespace, "secret", func(format string, v ...any) { fmt.Fprintf(&logs, format+"\n", v...) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("helm:\n%s", logs.String())
		}
	})
	return cfg
}
