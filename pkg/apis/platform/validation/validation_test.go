package validation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
)

func tokenKubeconfig(t *testing.T) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://10.0.0.1:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func cluster(t *testing.T) *platform.Cluster {
	return &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east", ResourceVersion: "1"}, Spec: platform.ClusterSpec{Kubeconfig: tokenKubeconfig(t)}}
}

func TestValidateCluster(t *testing.T) {
	if errs := ValidateCluster(cluster(t)); len(errs) > 0 {
		t.Fatalf("valid cluster: %v", errs)
	}
	cases := map[string]struct {
		mutate func(*platform.Cluster)
		field  string
	}{
		"name not a DNS label": {func(c *platform.Cluster) { c.Name = "East.1" }, "metadata.name"},
		"namespaced":           {func(c *platform.Cluster) { c.Namespace = "team-a" }, "metadata.namespace"},
		"no kubeconfig":        {func(c *platform.Cluster) { c.Spec.Kubeconfig = "" }, "spec.kubeconfig"},
		"long description":     {func(c *platform.Cluster) { c.Spec.Description = strings.Repeat("x", 5000) }, "spec.description"},
	}
	for name, tc := range cases {
		c := cluster(t)
		tc.mutate(c)
		errs := ValidateCluster(c)
		if len(errs) == 0 || errs[0].Field != tc.field {
			t.Errorf("%s: %v, want an error on %s", name, errs, tc.field)
		}
	}
}

func TestValidateClusterUpdateChecksOnlyANewKubeconfig(t *testing.T) {
	old := cluster(t)
	old.Spec.Kubeconfig = "plinth-sealed/v1:k1:AAAA" // as stored
	kept := old.DeepCopy()
	kept.Spec.Description = "new"
	if errs := ValidateClusterUpdate(kept, old); len(errs) > 0 {
		t.Errorf("an update keeping the stored kubeconfig: %v", errs)
	}
	bad := old.DeepCopy()
	bad.Spec.Kubeconfig = "plinth-sealed/v1:k1:BBBB"
	if errs := ValidateClusterUpdate(bad, old); len(errs) == 0 || errs[0].Field != "spec.kubeconfig" {
		t.Errorf("a forged envelope was accepted: %v", errs)
	}
}

func TestValidateClusterStatusUpdate(t *testing.T) {
	old := cluster(t)
	c := old.DeepCopy()
	c.Status = platform.ClusterStatus{Phase: platform.ClusterPhaseHealthy, EnabledFeatures: []string{"A", "B"}}
	if errs := ValidateClusterStatusUpdate(c, old); len(errs) > 0 {
		t.Fatalf("valid status: %v", errs)
	}
	for name, tc := range map[string]struct {
		status platform.ClusterStatus
		field  string
	}{
		"phase":    {platform.ClusterStatus{Phase: "GREEN"}, "status.phase"},
		"features": {platform.ClusterStatus{EnabledFeatures: []string{"A", "A"}}, "status.enabledFeatures[1]"},
		"gen":      {platform.ClusterStatus{ObservedGeneration: -1}, "status.observedGeneration"},
		"cond":     {platform.ClusterStatus{Conditions: []metav1.Condition{{Type: "Reachable", Status: "Maybe"}}}, "status.conditions[0]"},
	} {
		c := old.DeepCopy()
		c.Status = tc.status
		errs := ValidateClusterStatusUpdate(c, old)
		if len(errs) == 0 || !strings.HasPrefix(errs[0].Field, tc.field) {
			t.Errorf("%s: %v, want an error on %s", name, errs, tc.field)
		}
	}
}

// TestValidateClusterGitOps covers spec.gitOps on create and on update: a known engine, a
// registry port in 1024-65535 and present with registryEnabled, a Flux interval above zero.
func TestValidateClusterGitOps(t *testing.T) {
	flux := cluster(t)
	flux.Spec.GitOps = platform.ClusterGitOps{Engine: platform.GitOpsEngineFlux, RegistryEnabled: true, RegistryPort: 5000,
		FluxInterval: &metav1.Duration{Duration: 30 * time.Second}}
	if errs := ValidateCluster(flux); len(errs) > 0 {
		t.Fatalf("a Flux cluster with a registry: %v", errs)
	}
	kubectl := cluster(t)
	kubectl.Spec.GitOps = platform.ClusterGitOps{Engine: platform.GitOpsEngineKubectl, RegistryPort: 65535}
	if errs := ValidateCluster(kubectl); len(errs) > 0 {
		t.Fatalf("a Kubectl cluster with a port and no registry: %v", errs)
	}
	for name, tc := range map[string]struct {
		mutate func(*platform.ClusterGitOps)
		field  string
		typ    field.ErrorType
	}{
		"engine":                   {func(g *platform.ClusterGitOps) { g.Engine = "Argo" }, "spec.gitOps.engine", field.ErrorTypeNotSupported},
		"engine in lower case":     {func(g *platform.ClusterGitOps) { g.Engine = "flux" }, "spec.gitOps.engine", field.ErrorTypeNotSupported},
		"registry without port":    {func(g *platform.ClusterGitOps) { g.RegistryPort = 0 }, "spec.gitOps.registryPort", field.ErrorTypeRequired},
		"privileged registry port": {func(g *platform.ClusterGitOps) { g.RegistryPort = 80 }, "spec.gitOps.registryPort", field.ErrorTypeInvalid},
		"registry port too large":  {func(g *platform.ClusterGitOps) { g.RegistryPort = 65536 }, "spec.gitOps.registryPort", field.ErrorTypeInvalid},
		"negative registry port":   {func(g *platform.ClusterGitOps) { g.RegistryPort = -1 }, "spec.gitOps.registryPort", field.ErrorTypeInvalid},
		"zero interval":            {func(g *platform.ClusterGitOps) { g.FluxInterval.Duration = 0 }, "spec.gitOps.fluxInterval", field.ErrorTypeInvalid},
		"negative interval":        {func(g *platform.ClusterGitOps) { g.FluxInterval.Duration = -time.Minute }, "spec.gitOps.fluxInterval", field.ErrorTypeInvalid},
	} {
		c := flux.DeepCopy()
		tc.mutate(&c.Spec.GitOps)
		for op, errs := range map[string]field.ErrorList{"create": ValidateCluster(c), "update": ValidateClusterUpdate(c, flux)} {
			if len(errs) != 1 || errs[0].Field != tc.field || errs[0].Type != tc.typ {
				t.Errorf("%s on %s: %v, want one %s error on %s", name, op, errs, tc.typ, tc.field)
			}
		}
	}
}
