package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/plinth-dev/plinth/internal/localplatform"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestFluxInstall registers two bare clusters (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, which runs their pods) as engine-Flux Clusters: plinth-controller
// installs Flux on the one with installFlux, whose Deployments become Available as kwok makes
// their pods Ready, and leaves the other FluxNotInstalled.
func TestFluxInstall(t *testing.T) {
	began := time.Now()
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=1s")
	})
	bare := func(c *localplatform.Config) { c.KubernetesOnly, c.Nodes = true, 1 }
	withInstall, without := framework.StartLocalPlatformWith(t, bare), framework.StartLocalPlatformWith(t, bare)
	t.Logf("the platform and two bare clusters started in %s", time.Since(began).Round(100*time.Millisecond))
	ctx := context.Background()
	cfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	admin := clientset.NewForConfigOrDie(cfg)

	register := func(name string, target *localplatform.Platform, install bool) {
		t.Helper()
		kubeconfig, err := target.AdminTargetKubeconfig()
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := localplatform.GitOpsClusterManifest(name, "A bare cluster.", kubeconfig,
			platform.ClusterGitOps{Engine: platform.GitOpsEngineFlux, InstallFlux: install})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := framework.KubectlStdin(p.AdminKubeconfig(), manifest, "apply", "-f", "-"); err != nil {
			t.Fatal(out)
		}
	}
	register("flux-installed", withInstall, true)
	register("flux-absent", without, false)

	t.Run("installFlux: Flux v1.9.6 is installed and serves the cluster", func(t *testing.T) {
		cl := waitFlux(t, admin, "flux-installed", 3*time.Minute, func(c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue })
		if c := findCondition(cl, platform.ConditionFluxAvailable); c.Reason != "FluxRunning" {
			t.Errorf("FluxAvailable %+v", c)
		}
		want := []platform.FluxComponent{{Name: "source-controller", Version: "v1.9.6"}, {Name: "kustomize-controller", Version: "v1.9.6"}}
		if diff := cmp.Diff(want, cl.Status.GitOps.FluxComponents); diff != "" {
			t.Errorf("components (-want +got):\n%s", diff)
		}
		t.Logf("Flux installed and Available %s after the registration", time.Since(began).Round(100*time.Millisecond))
		targetCfg, err := withInstall.AdminConfig()
		if err != nil {
			t.Fatal(err)
		}
		dyn := dynamic.NewForConfigOrDie(targetCfg)
		for _, name := range []string{"ocirepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io", "gitrepositories.source.toolkit.fluxcd.io"} {
			crd, err := dyn.Resource(fluxinstall.CRDs).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !fluxinstall.Managed(crd) || crd.GetLabels()[fluxinstall.LabelVersion] != "v1.9.6" {
				t.Errorf("CRD %s labels %v", name, crd.GetLabels())
			}
		}
		for _, name := range fluxinstall.Controllers {
			d, err := dyn.Resource(fluxinstall.Deployments).Namespace(fluxinstall.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m := d.GetManagedFields(); len(m) == 0 || m[0].Manager != "plinth-gitops" {
				t.Errorf("Deployment %s managed fields %+v", name, m)
			}
		}
		if _, err := dyn.Resource(fluxinstall.Services).Namespace(fluxinstall.Namespace).Get(ctx, "source-controller", metav1.GetOptions{}); err != nil {
			t.Error(err)
		}
	})

	t.Run("without installFlux the cluster stays FluxNotInstalled", func(t *testing.T) {
		cl := waitFlux(t, admin, "flux-absent", 30*time.Second, func(c *metav1.Condition) bool { return c.Reason == "FluxNotInstalled" })
		if c := findCondition(cl, platform.ConditionFluxAvailable); c.Status != metav1.ConditionFalse {
			t.Errorf("FluxAvailable %+v", c)
		}
		targetCfg, err := without.AdminConfig()
		if err != nil {
			t.Fatal(err)
		}
		_, err = dynamic.NewForConfigOrDie(targetCfg).Resource(fluxinstall.CRDs).Get(ctx, "ocirepositories.source.toolkit.fluxcd.io", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("a CRD of Flux on the cluster without installFlux: %v", err)
		}
	})
}

// waitFlux waits until the Cluster's FluxAvailable condition satisfies done and returns the
// Cluster.
func waitFlux(t *testing.T, c clientset.Interface, name string, timeout time.Duration, done func(*metav1.Condition) bool) *platform.Cluster {
	t.Helper()
	var cl *platform.Cluster
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if cl, err = c.PlatformV1alpha1().Clusters().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		cond := findCondition(cl, platform.ConditionFluxAvailable)
		if cond == nil {
			return false, nil
		}
		last = fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
		return done(cond), nil
	})
	if err != nil {
		t.Fatalf("Cluster %s: FluxAvailable is %s: %v", name, last, err)
	}
	return cl
}
