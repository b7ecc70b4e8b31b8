package clustergitops

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// newDynamic is a fake target cluster holding objs.
func newDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fluxinstall.CRDs:        "CustomResourceDefinitionList",
		fluxinstall.Deployments: "DeploymentList",
		leasesResource:          "LeaseList",
	}, objs...)
}

// crd is a Flux CRD labelled with version (none when empty), serving v1 when servesV1.
func crd(name, version string, servesV1 bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"versions": []any{
			map[string]any{"name": "v1beta2", "served": true, "storage": !servesV1},
			map[string]any{"name": "v1", "served": servesV1, "storage": servesV1},
		}},
	}}
	if version != "" {
		u.SetLabels(map[string]string{fluxinstall.LabelVersion: version, "app.kubernetes.io/component": "flux"})
	}
	return u
}

func fluxCRDs(version string) []runtime.Object {
	return []runtime.Object{
		crd("ocirepositories.source.toolkit.fluxcd.io", version, true),
		crd("kustomizations.kustomize.toolkit.fluxcd.io", version, true),
	}
}

func deployment(namespace, name, image string, available bool) *unstructured.Unstructured {
	status := "False"
	if available {
		status = "True"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "sidecar", "image": "busybox:1.36"},
			map[string]any{"name": "manager", "image": image},
		}}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": status}}},
	}}
}

func lease(namespace, name, holder string, renewed time.Time, seconds int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"holderIdentity": holder, "leaseDurationSeconds": seconds,
			"renewTime": renewed.Format(metav1.RFC3339Micro),
		},
	}}
}

func TestDetectFlux(t *testing.T) {
	// stale is beyond a 35s lease duration plus maxClockSkew; skewed is a fresh renewal by a
	// cluster whose clock is 45s behind plinth-controller's.
	fresh, stale, skewed := now.Add(-5*time.Second), now.Add(-2*time.Minute), now.Add(-50*time.Second)
	for _, tc := range []struct {
		name       string
		objs       []runtime.Object
		reason     string
		components []platformv1alpha1.FluxComponent
		message    string
	}{{
		name:   "absent",
		reason: platformv1alpha1.ReasonFluxNotInstalled, message: "the CustomResourceDefinition ocirepositories.source.toolkit.fluxcd.io is missing",
	}, {
		name:   "one CRD missing",
		objs:   []runtime.Object{crd("ocirepositories.source.toolkit.fluxcd.io", "v2.7.0", true)},
		reason: platformv1alpha1.ReasonFluxNotInstalled, message: "kustomizations.kustomize.toolkit.fluxcd.io is missing",
	}, {
		name: "CRD without v1",
		objs: []runtime.Object{crd("ocirepositories.source.toolkit.fluxcd.io", "", false),
			crd("kustomizations.kustomize.toolkit.fluxcd.io", "", true)},
		reason: platformv1alpha1.ReasonFluxNotInstalled, message: "does not serve v1",
	}, {
		name:   "CRDs but no controllers",
		objs:   fluxCRDs("v2.7.0"),
		reason: platformv1alpha1.ReasonFluxNotRunning, message: "source-controller and kustomize-controller are not running",
	}, {
		name: "deployments",
		objs: append(fluxCRDs("v2.7.0"),
			deployment("flux-system", "source-controller", "ghcr.io/fluxcd/source-controller:v1.6.2", true),
			deployment("gitops", "kustomize-controller", "registry.local:5000/fluxcd/kustomize-controller:v1.6.1@sha256:0123abcd", true)),
		reason:     platformv1alpha1.ReasonFluxRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "source-controller", Version: "v1.6.2"}, {Name: "kustomize-controller", Version: "v1.6.1"}},
		message:    "Flux's source-controller v1.6.2 and kustomize-controller v1.6.1 serve the cluster.",
	}, {
		name: "a deployment not available",
		objs: append(fluxCRDs("v2.7.0"),
			deployment("flux-system", "source-controller", "ghcr.io/fluxcd/source-controller:v1.6.2", true),
			deployment("flux-system", "kustomize-controller", "ghcr.io/fluxcd/kustomize-controller:v1.6.1", false)),
		reason:     platformv1alpha1.ReasonFluxNotRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "source-controller", Version: "v1.6.2"}},
		message:    "its kustomize-controller is not running: there is no Available Deployment named kustomize-controller and no Lease kustomize-controller-leader-election",
	}, {
		name: "a deployment of another name",
		objs: append(fluxCRDs("v2.7.0"),
			deployment("flux-system", "source-controller-old", "ghcr.io/fluxcd/source-controller:v1.0.0", true),
			deployment("flux-system", "kustomize-controller", "ghcr.io/fluxcd/kustomize-controller:v1.6.1", true)),
		reason:     platformv1alpha1.ReasonFluxNotRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "kustomize-controller", Version: "v1.6.1"}},
	}, {
		name: "leases",
		objs: append(fluxCRDs("v1.9.6"),
			lease("flux-system", "source-controller-leader-election", "host_1", fresh, 35),
			lease("flux-system", "kustomize-controller-leader-election", "host_2", fresh, 35)),
		reason:     platformv1alpha1.ReasonFluxRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "source-controller", Version: "v1.9.6"}, {Name: "kustomize-controller", Version: "v1.9.6"}},
	}, {
		name: "leases, CRDs without a version label",
		objs: append(fluxCRDs(""),
			lease("flux-system", "source-controller-leader-election", "host_1", fresh, 35),
			lease("flux-system", "kustomize-controller-leader-election", "host_2", fresh, 35)),
		reason:     platformv1alpha1.ReasonFluxRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "source-controller"}, {Name: "kustomize-controller"}},
		message:    "Flux's source-controller and kustomize-controller serve the cluster.",
	}, {
		name: "a stale lease",
		objs: append(fluxCRDs("v1.9.6"),
			lease("flux-system", "source-controller-leader-election", "host_1", fresh, 35),
			lease("flux-system", "kustomize-controller-leader-election", "host_2", stale, 35)),
		reason:     platformv1alpha1.ReasonFluxNotRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "source-controller", Version: "v1.9.6"}},
		message:    "its kustomize-controller is not running",
	}, {
		name: "leases written by a clock 45s behind",
		objs: append(fluxCRDs("v1.9.6"),
			lease("flux-system", "source-controller-leader-election", "host_1", skewed, 35),
			lease("flux-system", "kustomize-controller-leader-election", "host_2", skewed, 35)),
		reason:     platformv1alpha1.ReasonFluxRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "source-controller", Version: "v1.9.6"}, {Name: "kustomize-controller", Version: "v1.9.6"}},
	}, {
		name: "a released lease",
		objs: append(fluxCRDs("v1.9.6"),
			lease("flux-system", "source-controller-leader-election", "", fresh, 35),
			lease("flux-system", "kustomize-controller-leader-election", "host_2", fresh, 35)),
		reason:     platformv1alpha1.ReasonFluxNotRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "kustomize-controller", Version: "v1.9.6"}},
	}, {
		name: "a deployment and a lease",
		objs: append(fluxCRDs("v2.7.0"),
			deployment("flux-system", "source-controller", "ghcr.io/fluxcd/source-controller:v1.6.2", true),
			lease("elsewhere", "kustomize-controller-leader-election", "host_2", fresh, 35)),
		reason:     platformv1alpha1.ReasonFluxRunning,
		components: []platformv1alpha1.FluxComponent{{Name: "source-controller", Version: "v1.6.2"}, {Name: "kustomize-controller", Version: "v2.7.0"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := detectFlux(context.Background(), newDynamic(tc.objs...), newLeaseTracker().freshness("local", now))
			wantStatus := metav1.ConditionFalse
			if tc.reason == platformv1alpha1.ReasonFluxRunning {
				wantStatus = metav1.ConditionTrue
			}
			if f.reason != tc.reason || f.status != wantStatus || !strings.Contains(f.message, tc.message) {
				t.Errorf("got %s %s %q; want %s %s, message containing %q", f.status, f.reason, f.message, wantStatus, tc.reason, tc.message)
			}
			if !strings.HasSuffix(f.message, ".") || strings.Count(f.message, ". ") > 0 {
				t.Errorf("the message is not one sentence: %q", f.message)
			}
			if diff := cmp.Diff(tc.components, f.components); diff != "" {
				t.Errorf("components (-want +got):\n%s", diff)
			}
		})
	}
}

// Deployments and Leases are listed by name, not all of a cluster's.
func TestDetectListsByName(t *testing.T) {
	dyn := newDynamic(fluxCRDs("v2.7.0")...)
	detectFlux(context.Background(), dyn, newLeaseTracker().freshness("local", now))
	var selectors []string
	for _, a := range dyn.Actions() {
		if l, ok := a.(clienttesting.ListAction); ok {
			selectors = append(selectors, a.GetResource().Resource+" "+l.GetListRestrictions().Fields.String())
		}
	}
	want := []string{
		"deployments metadata.name=source-controller", "leases metadata.name=source-controller-leader-election",
		"deployments metadata.name=kustomize-controller", "leases metadata.name=kustomize-controller-leader-election",
	}
	if diff := cmp.Diff(want, selectors); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
}

func TestDetectFailures(t *testing.T) {
	forbidden := newDynamic(fluxCRDs("v2.7.0")...)
	forbidden.PrependReactor("list", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("no"))
	})
	if f := detectFlux(context.Background(), forbidden, newLeaseTracker().freshness("local", now)); f.reason != platformv1alpha1.ReasonForbidden || f.status != metav1.ConditionFalse ||
		!strings.Contains(f.message, "may not list deployments.apps") {
		t.Errorf("forbidden: %+v", f)
	}
	down := newDynamic()
	down.PrependReactor("get", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")
	})
	if f := detectFlux(context.Background(), down, newLeaseTracker().freshness("local", now)); f.reason != platformv1alpha1.ReasonUnreachable ||
		f.message != "The cluster could not be asked whether Flux runs on it: dial tcp 10.0.0.1:6443: connect: connection refused." {
		t.Errorf("unreachable: %+v", f)
	}
}

// TestLeaseFreshnessComparesRenewals: after the first probe a Lease is renewed when its
// renewTime changed, whatever the target's clock says, and stale once it has not changed for
// its lease duration on plinth-controller's clock.
func TestLeaseFreshnessComparesRenewals(t *testing.T) {
	tracker := newLeaseTracker()
	held := func(renewed time.Time, at time.Time) bool {
		t.Helper()
		u := lease("flux-system", "source-controller-leader-election", "host_1", renewed, 35)
		var l coordinationv1.Lease
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &l); err != nil {
			t.Fatal(err)
		}
		return tracker.freshness("local", at)(&l)
	}
	// The target's clock is 10 minutes behind: its renewTimes are far in plinth's past.
	behind := now.Add(-10 * time.Minute)
	if held(behind, now) {
		t.Fatal("a first renewTime 10 minutes off counted as renewed")
	}
	if !held(behind.Add(5*time.Second), now.Add(5*time.Second)) || !held(behind.Add(10*time.Second), now.Add(30*time.Second)) {
		t.Fatal("a renewTime that changed since the previous probe did not count as renewed")
	}
	if !held(behind.Add(10*time.Second), now.Add(64*time.Second)) {
		t.Fatal("stale before its lease duration passed since the renewal was seen")
	}
	if held(behind.Add(10*time.Second), now.Add(65*time.Second)) {
		t.Fatal("a renewTime unchanged for the lease duration counted as renewed")
	}
	// Another cluster's Lease of the same name is its own: a first probe there.
	u := lease("flux-system", "source-controller-leader-election", "host_1", behind.Add(10*time.Second), 35)
	var l coordinationv1.Lease
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &l); err != nil {
		t.Fatal(err)
	}
	if tracker.freshness("edge", now.Add(40*time.Second))(&l) {
		t.Fatal("the first probe of another cluster used this cluster's memory")
	}
	tracker.forget("local")
	if held(behind.Add(10*time.Second), now.Add(70*time.Second)) {
		t.Fatal("a forgotten cluster's first probe counted an old renewTime")
	}
}

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"ghcr.io/fluxcd/source-controller:v1.6.2":                  "v1.6.2",
		"localhost:5000/fluxcd/source-controller:v1.6.2@sha256:ab": "v1.6.2",
		"localhost:5000/fluxcd/source-controller":                  "",
		"localhost:5000/fluxcd/source-controller@sha256:ab":        "",
		"source-controller":                                        "",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("%s: %q, want %q", image, got, want)
		}
	}
}
