package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	infra "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// The packs of TestPacks live where a platform administrator keeps them.
const (
	packsNS = "plinth-system"
	// eastCluster is the second cluster: its own etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok, engine Kubectl.
	eastCluster = "east"
	// goneCluster is a Cluster whose kubeconfig points at a closed port.
	goneCluster = "gone"
)

// TestPacks delivers infrastructure packs end to end with real components: the local
// platform (Cluster local, engine Flux with its registry on localhost, so a pack reaches it as
// an OCIArtifact that Flux applies) and a second cluster east (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok of its own, engine Kubectl), registered by
// dana, a platform administrator. Charts are built here with the Helm SDK, served by an https
// chart repository the test starts (its CA in spec.chart.caBundle) and pushed to Cluster
// local's OCI registry. Covered: a chart pack to both clusters (Initial, deployedResources,
// deliveredAt, Ready, the objects on both), an upgrade that drops an object (pruned), a values
// change (Redeploy), a revision bump (Upgrade), rollbackToRevision and an older version
// (Rollback); kustomize, raw and OCI-chart packs; drift by edit and by deletion, and Correct
// repairing it; Block and Warn dependencies, a cycle refused; an unreachable cluster; bad
// input; and deleting a pack cleaning both clusters.
func TestPacks(t *testing.T) {
	began := time.Now()
	s := startPacksSuite(t)
	t.Logf("the platform and cluster east started and registered in %s", time.Since(began).Round(100*time.Millisecond))
	defer func() { t.Logf("TestPacks took %s", time.Since(began).Round(100*time.Millisecond)) }()

	both := []string{localplatform.LocalCluster, eastCluster}
	webObjects := func(service bool) []string {
		out := []string{"v1 ConfigMap packs-web/web-config", "apps/v1 Deployment packs-web/web"}
		if service {
			out = append(out, "v1 Service packs-web/web")
		}
		return out
	}

	// Independent packs are created first, so that they are delivered while the chart pack
	// goes through its versions.
	s.createPack(t, rawPack("raw", "v1.0.0", both, "packs-raw",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"raw-config"},"data":{"color":"blue"}}`,
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"packs-raw-reader"},"rules":[]}`))
	s.createKustomizeSource(t)
	s.createPack(t, &infra.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Name: "kz"},
		Spec: infra.InfrastructureClusterPackSpec{Version: "v1.0.0", TargetClusters: []string{eastCluster}, TargetNamespace: "packs-kz",
			Kustomize: &infra.PackKustomize{ConfigMapRef: &infra.LocalObjectReference{Name: "kz-source"}}},
	})
	s.createPack(t, rawPack("drifty", "v1.0.0", []string{eastCluster}, "packs-drift",
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"drifty"},"spec":{"replicas":1,`+
			`"selector":{"matchLabels":{"app":"drifty"}},"template":{"metadata":{"labels":{"app":"drifty"}},`+
			`"spec":{"containers":[{"name":"web","image":"registry.example/web:1"}]}}}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"drifty-config"},"data":{"key":"value"}}`))
	s.createPack(t, rawPack("dep-base", "v1.0.0", []string{eastCluster}, "packs-deps",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"base-config"},"data":{"key":"value"}}`))
	app := rawPack("dep-app", "v1.0.0", []string{eastCluster}, "packs-deps",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config"},"data":{"key":"value"}}`)
	app.Spec.DependsOn = []string{"dep-base"}
	app.Spec.DependencyPolicy = &infra.DependencyPolicy{OnDrift: infra.OnDriftBlock}
	s.createPack(t, app)

	t.Run("a chart pack v1.0.0 from an https repository is delivered to both clusters", func(t *testing.T) {
		began := time.Now()
		s.createPack(t, s.webPack("v1.0.0", "0.1.0", nil))
		pack := s.waitRendered(t, "web")
		if pack.Status.HelmVersion == "" || pack.Status.ChartVersion != "0.1.0" || len(pack.Status.History) != 1 {
			t.Errorf("pack status: %+v", pack.Status)
		}
		insts := s.waitDelivered(t, "web", both, "v1.0.0", pack.Status.Revision, infra.UpgradeDirectionInitial)
		for _, inst := range insts {
			expectResources(t, inst, webObjects(true))
			sp := inst.Spec
			if sp.ChartName != "web" || sp.ChartURL != s.repo.url() || sp.ChartVersion != "0.1.0" || sp.HelmVersion != pack.Status.HelmVersion ||
				sp.ClusterPackRef != "web" || inst.Labels[infra.LabelCluster] != sp.TargetClusterRef {
				t.Errorf("instance %s spec: %+v", inst.Name, sp)
			}
		}
		for _, cluster := range both {
			s.waitObjects(t, cluster, "packs-web", map[string]bool{"configmaps/web-config": true, "deployments/web": true, "services/web": true})
		}
		s.waitPack(t, "web", "summary ready 2", func(p *infra.InfrastructureClusterPack) bool {
			return p.Status.Summary.Ready == 2 && apimeta.IsStatusConditionTrue(p.Status.Conditions, infra.ConditionReady)
		})
		t.Logf("v1.0.0 delivered to both clusters %s after the create", time.Since(began).Round(100*time.Millisecond))
	})

	t.Run("v1.1.0 drops the Service: Upgrade, and the Service is pruned", func(t *testing.T) {
		deliveredAt := s.deliveredAt(t, "web", both)
		s.updatePack(t, "web", func(p *infra.InfrastructureClusterPack) { p.Spec.Version, p.Spec.Chart.Version = "v1.1.0", "0.2.0" })
		pack := s.waitRendered(t, "web")
		insts := s.waitDelivered(t, "web", both, "v1.1.0", pack.Status.Revision, infra.UpgradeDirectionUpgrade)
		for _, inst := range insts {
			expectResources(t, inst, webObjects(false))
			// deliveredAt is kept to the second: the same second is no error.
			if inst.Spec.ChartVersion != "0.2.0" || inst.Status.DeliveredAt.Time.Before(deliveredAt[inst.Spec.TargetClusterRef]) {
				t.Errorf("instance %s: chart %s, deliveredAt %v (before %v)", inst.Name, inst.Spec.ChartVersion, inst.Status.DeliveredAt, deliveredAt[inst.Spec.TargetClusterRef])
			}
		}
		for _, cluster := range both {
			s.waitObjects(t, cluster, "packs-web", map[string]bool{"configmaps/web-config": true, "deployments/web": true, "services/web": false})
		}
	})

	t.Run("the same version with other values: Redeploy", func(t *testing.T) {
		s.updatePack(t, "web", func(p *infra.InfrastructureClusterPack) {
			p.Spec.Values = &common.RawObject{Raw: []byte(`{"replicas":2}`)}
		})
		pack := s.waitRendered(t, "web")
		s.waitDelivered(t, "web", both, "v1.1.0", pack.Status.Revision, infra.UpgradeDirectionRedeploy)
		eventually(t, 30*time.Second, "2 replicas on east", func() (bool, string) {
			d, err := s.eastKube.AppsV1().Deployments("packs-web").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return ptr.Deref(d.Spec.Replicas, 0) == 2, fmt.Sprintf("replicas %d", ptr.Deref(d.Spec.Replicas, 0))
		})
	})

	t.Run("v1.1.0-r2, a revision bump: Upgrade", func(t *testing.T) {
		s.updatePack(t, "web", func(p *infra.InfrastructureClusterPack) {
			p.Spec.Version, p.Spec.Values = "v1.1.0-r2", &common.RawObject{Raw: []byte(`{"replicas":3}`)}
		})
		pack := s.waitRendered(t, "web")
		if pack.Status.Revision != 4 || len(pack.Status.History) != 4 {
			t.Errorf("revision %d, history %+v", pack.Status.Revision, pack.Status.History)
		}
		s.waitDelivered(t, "web", both, "v1.1.0-r2", pack.Status.Revision, infra.UpgradeDirectionUpgrade)
	})

	t.Run("rollbackToRevision 3 delivers the kept revision again: Rollback", func(t *testing.T) {
		s.updatePack(t, "web", func(p *infra.InfrastructureClusterPack) { p.Spec.RollbackToRevision = ptr.To[int64](3) })
		pack := s.waitRendered(t, "web")
		if pack.Status.Revision != 3 || pack.Status.Version != "v1.1.0" || len(pack.Status.History) != 4 {
			t.Errorf("after rollbackToRevision 3: revision %d version %s history %+v", pack.Status.Revision, pack.Status.Version, pack.Status.History)
		}
		s.waitDelivered(t, "web", both, "v1.1.0", 3, infra.UpgradeDirectionRollback)
		// Revision 3 is v1.1.0 with replicas 2, as rendered then: nothing is rendered again.
		eventually(t, 30*time.Second, "2 replicas on east again", func() (bool, string) {
			d, err := s.eastKube.AppsV1().Deployments("packs-web").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return ptr.Deref(d.Spec.Replicas, 0) == 2, fmt.Sprintf("replicas %d", ptr.Deref(d.Spec.Replicas, 0))
		})
	})

	t.Run("an older version v1.0.0: Rollback, the Service is back", func(t *testing.T) {
		s.updatePack(t, "web", func(p *infra.InfrastructureClusterPack) {
			p.Spec.RollbackToRevision, p.Spec.Version, p.Spec.Chart.Version, p.Spec.Values = nil, "v1.0.0", "0.1.0", nil
		})
		pack := s.waitRendered(t, "web")
		if pack.Status.Revision != 5 {
			t.Errorf("revision %d, want 5", pack.Status.Revision)
		}
		insts := s.waitDelivered(t, "web", both, "v1.0.0", pack.Status.Revision, infra.UpgradeDirectionRollback)
		for _, inst := range insts {
			expectResources(t, inst, webObjects(true))
		}
		for _, cluster := range both {
			s.waitObjects(t, cluster, "packs-web", map[string]bool{"configmaps/web-config": true, "deployments/web": true, "services/web": true})
		}
	})

	t.Run("a chart from the local OCI registry", func(t *testing.T) {
		pack := s.webPack("v1.0.0", "0.2.0", nil)
		pack.Name, pack.Spec.TargetNamespace, pack.Spec.TargetClusters = "oci-web", "packs-oci", []string{eastCluster}
		pack.Spec.Chart = &infra.PackChart{URL: s.ociURL, Name: "web", Version: "0.2.0"}
		s.createPack(t, pack)
		rendered := s.waitRendered(t, "oci-web")
		insts := s.waitDelivered(t, "oci-web", []string{eastCluster}, "v1.0.0", rendered.Status.Revision, infra.UpgradeDirectionInitial)
		expectResources(t, insts[0], []string{"v1 ConfigMap packs-oci/oci-web-config", "apps/v1 Deployment packs-oci/oci-web"})
		if insts[0].Spec.ChartURL != s.ociURL {
			t.Errorf("chartURL %s", insts[0].Spec.ChartURL)
		}
	})

	t.Run("kustomize and raw packs are delivered", func(t *testing.T) {
		rawInsts := s.waitDelivered(t, "raw", both, "v1.0.0", 1, infra.UpgradeDirectionInitial)
		for _, inst := range rawInsts {
			expectResources(t, inst, []string{"rbac.authorization.k8s.io/v1 ClusterRole /packs-raw-reader", "v1 ConfigMap packs-raw/raw-config"})
			if inst.Spec.ChartName != "" || inst.Spec.HelmVersion != "" {
				t.Errorf("a raw pack's instance names a chart: %+v", inst.Spec)
			}
		}
		for _, cluster := range both {
			s.waitObjects(t, cluster, "packs-raw", map[string]bool{"configmaps/raw-config": true})
		}
		kz := s.waitDelivered(t, "kz", []string{eastCluster}, "v1.0.0", 1, infra.UpgradeDirectionInitial)
		expectResources(t, kz[0], []string{"v1 ConfigMap packs-kz/kz-settings"})
		cm, err := s.eastKube.CoreV1().ConfigMaps("packs-kz").Get(context.Background(), "kz-settings", metav1.GetOptions{})
		if err != nil || cm.Data["mode"] != "kustomized" || cm.Labels["team"] != "platform" {
			t.Errorf("the kustomized ConfigMap on east: %v %+v", err, cm)
		}
	})

	t.Run("drift: an edited Deployment and a deleted ConfigMap are reported; Correct repairs them", func(t *testing.T) {
		ctx := context.Background()
		s.waitDelivered(t, "drifty", []string{eastCluster}, "v1.0.0", 1, infra.UpgradeDirectionInitial)
		began := time.Now()
		// kubectl scale writes with an update, not an apply, as its own field manager.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := s.eastKube.AppsV1().Deployments("packs-drift").Get(ctx, "drifty", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Replicas = ptr.To[int32](3)
			_, err = s.eastKube.AppsV1().Deployments("packs-drift").Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-scale"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		inst := s.waitInstance(t, "drifty", eastCluster, "Drifted naming the Deployment", func(i *infra.InfrastructurePackInstance) bool {
			return apimeta.IsStatusConditionTrue(i.Status.Conditions, infra.ConditionDrifted) &&
				strings.Contains(i.Status.DriftSummary, "Deployment packs-drift/drifty (.spec.replicas changed by kubectl-scale)")
		})
		t.Logf("drift by edit seen %s after the edit: %s", time.Since(began).Round(100*time.Millisecond), inst.Status.DriftSummary)
		if !apimeta.IsStatusConditionTrue(inst.Status.Conditions, infra.ConditionReady) {
			t.Errorf("a drifted instance is still delivered (Ready): %s", describeInstance(inst))
		}
		s.waitPack(t, "drifty", "summary drifted 1", func(p *infra.InfrastructureClusterPack) bool { return p.Status.Summary.Drifted == 1 })

		if err := s.eastKube.CoreV1().ConfigMaps("packs-drift").Delete(ctx, "drifty-config", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		inst = s.waitInstance(t, "drifty", eastCluster, "Drifted naming the deleted ConfigMap", func(i *infra.InfrastructurePackInstance) bool {
			return apimeta.IsStatusConditionTrue(i.Status.Conditions, infra.ConditionDrifted) &&
				strings.Contains(i.Status.DriftSummary, "ConfigMap packs-drift/drifty-config (deleted)") &&
				strings.Contains(i.Status.DriftSummary, "Deployment packs-drift/drifty")
		})
		t.Logf("drift by deletion: %s", inst.Status.DriftSummary)

		s.updatePack(t, "drifty", func(p *infra.InfrastructureClusterPack) { p.Spec.DriftPolicy = infra.DriftPolicyCorrect })
		inst = s.waitInstance(t, "drifty", eastCluster, "drift corrected", func(i *infra.InfrastructurePackInstance) bool {
			d := apimeta.FindStatusCondition(i.Status.Conditions, infra.ConditionDrifted)
			return d != nil && d.Status == metav1.ConditionFalse && d.Reason == "DriftCorrected" && strings.HasPrefix(i.Status.DriftSummary, "Corrected at ")
		})
		t.Logf("Correct: %s", inst.Status.DriftSummary)
		if inst.Status.Revision != 1 {
			t.Errorf("correcting drift made revision %d", inst.Status.Revision)
		}
		d, err := s.eastKube.AppsV1().Deployments("packs-drift").Get(ctx, "drifty", metav1.GetOptions{})
		if err != nil || ptr.Deref(d.Spec.Replicas, 0) != 1 {
			t.Errorf("the Deployment after Correct: %v replicas %v", err, d.Spec.Replicas)
		}
		if _, err := s.eastKube.CoreV1().ConfigMaps("packs-drift").Get(ctx, "drifty-config", metav1.GetOptions{}); err != nil {
			t.Errorf("the ConfigMap after Correct: %v", err)
		}
	})

	t.Run("dependencies: Block holds the dependent while its dependency drifts, Warn does not; a cycle is refused", func(t *testing.T) {
		ctx := context.Background()
		base := s.waitDelivered(t, "dep-base", []string{eastCluster}, "v1.0.0", 1, infra.UpgradeDirectionInitial)[0]
		appInst := s.waitDelivered(t, "dep-app", []string{eastCluster}, "v1.0.0", 1, infra.UpgradeDirectionInitial)[0]
		if !slices.Equal(appInst.Spec.DependsOn, []string{"dep-base-east"}) || appInst.Spec.DependencyPolicy == nil ||
			appInst.Spec.DependencyPolicy.OnDrift != infra.OnDriftBlock || !base.Status.DeliveredAt.Time.Before(appInst.Status.DeliveredAt.Time.Add(time.Second)) {
			t.Errorf("dep-app's instance: %+v; delivered at %v, dep-base at %v", appInst.Spec, appInst.Status.DeliveredAt, base.Status.DeliveredAt)
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cm, err := s.eastKube.CoreV1().ConfigMaps("packs-deps").Get(ctx, "base-config", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data["key"] = "edited"
			_, err = s.eastKube.CoreV1().ConfigMaps("packs-deps").Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		s.waitInstance(t, "dep-base", eastCluster, "dep-base drifted", func(i *infra.InfrastructurePackInstance) bool {
			return apimeta.IsStatusConditionTrue(i.Status.Conditions, infra.ConditionDrifted)
		})
		blocked := s.waitInstance(t, "dep-app", eastCluster, "dep-app blocked", func(i *infra.InfrastructurePackInstance) bool {
			ready := apimeta.FindStatusCondition(i.Status.Conditions, infra.ConditionReady)
			return apimeta.IsStatusConditionTrue(i.Status.Conditions, infra.ConditionDependencyBlocked) && ready != nil &&
				ready.Status == metav1.ConditionFalse && ready.Reason == "DependencyBlocked"
		})
		if c := apimeta.FindStatusCondition(blocked.Status.Conditions, infra.ConditionDependencyBlocked); !strings.Contains(c.Message, "dep-base-east") {
			t.Errorf("DependencyBlocked does not name the dependency: %+v", c)
		}
		s.waitPack(t, "dep-app", "summary blocked 1", func(p *infra.InfrastructureClusterPack) bool {
			return p.Status.Summary.Blocked == 1 && !apimeta.IsStatusConditionTrue(p.Status.Conditions, infra.ConditionReady)
		})

		// Block holds deliveries: a new version of dep-app waits, over more than one drift pass.
		s.updatePack(t, "dep-app", func(p *infra.InfrastructureClusterPack) {
			p.Spec.Version = "v1.1.0"
			p.Spec.Manifests[0] = common.RawObject{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config"},"data":{"key":"v1.1.0"}}`)}
		})
		if rendered := s.waitRendered(t, "dep-app"); rendered.Status.Revision != 2 {
			t.Fatalf("dep-app v1.1.0 is revision %d", rendered.Status.Revision)
		}
		time.Sleep(5 * time.Second)
		held := s.waitInstance(t, "dep-app", eastCluster, "still blocked", func(i *infra.InfrastructurePackInstance) bool { return true })
		if held.Status.Revision != 1 || held.Spec.Version != "v1.0.0" || !apimeta.IsStatusConditionTrue(held.Status.Conditions, infra.ConditionDependencyBlocked) {
			t.Errorf("a blocked instance took a new revision: %s", describeInstance(held))
		}
		if cm, err := s.eastKube.CoreV1().ConfigMaps("packs-deps").Get(ctx, "app-config", metav1.GetOptions{}); err != nil || cm.Data["key"] != "value" {
			t.Errorf("dep-app's ConfigMap while blocked: %v %+v", err, cm)
		}

		s.updatePack(t, "dep-app", func(p *infra.InfrastructureClusterPack) { p.Spec.DependencyPolicy.OnDrift = infra.OnDriftWarn })
		s.waitDelivered(t, "dep-app", []string{eastCluster}, "v1.1.0", 2, infra.UpgradeDirectionUpgrade)
		warned := s.waitInstance(t, "dep-app", eastCluster, "dep-app Ready with a warning", func(i *infra.InfrastructurePackInstance) bool {
			ready := apimeta.FindStatusCondition(i.Status.Conditions, infra.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && strings.Contains(ready.Message, "dependency dep-base-east reports drift") &&
				!apimeta.IsStatusConditionTrue(i.Status.Conditions, infra.ConditionDependencyBlocked)
		})
		t.Logf("Warn: %s", apimeta.FindStatusCondition(warned.Status.Conditions, infra.ConditionReady).Message)
		if cm, err := s.eastKube.CoreV1().ConfigMaps("packs-deps").Get(ctx, "app-config", metav1.GetOptions{}); err != nil || cm.Data["key"] != "v1.1.0" {
			t.Errorf("dep-app's ConfigMap under Warn: %v %+v", err, cm)
		}

		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := s.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS).Get(ctx, "dep-base", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.DependsOn = []string{"dep-app"}
			_, err = s.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS).Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		expectInvalidAt(t, err, "dep-base depending on dep-app", "spec.dependsOn")
		if err != nil && !strings.Contains(err.Error(), "dep-base → dep-app → dep-base") {
			t.Errorf("the refusal does not name the cycle: %v", err)
		}
	})

	t.Run("an unreachable cluster is reported on its instance and in the summary; the others are delivered", func(t *testing.T) {
		s.registerUnreachable(t)
		began := time.Now()
		s.createPack(t, rawPack("reach", "v1.0.0", []string{eastCluster, goneCluster}, "packs-reach",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"reach-config"}}`))
		rendered := s.waitRendered(t, "reach")
		s.waitDelivered(t, "reach", []string{eastCluster}, "v1.0.0", rendered.Status.Revision, infra.UpgradeDirectionInitial)
		gone := s.waitInstance(t, "reach", goneCluster, "Unreachable", func(i *infra.InfrastructurePackInstance) bool {
			ready := apimeta.FindStatusCondition(i.Status.Conditions, infra.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == "Unreachable"
		})
		t.Logf("%s: %s", gone.Name, apimeta.FindStatusCondition(gone.Status.Conditions, infra.ConditionReady).Message)
		if gone.Status.DeliveredAt != nil || len(gone.Status.DeployedResources) > 0 {
			t.Errorf("the unreachable cluster's instance claims a delivery: %s", describeInstance(gone))
		}
		pack := s.waitPack(t, "reach", "summary unreachable 1, ready 1", func(p *infra.InfrastructureClusterPack) bool {
			return p.Status.Summary.Unreachable == 1 && p.Status.Summary.Ready == 1
		})
		if apimeta.IsStatusConditionTrue(pack.Status.Conditions, infra.ConditionReady) {
			t.Errorf("the pack is Ready with a cluster unreachable: %+v", pack.Status.Conditions)
		}
		t.Logf("east delivered and gone reported Unreachable %s after the create", time.Since(began).Round(100*time.Millisecond))
	})

	t.Run("bad input", func(t *testing.T) {
		ctx := context.Background()
		packs := s.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS)
		bad := rawPack("bad-version", "1.0", []string{eastCluster}, "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
		_, err := packs.Create(ctx, bad, metav1.CreateOptions{})
		expectInvalidAt(t, err, "version 1.0", "spec.version")

		unknown := rawPack("nowhere", "v1.0.0", []string{"nowhere"}, "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
		_, err = packs.Create(ctx, unknown, metav1.CreateOptions{})
		expectInvalidAt(t, err, "an unknown cluster", "spec.targetClusters[0]")

		stop := rawPack("stop", "v1.0.0", []string{eastCluster}, "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
		stop.Spec.DependencyPolicy = &infra.DependencyPolicy{OnDrift: "Stop"}
		_, err = packs.Create(ctx, stop, metav1.CreateOptions{})
		expectInvalidAt(t, err, "onDrift Stop", "spec.dependencyPolicy.onDrift")

		instances := s.admin.InfrastructureV1alpha1().InfrastructurePackInstances(infra.InstanceNamespace(eastCluster))
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			inst, err := instances.Get(ctx, "web-east", metav1.GetOptions{})
			if err != nil {
				return err
			}
			inst.Spec.ClusterPackRef = "raw"
			_, err = instances.Update(ctx, inst, metav1.UpdateOptions{})
			return err
		})
		expectInvalidAt(t, err, "an instance's clusterPackRef changed", "spec.clusterPackRef")

		missing := s.webPack("v1.0.0", "0.1.0", nil)
		missing.Name, missing.Spec.Chart.Name = "missing", "absent"
		s.createPack(t, missing)
		broken := s.webPack("v1.0.0", "0.1.0", nil)
		broken.Name, broken.Spec.Chart.Name = "broken", "broken"
		s.createPack(t, broken)
		for name, want := range map[string]string{"missing": "absent", "broken": "template broken/templates/cm.yaml line 6: value a is required"} {
			pack := s.waitPack(t, name, "Rendered=False", func(p *infra.InfrastructureClusterPack) bool {
				c := apimeta.FindStatusCondition(p.Status.Conditions, infra.ConditionRendered)
				return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == p.Generation
			})
			c := apimeta.FindStatusCondition(pack.Status.Conditions, infra.ConditionRendered)
			t.Logf("%s: Rendered=False %s: %s", name, c.Reason, c.Message)
			// A condition's message is a sentence: its first letter capitalised.
			if c.Reason != "RenderFailed" || !strings.Contains(strings.ToLower(c.Message), strings.ToLower(want)) {
				t.Errorf("%s: Rendered %s %q, want RenderFailed naming %q", name, c.Reason, c.Message, want)
			}
			if pack.Status.Revision != 0 || len(pack.Status.Clusters) > 0 && pack.Status.Clusters[0].Revision != 0 {
				t.Errorf("%s: a pack that does not render has revision %d: %+v", name, pack.Status.Revision, pack.Status.Clusters)
			}
			if l, err := s.dana.InfrastructureV1alpha1().InfrastructurePackInstances("").List(ctx,
				metav1.ListOptions{LabelSelector: infra.LabelPack + "=" + name}); err != nil || len(l.Items) > 0 {
				t.Errorf("%s: instances of a pack that does not render: %v %+v", name, err, l)
			}
		}
	})

	t.Run("deleting the chart pack removes its objects from both clusters, then its instances", func(t *testing.T) {
		ctx := context.Background()
		for _, cluster := range both {
			s.waitObjects(t, cluster, "packs-web", map[string]bool{"configmaps/web-config": true, "deployments/web": true, "services/web": true})
		}
		began := time.Now()
		if err := s.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 90*time.Second, "pack web and its instances gone", func() (bool, string) {
			_, err := s.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS).Get(ctx, "web", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("the pack: %v", err)
			}
			l, err := s.dana.InfrastructureV1alpha1().InfrastructurePackInstances("").List(ctx, metav1.ListOptions{LabelSelector: infra.LabelPack + "=web"})
			if err != nil || len(l.Items) > 0 {
				return false, fmt.Sprintf("instances: %v %d", err, len(l.Items))
			}
			return true, ""
		})
		for _, cluster := range both {
			s.waitObjects(t, cluster, "packs-web", map[string]bool{"configmaps/web-config": false, "deployments/web": false, "services/web": false})
		}
		secrets, err := s.kube.CoreV1().Secrets(packsNS).List(ctx, metav1.ListOptions{LabelSelector: infra.LabelPack + "=web"})
		if err != nil || len(secrets.Items) > 0 {
			t.Errorf("kept revisions of the deleted pack: %v %d", err, len(secrets.Items))
		}
		t.Logf("pack web removed from both clusters %s after the delete", time.Since(began).Round(100*time.Millisecond))
	})
}

// packsSuite is the platform, the second cluster and the chart sources TestPacks shares.
type packsSuite struct {
	p, east     *localplatform.Platform
	dana, admin clientset.Interface
	// kube is the platform's own cluster (Cluster local), eastKube cluster east, both as
	// system:masters.
	kube, eastKube kubernetes.Interface
	repo           *chartRepository
	// ociURL is oci://<Cluster local's registry>/charts.
	ociURL string
}

// startPacksSuite starts cluster east and the local platform, has dana register east, serves the charts, and waits until both Clusters report
// their Kubernetes version: a pack renders once per version among its targets, and a version
// learnt after the first render would render it again.
func startPacksSuite(t *testing.T) *packsSuite {
	t.Helper()
	if err := framework.EnsurePlatformBinaries(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	east := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) { c.KubernetesOnly, c.Nodes = true, 1 })
	t.Logf("cluster east started in %s", time.Since(began).Round(100*time.Millisecond))
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=1s", "--pack-drift-interval=2s")
	})
	s := &packsSuite{p: p, east: east}
	clients := func(pl *localplatform.Platform, user string) (clientset.Interface, kubernetes.Interface) {
		cfg, err := pl.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg)
	}
	s.dana, _ = clients(p, "dana")
	s.admin, s.kube = clients(p, "admin")
	_, s.eastKube = clients(east, "admin")

	kubeconfig, err := east.AdminTargetKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := localplatform.GitOpsClusterManifest(eastCluster, "A second cluster: etcd, kube-apiserver and kwok of its own.", kubeconfig,
		platform.ClusterGitOps{Engine: platform.GitOpsEngineKubectl})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := framework.KubectlStdin(p.Kubeconfig("dana"), manifest, "create", "-f", "-"); err != nil {
		t.Fatalf("dana registers Cluster %s: %v\n%s", eastCluster, err, out)
	}

	s.repo = startChartRepository(t, webChart("0.1.0", true), webChart("0.2.0", false), brokenChart())
	waitRegistryRunning(t, s.dana)
	// The registry takes pushes only with its credential, as a person publishing charts there
	// would use it (`helm registry login -u plinth-controller`).
	cred, err := p.RegistryCredential()
	if err != nil {
		t.Fatal(err)
	}
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(os.DevNull),
		registry.ClientOptBasicAuth(cred.Username, cred.Password))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Push(packageChart(t, webChart("0.2.0", false)), p.RegistryEndpoint()+"/charts/web:0.2.0"); err != nil {
		t.Fatalf("pushing the chart to %s: %v", p.RegistryEndpoint(), err)
	}
	s.ociURL = "oci://" + p.RegistryEndpoint() + "/charts"

	for _, name := range []string{localplatform.LocalCluster, eastCluster} {
		eventually(t, time.Minute, "Cluster "+name+"'s Kubernetes version", func() (bool, string) {
			cl, err := s.dana.PlatformV1alpha1().Clusters().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cl.Status.KubernetesVersion != "", fmt.Sprintf("%+v", cl.Status)
		})
	}
	return s
}

// registerUnreachable has dana register Cluster gone: east's kubeconfig pointed at a port
// nothing listens on.
func (s *packsSuite) registerUnreachable(t *testing.T) {
	t.Helper()
	kubeconfig, err := s.east.AdminTargetKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	closed := strings.Replace(string(kubeconfig), s.east.KubeURL(), fmt.Sprintf("https://127.0.0.1:%d", port), 1)
	if closed == string(kubeconfig) {
		t.Fatalf("east's kubeconfig does not name %s", s.east.KubeURL())
	}
	manifest, err := localplatform.GitOpsClusterManifest(goneCluster, "A cluster nobody answers for.", []byte(closed),
		platform.ClusterGitOps{Engine: platform.GitOpsEngineKubectl})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := framework.KubectlStdin(s.p.Kubeconfig("dana"), manifest, "create", "-f", "-"); err != nil {
		t.Fatalf("dana registers Cluster %s: %v\n%s", goneCluster, err, out)
	}
}

// createKustomizeSource creates the ConfigMap the kustomize pack reads its directory from, as
// a platform administrator would.
func (s *packsSuite) createKustomizeSource(t *testing.T) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kz-source", Namespace: packsNS}, Data: map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamePrefix: kz-\nlabels:\n- pairs: {team: platform}\nresources:\n- settings.yaml\n",
		"settings.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: kustomized\n",
	}}
	if _, err := s.kube.CoreV1().ConfigMaps(packsNS).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// webPack is pack web: chart web of the https repository at chartVersion, to both clusters,
// into namespace packs-web.
func (s *packsSuite) webPack(version, chartVersion string, values *common.RawObject) *infra.InfrastructureClusterPack {
	return &infra.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: infra.InfrastructureClusterPackSpec{
			Version: version, Values: values, TargetNamespace: "packs-web",
			Chart:          &infra.PackChart{URL: s.repo.url(), Name: "web", Version: chartVersion, CABundle: s.repo.ca()},
			TargetClusters: []string{localplatform.LocalCluster, eastCluster},
		},
	}
}

// rawPack is a pack of raw manifests.
func rawPack(name, version string, clusters []string, namespace string, manifests ...string) *infra.InfrastructureClusterPack {
	pack := &infra.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       infra.InfrastructureClusterPackSpec{Version: version, TargetClusters: clusters, TargetNamespace: namespace},
	}
	for _, m := range manifests {
		pack.Spec.Manifests = append(pack.Spec.Manifests, common.RawObject{Raw: []byte(m)})
	}
	return pack
}

func (s *packsSuite) createPack(t *testing.T, pack *infra.InfrastructureClusterPack) {
	t.Helper()
	if _, err := s.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS).Create(context.Background(), pack, metav1.CreateOptions{}); err != nil {
		t.Fatalf("dana creates pack %s: %v", pack.Name, err)
	}
}

// updatePack changes a pack's spec as dana (again on a conflict with a status write).
func (s *packsSuite) updatePack(t *testing.T, name string, change func(*infra.InfrastructureClusterPack)) {
	t.Helper()
	packs := s.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := packs.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(p)
		_, err = packs.Update(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("dana updates pack %s: %v", name, err)
	}
}

// waitPack waits until the pack satisfies done and returns it.
func (s *packsSuite) waitPack(t *testing.T, name, what string, done func(*infra.InfrastructureClusterPack) bool) *infra.InfrastructureClusterPack {
	t.Helper()
	var pack *infra.InfrastructureClusterPack
	eventually(t, time.Minute, "pack "+name+": "+what, func() (bool, string) {
		var err error
		if pack, err = s.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return done(pack), fmt.Sprintf("%+v", pack.Status)
	})
	return pack
}

// waitRendered waits until the pack's current generation is rendered.
func (s *packsSuite) waitRendered(t *testing.T, name string) *infra.InfrastructureClusterPack {
	t.Helper()
	return s.waitPack(t, name, "rendered", func(p *infra.InfrastructureClusterPack) bool {
		c := apimeta.FindStatusCondition(p.Status.Conditions, infra.ConditionRendered)
		return p.Status.ObservedGeneration == p.Generation && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation
	})
}

// waitInstance waits until the pack's instance on the cluster satisfies done and returns it.
func (s *packsSuite) waitInstance(t *testing.T, pack, cluster, what string, done func(*infra.InfrastructurePackInstance) bool) *infra.InfrastructurePackInstance {
	t.Helper()
	var inst *infra.InfrastructurePackInstance
	eventually(t, 90*time.Second, fmt.Sprintf("instance of %s on %s: %s", pack, cluster, what), func() (bool, string) {
		var err error
		inst, err = s.dana.InfrastructureV1alpha1().InfrastructurePackInstances(infra.InstanceNamespace(cluster)).
			Get(context.Background(), infra.InstanceName(pack, cluster), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return done(inst), describeInstance(inst)
	})
	return inst
}

// waitDelivered waits until the pack's instances on the clusters are Ready with revision and
// version, delivered in direction, and returns them in the clusters' order.
func (s *packsSuite) waitDelivered(t *testing.T, pack string, clusters []string, version string, revision int64,
	direction infra.UpgradeDirection) []*infra.InfrastructurePackInstance {
	t.Helper()
	out := make([]*infra.InfrastructurePackInstance, len(clusters))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i, cluster := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last *infra.InfrastructurePackInstance
			err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
				inst, err := s.dana.InfrastructureV1alpha1().InfrastructurePackInstances(infra.InstanceNamespace(cluster)).
					Get(ctx, infra.InstanceName(pack, cluster), metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				last = inst
				return inst.Status.Revision == revision && inst.Spec.Version == version && inst.Status.UpgradeDirection == direction &&
					inst.Status.DeliveredAt != nil && apimeta.IsStatusConditionTrue(inst.Status.Conditions, infra.ConditionReady), nil
			})
			mu.Lock()
			defer mu.Unlock()
			out[i] = last
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s on %s, want revision %d version %s %s and Ready: %s", pack, cluster, revision, version, direction, describeInstance(last)))
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("not delivered within 90s:\n%s", strings.Join(failures, "\n"))
	}
	for _, inst := range out {
		if inst.Name != infra.InstanceName(pack, inst.Spec.TargetClusterRef) || inst.Namespace != infra.InstanceNamespace(inst.Spec.TargetClusterRef) {
			t.Errorf("instance %s/%s of cluster %s", inst.Namespace, inst.Name, inst.Spec.TargetClusterRef)
		}
	}
	return out
}

// deliveredAt is each cluster's instance's deliveredAt.
func (s *packsSuite) deliveredAt(t *testing.T, pack string, clusters []string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for _, cluster := range clusters {
		inst, err := s.dana.InfrastructureV1alpha1().InfrastructurePackInstances(infra.InstanceNamespace(cluster)).
			Get(context.Background(), infra.InstanceName(pack, cluster), metav1.GetOptions{})
		if err != nil || inst.Status.DeliveredAt == nil {
			t.Fatalf("instance of %s on %s: %v", pack, cluster, err)
		}
		out[cluster] = inst.Status.DeliveredAt.Time
	}
	return out
}

// waitObjects waits until each of want ("configmaps/<name>", "deployments/<name>",
// "services/<name>") exists in namespace on the cluster, or is gone when false.
func (s *packsSuite) waitObjects(t *testing.T, cluster, namespace string, want map[string]bool) {
	t.Helper()
	kube := s.kube
	if cluster == eastCluster {
		kube = s.eastKube
	}
	ctx := context.Background()
	eventually(t, 90*time.Second, fmt.Sprintf("objects in %s on %s", namespace, cluster), func() (bool, string) {
		var wrong []string
		for object, exists := range want {
			kind, name, _ := strings.Cut(object, "/")
			var err error
			switch kind {
			case "configmaps":
				_, err = kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
			case "deployments":
				_, err = kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			case "services":
				_, err = kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
			default:
				t.Fatalf("unknown kind %s", kind)
			}
			if exists && err != nil || !exists && !apierrors.IsNotFound(err) {
				wrong = append(wrong, fmt.Sprintf("%s (exists %t): %v", object, exists, err))
			}
		}
		slices.Sort(wrong)
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
}

// expectResources checks an instance's deployedResources, as "<apiVersion> <kind>
// <namespace>/<name>", in any order.
func expectResources(t *testing.T, inst *infra.InfrastructurePackInstance, want []string) {
	t.Helper()
	got := make([]string, 0, len(inst.Status.DeployedResources))
	for _, r := range inst.Status.DeployedResources {
		got = append(got, fmt.Sprintf("%s %s %s/%s", r.APIVersion, r.Kind, r.Namespace, r.Name))
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("instance %s: deployedResources %q, want %q", inst.Name, got, want)
	}
}

// expectInvalidAt fails unless err is a 422 naming field among its causes.
func expectInvalidAt(t *testing.T, err error, what, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want 422", what, err)
		return
	}
	var fields []string
	if d := err.(apierrors.APIStatus).Status().Details; d != nil {
		for _, c := range d.Causes {
			fields = append(fields, c.Field)
		}
	}
	if !slices.Contains(fields, field) {
		t.Errorf("%s: 422 at %v, want %s: %v", what, fields, field, err)
	}
}

func describeInstance(inst *infra.InfrastructurePackInstance) string {
	if inst == nil {
		return "no instance"
	}
	var conds []string
	for _, c := range inst.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("version %s revision %d direction %s deliveredAt %v resources %d drift %q; %s", inst.Spec.Version, inst.Status.Revision,
		inst.Status.UpgradeDirection, inst.Status.DeliveredAt, len(inst.Status.DeployedResources), inst.Status.DriftSummary, strings.Join(conds, " | "))
}

// eventually polls check every 200 ms until it holds, failing the test after timeout with
// what check said last.
func eventually(t *testing.T, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	var last string
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = check()
		return ok, nil
	}); err != nil {
		t.Fatalf("%s: not within %s; last: %s", what, timeout, last)
	}
}

// webChart is chart web: a ConfigMap and a Deployment, and with service a Service.
func webChart(version string, service bool) *chart.Chart {
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: version}}
	// chartutil.Save writes values.yaml from Raw, not from Values.
	ch.Raw = []*chart.File{{Name: "values.yaml", Data: []byte("greeting: hello\nreplicas: 1\n")}}
	ch.Templates = []*chart.File{
		{Name: "templates/configmap.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
  chart: {{ .Chart.Version | quote }}
`)},
		{Name: "templates/deployment.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: web
        image: registry.example/web:{{ .Chart.Version }}
`)},
	}
	if service {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/service.yaml", Data: []byte(`apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports:
  - port: 80
    targetPort: 8080
`)})
	}
	return ch
}

// brokenChart fails to render: its template requires a value nobody sets, on line 6.
func brokenChart() *chart.Chart {
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "broken", Version: "0.1.0"}}
	ch.Raw = []*chart.File{{Name: "values.yaml", Data: []byte("{}\n")}}
	ch.Templates = []*chart.File{{Name: "templates/cm.yaml", Data: []byte(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  a: {{ required \"value a is required\" .Values.a }}\n")}}
	return ch
}

// packageChart is the chart's .tgz, packaged with the Helm SDK.
func packageChart(t *testing.T, ch *chart.Chart) []byte {
	t.Helper()
	file, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// chartRepository is an https chart repository: /index.yaml and /charts/<name>-<version>.tgz.
type chartRepository struct {
	srv      *httptest.Server
	index    []byte
	archives map[string][]byte
}

func startChartRepository(t *testing.T, charts ...*chart.Chart) *chartRepository {
	t.Helper()
	r := &chartRepository{archives: map[string][]byte{}}
	index := repo.NewIndexFile()
	for _, ch := range charts {
		data := packageChart(t, ch)
		sum := sha256.Sum256(data)
		file := ch.Metadata.Name + "-" + ch.Metadata.Version + ".tgz"
		// A relative URL, as `helm repo index` writes without --url.
		if err := index.MustAdd(ch.Metadata, "charts/"+file, "", hex.EncodeToString(sum[:])); err != nil {
			t.Fatal(err)
		}
		r.archives["/charts/"+file] = data
	}
	index.SortEntries()
	var err error
	if r.index, err = yaml.Marshal(index); err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/index.yaml" {
			_, _ = w.Write(r.index)
			return
		}
		data, ok := r.archives[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *chartRepository) url() string { return r.srv.URL }

// ca is the PEM of the repository's certificate, which signs itself.
func (r *chartRepository) ca() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}
