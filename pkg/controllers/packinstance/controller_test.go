package packinstance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

// placed is what Place made of the objects, as kind/namespace/name.
func placed(t *testing.T, raw []json.RawMessage, mapper meta.RESTMapper) []string {
	t.Helper()
	objs, err := Place(raw, "tools", mapper)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

func crd(kind, scope string) map[string]interface{} {
	o := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", strings.ToLower(kind)+"s.example.com")
	o["spec"] = map[string]interface{}{"group": "example.com", "scope": scope,
		"names": map[string]interface{}{"kind": kind, "plural": strings.ToLower(kind) + "s"}}
	return o
}

func TestPlace(t *testing.T) {
	raw := raws(t,
		object("example.com/v1", "Widget", "", "w"), // before its definition: scope comes from the whole revision
		object("v1", "ConfigMap", "", "a"),
		object("v1", "ConfigMap", "keep", "b"),
		object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),
		object("v1", "Namespace", "", "tools"),
		crd("Widget", "Namespaced"),
		crd("Gadget", "Cluster"),
		object("example.com/v1", "Gadget", "", "g"),
		object("other.example/v1", "Thing", "", "unknown"),
	)
	want := []string{
		"Widget/tools/w", "ConfigMap/tools/a", "ConfigMap/keep/b", "ClusterRole//reader", "Namespace//tools",
		"CustomResourceDefinition//widgets.example.com", "CustomResourceDefinition//gadgets.example.com",
		"Gadget//g", "Thing//unknown",
	}
	if diff := cmp.Diff(want, placed(t, raw, testMapper())); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
}

// A kind the cluster serves takes its scope from the cluster, whatever a definition in the
// revision says.
func TestPlacePrefersTheClusterScope(t *testing.T) {
	m := testMapper()
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	m.AddSpecific(gvr.GroupVersion().WithKind("Widget"), gvr, gvr.GroupVersion().WithResource("widget"), meta.RESTScopeRoot)
	got := placed(t, raws(t, crd("Widget", "Namespaced"), object("example.com/v1", "Widget", "", "w")), m)
	if diff := cmp.Diff([]string{"CustomResourceDefinition//widgets.example.com", "Widget//w"}, got); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
}

type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("discovery failed: connection refused")
}

func TestPlaceFails(t *testing.T) {
	if _, err := Place(raws(t, object("v1", "ConfigMap", "", "a")), "tools", failingMapper{testMapper()}); err == nil ||
		!strings.Contains(err.Error(), "discovery failed") {
		t.Errorf("Place with a failing mapper: %v", err)
	}
	if _, err := Place([]json.RawMessage{json.RawMessage(`{"kind": 3}`)}, "tools", testMapper()); err == nil {
		t.Error("Place of an object that does not decode succeeded")
	}
	// An object that names its namespace needs no mapping.
	if _, err := Place(raws(t, object("v1", "ConfigMap", "keep", "a")), "tools", failingMapper{testMapper()}); err != nil {
		t.Errorf("Place of a namespaced object: %v", err)
	}
}

func TestResourcesAndInventory(t *testing.T) {
	inv := []gitopsv1alpha1.InventoryEntry{
		{ID: "tools_settings__ConfigMap", Version: "v1"},
		{ID: "_reader_rbac.authorization.k8s.io_ClusterRole", Version: "v1"},
		{ID: "tools_web_apps_Deployment", Version: "v1"},
	}
	want := []infrav1alpha1.DeployedResource{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tools", Name: "settings"},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "tools", Name: "web"},
	}
	res := resources(inv)
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(inv, inventory(res)); diff != "" {
		t.Errorf("inventory(resources(x)) (-want +got):\n%s", diff)
	}
	// What does not parse is left out rather than guessed at.
	if got := resources([]gitopsv1alpha1.InventoryEntry{{ID: "tools_settings_ConfigMap", Version: "v1"}}); len(got) != 0 {
		t.Errorf("resources of a malformed ID = %+v", got)
	}
	if got := inventory([]infrav1alpha1.DeployedResource{{APIVersion: "a/b/c", Kind: "X", Name: "x"}}); len(got) != 0 {
		t.Errorf("inventory of a malformed apiVersion = %+v", got)
	}
}

// A failed request to the cluster is Unreachable when its error's types say the cluster did
// not answer, whatever its text says: an answer that quotes "EOF" or "connection refused" is a
// refusal.
func TestFailure(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	inst := newInstance("infra", "east")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"connection refused", errRefused, infrav1alpha1.ReasonUnreachable},
		{"wrapped context deadline", fmt.Errorf("listing configmaps: %w", context.DeadlineExceeded), infrav1alpha1.ReasonUnreachable},
		{"connection cut", fmt.Errorf("applying: %w", io.ErrUnexpectedEOF), infrav1alpha1.ReasonUnreachable},
		{"server timeout", apierrors.NewServerTimeout(gr, "get", 1), infrav1alpha1.ReasonUnreachable},
		{"forbidden", apierrors.NewForbidden(gr, "settings", errors.New("the user may not")), infrav1alpha1.ReasonDeliveryFailed},
		{"invalid mentioning a refused connection", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "settings",
			field.ErrorList{field.Invalid(field.NewPath("data"), "connection refused", "bad")}), infrav1alpha1.ReasonDeliveryFailed},
		{"text mentioning EOF", errors.New("admission webhook denied the request: the manifest ends at EOF"), infrav1alpha1.ReasonDeliveryFailed},
		{"plain failure", errors.New("the object is invalid"), infrav1alpha1.ReasonDeliveryFailed},
	} {
		if got, _ := failure(inst, tc.err); got != tc.want {
			t.Errorf("%s: failure(%v) = %s, want %s", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestObjectsFor(t *testing.T) {
	rev := &revisions.Revision{Renders: map[string][]json.RawMessage{
		"v1.30": {json.RawMessage(`"30"`)}, "v1.33": {json.RawMessage(`"33"`)}, "v1.36": {json.RawMessage(`"36"`)},
	}}
	for kube, want := range map[string]string{
		"v1.36.4": "36", // exact
		"v1.33.0": "33", // exact
		"v1.35.1": "33", // nearest lower
		"v1.40.0": "36", // nearest lower, far
		"v1.29.9": "30", // none lower: the lowest
		"":        "30", // not probed: the lowest
	} {
		got := ObjectsFor(rev, kubeCluster("east", kube))
		if len(got) != 1 || string(got[0]) != `"`+want+`"` {
			t.Errorf("ObjectsFor(%q) = %s, want the v1.%s render", kube, got, want)
		}
	}
	// A revision rendered before any target was probed has only the "" render.
	unprobed := &revisions.Revision{Renders: map[string][]json.RawMessage{"": {json.RawMessage(`"any"`)}}}
	if got := ObjectsFor(unprobed, kubeCluster("east", "v1.37.0")); len(got) != 1 || string(got[0]) != `"any"` {
		t.Errorf("ObjectsFor of an unprobed revision = %s", got)
	}
	// The "" render counts as the lowest: a probed version below the cluster's is nearer.
	mixed := &revisions.Revision{Renders: map[string][]json.RawMessage{"": {json.RawMessage(`"any"`)}, "v1.30": {json.RawMessage(`"30"`)}}}
	if got := ObjectsFor(mixed, kubeCluster("east", "v1.31.0")); len(got) != 1 || string(got[0]) != `"30"` {
		t.Errorf("ObjectsFor of a mixed revision = %s", got)
	}
}

func TestFluxVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		number  int64
		want    string
	}{
		{"v1.2.3-r4", 7, "1.2.3-rev.7"},
		{"v1.2.3", 1, "1.2.3-rev.1"},
		{"not a version", 3, "0.0.0-rev.3"},
	} {
		if got := fluxVersion(&revisions.Revision{Version: tc.version, Number: tc.number}); got != tc.want {
			t.Errorf("fluxVersion(%s, %d) = %s, want %s", tc.version, tc.number, got, tc.want)
		}
	}
}

func TestFluxArtifact(t *testing.T) {
	a := newInstance("infra", "east")
	b := newInstance("infra", "east")
	b.Labels[infrav1alpha1.LabelPackNamespace] = "team-b"
	if FluxArtifact(a) == FluxArtifact(b) {
		t.Errorf("the instances of packs infra of two namespaces share the artifact %s", FluxArtifact(a))
	}
	if FluxArtifact(a) != FluxArtifact(newInstance("infra", "east")) {
		t.Error("FluxArtifact is not stable")
	}
	if !strings.HasPrefix(FluxArtifact(a), "pack-infra-east-") {
		t.Errorf("FluxArtifact = %s", FluxArtifact(a))
	}
	long := newInstance(strings.Repeat("p", 40), strings.Repeat("c", 40))
	long2 := newInstance(strings.Repeat("p", 40), strings.Repeat("c", 41))
	long2.Labels[infrav1alpha1.LabelPackNamespace] = "team-b"
	for _, inst := range []*infrav1alpha1.InfrastructurePackInstance{a, b, long, long2, newInstance(strings.Repeat("p", 52), "x")} {
		name := FluxArtifact(inst)
		if len(name) > 63 {
			t.Errorf("FluxArtifact of %s is %d characters: %s", inst.Name, len(name), name)
		}
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("FluxArtifact of %s = %s: %v", inst.Name, name, errs)
		}
	}
	if FluxArtifact(long) == FluxArtifact(long2) {
		t.Errorf("two long instances of two namespaces share the artifact %s", FluxArtifact(long))
	}
}

func TestDependencies(t *testing.T) {
	ready := metav1.Condition{Type: infrav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Delivered"}
	drifted := metav1.Condition{Type: infrav1alpha1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "Drifted"}
	dep := func(name string, conds ...metav1.Condition) *infrav1alpha1.InfrastructurePackInstance {
		i := newInstance(name, "east")
		i.Status.Conditions = conds
		return i
	}
	dependent := func(policy infrav1alpha1.OnDriftPolicy, deps ...string) *infrav1alpha1.InfrastructurePackInstance {
		i := newInstance("infra", "east")
		i.Spec.DependsOn = deps
		if policy != "" {
			i.Spec.DependencyPolicy = &infrav1alpha1.DependencyPolicy{OnDrift: policy}
		}
		return i
	}
	h := newHarness(t, dep("certs", ready), dep("dns", ready, drifted), dep("db"))
	for _, tc := range []struct {
		name string
		inst *infrav1alpha1.InfrastructurePackInstance
		want dependencyState
	}{
		{"none", dependent(infrav1alpha1.OnDriftBlock), dependencyState{}},
		{"ready", dependent(infrav1alpha1.OnDriftBlock, "certs-east"), dependencyState{}},
		{"waiting", dependent(infrav1alpha1.OnDriftBlock, "certs-east", "db-east", "gone-east"),
			dependencyState{waiting: "Waiting for db-east, gone-east to be Ready on cluster east."}},
		{"block", dependent(infrav1alpha1.OnDriftBlock, "certs-east", "dns-east"),
			dependencyState{blocked: "Dependency dns-east reports drift and onDrift is Block."}},
		{"warn", dependent(infrav1alpha1.OnDriftWarn, "dns-east"),
			dependencyState{warning: "Warning: dependency dns-east reports drift."}},
		{"warn by default", dependent("", "dns-east"),
			dependencyState{warning: "Warning: dependency dns-east reports drift."}},
		{"ignore", dependent(infrav1alpha1.OnDriftIgnore, "dns-east"), dependencyState{}},
		{"block and waiting", dependent(infrav1alpha1.OnDriftBlock, "dns-east", "db-east"),
			dependencyState{blocked: "Dependency dns-east reports drift and onDrift is Block.", waiting: "Waiting for db-east to be Ready on cluster east."}},
	} {
		if got := h.c.dependencies(tc.inst); got != tc.want {
			t.Errorf("%s: dependencies = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDelivered(t *testing.T) {
	at := metav1.NewTime(start.Add(-time.Hour))
	for _, tc := range []struct {
		name          string
		previous      string
		everDelivered bool
		next          string
		want          infrav1alpha1.UpgradeDirection
	}{
		{"first", "", false, "v1.0.0", infrav1alpha1.UpgradeDirectionInitial},
		{"first, spec version set by the pack", "v1.0.0", false, "v1.1.0", infrav1alpha1.UpgradeDirectionInitial},
		{"upgrade", "v1.0.0", true, "v1.1.0", infrav1alpha1.UpgradeDirectionUpgrade},
		{"revision bump", "v1.0.0", true, "v1.0.0-r2", infrav1alpha1.UpgradeDirectionUpgrade},
		{"rollback", "v1.1.0", true, "v1.0.0", infrav1alpha1.UpgradeDirectionRollback},
		{"redeploy", "v1.1.0", true, "v1.1.0", infrav1alpha1.UpgradeDirectionRedeploy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{clock: clockAt(start)}
			inst := newInstance("infra", "east")
			inst.Spec.Version = tc.previous
			if tc.everDelivered {
				inst.Status.DeliveredAt = &at
			}
			inst.Status.DriftSummary = "ConfigMap tools/settings: .data.value changed."
			inst.Status.Conditions = []metav1.Condition{{Type: infrav1alpha1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: infrav1alpha1.ReasonDrifted}}
			rev := &revisions.Revision{Number: 4, Version: tc.next, HelmVersion: "v3.99.0", ChartName: "infra", ChartURL: "oci://r/charts", ChartVersion: "1.2.3"}
			c.delivered(inst, pack(), rev, "Applied revision 4.")
			if inst.Status.UpgradeDirection != tc.want {
				t.Errorf("direction %s, want %s", inst.Status.UpgradeDirection, tc.want)
			}
			wantSpec := infrav1alpha1.InfrastructurePackInstanceSpec{ClusterPackRef: "infra", TargetClusterRef: "east", Version: tc.next,
				HelmVersion: "v3.99.0", ChartName: "infra", ChartURL: "oci://r/charts", ChartVersion: "1.2.3"}
			if diff := cmp.Diff(wantSpec, inst.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if inst.Status.DeliveredAt == nil || !inst.Status.DeliveredAt.Time.Equal(start) || inst.Status.Revision != 4 {
				t.Errorf("deliveredAt %v revision %d", inst.Status.DeliveredAt, inst.Status.Revision)
			}
			if inst.Status.DriftSummary != "" {
				t.Errorf("driftSummary %q kept after a delivery", inst.Status.DriftSummary)
			}
			expectCondition(t, inst, infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, infrav1alpha1.ReasonNoDrift)
			expectCondition(t, inst, infrav1alpha1.ConditionProgressing, metav1.ConditionFalse, infrav1alpha1.ReasonDelivered)
			if c := expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered); c.Message != "Applied revision 4." {
				t.Errorf("Ready message %q", c.Message)
			}
		})
	}
}

func TestReconcileDeliversToAKubectlCluster(t *testing.T) {
	h := newHarness(t, pack(), kubeCluster("east", "v1.37.2"), newInstance("infra", "east"))
	east := newTarget()
	h.clients.clusters["east"] = east
	h.save(revision1(t))

	if err := h.reconcile("east"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	inst := h.instance("east")
	if c := expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered); !strings.Contains(c.Message, "2 objects") {
		t.Errorf("Ready message %q", c.Message)
	}
	expectCondition(t, inst, infrav1alpha1.ConditionProgressing, metav1.ConditionFalse, infrav1alpha1.ReasonDelivered)
	expectCondition(t, inst, infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, infrav1alpha1.ReasonNoDrift)
	wantResources := []infrav1alpha1.DeployedResource{
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tools", Name: "settings"},
	}
	if diff := cmp.Diff(wantResources, inst.Status.DeployedResources); diff != "" {
		t.Errorf("deployedResources (-want +got):\n%s", diff)
	}
	if inst.Status.UpgradeDirection != infrav1alpha1.UpgradeDirectionInitial || inst.Status.Revision != 1 ||
		inst.Status.DeliveredAt == nil || !inst.Status.DeliveredAt.Time.Equal(start) {
		t.Errorf("direction %s revision %d deliveredAt %v, want Initial, 1, %s", inst.Status.UpgradeDirection, inst.Status.Revision, inst.Status.DeliveredAt, start)
	}
	if inst.Spec.Version != "v1.0.0" {
		t.Errorf("spec.version %q, want the delivered v1.0.0", inst.Spec.Version)
	}
	// The release namespace first (not part of the revision, so never pruned), then RBAC,
	// then the rest.
	if !east.exists(t, namespacesGVR, "", "tools") {
		t.Error("the namespace tools was not created")
	}
	if diff := cmp.Diff([]string{"clusterroles//reader", "configmaps/tools/settings"}, east.applied()); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	for _, a := range east.client.Actions() {
		if p, ok := a.(clienttesting.PatchActionImpl); ok && p.PatchOptions.FieldManager != FieldManager {
			t.Errorf("%s applied as %q, want %s", p.GetName(), p.PatchOptions.FieldManager, FieldManager)
		}
	}
}

func clockAt(t time.Time) *testingclock.FakePassiveClock { return testingclock.NewFakePassiveClock(t) }

// Two packs of one namespace whose instance names agree in the part FluxArtifact keeps would
// share one OCIArtifact on a cluster, and each delivery would overwrite the other's.
func TestFluxArtifactOfLongPackNames(t *testing.T) {
	prefix := strings.Repeat("a", 49)
	one, two := newInstance(prefix+"-one", "east"), newInstance(prefix+"-two", "east")
	if FluxArtifact(one) == FluxArtifact(two) {
		t.Errorf("instances %s and %s share the artifact %s", one.Name, two.Name, FluxArtifact(one))
	}
}
