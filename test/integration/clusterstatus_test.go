package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/internal/writecount"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// statusWritersClusters and statusWritersRounds are how many Clusters TestClusterStatusWriters
// registers and how often it cuts them all off and restores them.
const (
	statusWritersClusters = 4
	statusWritersRounds   = 3
)

// TestClusterStatusWriters: two controllers write every Cluster's status, the prober (phase,
// versions, CredentialsValid, Reachable, KubeVirtAvailable) and the GitOps controller
// (status.gitOps, FluxAvailable). Clusters registered together, then cut off and restored
// together, make both write at nearly the same moments. Each server-side applies only its
// own part, so neither write is refused for being based on a copy that misses the other's
// (409), neither erases the other's fields, and managedFields say who owns what. The test
// logs the 409s on clusters/status: before the controllers applied their parts (when both
// updated the whole status from their caches), the same sequence cost several.
func TestClusterStatusWriters(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=1s", "--cluster-probe-timeout=2s")
	})
	ctx := context.Background()
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	admin := clientset.NewForConfigOrDie(adminCfg).PlatformV1alpha1().Clusters()
	counter := &writeCounter{t: t, auditLog: p.AuditLogPath(), kube: adminCfg}
	before := counter.read()

	names := make([]string, statusWritersClusters)
	proxies := make([]*tcpProxy, statusWritersClusters)
	for i := range names {
		names[i] = fmt.Sprintf("writers-%d", i)
		proxies[i] = newTCPProxy(t, strings.TrimPrefix(p.KubeURL(), "https://"))
		target, err := p.TargetKubeconfig("https://" + proxies[i].addr)
		if err != nil {
			t.Fatal(err)
		}
		port, err := framework.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := localplatform.GitOpsClusterManifest(names[i], "Shares its status between two controllers.", target,
			platform.ClusterGitOps{Engine: platform.GitOpsEngineFlux, RegistryEnabled: true, RegistryPort: int32(port)})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := framework.KubectlStdin(p.AdminKubeconfig(), manifest, "apply", "-f", "-"); err != nil {
			t.Fatal(out)
		}
	}
	// settled waits until every Cluster shows both controllers' findings: the prober's phase
	// and the GitOps controller's FluxAvailable status, with the registry recorded.
	settled := func(phase platform.ClusterPhase, flux metav1.ConditionStatus) {
		t.Helper()
		waitForCondition(t, 90*time.Second, func() (bool, string) {
			var waiting []string
			for _, name := range names {
				c, err := admin.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				cond := apimeta.FindStatusCondition(c.Status.Conditions, platform.ConditionFluxAvailable)
				if c.Status.Phase != phase || cond == nil || cond.Status != flux || c.Status.GitOps == nil || c.Status.GitOps.Registry == "" {
					waiting = append(waiting, fmt.Sprintf("%s: %+v", name, c.Status))
				}
			}
			return len(waiting) == 0, strings.Join(waiting, "\n")
		})
	}
	settled(platform.ClusterPhaseHealthy, metav1.ConditionTrue)
	for range statusWritersRounds {
		for _, proxy := range proxies {
			proxy.Stop()
		}
		settled(platform.ClusterPhaseUnreachable, metav1.ConditionFalse)
		for _, proxy := range proxies {
			proxy.Start()
		}
		settled(platform.ClusterPhaseHealthy, metav1.ConditionTrue)
	}
	time.Sleep(time.Second) // the log backend writes an event after its response went out
	writes := counter.read().sub(before).plinth.Where(func(k writecount.Key) bool {
		return k.Resource == "clusters."+platform.GroupName && k.Subresource == "status"
	})
	conflicts := writes.Where(func(k writecount.Key) bool { return k.Code == 409 })
	t.Logf("%d Clusters registered and cut off and restored %d times: plinth-controller's writes of clusters/status (all Clusters, local's too):\n%s409s: %d",
		statusWritersClusters, statusWritersRounds, writes.Table(1), conflicts.Total())

	t.Run("neither controller's status write conflicts with the other's", func(t *testing.T) {
		if conflicts.Total() > 0 {
			t.Errorf("conflicts (409) on clusters/status:\n%s", conflicts.Table(1))
		}
		// Applies carry no resourceVersion, so none can conflict; an update (what an apply
		// falls back to for fields an earlier version still owns, see statuswriter.ApplyPart)
		// has no reason to happen on a platform that started with this version.
		if updates := writes.Where(func(k writecount.Key) bool { return k.Verb != "patch" }); len(updates) > 0 {
			t.Errorf("clusters/status writes other than applies:\n%s", updates.Table(1))
		}
	})

	t.Run("each controller owns its part of the status and only that", func(t *testing.T) {
		for _, name := range append([]string{localplatform.LocalCluster}, names...) {
			c, err := admin.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			owned := statusOwners(t, c)
			want := map[string][]string{
				"plinth-cluster": {"apiServerURL", "conditions[CredentialsValid]", "conditions[KubeVirtAvailable]", "conditions[Reachable]",
					"enabledFeatures", "kubernetesVersion", "kubevirtVersion", "lastProbeTime", "observedGeneration", "phase"},
				"plinth-clustergitops": {"conditions[FluxAvailable]", "gitOps"},
			}
			for manager, fields := range want {
				if got := owned[manager]; !slices.Equal(got, fields) {
					t.Errorf("%s: %s owns %v of the status, want %v", name, manager, got, fields)
				}
			}
			for manager, fields := range owned {
				if _, ok := want[manager]; !ok {
					t.Errorf("%s: %s owns %v of the status", name, manager, fields)
				}
			}
		}
	})
}

// statusOwners lists, per field manager, the status fields its managedFields entry for the
// status subresource owns: top-level fields by name, conditions by type.
func statusOwners(t *testing.T, c *platform.Cluster) map[string][]string {
	t.Helper()
	owned := map[string][]string{}
	for _, entry := range c.ManagedFields {
		if entry.Subresource != "status" || entry.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]json.RawMessage
		if err := json.Unmarshal(entry.FieldsV1.Raw, &fields); err != nil {
			t.Fatal(err)
		}
		var names []string
		for field, raw := range fields["f:status"] {
			name, ok := strings.CutPrefix(field, "f:")
			if !ok {
				continue
			}
			if name != "conditions" {
				names = append(names, name)
				continue
			}
			var items map[string]json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				t.Fatal(err)
			}
			for item := range items {
				var key struct{ Type string }
				if keyJSON, ok := strings.CutPrefix(item, "k:"); ok && json.Unmarshal([]byte(keyJSON), &key) == nil {
					names = append(names, "conditions["+key.Type+"]")
				}
			}
		}
		slices.Sort(names)
		if entry.Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("%s: %s %ss the status (%v), want only server-side applies", c.Name, entry.Manager, strings.ToLower(string(entry.Operation)), names)
		}
		owned[entry.Manager] = names
	}
	return owned
}
