package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/test/install"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

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
	ctx := context.Background()
	tg := install.Prepare(t, "v0.0.0-installtest")
	admin, client, registry, release, p := tg.Admin, tg.Client, tg.Registry, tg.Release, tg.Platform
	tg.Install(t, tg.Values(nil))

	t.Run("the pods run the images on the real node, as non-root", func(t *testing.T) {
		pods, err := client.CoreV1().Pods(install.Namespace).List(ctx, metav1.ListOptions{})
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
			t.Errorf("%d pods running in %s, want 2 apiservers, 2 controllers and an etcd member", running, install.Namespace)
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
	install.WaitKubectl(t, admin, 3*time.Minute, "wait", "-n", "shop", "--for=condition=Ready", "workload/shop", "--timeout=10s")
	install.WaitKubectl(t, admin, 2*time.Minute, "wait", "--for=jsonpath={.status.phase}=HEALTHY", "cluster/self", "--timeout=10s")
	kept := func() map[string]string {
		m := map[string]string{}
		for _, s := range []string{"plinth-encryption-keys", "plinth-apiserver-serving"} {
			secret, err := client.CoreV1().Secrets(install.Namespace).Get(ctx, s, metav1.GetOptions{})
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
		changed := install.Chart(t)
		changed.Metadata.Version += "-upgrade"
		upgrade := action.NewUpgrade(tg.Helm)
		upgrade.Namespace, upgrade.Timeout = install.Namespace, 3*time.Minute
		// A changed pod template: every pod is replaced, the controller's leader among them.
		env := map[string]any{"env": []any{map[string]any{"name": "GOGC", "value": "150"}}}
		upgradedAt := time.Now()
		rel, err := upgrade.Run("plinth", changed, tg.Values(map[string]any{"apiserver": env, "controller": env}))
		if err != nil {
			t.Fatalf("helm upgrade: %v", err)
		}
		if rel.Version != 2 {
			t.Errorf("revision %d after the upgrade", rel.Version)
		}
		install.WaitRollout(t, admin, "plinth-apiserver", "plinth-controller")
		after := kept()
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s changed in the upgrade:\nbefore %s\nafter  %s", k, v, after[k])
			}
		}
		// The new pods still open the sealed kubeconfig: a probe after the upgrade succeeds.
		install.WaitKubectl(t, admin, 2*time.Minute, "wait", "--for=jsonpath={.status.phase}=HEALTHY", "cluster/self", "--timeout=10s")
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
		install.WaitKubectl(t, admin, time.Minute, "wait", "-n", "shop", "--for=condition=Ready", "workload/shop", "--timeout=10s")
	})

	t.Run("readiness follows etcd", func(t *testing.T) {
		// Without etcd every replica fails /readyz and leaves the Service, so kube-apiserver
		// reports the APIServices unavailable instead of proxying to servers that cannot answer;
		// with etcd back they return, and nothing was lost.
		readyReplicas := func() string {
			out, _ := framework.Kubectl(admin, "get", "deployment", "-n", install.Namespace, "plinth-apiserver", "-o", "jsonpath={.status.readyReplicas}")
			return out
		}
		if out, err := framework.Kubectl(admin, "scale", "statefulset", "-n", install.Namespace, "plinth-etcd", "--replicas=0"); err != nil {
			t.Fatalf("scaling etcd down: %v\n%s", err, out)
		}
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
			r := readyReplicas()
			return r == "" || r == "0", nil
		}); err != nil {
			t.Errorf("%s plinth-apiserver replicas still Ready two minutes after etcd stopped", readyReplicas())
		}
		install.WaitKubectl(t, admin, time.Minute, "wait", "--for=condition=Available=False", "apiservice/v1b1.score.dev", "--timeout=10s")
		if out, err := framework.Kubectl(admin, "scale", "statefulset", "-n", install.Namespace, "plinth-etcd", "--replicas=1"); err != nil {
			t.Fatalf("scaling etcd up: %v\n%s", err, out)
		}
		install.WaitRollout(t, admin, "statefulset/plinth-etcd", "plinth-apiserver")
		install.WaitKubectl(t, admin, 2*time.Minute, "wait", "--for=condition=Available", "apiservice/v1b1.score.dev", "--timeout=10s")
		if after := kept(); after["workload/shop"] != before["workload/shop"] {
			t.Errorf("Workload shop after etcd's restart: %s, want %s", after["workload/shop"], before["workload/shop"])
		}
	})

	t.Run("an image that is not there is named by the rollout", func(t *testing.T) {
		bad := action.NewUpgrade(tg.Helm)
		bad.Namespace, bad.Timeout = install.Namespace, time.Minute
		bad.Wait = true
		_, err := bad.Run("plinth", install.Chart(t), tg.Values(map[string]any{"image": map[string]any{"tag": "v0.0.0-missing"}}))
		if err == nil {
			t.Fatal("an upgrade to an image that does not exist succeeded")
		}
		out, _ := framework.Kubectl(admin, "get", "pods", "-n", install.Namespace, "-o", "jsonpath={range .items[*]}{.status.containerStatuses[*].state.waiting.message}{\"\\n\"}{end}")
		if !strings.Contains(out, "plinth-apiserver:v0.0.0-missing") {
			t.Errorf("the pods do not say which image is missing:\n%s", out)
		}
		// The replicas of the last good revision keep serving.
		if out, err := framework.Kubectl(admin, "get", "workloads", "-n", "shop"); err != nil {
			t.Errorf("the API is gone after a failed upgrade: %v\n%s", err, out)
		}
	})
}
