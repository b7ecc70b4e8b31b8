package integration

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/internal/localplatform"
	gitops "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// localClients are the Clients of the local kube-apiserver as the admin, whatever the
// Cluster: the test drives the Flux engine itself, as plinth-controller does.
type localClients struct {
	client dynamic.Interface
	mapper apimeta.RESTMapper
}

func (l localClients) For(context.Context, string) (dynamic.Interface, apimeta.RESTMapper, error) {
	return l.client, l.mapper, nil
}

// TestGitOps runs the GitOps delivery on the local platform with the real Flux
// source-controller and kustomize-controller: Flux serves Cluster local, whose registry
// plinth-controller runs; an artifact pushed there in Flux's format is pulled and applied by
// Flux through the OCIRepository and Kustomization of the Flux engine, with Flux's revision
// <tag>@<digest>; a Manual ReconciliationRequest on them completes with the handled time.
func TestGitOps(t *testing.T) {
	began := time.Now()
	out := &framework.Output{}
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=1s")
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
	plinth := clientset.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))

	t.Run("Flux serves Cluster local and its registry runs", func(t *testing.T) {
		for _, controller := range localplatform.FluxControllers {
			lease, err := kube.CoordinationV1().Leases(localplatform.FluxNamespace).Get(ctx, controller+"-leader-election", metav1.GetOptions{})
			if err != nil || lease.Spec.HolderIdentity == nil {
				t.Errorf("%s's Lease: %v %+v", controller, err, lease)
			}
		}
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			cl, err := plinth.PlatformV1alpha1().Clusters().Get(ctx, localplatform.LocalCluster, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s := cl.Status.GitOps
			ok := apimeta.IsStatusConditionTrue(cl.Status.Conditions, platform.ConditionFluxAvailable) && s != nil &&
				s.RegistryEndpoint == p.RegistryEndpoint() && fmt.Sprint(s.FluxComponents) == "[{source-controller v1.9.6} {kustomize-controller v1.9.6}]"
			return ok, fmt.Sprintf("%+v %+v", cl.Status.GitOps, cl.Status.Conditions)
		})
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			r, err := plinth.GitopsV1alpha1().OCIRegistries("plinth-system").Get(ctx, localplatform.LocalCluster, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return r.Status.Phase == gitops.RegistryPhaseRunning, fmt.Sprintf("%+v", r.Status)
		})
	})

	// An artifact in Flux's format with a ConfigMap and a Deployment, pushed as version 1.0.0.
	files := map[string][]byte{
		"config.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: hello\n"),
		"web.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example/web:1}]
`),
	}
	const repository = "plinth/engine/web"
	digest, err := artifact.Push(ctx, p.RegistryEndpoint(), repository, "1.0.0", files,
		artifact.Metadata{Source: artifact.Source("engine", "web"), Revision: artifact.Revision("1.0.0", files)})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	art := delivery.Artifact{Namespace: "engine", Name: "web", URL: "oci://" + p.RegistryEndpoint() + "/" + repository, Tag: "1.0.0", Digest: digest}
	local, err := plinth.PlatformV1alpha1().Clusters().Get(ctx, localplatform.LocalCluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target := delivery.Target{Cluster: local, Spec: gitops.ArtifactTarget{Cluster: local.Name, Namespace: "flux-system", TargetNamespace: "gitops-engine", Path: "./", Prune: ptr.To(true)}}
	engine := flux.New(localClients{client: dyn, mapper: mapper})
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gitops-engine"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	t.Run("the Flux engine's objects are pulled and applied by Flux", func(t *testing.T) {
		began := time.Now()
		var status gitops.ArtifactTargetStatus
		waitForCondition(t, 90*time.Second, func() (bool, string) {
			var err error
			status, err = engine.Deliver(ctx, art, target)
			if err != nil {
				return false, err.Error()
			}
			return status.Ready, fmt.Sprintf("%+v", status)
		})
		t.Logf("Ready %s after the first delivery: %+v", time.Since(began).Round(100*time.Millisecond), status)
		if want := "1.0.0@" + digest; status.Revision != want || art.Revision() != want {
			t.Errorf("revision %q, want Flux's %q", status.Revision, want)
		}
		var repo sourcev1.OCIRepository
		getFlux(t, dyn, mapper, flux.OCIRepositoryKind, "flux-system", "engine-web", &repo)
		if repo.Status.Artifact == nil || repo.Status.Artifact.Revision != art.Revision() {
			t.Errorf("OCIRepository artifact %+v, want revision %s", repo.Status.Artifact, art.Revision())
		}
		if _, err := kube.CoreV1().ConfigMaps("gitops-engine").Get(ctx, "web-config", metav1.GetOptions{}); err != nil {
			t.Errorf("the ConfigMap: %v", err)
		}
		if _, err := kube.AppsV1().Deployments("gitops-engine").Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Errorf("the Deployment: %v", err)
		}
	})

	t.Run("a Manual ReconciliationRequest completes and records the handled time", func(t *testing.T) {
		req := &gitops.ReconciliationRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: "plinth-system", Name: "engine-web-now"},
			Spec: gitops.ReconciliationRequestSpec{Mode: gitops.ReconciliationModeManual, Targets: []gitops.ReconciliationTarget{
				{Cluster: local.Name, Kind: gitops.TargetKindOCIRepository, Name: "engine-web", Namespace: "flux-system"},
				{Cluster: local.Name, Kind: gitops.TargetKindKustomization, Name: "engine-web", Namespace: "flux-system"},
			}},
		}
		began := time.Now()
		created, err := plinth.GitopsV1alpha1().ReconciliationRequests(req.Namespace).Create(ctx, req, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Spec.RequestedAt == nil {
			t.Fatalf("requestedAt was not defaulted: %+v", created.Spec)
		}
		var done *gitops.ReconciliationRequest
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			done, err = plinth.GitopsV1alpha1().ReconciliationRequests(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return done.Status.Phase == gitops.ReconciliationSucceeded || done.Status.Phase == gitops.ReconciliationFailed, fmt.Sprintf("%+v", done.Status)
		})
		t.Logf("%s in %s: %+v", done.Status.Phase, time.Since(began).Round(100*time.Millisecond), done.Status.Targets)
		if done.Status.Phase != gitops.ReconciliationSucceeded || !apimeta.IsStatusConditionTrue(done.Status.Conditions, gitops.ConditionReady) {
			t.Fatalf("status: %+v", done.Status)
		}
		value := created.Spec.RequestedAt.UTC().Format(time.RFC3339Nano)
		for i, s := range done.Status.Targets {
			if s.HandledAt == nil || !s.Ready || s.Revision != art.Revision() {
				t.Errorf("target %d: %+v, want handled and Ready at %s", i, s, art.Revision())
			}
		}
		var k kustomizev1.Kustomization
		getFlux(t, dyn, mapper, flux.KustomizationKind, "flux-system", "engine-web", &k)
		if k.Status.LastHandledReconcileAt != value || k.Annotations[gitops.ReconcileRequestAnnotation] != value {
			t.Errorf("Kustomization handled %q, annotated %q, want %q", k.Status.LastHandledReconcileAt, k.Annotations[gitops.ReconcileRequestAnnotation], value)
		}
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

// getFlux reads a Flux object from the local cluster into its Go type.
func getFlux(t *testing.T, dyn dynamic.Interface, mapper apimeta.RESTMapper, kind schema.GroupVersionKind, namespace, name string, into runtime.Object) {
	t.Helper()
	mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
	if err != nil {
		t.Fatal(err)
	}
	u, err := dyn.Resource(mapping.Resource).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s %s/%s: %v", kind.Kind, namespace, name, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatal(err)
	}
}
