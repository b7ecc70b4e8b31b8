package localplatform

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
)

// The simulated KubeVirt of the local cluster: CRDs and RBAC first, then, once the CRDs are
// established, the KubeVirt resource with its version and feature gates.
var (
	//go:embed kubevirt.yaml
	kubevirtManifest string
	//go:embed kubevirt-cr.yaml
	kubevirtResource string
	//go:embed kwok-virtualmachines.yaml
	virtualMachineStages string
)

// install applies artifacts/deploy as a cluster admin would, then what only the local platform
// needs: the Service resolves to this machine (ExternalName localhost) because no pod runs
// plinth-apiserver, and the APIService gets the local CA bundle and port.
func (p *Platform) install(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(p.cfg.ArtifactsDir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		if replacedLocally[filepath.Base(f)] {
			continue
		}
		if err := p.kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", f); err != nil {
			return err
		}
	}
	if err := p.kubectlStdin(ctx, localManifest(p.cfg.PlinthPort), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(p.pkiDir, "plinth-ca.crt"))
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"caBundle":%q,"service":{"port":%d}}}`, base64.StdEncoding.EncodeToString(caPEM), p.cfg.PlinthPort)
	for _, apiService := range APIServices {
		if err := p.kubectl(ctx, "patch", "apiservice", apiService, "--type", "merge", "-p", patch); err != nil {
			return err
		}
	}
	return nil
}

// installKubeVirt installs the simulated KubeVirt (see kubevirt.yaml).
func (p *Platform) installKubeVirt(ctx context.Context) error {
	if err := p.kubectlStdin(ctx, kubevirtManifest, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	if err := p.kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/kubevirts.kubevirt.io", "crd/virtualmachines.kubevirt.io", "crd/virtualmachineinstances.kubevirt.io"); err != nil {
		return err
	}
	if err := p.kubectlStdin(ctx, kubevirtResource, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	return waitFor(ctx, "KubeVirt's OpenAPI", 60*time.Second, nil, p.openAPIServed("/openapi/v3/apis/kubevirt.io/v1"))
}

// registerNodes registers the fake nodes that kwok keeps Ready and runs pods on.
func (p *Platform) registerNodes(ctx context.Context) error {
	nodes := p.cfg.Nodes
	if nodes == 0 {
		nodes = 3
	}
	var manifest strings.Builder
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&manifest, `apiVersion: v1
kind: Node
metadata:
  name: kwok-node-%d
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-%d}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "250"}
  capacity: {cpu: "32", memory: 256Gi, pods: "250"}
---
`, i, i)
	}
	return p.kubectlStdin(ctx, manifest.String(), "apply", "-f", "-")
}

// registerLocalCluster registers the local kube-apiserver as the target Cluster "local", with a
// self-contained kubeconfig of the plinth:targets identity, unless it is registered already
// (an earlier registration, and what its admin changed since, is kept). Its GitOps engine is
// Flux, which the platform runs, with a registry on localhost:<RegistryPort>.
func (p *Platform) registerLocalCluster(ctx context.Context) error {
	kubeconfig, err := p.TargetKubeconfig(p.kubeURL)
	if err != nil {
		return err
	}
	manifest, err := GitOpsClusterManifest(LocalCluster, "The local platform's own kube-apiserver, with a simulated KubeVirt and Flux.", kubeconfig,
		LocalGitOps(p.cfg.RegistryPort))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, p.bin("kubectl"), "--kubeconfig", p.AdminKubeconfig(), "create", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	if !strings.Contains(string(out), "AlreadyExists") {
		// kubectl's message names the object, never the kubeconfig.
		return fmt.Errorf("registering Cluster %s: %v\n%s", LocalCluster, err, out)
	}
	return p.upgradeLocalClusterGitOps(ctx)
}

// upgradeLocalClusterGitOps gives a Cluster local registered before GitOps existed (engine
// Kubectl and no registry: the defaults) the platform's GitOps settings, so that a platform
// directory from an older Plinth gets Flux and a registry too. Settings an admin chose are kept.
func (p *Platform) upgradeLocalClusterGitOps(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, p.bin("kubectl"), "--kubeconfig", p.AdminKubeconfig(), "get", "cluster", LocalCluster,
		"-o", "jsonpath={.spec.gitOps.engine}/{.spec.gitOps.registryEnabled}")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("reading Cluster %s: %v", LocalCluster, err)
	}
	if current := strings.TrimSpace(string(out)); current != "Kubectl/" && current != "Kubectl/false" && current != "/" {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"gitOps": LocalGitOps(p.cfg.RegistryPort)}})
	if err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, p.bin("kubectl"), "--kubeconfig", p.AdminKubeconfig(), "patch", "cluster", LocalCluster,
		"--type", "merge", "-p", string(patch)).CombinedOutput(); err != nil {
		return fmt.Errorf("giving Cluster %s its GitOps settings: %v\n%s", LocalCluster, err, out)
	}
	return nil
}

// ClusterManifest is the YAML of a Cluster with the given kubeconfig and the default GitOps
// settings (engine Kubectl, no registry).
func ClusterManifest(name, description string, kubeconfig []byte) (string, error) {
	return GitOpsClusterManifest(name, description, kubeconfig, platformv1alpha1.ClusterGitOps{})
}

// GitOpsClusterManifest is the YAML of a Cluster with the given kubeconfig and spec.gitOps
// (left out when zero).
func GitOpsClusterManifest(name, description string, kubeconfig []byte, gitOps platformv1alpha1.ClusterGitOps) (string, error) {
	spec := map[string]any{"description": description, "kubeconfig": string(kubeconfig)}
	if gitOps != (platformv1alpha1.ClusterGitOps{}) {
		spec["gitOps"] = gitOps
	}
	data, err := json.Marshal(map[string]any{
		"apiVersion": "platform.plinth.dev/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	})
	return string(data), err
}

// LocalGitOps is Cluster local's spec.gitOps: engine Flux (the platform runs Flux's
// controllers), its own registry on localhost:<registryPort>, Flux's interval 1m.
func LocalGitOps(registryPort int) platformv1alpha1.ClusterGitOps {
	return platformv1alpha1.ClusterGitOps{
		Engine: platformv1alpha1.GitOpsEngineFlux, RegistryEnabled: true, RegistryPort: int32(registryPort),
		FluxInterval: &metav1.Duration{Duration: platformv1alpha1.DefaultFluxInterval},
	}
}

// replacedLocally are the artifacts the local platform replaces: no pod runs plinth-apiserver
// or plinth-controller, so there are no Deployments, and the Service points at this machine.
var replacedLocally = map[string]bool{"60-service.yaml": true, "70-deployment.yaml": true, "80-controller-deployment.yaml": true}

func localManifest(plinthPort int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Service
metadata:
  name: plinth-apiserver
  namespace: plinth-system
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - name: https
    port: %d
`, plinthPort)
	// Each tenant identity edits its own namespace with the built-in edit role, or, a wildcard
	// tenant, holds every verb on every resource there.
	namespaces := map[string]bool{}
	for _, id := range Identities {
		if !id.Tenant() {
			continue
		}
		if !namespaces[id.Namespace] {
			namespaces[id.Namespace] = true
			fmt.Fprintf(&b, `---
apiVersion: v1
kind: Namespace
metadata:
  name: %s
`, id.Namespace)
		}
		binding, role := id.User+"-edit", "{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}"
		if id.Wildcard {
			binding, role = id.User+"-everything", "{apiGroup: rbac.authorization.k8s.io, kind: Role, name: everything}"
			fmt.Fprintf(&b, `---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: everything
  namespace: %s
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
`, id.Namespace)
		}
		fmt.Fprintf(&b, `---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: %[1]s
  namespace: %[2]s
roleRef: %[3]s
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: %[4]s}
`, binding, id.Namespace, role, id.User)
	}
	return b.String()
}
