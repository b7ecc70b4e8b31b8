package clustergitops

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
)

var installFlux = platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineFlux, InstallFlux: true}

// testManifests are Flux's manifests with the two CRDs the detection reads, serving v1.
func testManifests(t *testing.T) *fluxinstall.Manifests {
	t.Helper()
	dir := t.TempDir()
	for controller, name := range map[string]string{
		"source-controller":    "ocirepositories.source.toolkit.fluxcd.io",
		"kustomize-controller": "kustomizations.kustomize.toolkit.fluxcd.io",
	} {
		sub := filepath.Join(dir, controller)
		data, err := json.Marshal(crd(name, "", true).Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "crd.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "VERSION"), []byte(fluxinstall.Version+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := fluxinstall.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// serverSideApply makes the fake target answer server-side applies as a server does: the
// object is created, or its labels and everything but its status replaced.
func serverSideApply(client *dynamicfake.FakeDynamicClient) {
	tracker := client.Tracker()
	client.PrependReactor("patch", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchAction)
		if patch.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		applied := &unstructured.Unstructured{}
		if err := json.Unmarshal(patch.GetPatch(), &applied.Object); err != nil {
			return true, nil, err
		}
		gvr, ns := patch.GetResource(), patch.GetNamespace()
		existing, err := tracker.Get(gvr, ns, patch.GetName())
		if apierrors.IsNotFound(err) {
			return true, applied, tracker.Create(gvr, applied, ns)
		}
		if err != nil {
			return true, nil, err
		}
		if status, ok := existing.(*unstructured.Unstructured).Object["status"]; ok {
			applied.Object["status"] = status
		}
		return true, applied, tracker.Update(gvr, applied, ns)
	})
}

// applied are the names of the objects server-side applied, as resource/name, and checks each
// was applied with plinth's field manager, forced.
func applied(t *testing.T, client *dynamicfake.FakeDynamicClient) []string {
	t.Helper()
	var out []string
	for _, a := range client.Actions() {
		p, ok := a.(clienttesting.PatchAction)
		if !ok || p.GetPatchType() != types.ApplyPatchType {
			continue
		}
		opts := p.(clienttesting.PatchActionImpl).PatchOptions
		if opts.FieldManager != InstallFieldManager || opts.Force == nil || !*opts.Force {
			t.Errorf("%s applied with %+v", p.GetName(), opts)
		}
		out = append(out, p.GetResource().Resource+"/"+p.GetName())
	}
	client.ClearActions()
	return out
}

// establish sets the Established condition of the fake target's CRDs, as the apiextensions
// controller does.
func establish(t *testing.T, client *dynamicfake.FakeDynamicClient) {
	t.Helper()
	list, err := client.Tracker().List(fluxinstall.CRDs, fluxinstall.CRDs.GroupVersion().WithKind("CustomResourceDefinition"), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.(*unstructured.UnstructuredList).Items {
		o.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}}
		if err := client.Tracker().Update(fluxinstall.CRDs, &o, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// makeAvailable marks the installed Deployments Available, as kube-controller-manager does
// once their pods are ready.
func makeAvailable(t *testing.T, client *dynamicfake.FakeDynamicClient) {
	t.Helper()
	for _, name := range fluxinstall.Controllers {
		obj, err := client.Tracker().Get(fluxinstall.Deployments, fluxinstall.Namespace, name)
		if err != nil {
			t.Fatal(err)
		}
		d := obj.(*unstructured.Unstructured)
		d.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "True"}}}
		if err := client.Tracker().Update(fluxinstall.Deployments, d, fluxinstall.Namespace); err != nil {
			t.Fatal(err)
		}
	}
}

func expectCondition(t *testing.T, cl *platformv1alpha1.Cluster, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	cond := fluxAvailable(t, cl)
	if cond == nil || cond.Status != status || cond.Reason != reason || !strings.Contains(cond.Message, message) {
		t.Fatalf("FluxAvailable %+v; want %s %s with %q", cond, status, reason, message)
	}
	if !strings.HasSuffix(cond.Message, ".") || strings.Contains(cond.Message, ". ") {
		t.Errorf("the message is not one sentence: %q", cond.Message)
	}
}

func TestInstallFlux(t *testing.T) {
	f := setup(t, newCluster("edge", installFlux))
	f.c.manifests = testManifests(t)
	dyn := newDynamic()
	serverSideApply(dyn)
	f.clients.dyn = dyn

	// First the CRDs alone: the controllers would exit while their kinds are not served.
	f.reconcile("edge")
	expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxInstalling, "CRDs are applied")
	want := []string{"customresourcedefinitions/ocirepositories.source.toolkit.fluxcd.io", "customresourcedefinitions/kustomizations.kustomize.toolkit.fluxcd.io"}
	if diff := cmp.Diff(want, applied(t, dyn)); diff != "" {
		t.Errorf("applies (-want +got):\n%s", diff)
	}
	f.expectEvents("Normal FluxInstalling")
	crd, err := dyn.Resource(fluxinstall.CRDs).Get(context.Background(), "kustomizations.kustomize.toolkit.fluxcd.io", metav1.GetOptions{})
	if err != nil || !fluxinstall.Managed(crd) || crd.GetLabels()[fluxinstall.LabelVersion] != fluxinstall.Version {
		t.Fatalf("CRD %v: %v", crd, err)
	}

	// Established: the rest follows, and Flux is installing until the Deployments are Available.
	f.reconcile("edge")
	expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxInstalling, "CRDs are applied")
	applied(t, dyn)
	establish(t, dyn)
	f.reconcile("edge")
	expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxInstalling, "waits until their Deployments are Available")
	want = append(want, "namespaces/flux-system", "serviceaccounts/source-controller", "serviceaccounts/kustomize-controller",
		"clusterrolebindings/plinth-flux-controllers", "services/source-controller", "deployments/source-controller", "deployments/kustomize-controller")
	if diff := cmp.Diff(want, applied(t, dyn)); diff != "" {
		t.Errorf("applies (-want +got):\n%s", diff)
	}
	f.expectEvents() // still installing: no transition

	makeAvailable(t, dyn)
	f.reconcile("edge")
	cl := f.cluster("edge")
	expectCondition(t, cl, metav1.ConditionTrue, platformv1alpha1.ReasonFluxRunning, "source-controller v1.9.6 and kustomize-controller v1.9.6 serve the cluster")
	wantComponents := []platformv1alpha1.FluxComponent{{Name: "source-controller", Version: "v1.9.6"}, {Name: "kustomize-controller", Version: "v1.9.6"}}
	if diff := cmp.Diff(wantComponents, cl.Status.GitOps.FluxComponents); diff != "" {
		t.Errorf("components (-want +got):\n%s", diff)
	}
	// Running: nothing applied any more.
	if got := applied(t, dyn); len(got) != 0 {
		t.Errorf("a running Flux was applied again: %v", got)
	}
	f.expectEvents("Normal FluxRunning")

	// A Deployment of the install deleted: applied again.
	if err := dyn.Tracker().Delete(fluxinstall.Deployments, fluxinstall.Namespace, "kustomize-controller"); err != nil {
		t.Fatal(err)
	}
	f.reconcile("edge")
	expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxInstalling, "Deployments are Available")
	if got := applied(t, dyn); !slices.Contains(got, "deployments/kustomize-controller") {
		t.Errorf("applies %v", got)
	}
}

func TestWithoutInstallFluxNothingIsInstalled(t *testing.T) {
	f := setup(t, newCluster("edge", flux))
	f.c.manifests = testManifests(t)
	dyn := newDynamic()
	f.clients.dyn = dyn
	f.reconcile("edge")
	expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxNotInstalled,
		"is missing; spec.gitOps.installFlux: true would let plinth-controller install Flux v1.9.6.")
	if got := applied(t, dyn); len(got) != 0 {
		t.Errorf("applies %v", got)
	}
}

func TestInstallWithoutManifests(t *testing.T) {
	f := setup(t, newCluster("edge", installFlux))
	dyn := newDynamic()
	f.clients.dyn = dyn
	f.reconcile("edge")
	expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxInstallUnavailable, "started without --flux-manifests-dir")
	if got := applied(t, dyn); len(got) != 0 {
		t.Errorf("applies %v", got)
	}
	f.expectEvents("Warning FluxInstallUnavailable")
}

func TestAFluxInstalledOtherwiseIsLeftAlone(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		f := setup(t, newCluster("edge", installFlux))
		f.c.manifests = testManifests(t)
		dyn := newDynamic(append(fluxCRDs("v2.7.0"),
			deployment("flux-system", "source-controller", "ghcr.io/fluxcd/source-controller:v1.6.2", true),
			deployment("flux-system", "kustomize-controller", "ghcr.io/fluxcd/kustomize-controller:v1.6.1", false))...)
		f.clients.dyn = dyn
		f.reconcile("edge")
		// Not running, but not plinth-controller's: reported, not repaired.
		expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxNotRunning, "kustomize-controller is not running")
		if got := applied(t, dyn); len(got) != 0 {
			t.Errorf("applies %v", got)
		}
	})
	t.Run("one CRD there", func(t *testing.T) {
		f := setup(t, newCluster("edge", installFlux))
		f.c.manifests = testManifests(t)
		dyn := newDynamic(crd("kustomizations.kustomize.toolkit.fluxcd.io", "v2.7.0", true))
		f.clients.dyn = dyn
		f.reconcile("edge")
		expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxNotInstalled,
			"leaves it as it is because the CustomResourceDefinition kustomizations.kustomize.toolkit.fluxcd.io exists without the label app.kubernetes.io/managed-by=plinth")
		if got := applied(t, dyn); len(got) != 0 {
			t.Errorf("applies %v", got)
		}
	})
	t.Run("too old", func(t *testing.T) {
		f := setup(t, newCluster("edge", installFlux))
		f.c.manifests = testManifests(t)
		dyn := newDynamic(crd("ocirepositories.source.toolkit.fluxcd.io", "v0.30.0", false), crd("kustomizations.kustomize.toolkit.fluxcd.io", "v0.30.0", false))
		f.clients.dyn = dyn
		f.reconcile("edge")
		expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxNotInstalled, "does not serve v1")
		if got := applied(t, dyn); len(got) != 0 {
			t.Errorf("applies %v", got)
		}
	})
	t.Run("objects of the install's names", func(t *testing.T) {
		f := setup(t, newCluster("edge", installFlux))
		f.c.manifests = testManifests(t)
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "flux-system"}}}
		dyn := newDynamic(ns, deployment("flux-system", "source-controller", "example.com/other:v1", false))
		serverSideApply(dyn)
		f.clients.dyn = dyn
		f.reconcile("edge")
		establish(t, dyn)
		applied(t, dyn)
		f.reconcile("edge")
		got := applied(t, dyn)
		if slices.Contains(got, "namespaces/flux-system") || slices.Contains(got, "deployments/source-controller") || !slices.Contains(got, "deployments/kustomize-controller") {
			t.Errorf("applies %v", got)
		}
		d, err := dyn.Resource(fluxinstall.Deployments).Namespace("flux-system").Get(context.Background(), "source-controller", metav1.GetOptions{})
		if err != nil || fluxinstall.Managed(d) {
			t.Errorf("the Deployment that was there: %v, %v", d, err)
		}
	})
}

func TestInstallFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		err     error
		message string
	}{
		"forbidden": {apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "x", nil),
			"its credentials may not read or apply the CustomResourceDefinition ocirepositories.source.toolkit.fluxcd.io"},
		"server error": {apierrors.NewInternalError(context.DeadlineExceeded),
			"applying the CustomResourceDefinition ocirepositories.source.toolkit.fluxcd.io failed: Internal error occurred: context deadline exceeded."},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t, newCluster("edge", installFlux))
			f.c.manifests = testManifests(t)
			dyn := newDynamic()
			dyn.PrependReactor("patch", "*", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			f.clients.dyn = dyn
			if err := f.c.reconcile(context.Background(), cache.NewObjectName("", "edge")); err == nil {
				t.Error("a failed install is not retried")
			}
			expectCondition(t, f.cluster("edge"), metav1.ConditionFalse, platformv1alpha1.ReasonFluxInstallFailed, tc.message)
			f.expectEvents("Warning FluxInstallFailed")
		})
	}
}
