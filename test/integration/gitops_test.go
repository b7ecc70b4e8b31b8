package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	gitops "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// The artifact of the tests: version 1.0.0 has a ConfigMap and a Deployment; 1.1.0 changes
// the ConfigMap and drops the Deployment.
var (
	webV1 = []common.RawObject{
		{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config"},"data":{"greeting":"hello"}}`)},
		{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1,` +
			`"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
			`"spec":{"containers":[{"name":"web","image":"registry.example/web:1"}]}}}}`)},
	}
	webV2 = []common.RawObject{
		{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config"},"data":{"greeting":"hello again"}}`)},
	}
)

// TestGitOps runs the GitOps delivery on the local platform with the real Flux
// source-controller and kustomize-controller, as dana (platform:admins) would: Cluster local
// has Flux and a registry that plinth-controller runs; an OCIArtifact with a Deployment and a
// ConfigMap is pushed there in Flux's format (the digest readable through the registry's /v2
// API) and Flux applies it; version 1.1.0 changes the ConfigMap and drops the Deployment, which
// is pruned; Manual ReconciliationRequests complete with the handled time; a manifest pushed
// under the pushed tag behind plinth-controller's back (refused without the registry's
// credential, pushed with it) is never applied by Flux, which pulls the pushed digest, and the
// OCIArtifact reports it and puts the pushed manifest back; the same through a
// Cluster with engine Kubectl; the faults: two versions in quick succession, a version
// applied while plinth-controller (and the registry in it) is down, plinth-controller killed
// right after a version is applied, a registry whose disk is full; the registry's data
// survives a restart of plinth-controller; a Flux controller that dies comes back.
func TestGitOps(t *testing.T) {
	began := time.Now()
	out := &framework.Output{}
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=1s",
			// A full disk is seen within 2 s, and a killed plinth-controller's lease expires
			// after 8 s instead of 15 s: the faults' tests wait for both.
			"--registry-probe-interval=2s", "--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s")
		c.Progress = out
	})
	t.Logf("the local platform with Flux started in %s", time.Since(began).Round(100*time.Millisecond))
	ctx := context.Background()
	cfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	danaCfg, err := p.ConfigFor("dana")
	if err != nil {
		t.Fatal(err)
	}
	dana := clientset.NewForConfigOrDie(danaCfg)
	artifacts := dana.GitopsV1alpha1().OCIArtifacts(gitopsNamespace)
	for _, ns := range []string{"gitops-flux", "gitops-kubectl"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("Flux serves Cluster local and its registry runs", func(t *testing.T) {
		for _, controller := range localplatform.FluxControllers {
			lease, err := kube.CoordinationV1().Leases(localplatform.FluxNamespace).Get(ctx, controller+"-leader-election", metav1.GetOptions{})
			if err != nil || lease.Spec.HolderIdentity == nil {
				t.Errorf("%s's Lease: %v %+v", controller, err, lease)
			}
		}
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			cl, err := dana.PlatformV1alpha1().Clusters().Get(ctx, localplatform.LocalCluster, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s := cl.Status.GitOps
			ok := apimeta.IsStatusConditionTrue(cl.Status.Conditions, platform.ConditionFluxAvailable) && s != nil &&
				s.RegistryEndpoint == p.RegistryEndpoint() && fmt.Sprint(s.FluxComponents) == "[{source-controller v1.9.6} {kustomize-controller v1.9.6}]"
			return ok, fmt.Sprintf("%+v %+v", cl.Status.GitOps, cl.Status.Conditions)
		})
		waitRegistryRunning(t, dana)
	})

	var web *gitops.OCIArtifact
	t.Run("an OCIArtifact is pushed in Flux's format and Flux applies it on Cluster local", func(t *testing.T) {
		began := time.Now()
		_, err := artifacts.Create(ctx, &gitops.OCIArtifact{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: gitops.OCIArtifactSpec{
				RegistryRef: gitops.LocalObjectReference{Name: localplatform.LocalCluster}, Name: "workloads/web", Version: "1.0.0",
				Manifests: webV1, Targets: []gitops.ArtifactTarget{{Cluster: localplatform.LocalCluster, TargetNamespace: "gitops-flux"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		web = waitDelivered(t, dana, "web", "1.0.0")
		t.Logf("pushed and applied by Flux %s after the create: %+v", time.Since(began).Round(100*time.Millisecond), web.Status.Targets)
		if web.Status.URL != "oci://"+p.RegistryEndpoint()+"/workloads/web:1.0.0" {
			t.Errorf("url %q", web.Status.URL)
		}
		expectFluxManifest(t, p.RegistryEndpoint(), "workloads/web", "1.0.0", web.Status.Digest, web.Status.Revision)
		target := web.Status.Targets[0]
		if target.Engine != "Flux" || target.Revision != "1.0.0@"+web.Status.Digest ||
			target.OCIRepository != "flux-system/plinth-system-web" || target.Kustomization != "flux-system/plinth-system-web" {
			t.Errorf("target: %+v, want Flux's revision 1.0.0@%s", target, web.Status.Digest)
		}
		// Flux pulls the pushed digest, not whatever the tag points to, and so reports the
		// digest alone as the revision it applied.
		repo := getOCIRepository(t, dyn, "flux-system", "plinth-system-web")
		if ref := repo.Spec.Reference; ref == nil || ref.Digest != web.Status.Digest || ref.Tag != "1.0.0" {
			t.Errorf("OCIRepository spec.ref %+v, want digest %s and tag 1.0.0", ref, web.Status.Digest)
		}
		k := getKustomization(t, dyn, "flux-system", "plinth-system-web")
		if !apimeta.IsStatusConditionTrue(k.Status.Conditions, "Ready") || k.Status.LastAppliedRevision != web.Status.Digest {
			t.Errorf("Kustomization status: %+v, want %s applied", k.Status, web.Status.Digest)
		}
		expectObjects(t, kube, "gitops-flux", "hello", true)
	})
	if web == nil {
		t.FailNow()
	}

	t.Run("version 1.1.0 changes the ConfigMap and drops the Deployment: applied and pruned", func(t *testing.T) {
		began := time.Now()
		updateArtifact(t, dana, "web", "1.1.0", webV2)
		updated := waitDelivered(t, dana, "web", "1.1.0")
		if updated.Status.Digest == web.Status.Digest {
			t.Fatalf("1.1.0 has the digest of 1.0.0")
		}
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			return objectsAre(kube, "gitops-flux", "hello again", false)
		})
		t.Logf("1.1.0 applied and the Deployment pruned %s after the update", time.Since(began).Round(100*time.Millisecond))
		web = updated
	})

	t.Run("a Manual ReconciliationRequest completes and records the handled time", func(t *testing.T) {
		done, value := reconcileNow(t, dana, "web-now", []gitops.ReconciliationTarget{
			{Cluster: localplatform.LocalCluster, Kind: gitops.TargetKindOCIRepository, Name: "plinth-system-web", Namespace: "flux-system"},
			{Cluster: localplatform.LocalCluster, Kind: gitops.TargetKindKustomization, Name: "plinth-system-web", Namespace: "flux-system"},
			{Cluster: localplatform.LocalCluster, Kind: gitops.TargetKindOCIArtifact, Name: "web"},
		})
		for i, s := range done.Status.Targets {
			// The Flux objects report the digest alone, the OCIArtifact <tag>@<digest>.
			if s.HandledAt == nil || !s.Ready || !delivery.SameRevision(s.Revision, "1.1.0@"+web.Status.Digest) {
				t.Errorf("target %d: %+v, want handled and Ready at 1.1.0@%s", i, s, web.Status.Digest)
			}
		}
		k := getKustomization(t, dyn, "flux-system", "plinth-system-web")
		if k.Status.LastHandledReconcileAt != value {
			t.Errorf("the Kustomization handled %q, want %q", k.Status.LastHandledReconcileAt, value)
		}
	})

	t.Run("a manifest pushed under the pushed tag behind plinth-controller's back is never applied, is reported and put back", func(t *testing.T) {
		endpoint := p.RegistryEndpoint()
		// Other content under the very revision annotation of the pushed version: anyone who
		// can push can copy an annotation.
		swapped := map[string][]byte{"000-configmap-web-config.yaml": []byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: swapped\n")}
		meta := artifact.Metadata{Source: artifact.Source(gitopsNamespace, "web"), Revision: web.Status.Revision}

		// Without the registry's credential a local process may read, as Flux does, but not push.
		if tagged, found, err := artifact.Lookup(ctx, endpoint, "workloads/web", "1.1.0"); err != nil || !found || tagged.Digest != web.Status.Digest {
			t.Fatalf("anonymous read of 1.1.0: %+v %v %v, want %s", tagged, found, err, web.Status.Digest)
		}
		var terr *transport.Error
		if _, err := artifact.Push(ctx, endpoint, "workloads/web", "1.1.0", swapped, meta); !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous push: %v, want 401", err)
		}
		if tagged, _, _ := artifact.Lookup(ctx, endpoint, "workloads/web", "1.1.0"); tagged.Digest != web.Status.Digest {
			t.Fatalf("the refused push moved the tag to %s", tagged.Digest)
		}

		// With it — what any local process could do before the registry required one.
		cred, err := p.RegistryCredential()
		if err != nil {
			t.Fatal(err)
		}
		registryauth.Local.Set(endpoint, cred)
		foreign, err := artifact.Push(ctx, endpoint, "workloads/web", "1.1.0", swapped, meta)
		registryauth.Local.Delete(endpoint, cred)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("tag 1.1.0 moved from %s to %s", web.Status.Digest, foreign)

		// Flux, asked to reconcile now, pulls the pinned digest: nothing of the swap lands.
		reconcileNow(t, dana, "web-after-swap", []gitops.ReconciliationTarget{
			{Cluster: localplatform.LocalCluster, Kind: gitops.TargetKindOCIRepository, Name: "plinth-system-web", Namespace: "flux-system"},
			{Cluster: localplatform.LocalCluster, Kind: gitops.TargetKindKustomization, Name: "plinth-system-web", Namespace: "flux-system"},
		})
		if k := getKustomization(t, dyn, "flux-system", "plinth-system-web"); k.Status.LastAppliedRevision != web.Status.Digest {
			t.Errorf("Flux applied %s, want the pushed %s", k.Status.LastAppliedRevision, web.Status.Digest)
		}
		expectObjects(t, kube, "gitops-flux", "hello again", false)

		// The OCIArtifact, asked to reconcile, looks at the registry: the tag moved, which it
		// reports, and the pushed manifest is back under it.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			a, err := artifacts.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if a.Annotations == nil {
				a.Annotations = map[string]string{}
			}
			a.Annotations[gitops.ReconcileRequestAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
			_, err = artifacts.Update(ctx, a, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var a *gitops.OCIArtifact
		waitForCondition(t, 30*time.Second, func() (bool, string) {
			if a, err = artifacts.Get(ctx, "web", metav1.GetOptions{}); err != nil {
				return false, err.Error()
			}
			c := apimeta.FindStatusCondition(a.Status.Conditions, gitops.ConditionTagMoved)
			return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", a.Status.Conditions)
		})
		c := apimeta.FindStatusCondition(a.Status.Conditions, gitops.ConditionTagMoved)
		want := fmt.Sprintf("Tag 1.1.0 in %s pointed to %s instead of the pushed %s; the pushed version is back under the tag.", a.Status.URL, foreign, web.Status.Digest)
		if c.Reason != "Restored" || c.Message != want {
			t.Errorf("TagMoved %s %q, want Restored %q", c.Reason, c.Message, want)
		}
		if a.Status.Digest != web.Status.Digest || a.Status.Revision != web.Status.Revision || !apimeta.IsStatusConditionTrue(a.Status.Conditions, gitops.ConditionReady) {
			t.Errorf("status %+v, want still %s and Ready", a.Status, web.Status.Digest)
		}
		waitForCondition(t, 10*time.Second, func() (bool, string) {
			note := artifactEvent(t, kube, "web", "TagMoved", "Tag 1.1.0 in ")
			return note == want, fmt.Sprintf("TagMoved event %q, want %q", note, want)
		})
		if got := manifestDigest(t, endpoint, "workloads/web", "1.1.0"); got != web.Status.Digest {
			t.Errorf("the registry's 1.1.0 is %s, want the pushed %s back", got, web.Status.Digest)
		}
		expectFluxManifest(t, endpoint, "workloads/web", "1.1.0", web.Status.Digest, web.Status.Revision)
		expectObjects(t, kube, "gitops-flux", "hello again", false)
	})

	t.Run("the same through a Cluster with engine Kubectl", func(t *testing.T) {
		kubeconfig, err := p.TargetKubeconfig(p.KubeURL())
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := localplatform.GitOpsClusterManifest("local-kubectl", "The local kube-apiserver again, delivered to by plinth-controller itself.",
			kubeconfig, platform.ClusterGitOps{Engine: platform.GitOpsEngineKubectl})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := framework.KubectlStdin(p.Kubeconfig("dana"), manifest, "create", "-f", "-"); err != nil {
			t.Fatalf("registering Cluster local-kubectl: %v\n%s", err, out)
		}
		// The delivery identity may write what the artifact holds where it delivers, as an
		// administrator grants it on a real cluster.
		if _, err := kube.RbacV1().RoleBindings("gitops-kubectl").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "plinth-targets-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "plinth:targets"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if _, err := artifacts.Create(ctx, &gitops.OCIArtifact{
			ObjectMeta: metav1.ObjectMeta{Name: "web-kubectl"},
			Spec: gitops.OCIArtifactSpec{
				RegistryRef: gitops.LocalObjectReference{Name: localplatform.LocalCluster}, Name: "workloads/web-kubectl", Version: "1.0.0",
				Manifests: webV1, Targets: []gitops.ArtifactTarget{{Cluster: "local-kubectl", TargetNamespace: "gitops-kubectl"}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		v1 := waitDelivered(t, dana, "web-kubectl", "1.0.0")
		if target := v1.Status.Targets[0]; target.Engine != "Kubectl" || target.Revision != "1.0.0@"+v1.Status.Digest {
			t.Errorf("target: %+v", target)
		}
		expectObjects(t, kube, "gitops-kubectl", "hello", true)
		updateArtifact(t, dana, "web-kubectl", "1.1.0", webV2)
		v2 := waitDelivered(t, dana, "web-kubectl", "1.1.0")
		waitForCondition(t, 30*time.Second, func() (bool, string) {
			return objectsAre(kube, "gitops-kubectl", "hello again", false)
		})
		t.Logf("Kubectl engine: 1.0.0 and 1.1.0 applied, the Deployment pruned, %s", time.Since(began).Round(100*time.Millisecond))
		done, _ := reconcileNow(t, dana, "web-kubectl-now", []gitops.ReconciliationTarget{
			{Cluster: "local-kubectl", Kind: gitops.TargetKindOCIArtifact, Name: "web-kubectl"},
		})
		if s := done.Status.Targets[0]; s.HandledAt == nil || !s.Ready || s.Revision != "1.1.0@"+v2.Status.Digest {
			t.Errorf("target: %+v", s)
		}
	})

	t.Run("two versions in quick succession: the second lands and nothing is stuck", func(t *testing.T) {
		began := time.Now()
		updateArtifact(t, dana, "web", "1.2.0", webConfig("1.2.0"))
		updateArtifact(t, dana, "web", "1.3.0", webConfig("1.3.0"))
		v13 := followDelivery(t, dana, "web", "1.3.0")
		waitForCondition(t, 60*time.Second, func() (bool, string) { return objectsAre(kube, "gitops-flux", "1.3.0", false) })
		t.Logf("1.3.0 pushed and applied %s after 1.2.0 and 1.3.0 were applied back to back", time.Since(began).Round(100*time.Millisecond))
		expectFluxManifest(t, p.RegistryEndpoint(), "workloads/web", "1.3.0", v13.Status.Digest, v13.Status.Revision)
		// What the controller said it pushed of 1.2.0 is in the registry, as it said.
		tags := registryTags(t, p.RegistryEndpoint(), "workloads/web")
		if digest := pushedDigest(t, kube, "web", "1.2.0"); digest != "" {
			if !slices.Contains(tags, "1.2.0") {
				t.Errorf("1.2.0 was pushed as %s and is not listed: %v", digest, tags)
			} else if got := manifestDigest(t, p.RegistryEndpoint(), "workloads/web", "1.2.0"); got != digest {
				t.Errorf("1.2.0 was pushed as %s and the registry has %s", digest, got)
			}
			t.Logf("1.2.0 was pushed as %s too; tags %v", digest, tags)
		} else {
			t.Logf("1.2.0 was never pushed; tags %v", tags)
		}
		// Every Automatic ReconciliationRequest of the artifact ends: 1.3.0's Succeeded, one
		// for 1.2.0 Succeeded or Superseded.
		requests := dana.GitopsV1alpha1().ReconciliationRequests(gitopsNamespace)
		selector := gitops.LabelArtifact + "=" + delivery.ArtifactLabel(gitopsNamespace, "web")
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			list, err := requests.List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err.Error()
			}
			var latest bool
			var states []string
			for _, r := range list.Items {
				revision := r.Spec.Targets[0].Revision
				reason := ""
				if c := apimeta.FindStatusCondition(r.Status.Conditions, gitops.ConditionReady); c != nil {
					reason = c.Reason
				}
				states = append(states, fmt.Sprintf("%s %s %s %s", r.Name, revision, r.Status.Phase, reason))
				switch {
				case r.Status.Phase != gitops.ReconciliationSucceeded && r.Status.Phase != gitops.ReconciliationFailed:
					return false, "not finished: " + strings.Join(states, ", ")
				case revision == v13.Spec.Tag+"@"+v13.Status.Digest:
					if r.Status.Phase != gitops.ReconciliationSucceeded {
						t.Errorf("the request for 1.3.0: %s", states[len(states)-1])
					}
					latest = true
				case r.Status.Phase == gitops.ReconciliationFailed && reason != "Superseded":
					t.Errorf("a request failed: %s", states[len(states)-1])
				}
			}
			if latest {
				t.Logf("Automatic requests: %s", strings.Join(states, ", "))
			}
			return latest, strings.Join(states, ", ")
		})
	})

	t.Run("the registry's data survives a restart of plinth-controller", func(t *testing.T) {
		before := registryTags(t, p.RegistryEndpoint(), "workloads/web")
		p.StopController()
		if err := p.StartController(); err != nil {
			t.Fatal(err)
		}
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			tags, err := listTags(p.RegistryEndpoint(), "workloads/web")
			return err == nil && slices.Equal(tags, before), fmt.Sprintf("tags %v (%v), want %v", tags, err, before)
		})
		expectFluxManifest(t, p.RegistryEndpoint(), "workloads/web", "1.1.0", web.Status.Digest, web.Status.Revision)
		waitRegistryRunning(t, dana)
	})

	t.Run("a version applied while plinth-controller and its registry are down lands once they are back", func(t *testing.T) {
		p.StopController()
		if _, err := listTags(p.RegistryEndpoint(), "workloads/web"); err == nil {
			t.Fatal("the registry still answers with plinth-controller stopped")
		}
		updateArtifact(t, dana, "web", "1.4.0", webConfig("1.4.0"))
		// Nothing works on it meanwhile: the status still describes the last version.
		time.Sleep(time.Second)
		a, err := artifacts.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if problem := untruth(a, "1.4.0"); problem != "" || a.Status.PushedVersion != "1.3.0" {
			t.Errorf("status while nothing runs: %s: %+v", problem, a.Status)
		}
		began := time.Now()
		if err := p.StartController(); err != nil {
			t.Fatal(err)
		}
		v14 := followDelivery(t, dana, "web", "1.4.0")
		expectFluxManifest(t, p.RegistryEndpoint(), "workloads/web", "1.4.0", v14.Status.Digest, v14.Status.Revision)
		waitForCondition(t, 60*time.Second, func() (bool, string) { return objectsAre(kube, "gitops-flux", "1.4.0", false) })
		t.Logf("1.4.0 pushed and applied %s after plinth-controller started again", time.Since(began).Round(100*time.Millisecond))
	})

	t.Run("plinth-controller killed right after a version is applied recovers", func(t *testing.T) {
		registry, err := dana.GitopsV1alpha1().OCIRegistries(gitopsNamespace).Get(ctx, localplatform.LocalCluster, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The registry keeps a blob being uploaded under the repository's _uploads until the
		// upload completes: killing as soon as one appears interrupts the push.
		uploads := filepath.Join(registry.Status.StoragePath, "docker", "registry", "v2", "repositories", "workloads", "web", "_uploads")
		updateArtifact(t, dana, "web", "1.5.0", webConfig("1.5.0"))
		uploading := false
		for deadline := time.Now().Add(3 * time.Second); !uploading && time.Now().Before(deadline); time.Sleep(200 * time.Microsecond) {
			entries, _ := os.ReadDir(uploads)
			uploading = len(entries) > 0
		}
		p.KillController()
		a, err := artifacts.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("killed during a blob upload: %t; version %s recorded as pushed", uploading, a.Status.PushedVersion)
		began := time.Now()
		if err := p.StartController(); err != nil {
			t.Fatal(err)
		}
		v15 := followDelivery(t, dana, "web", "1.5.0")
		expectFluxManifest(t, p.RegistryEndpoint(), "workloads/web", "1.5.0", v15.Status.Digest, v15.Status.Revision)
		waitForCondition(t, 60*time.Second, func() (bool, string) { return objectsAre(kube, "gitops-flux", "1.5.0", false) })
		if tags := registryTags(t, p.RegistryEndpoint(), "workloads/web"); !slices.Contains(tags, "1.4.0") {
			t.Errorf("tags %v lost 1.4.0", tags)
		}
		// Which step the kill interrupted: a push the killed controller completed but did not
		// record is found in the registry and adopted; otherwise it is pushed (again).
		if note := artifactEvent(t, kube, "web", "Adopted", "Version 1.5.0 "); note != "" {
			t.Logf("the kill came after the push, before its status: %s", note)
		} else {
			t.Logf("the kill came before the push completed: %s", artifactEvent(t, kube, "web", "Pushed", "Version 1.5.0 "))
		}
		t.Logf("1.5.0 pushed and applied %s after plinth-controller started again (lease expiry included)", time.Since(began).Round(100*time.Millisecond))
	})

	t.Run("a registry whose disk is full is Error and a push says so; with room again it pushes", func(t *testing.T) {
		registries := dana.GitopsV1alpha1().OCIRegistries(gitopsNamespace)
		volume := filepath.Join(p.RegistryVolumeDir(), "full-disk")
		fault := newDiskFault(t, volume)
		port, err := framework.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := registries.Create(ctx, &gitops.OCIRegistry{ObjectMeta: metav1.ObjectMeta{Name: "full-disk"},
			Spec: gitops.OCIRegistrySpec{Endpoint: fmt.Sprintf("localhost:%d", port), VolumeName: "full-disk"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// The artifact first: its finalizer deletes its tag from the running registry.
			_ = artifacts.Delete(ctx, "full", metav1.DeleteOptions{})
			waitGone(t, func() error { _, err := artifacts.Get(ctx, "full", metav1.GetOptions{}); return err })
			_ = registries.Delete(ctx, "full-disk", metav1.DeleteOptions{})
			waitGone(t, func() error { _, err := registries.Get(ctx, "full-disk", metav1.GetOptions{}); return err })
		})
		registryIs := func(phase gitops.RegistryPhase, lastError string) *gitops.OCIRegistry {
			t.Helper()
			var r *gitops.OCIRegistry
			waitForCondition(t, 30*time.Second, func() (bool, string) {
				if r, err = registries.Get(ctx, "full-disk", metav1.GetOptions{}); err != nil {
					return false, err.Error()
				}
				return r.Status.Phase == phase && strings.Contains(r.Status.LastError, lastError), fmt.Sprintf("%+v", r.Status)
			})
			return r
		}
		registryIs(gitops.RegistryPhaseRunning, "")
		if _, err := artifacts.Create(ctx, &gitops.OCIArtifact{
			ObjectMeta: metav1.ObjectMeta{Name: "full"},
			Spec: gitops.OCIArtifactSpec{RegistryRef: gitops.LocalObjectReference{Name: "full-disk"}, Name: "workloads/full", Version: "1.0.0",
				Manifests: webConfig("full")},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pushedIs := func(version string, status metav1.ConditionStatus, reason, message string) *gitops.OCIArtifact {
			t.Helper()
			var a *gitops.OCIArtifact
			waitForCondition(t, 30*time.Second, func() (bool, string) {
				if a, err = artifacts.Get(ctx, "full", metav1.GetOptions{}); err != nil {
					return false, err.Error()
				}
				c := apimeta.FindStatusCondition(a.Status.Conditions, gitops.ConditionPushed)
				// The condition's message is a sentence: its first letter capitalised.
				return a.Status.PushedVersion == version && c != nil && c.ObservedGeneration == a.Generation && c.Status == status &&
					c.Reason == reason && strings.Contains(strings.ToLower(c.Message), strings.ToLower(message)), fmt.Sprintf("%+v", a.Status)
			})
			return a
		}
		pushedIs("1.0.0", metav1.ConditionTrue, "Pushed", "Version 1.0.0 is pushed")

		fault.fill(t)
		r := registryIs(gitops.RegistryPhaseError, fault.lastError)
		t.Logf("OCIRegistry full-disk: %s", r.Status.LastError)
		if c := apimeta.FindStatusCondition(r.Status.Conditions, gitops.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "CheckFailed" {
			t.Errorf("Ready condition: %+v", c)
		}
		updateArtifact(t, dana, "full", "1.1.0", webConfig("full 1.1.0"))
		a := pushedIs("1.0.0", metav1.ConditionFalse, "RegistryNotReady", r.Status.LastError)
		if c := apimeta.FindStatusCondition(a.Status.Conditions, gitops.ConditionPushed); !strings.Contains(c.Message, "OCIRegistry full-disk is not running (phase Error)") {
			t.Errorf("Pushed condition: %+v", c)
		}

		fault.free(t)
		registryIs(gitops.RegistryPhaseRunning, "")
		a = pushedIs("1.1.0", metav1.ConditionTrue, "Pushed", "Version 1.1.0 is pushed")
		expectFluxManifest(t, r.Spec.Endpoint, "workloads/full", "1.1.0", a.Status.Digest, a.Status.Revision)
	})

	// Last: until the restarted controller holds the Lease, nothing is reconciled.
	t.Run("a Flux controller that dies is restarted and leads again", func(t *testing.T) {
		lease := func() string {
			l, err := kube.CoordinationV1().Leases(localplatform.FluxNamespace).Get(ctx, "source-controller-leader-election", metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil {
				return ""
			}
			return *l.Spec.HolderIdentity
		}
		holder, pid := lease(), p.FluxPID("source-controller")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		out.WaitFor(t, fmt.Sprintf("plinth: source-controller (pid %d) died: signal: killed", pid), 5*time.Second)
		t.Log(out.WaitFor(t, "plinth: source-controller is back", time.Minute))
		waitForCondition(t, time.Minute, func() (bool, string) {
			now := lease()
			return now != "" && now != holder, "the Lease is held by " + now
		})
		t.Logf("the restarted source-controller leads %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	})
}

// webConfig is a version of the artifact with only its ConfigMap, whose greeting says which.
func webConfig(greeting string) []common.RawObject {
	return []common.RawObject{{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config"},"data":{"greeting":"` + greeting + `"}}`)}}
}

// followDelivery is waitDelivered reading the status every 200 ms, and failing the test when
// it says something false about version (untruth) on the way.
func followDelivery(t *testing.T, c clientset.Interface, name, version string) *gitops.OCIArtifact {
	t.Helper()
	var a *gitops.OCIArtifact
	var seen []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if a, err = c.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, nil // plinth-apiserver is not what is under test here
		}
		if problem := untruth(a, version); problem != "" {
			return false, fmt.Errorf("%s: %+v", problem, a.Status)
		}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, gitops.ConditionReady); c != nil {
			if s := c.Reason + ": " + c.Message; len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
		}
		ready := a.Status.PushedVersion == version && apimeta.IsStatusConditionTrue(a.Status.Conditions, gitops.ConditionReady) && len(a.Status.Targets) > 0
		for _, target := range a.Status.Targets {
			ready = ready && target.Ready && target.Revision == a.Spec.Tag+"@"+a.Status.Digest
		}
		return ready, nil
	})
	if err != nil {
		t.Fatalf("%s %s: %v; Ready said: %s", name, version, err, strings.Join(seen, " | "))
	}
	t.Logf("%s %s: Ready said: %s", name, version, strings.Join(seen, " | "))
	return a
}

// untruth says what an OCIArtifact's status claims falsely about version, the version of its
// spec, or "": a condition of the current generation that says Pushed or Ready while the
// version is not the one recorded as pushed, a version recorded as pushed without a digest or
// under another tag, a target Ready at another revision while Ready is claimed.
func untruth(a *gitops.OCIArtifact, version string) string {
	st := a.Status
	current := func(c *metav1.Condition) bool {
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == a.Generation
	}
	pushed, ready := apimeta.FindStatusCondition(st.Conditions, gitops.ConditionPushed), apimeta.FindStatusCondition(st.Conditions, gitops.ConditionReady)
	switch {
	case a.Spec.Version != version:
		return "the spec is version " + a.Spec.Version
	case st.PushedVersion == version && (st.Digest == "" || !strings.HasSuffix(st.URL, ":"+a.Spec.Tag)):
		return "version " + version + " is recorded as pushed without its digest or tag"
	case current(pushed) && st.PushedVersion != version:
		return "Pushed is True for this generation while the pushed version is " + st.PushedVersion
	case current(ready) && st.PushedVersion != version:
		return "Ready is True for this generation while the pushed version is " + st.PushedVersion
	}
	if current(ready) {
		for _, target := range st.Targets {
			if !target.Ready || target.Revision != a.Spec.Tag+"@"+st.Digest {
				return fmt.Sprintf("Ready is True while cluster %s is at %s (Ready %t)", target.Cluster, target.Revision, target.Ready)
			}
		}
	}
	return ""
}

// pushedDigest is the digest an OCIArtifact's Pushed events say version was pushed as, or ""
// when none says it was.
func pushedDigest(t *testing.T, kube kubernetes.Interface, name, version string) string {
	t.Helper()
	if note := artifactEvent(t, kube, name, "Pushed", "Version "+version+" is pushed to "); note != "" {
		if i := strings.LastIndex(note, " as "); i > 0 {
			return strings.TrimSuffix(note[i+len(" as "):], ".")
		}
	}
	return ""
}

// artifactEvent is the note of an OCIArtifact's event with reason whose note starts with
// prefix, or "".
func artifactEvent(t *testing.T, kube kubernetes.Interface, name, reason, prefix string) string {
	t.Helper()
	events, err := kube.EventsV1().Events(gitopsNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Regarding.Kind == "OCIArtifact" && e.Regarding.Name == name && e.Reason == reason && strings.HasPrefix(e.Note, prefix) {
			return e.Note
		}
	}
	return ""
}

// manifestDigest is the digest the registry serves <repository>:<tag>'s manifest with.
func manifestDigest(t *testing.T, endpoint, repository, tag string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodHead, fmt.Sprintf("http://%s/v2/%s/manifests/%s", endpoint, repository, tag), nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("Docker-Content-Digest")
}

// waitGone waits until get reports NotFound.
func waitGone(t *testing.T, get func() error) {
	t.Helper()
	waitForCondition(t, 30*time.Second, func() (bool, string) {
		err := get()
		return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
	})
}

// diskFault makes a registry's data directory refuse writes and take them again.
type diskFault struct {
	// lastError is what the OCIRegistry's status.lastError says while writes are refused.
	lastError  string
	fill, free func(t *testing.T)
}

// newDiskFault prepares dir, a registry volume not created yet, to refuse writes on fill:
// with CAP_SYS_ADMIN, a 4 MiB tmpfs mounted there that fill fills up, a real full disk
// (ENOSPC); without it but not as root, the directory made read-only. As root without
// CAP_SYS_ADMIN nothing makes the directory refuse writes, and the test is skipped: the unit
// tests of pkg/oci/registry (/dev/full) and pkg/controllers/ociregistry (a storage check
// reporting a full disk) cover it.
func newDiskFault(t *testing.T, dir string) *diskFault {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	mountErr := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=4m,mode=0750")
	if mountErr == nil {
		// Detached lazily: the registry may still hold it when the test ends.
		t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
		filler := filepath.Join(dir, "filler")
		return &diskFault{
			lastError: "the disk holding " + dir + " is full",
			fill: func(t *testing.T) {
				f, err := os.Create(filler)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				chunk := make([]byte, 64<<10)
				for {
					if _, err := f.Write(chunk); err != nil {
						if !errors.Is(err, syscall.ENOSPC) {
							t.Fatal(err)
						}
						return
					}
				}
			},
			free: func(t *testing.T) {
				if err := os.Remove(filler); err != nil {
					t.Fatal(err)
				}
			},
		}
	}
	if os.Geteuid() == 0 {
		t.Skipf("no tmpfs can be mounted (%v) and root writes to read-only directories: a full disk is covered by the unit tests only", mountErr)
	}
	chmod := func(mode os.FileMode) func(t *testing.T) {
		return func(t *testing.T) {
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o750) })
	return &diskFault{lastError: "the data directory " + dir + " cannot be written", fill: chmod(0o500), free: chmod(0o750)}
}

// waitRegistryRunning waits until Cluster local's OCIRegistry is Running.
func waitRegistryRunning(t *testing.T, c clientset.Interface) {
	t.Helper()
	waitForCondition(t, 60*time.Second, func() (bool, string) {
		r, err := c.GitopsV1alpha1().OCIRegistries(gitopsNamespace).Get(context.Background(), localplatform.LocalCluster, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return r.Status.Phase == gitops.RegistryPhaseRunning, fmt.Sprintf("%+v", r.Status)
	})
}

// waitDelivered waits until the OCIArtifact has pushed version and every target is Ready
// with it.
func waitDelivered(t *testing.T, c clientset.Interface, name, version string) *gitops.OCIArtifact {
	t.Helper()
	var a *gitops.OCIArtifact
	waitForCondition(t, 2*time.Minute, func() (bool, string) {
		var err error
		if a, err = c.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		ready := a.Status.PushedVersion == version && apimeta.IsStatusConditionTrue(a.Status.Conditions, gitops.ConditionReady) && len(a.Status.Targets) > 0
		for _, target := range a.Status.Targets {
			ready = ready && target.Ready && target.Revision == a.Spec.Tag+"@"+a.Status.Digest
		}
		return ready, fmt.Sprintf("%+v", a.Status)
	})
	return a
}

// updateArtifact makes the OCIArtifact a new version with other manifests (again on a
// conflict with a status write of plinth-controller).
func updateArtifact(t *testing.T, c clientset.Interface, name, version string, manifests []common.RawObject) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		a, err := c.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		a.Spec.Version, a.Spec.Tag, a.Spec.Manifests = version, version, manifests
		_, err = c.GitopsV1alpha1().OCIArtifacts(gitopsNamespace).Update(context.Background(), a, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reconcileNow creates a Manual ReconciliationRequest and waits until it Succeeded; it returns
// the finished request and its reconcile.fluxcd.io/requestedAt value.
func reconcileNow(t *testing.T, c clientset.Interface, name string, targets []gitops.ReconciliationTarget) (*gitops.ReconciliationRequest, string) {
	t.Helper()
	requests := c.GitopsV1alpha1().ReconciliationRequests(gitopsNamespace)
	created, err := requests.Create(context.Background(), &gitops.ReconciliationRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gitops.ReconciliationRequestSpec{Mode: gitops.ReconciliationModeManual, Targets: targets},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.RequestedAt == nil {
		t.Fatalf("requestedAt was not defaulted: %+v", created.Spec)
	}
	began := time.Now()
	var done *gitops.ReconciliationRequest
	waitForCondition(t, 90*time.Second, func() (bool, string) {
		if done, err = requests.Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return done.Status.Phase == gitops.ReconciliationSucceeded || done.Status.Phase == gitops.ReconciliationFailed, fmt.Sprintf("%+v", done.Status)
	})
	t.Logf("%s %s in %s: %+v", name, done.Status.Phase, time.Since(began).Round(100*time.Millisecond), done.Status.Targets)
	if done.Status.Phase != gitops.ReconciliationSucceeded || done.Status.CompletionTime == nil ||
		!apimeta.IsStatusConditionTrue(done.Status.Conditions, gitops.ConditionReady) || len(done.Status.Targets) != len(targets) {
		t.Fatalf("status: %+v", done.Status)
	}
	return done, created.Spec.RequestedAt.UTC().Format(time.RFC3339Nano)
}

// objectsAre checks the delivered objects in namespace: the ConfigMap's greeting, and whether
// the Deployment exists.
func objectsAre(kube kubernetes.Interface, namespace, greeting string, deployment bool) (bool, string) {
	ctx := context.Background()
	cm, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, "web-config", metav1.GetOptions{})
	if err != nil {
		return false, "the ConfigMap: " + err.Error()
	}
	_, err = kube.AppsV1().Deployments(namespace).Get(ctx, "web", metav1.GetOptions{})
	switch {
	case cm.Data["greeting"] != greeting:
		return false, fmt.Sprintf("the ConfigMap's greeting is %q, want %q", cm.Data["greeting"], greeting)
	case deployment && err != nil:
		return false, "the Deployment: " + err.Error()
	case !deployment && !apierrors.IsNotFound(err):
		return false, fmt.Sprintf("the Deployment is still there (%v)", err)
	}
	return true, ""
}

func expectObjects(t *testing.T, kube kubernetes.Interface, namespace, greeting string, deployment bool) {
	t.Helper()
	if ok, why := objectsAre(kube, namespace, greeting, deployment); !ok {
		t.Error(why)
	}
}

// expectFluxManifest reads <repository>:<tag> through the registry's /v2 API: its digest is
// digest, and it is in Flux's artifact format (config and layer media types, the source,
// revision and created annotations).
func expectFluxManifest(t *testing.T, endpoint, repository, tag, digest, revision string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/v2/%s/manifests/%s", endpoint, repository, tag), nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sum := sha256.Sum256(body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Content-Digest") != digest || "sha256:"+hex.EncodeToString(sum[:]) != digest {
		t.Fatalf("GET %s: %s, digest header %q, body digest sha256:%x, want %s", req.URL, resp.Status, resp.Header.Get("Docker-Content-Digest"), sum, digest)
	}
	var m struct {
		MediaType string `json:"mediaType"`
		Config    struct {
			MediaType string `json:"mediaType"`
		} `json:"config"`
		Layers []struct {
			MediaType string `json:"mediaType"`
		} `json:"layers"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != "application/vnd.cncf.flux.config.v1+json" || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != "application/vnd.cncf.flux.content.v1.tar+gzip" ||
		m.Annotations["org.opencontainers.image.revision"] != revision || m.Annotations["org.opencontainers.image.source"] == "" ||
		m.Annotations["org.opencontainers.image.created"] == "" {
		t.Errorf("the manifest is not in Flux's format: %s", body)
	}
}

// listTags is the repository's tags through /v2/<repository>/tags/list.
func listTags(endpoint, repository string) ([]string, error) {
	resp, err := http.Get(fmt.Sprintf("http://%s/v2/%s/tags/list", endpoint, repository))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tags/list: %s", resp.Status)
	}
	var list struct {
		Tags []string `json:"tags"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	slices.Sort(list.Tags)
	return list.Tags, nil
}

func registryTags(t *testing.T, endpoint, repository string) []string {
	t.Helper()
	tags, err := listTags(endpoint, repository)
	if err != nil || len(tags) == 0 {
		t.Fatalf("tags of %s: %v %v", repository, tags, err)
	}
	return tags
}

// getKustomization reads a Kustomization from the local cluster into its Go type.
func getKustomization(t *testing.T, dyn dynamic.Interface, namespace, name string) *kustomizev1.Kustomization {
	t.Helper()
	u, err := dyn.Resource(kustomizev1.GroupVersion.WithResource("kustomizations")).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Kustomization %s/%s: %v", namespace, name, err)
	}
	var k kustomizev1.Kustomization
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &k); err != nil {
		t.Fatal(err)
	}
	return &k
}

func getOCIRepository(t *testing.T, dyn dynamic.Interface, namespace, name string) *sourcev1.OCIRepository {
	t.Helper()
	u, err := dyn.Resource(sourcev1.GroupVersion.WithResource("ocirepositories")).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("OCIRepository %s/%s: %v", namespace, name, err)
	}
	var r sourcev1.OCIRepository
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}
