package kubectl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

var (
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	crdsGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	rolesGVR       = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// fakeClients gives every cluster the same fake client and mapper, or err.
type fakeClients struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	err    error
}

func (f *fakeClients) For(context.Context, string) (dynamic.Interface, meta.RESTMapper, error) {
	return f.client, f.mapper, f.err
}

// mapper serves the kinds of the tests; Widgets only when widgets is set (their CRD applied).
func mapper(widgets bool) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	add := func(gvr schema.GroupVersionResource, kind string, scope meta.RESTScope) {
		m.AddSpecific(gvr.GroupVersion().WithKind(kind), gvr, gvr.GroupVersion().WithResource(strings.ToLower(kind)), scope)
	}
	add(namespacesGVR, "Namespace", meta.RESTScopeRoot)
	add(configMapsGVR, "ConfigMap", meta.RESTScopeNamespace)
	add(deploymentsGVR, "Deployment", meta.RESTScopeNamespace)
	add(crdsGVR, "CustomResourceDefinition", meta.RESTScopeRoot)
	add(rolesGVR, "ClusterRole", meta.RESTScopeRoot)
	add(kustomizations, "Kustomization", meta.RESTScopeNamespace)
	if widgets {
		add(widgetsGVR, "Widget", meta.RESTScopeNamespace)
	}
	return m
}

// newCluster is a fake target holding objects. Server-side apply creates the object or
// replaces what it declares, as the server does for a sole manager.
func newCluster(t *testing.T, objects ...runtime.Object) (*dynamicfake.FakeDynamicClient, *fakeClients) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		namespacesGVR: "NamespaceList", configMapsGVR: "ConfigMapList", deploymentsGVR: "DeploymentList",
		crdsGVR: "CustomResourceDefinitionList", widgetsGVR: "WidgetList", rolesGVR: "ClusterRoleList", kustomizations: "KustomizationList",
	}, objects...)
	tracker := client.Tracker()
	uids := 0
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
			uids++
			applied.SetUID(types.UID(fmt.Sprintf("uid-%d", uids)))
			return true, applied, tracker.Create(gvr, applied, ns)
		}
		if err != nil {
			return true, nil, err
		}
		applied.SetUID(existing.(metav1.Object).GetUID())
		return true, applied, tracker.Update(gvr, applied, ns)
	})
	return client, &fakeClients{client: client, mapper: mapper(true)}
}

func object(apiVersion, kind, namespace, name string) manifests.Object {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace(namespace)
	u.SetName(name)
	return manifests.Object{Unstructured: u, File: "000-" + strings.ToLower(kind) + "-" + name + ".yaml#1"}
}

func artifact(objs ...manifests.Object) delivery.Artifact {
	return delivery.Artifact{Namespace: "team-a", Name: "app", URL: "oci://localhost:5000/team-a/app", Tag: "1.0.0",
		Digest: "sha256:aaaa", Objects: objs}
}

func target(prune bool, previous *gitopsv1alpha1.ArtifactTargetStatus) delivery.Target {
	return delivery.Target{
		Spec:     gitopsv1alpha1.ArtifactTarget{Cluster: "east", Namespace: "flux-system", Path: "./", Prune: ptr.To(prune)},
		Cluster:  &platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Spec: platformv1alpha1.ClusterSpec{GitOps: platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineKubectl}}},
		Previous: previous,
	}
}

var label = delivery.ArtifactLabel("team-a", "app")

// sortStrings compares string slices as sets.
var sortStrings = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func get(t *testing.T, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := client.Resource(gvr).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s %s/%s: %v", gvr.Resource, namespace, name, err)
	}
	return u
}

func exists(t *testing.T, client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string) bool {
	t.Helper()
	_, err := client.Resource(gvr).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// applied lists the objects applied, in order, as resource/namespace/name.
func applied(client *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType {
			out = append(out, p.GetResource().Resource+"/"+p.GetNamespace()+"/"+p.GetName())
		}
	}
	return out
}

func deleted(client *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			out = append(out, d.GetResource().Resource+"/"+d.GetNamespace()+"/"+d.GetName())
		}
	}
	return out
}

func TestDeliverAppliesEveryObject(t *testing.T) {
	client, clients := newCluster(t)
	art := artifact(
		object("apps/v1", "Deployment", "shop", "web"),
		object("example.com/v1", "Widget", "shop", "w"),
		object("v1", "ConfigMap", "shop", "settings"),
		object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com"),
		object("v1", "Namespace", "ignored", "shop"),
		object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),
	)
	tg := target(true, nil)
	tg.ReconcileRequest = "2026-11-23T10:00:00Z"
	status, err := New(clients).Deliver(context.Background(), art, tg)
	if err != nil {
		t.Fatal(err)
	}
	// Namespaces first, CustomResourceDefinitions next, RBAC next, then the rest, whose objects
	// are applied at the same time, in no set order; cluster-scoped objects without a namespace.
	got := applied(client)
	if want := []string{"namespaces//shop", "customresourcedefinitions//widgets.example.com", "clusterroles//reader"}; len(got) != 6 || !slices.Equal(want, got[:3]) {
		t.Errorf("applied %v, want %v first", got, want)
	}
	if diff := cmp.Diff([]string{"configmaps/shop/settings", "deployments/shop/web", "widgets/shop/w"}, got[3:], sortStrings); diff != "" {
		t.Errorf("applied last (-want +got):\n%s", diff)
	}
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			opts := p.(clienttesting.PatchActionImpl).PatchOptions
			if opts.FieldManager != FieldManager || opts.Force == nil || !*opts.Force {
				t.Errorf("%s applied with %+v, want field manager %s forcing conflicts", p.GetName(), opts, FieldManager)
			}
		}
	}
	web := get(t, client, deploymentsGVR, "shop", "web")
	if web.GetLabels()[gitopsv1alpha1.LabelArtifact] != label || web.GetAnnotations()[gitopsv1alpha1.AnnotationArtifact] != "team-a/app" {
		t.Errorf("labels %v annotations %v", web.GetLabels(), web.GetAnnotations())
	}
	want := gitopsv1alpha1.ArtifactTargetStatus{
		Cluster: "east", Engine: "Kubectl", Ready: true, Revision: "1.0.0@sha256:aaaa",
		Message: "Applied revision 1.0.0@sha256:aaaa: 6 objects.", LastHandledReconcileAt: "2026-11-23T10:00:00Z",
		Inventory: []gitopsv1alpha1.InventoryEntry{
			{ID: "_shop__Namespace", Version: "v1"},
			{ID: "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"},
			{ID: "_reader_rbac.authorization.k8s.io_ClusterRole", Version: "v1"},
			{ID: "shop_web_apps_Deployment", Version: "v1"},
			{ID: "shop_w_example.com_Widget", Version: "v1"},
			{ID: "shop_settings__ConfigMap", Version: "v1"},
		},
	}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	// The artifact's own objects are not changed.
	if art.Objects[0].GetLabels() != nil || art.Objects[4].GetNamespace() != "ignored" {
		t.Error("Deliver changed the artifact's objects")
	}
}

func TestDeliverToATargetNamespace(t *testing.T) {
	client, clients := newCluster(t)
	tg := target(true, nil)
	tg.Spec.TargetNamespace = "staging"
	status, err := New(clients).Deliver(context.Background(), artifact(
		object("apps/v1", "Deployment", "shop", "web"),
		object("v1", "ConfigMap", "", "settings"),
		object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),
	), tg)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC before the workloads that run as it; the rest at the same time, in no set order (the
	// inventory keeps the artifact's order).
	if got := applied(client); len(got) != 3 || got[0] != "clusterroles//reader" ||
		!cmp.Equal([]string{"configmaps/staging/settings", "deployments/staging/web"}, got[1:], sortStrings) {
		t.Errorf("applied %v, want the ClusterRole, then the Deployment and the ConfigMap", got)
	}
	if status.Inventory[1].ID != "staging_web_apps_Deployment" || status.Inventory[0].ID != "_reader_rbac.authorization.k8s.io_ClusterRole" {
		t.Errorf("inventory %v", status.Inventory)
	}
}

// A kind the cluster does not serve, or an object the server refuses: not Ready, the message
// names the object and its file, and the inventory keeps what was applied and what was there.
// A kind no CustomResourceDefinition of the artifact adds will not be served by the time its
// turn comes, so it refuses the version before anything is applied (the engine used to apply
// the objects before it in order first).
func TestDeliverFailsOnABadObject(t *testing.T) {
	previous := &gitopsv1alpha1.ArtifactTargetStatus{Cluster: "east", Ready: true, Revision: "0.9.0@sha256:old",
		LastHandledReconcileAt: "earlier",
		Inventory:              []gitopsv1alpha1.InventoryEntry{{ID: "shop_old_apps_Deployment", Version: "v1"}}}

	t.Run("kind not served", func(t *testing.T) {
		client, clients := newCluster(t)
		clients.mapper = mapper(false)
		status, err := New(clients).Deliver(context.Background(), artifact(
			object("v1", "ConfigMap", "shop", "settings"),
			object("example.com/v1", "Widget", "shop", "w"),
			object("apps/v1", "Deployment", "shop", "web"),
		), target(true, previous))
		if err == nil {
			t.Fatal("delivered a kind the cluster does not serve")
		}
		if status.Ready || !strings.HasPrefix(status.Message, "Applying Widget shop/w (000-widget-w.yaml#1) on cluster east failed: ") ||
			!strings.HasSuffix(status.Message, ".") {
			t.Errorf("status %+v", status)
		}
		if status.Revision != "0.9.0@sha256:old" || status.LastHandledReconcileAt != "earlier" {
			t.Errorf("revision %q, last handled %q: want the previous ones", status.Revision, status.LastHandledReconcileAt)
		}
		if diff := cmp.Diff(previous.Inventory, status.Inventory); diff != "" {
			t.Errorf("inventory (-want +got):\n%s", diff)
		}
		if len(applied(client)) != 0 || len(deleted(client)) != 0 {
			t.Errorf("applied %v, deleted %v: want nothing", applied(client), deleted(client))
		}
	})

	t.Run("refused by the server", func(t *testing.T) {
		client, clients := newCluster(t)
		client.PrependReactor("patch", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web",
				nil)
		})
		status, err := New(clients).Deliver(context.Background(), artifact(object("apps/v1", "Deployment", "shop", "web")), target(true, previous))
		if err == nil || status.Ready || !strings.Contains(status.Message, "Deployment shop/web") || !strings.Contains(status.Message, "is invalid") {
			t.Errorf("status %+v, err %v", status, err)
		}
	})

	t.Run("cluster unreachable", func(t *testing.T) {
		_, clients := newCluster(t)
		clients.err = errors.New("cluster east is not registered")
		status, err := New(clients).Deliver(context.Background(), artifact(object("v1", "ConfigMap", "shop", "settings")), target(true, previous))
		if err == nil || status.Ready || status.Message != "Cluster east is not registered." || len(status.Inventory) != 1 {
			t.Errorf("status %+v, err %v", status, err)
		}
	})
}

func labelled(u *unstructured.Unstructured, artifactLabel string) *unstructured.Unstructured {
	u.SetLabels(map[string]string{gitopsv1alpha1.LabelArtifact: artifactLabel})
	return u
}

func existing(gvr schema.GroupVersionResource, kind, namespace, name, artifactLabel string) *unstructured.Unstructured {
	o := object(gvr.GroupVersion().String(), kind, namespace, name)
	return labelled(o.Unstructured, artifactLabel)
}

// A new version that drops objects prunes them: only those still carrying this artifact's
// label, custom resources before their CustomResourceDefinition, Namespaces last.
func TestDeliverPrunesWhatTheNewVersionDrops(t *testing.T) {
	client, clients := newCluster(t,
		existing(deploymentsGVR, "Deployment", "shop", "web", label),
		existing(configMapsGVR, "ConfigMap", "shop", "settings", label),
		existing(configMapsGVR, "ConfigMap", "shop", "taken", delivery.ArtifactLabel("team-b", "other")),
		existing(namespacesGVR, "Namespace", "", "old", label),
		existing(crdsGVR, "CustomResourceDefinition", "", "widgets.example.com", label),
		existing(widgetsGVR, "Widget", "shop", "w", label),
	)
	previous := &gitopsv1alpha1.ArtifactTargetStatus{Cluster: "east", Ready: true, Revision: "0.9.0@sha256:old", Inventory: []gitopsv1alpha1.InventoryEntry{
		{ID: "_old__Namespace", Version: "v1"},
		{ID: "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"},
		{ID: "shop_web_apps_Deployment", Version: "v1"},
		{ID: "shop_settings__ConfigMap", Version: "v1"},
		{ID: "shop_w_example.com_Widget", Version: "v1"},
		{ID: "shop_taken__ConfigMap", Version: "v1"},
		{ID: "shop_gone__ConfigMap", Version: "v1"},
	}}
	status, err := New(clients).Deliver(context.Background(), artifact(object("v1", "ConfigMap", "shop", "settings")), target(true, previous))
	if err != nil {
		t.Fatal(err)
	}
	wantDeleted := []string{"widgets/shop/w", "deployments/shop/web", "customresourcedefinitions//widgets.example.com", "namespaces//old"}
	if diff := cmp.Diff(wantDeleted, deleted(client)); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if !exists(t, client, configMapsGVR, "shop", "taken") || !exists(t, client, configMapsGVR, "shop", "settings") {
		t.Error("deleted what it should have kept")
	}
	want := []gitopsv1alpha1.InventoryEntry{{ID: "shop_settings__ConfigMap", Version: "v1"}}
	if !status.Ready || !cmp.Equal(want, status.Inventory) {
		t.Errorf("status %+v", status)
	}
}

func TestDeliverWithoutPruneKeepsWhatTheNewVersionDrops(t *testing.T) {
	client, clients := newCluster(t, existing(deploymentsGVR, "Deployment", "shop", "web", label))
	previous := &gitopsv1alpha1.ArtifactTargetStatus{Inventory: []gitopsv1alpha1.InventoryEntry{{ID: "shop_web_apps_Deployment", Version: "v1"}}}
	status, err := New(clients).Deliver(context.Background(), artifact(object("v1", "ConfigMap", "shop", "settings")), target(false, previous))
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted(client)) != 0 || !exists(t, client, deploymentsGVR, "shop", "web") {
		t.Error("pruned with prune off")
	}
	if !status.Ready || len(status.Inventory) != 1 {
		t.Errorf("status %+v", status)
	}
}

// A prune that fails leaves the target not Ready with what is not pruned yet in the inventory.
func TestDeliverPruneFailure(t *testing.T) {
	client, clients := newCluster(t,
		existing(deploymentsGVR, "Deployment", "shop", "web", label),
		existing(configMapsGVR, "ConfigMap", "shop", "old", label),
	)
	client.PrependReactor("delete", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(deploymentsGVR.GroupResource(), "web", errors.New("no"))
	})
	previous := &gitopsv1alpha1.ArtifactTargetStatus{Revision: "0.9.0@sha256:old", Inventory: []gitopsv1alpha1.InventoryEntry{
		{ID: "shop_old__ConfigMap", Version: "v1"}, {ID: "shop_web_apps_Deployment", Version: "v1"},
	}}
	status, err := New(clients).Deliver(context.Background(), artifact(object("v1", "ConfigMap", "shop", "settings")), target(true, previous))
	if err == nil || status.Ready || !strings.HasPrefix(status.Message, "Pruning Deployment shop/web on cluster east failed") {
		t.Fatalf("status %+v, err %v", status, err)
	}
	// Deleted in reverse order: the Deployment first, which failed; the ConfigMap is still due.
	want := []gitopsv1alpha1.InventoryEntry{
		{ID: "shop_settings__ConfigMap", Version: "v1"}, {ID: "shop_web_apps_Deployment", Version: "v1"}, {ID: "shop_old__ConfigMap", Version: "v1"},
	}
	if diff := cmp.Diff(want, status.Inventory); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	if status.Revision != "0.9.0@sha256:old" {
		t.Errorf("revision %q", status.Revision)
	}
}

// Applying again changes nothing but keeps the reconcile request it last handled.
func TestDeliverAgainIsIdempotent(t *testing.T) {
	client, clients := newCluster(t)
	e := New(clients)
	art := artifact(object("v1", "ConfigMap", "shop", "settings"))
	tg := target(true, nil)
	tg.ReconcileRequest = "r1"
	first, err := e.Deliver(context.Background(), art, tg)
	if err != nil {
		t.Fatal(err)
	}
	uid := get(t, client, configMapsGVR, "shop", "settings").GetUID()
	again := target(true, &first)
	second, err := e.Deliver(context.Background(), art, again)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second delivery (-first +second):\n%s", diff)
	}
	if get(t, client, configMapsGVR, "shop", "settings").GetUID() != uid || len(deleted(client)) != 0 {
		t.Error("the object was replaced")
	}
}

func TestRemove(t *testing.T) {
	last := &gitopsv1alpha1.ArtifactTargetStatus{Inventory: []gitopsv1alpha1.InventoryEntry{
		{ID: "_shop__Namespace", Version: "v1"},
		{ID: "shop_web_apps_Deployment", Version: "v1"},
		{ID: "shop_taken__ConfigMap", Version: "v1"},
		{ID: "shop_gone__ConfigMap", Version: "v1"},
	}}
	objects := func() []runtime.Object {
		return []runtime.Object{
			existing(namespacesGVR, "Namespace", "", "shop", label),
			existing(deploymentsGVR, "Deployment", "shop", "web", label),
			existing(configMapsGVR, "ConfigMap", "shop", "taken", "someone-else"),
		}
	}

	client, clients := newCluster(t, objects()...)
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(true, nil), last, delivery.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"deployments/shop/web", "namespaces//shop"}; !slices.Equal(deleted(client), want) {
		t.Errorf("deleted %v, want %v", deleted(client), want)
	}
	if !exists(t, client, configMapsGVR, "shop", "taken") {
		t.Error("removed another artifact's object")
	}

	client, clients = newCluster(t, objects()...)
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(false, nil), last, delivery.RemoveOptions{}); err != nil || len(deleted(client)) != 0 {
		t.Errorf("without prune: deleted %v, %v", deleted(client), err)
	}
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(true, nil), nil, delivery.RemoveOptions{}); err != nil || len(deleted(client)) != 0 {
		t.Errorf("nothing delivered: deleted %v, %v", deleted(client), err)
	}
	// Handed over to another engine: the objects stay although the target prunes.
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(true, nil), last, delivery.RemoveOptions{Keep: true}); err != nil || len(deleted(client)) != 0 {
		t.Errorf("kept: deleted %v, %v", deleted(client), err)
	}

	clients.err = errors.New("unreachable")
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(true, nil), last, delivery.RemoveOptions{}); err == nil {
		t.Error("removing from an unreachable cluster succeeded")
	}
	clients.err = nil
	bad := &gitopsv1alpha1.ArtifactTargetStatus{Inventory: []gitopsv1alpha1.InventoryEntry{{ID: "not-an-id", Version: "v1"}}}
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(true, nil), bad, delivery.RemoveOptions{}); err == nil || !strings.Contains(err.Error(), "not-an-id") {
		t.Errorf("a malformed inventory entry: %v", err)
	}
}

func TestParseID(t *testing.T) {
	for id, want := range map[string]manifests.Key{
		"shop_web_apps_Deployment": {Namespace: "shop", Name: "web", Group: "apps", Kind: "Deployment"},
		"_shop__Namespace":         {Name: "shop", Kind: "Namespace"},
	} {
		got, err := parseID(id)
		if err != nil || got != want {
			t.Errorf("parseID(%q) = %+v, %v", id, got, err)
		}
		if got.String() != id {
			t.Errorf("%q does not round-trip: %q", id, got.String())
		}
	}
	for _, bad := range []string{"", "a_b_c", "a_b_c_d_e", "ns__apps_Deployment", "ns_web_apps_"} {
		if _, err := parseID(bad); err == nil {
			t.Errorf("parseID(%q) succeeded", bad)
		}
	}
}

// A namespaced object that names no namespace, on a target without targetNamespace, is
// refused as Flux's kustomize-controller refuses it, before anything is applied.
func TestDeliverRefusesANamespacedObjectWithoutANamespace(t *testing.T) {
	client, clients := newCluster(t)
	status, err := New(clients).Deliver(context.Background(), artifact(
		object("apps/v1", "Deployment", "shop", "web"),
		object("v1", "ConfigMap", "", "settings"),
	), target(true, nil))
	want := "Applying ConfigMap settings (000-configmap-settings.yaml#1) on cluster east failed: " +
		"a namespaced ConfigMap needs metadata.namespace or the target's targetNamespace, as Flux requires."
	if err == nil || status.Ready || status.Message != want {
		t.Errorf("status %+v, err %v", status, err)
	}
	if len(applied(client)) != 0 {
		t.Errorf("applied %v", applied(client))
	}
}

func annotated(u *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	u.SetAnnotations(map[string]string{key: value})
	return u
}

// An object that exists on the target and that the artifact did not create refuses the whole
// version, with nothing applied and nothing pruned: a Namespace that was there first would
// otherwise be deleted once a later version drops it.
func TestDeliverRefusesToTakeOverWhatItDidNotCreate(t *testing.T) {
	previous := &gitopsv1alpha1.ArtifactTargetStatus{Cluster: "east", Ready: true, Revision: "0.9.0@sha256:old",
		Inventory: []gitopsv1alpha1.InventoryEntry{{ID: "shop_old_apps_Deployment", Version: "v1"}}}
	art := artifact(
		object("v1", "Namespace", "", "shop"),
		object("apps/v1", "Deployment", "shop", "web"),
		object("v1", "ConfigMap", "shop", "settings"),
	)
	for name, tc := range map[string]struct {
		existing runtime.Object
		refused  string
	}{
		"created by hand": {object("v1", "Namespace", "", "shop").Unstructured, "Namespace shop (000-namespace-shop.yaml#1)"},
		"another artifact's": {existing(configMapsGVR, "ConfigMap", "shop", "settings", delivery.ArtifactLabel("team-b", "other")),
			"ConfigMap shop/settings (000-configmap-settings.yaml#1)"},
		"adopt not true": {annotated(object("v1", "Namespace", "", "shop").Unstructured, delivery.AnnotationAdopt, "yes"),
			"Namespace shop (000-namespace-shop.yaml#1)"},
		"another Kustomization's": {labelledFlux(object("v1", "ConfigMap", "shop", "settings").Unstructured, "team-b-other", "flux-system"),
			"ConfigMap shop/settings (000-configmap-settings.yaml#1)"},
	} {
		t.Run(name, func(t *testing.T) {
			client, clients := newCluster(t, tc.existing, existing(deploymentsGVR, "Deployment", "shop", "old", label))
			status, err := New(clients).Deliver(context.Background(), art, target(true, previous))
			want := tc.refused + " exists on cluster east and was not created by OCIArtifact team-a/app, so it is left alone unless annotated gitops.plinth.dev/adopt=true."
			if err == nil || status.Ready || status.Message != want {
				t.Errorf("status %+v, err %v\nwant message %q", status, err, want)
			}
			if len(applied(client)) != 0 || len(deleted(client)) != 0 {
				t.Errorf("applied %v, deleted %v: want nothing", applied(client), deleted(client))
			}
			if status.Revision != previous.Revision || !cmp.Equal(previous.Inventory, status.Inventory) {
				t.Errorf("revision %q, inventory %v: want the previous ones", status.Revision, status.Inventory)
			}
		})
	}
}

func labelledFlux(u *unstructured.Unstructured, name, namespace string) *unstructured.Unstructured {
	u.SetLabels(map[string]string{"kustomize.toolkit.fluxcd.io/name": name, "kustomize.toolkit.fluxcd.io/namespace": namespace})
	return u
}

// What the artifact created (its label, or its last inventory), what its Flux Kustomization
// applied before the Cluster switched to Kubectl, and what a person annotated for adoption are
// applied over and carry the artifact's label from then on.
func TestDeliverAppliesOverWhatItOwnsOrMayAdopt(t *testing.T) {
	for name, tc := range map[string]struct {
		existing runtime.Object
		previous []gitopsv1alpha1.InventoryEntry
	}{
		"its label":          {existing: existing(namespacesGVR, "Namespace", "", "shop", label)},
		"its last inventory": {existing: object("v1", "Namespace", "", "shop").Unstructured, previous: []gitopsv1alpha1.InventoryEntry{{ID: "_shop__Namespace", Version: "v1"}}},
		"its Kustomization":  {existing: labelledFlux(object("v1", "Namespace", "", "shop").Unstructured, "team-a-app", "flux-system")},
		"adopted":            {existing: annotated(object("v1", "Namespace", "", "shop").Unstructured, delivery.AnnotationAdopt, "true")},
	} {
		t.Run(name, func(t *testing.T) {
			client, clients := newCluster(t, tc.existing)
			status, err := New(clients).Deliver(context.Background(), artifact(object("v1", "Namespace", "", "shop")),
				target(true, &gitopsv1alpha1.ArtifactTargetStatus{Inventory: tc.previous}))
			if err != nil || !status.Ready {
				t.Fatalf("status %+v, err %v", status, err)
			}
			if got := get(t, client, namespacesGVR, "", "shop").GetLabels()[gitopsv1alpha1.LabelArtifact]; got != label {
				t.Errorf("label %q, want %q", got, label)
			}
		})
	}
}

// noWidgetsUntilCRD serves Widgets only once their CustomResourceDefinition was applied.
type noWidgetsUntilCRD struct {
	meta.RESTMapper
	served *bool
}

func (m noWidgetsUntilCRD) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk.Kind == "Widget" && !*m.served {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// An object of a kind the artifact's own CustomResourceDefinition adds is checked in its turn,
// once the kind is served: the delivery stops there, as at any object that fails.
func TestDeliverChecksCustomResourcesAfterTheirDefinition(t *testing.T) {
	client, clients := newCluster(t, object("example.com/v1", "Widget", "shop", "w").Unstructured)
	served := false
	clients.mapper = noWidgetsUntilCRD{RESTMapper: mapper(true), served: &served}
	client.PrependReactor("patch", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
		served = true
		return false, nil, nil
	})
	status, err := New(clients).Deliver(context.Background(), artifact(
		object("example.com/v1", "Widget", "shop", "w"),
		widgetsCRD(),
	), target(true, nil))
	if err == nil || status.Ready || !strings.HasPrefix(status.Message, "Widget shop/w (000-widget-w.yaml#1) exists on cluster east and was not created") {
		t.Errorf("status %+v, err %v", status, err)
	}
	if want := []string{"customresourcedefinitions//widgets.example.com"}; !slices.Equal(applied(client), want) {
		t.Errorf("applied %v, want %v", applied(client), want)
	}
	if want := []gitopsv1alpha1.InventoryEntry{{ID: "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"}}; !cmp.Equal(want, status.Inventory) {
		t.Errorf("inventory %v", status.Inventory)
	}
}

// servedLater serves Widgets only once their CustomResourceDefinition was applied and they
// were asked for delay more times since (as kube-apiserver first establishes a new
// CustomResourceDefinition); never, with delay -1.
type servedLater struct {
	meta.RESTMapper
	applied *atomic.Bool
	delay   int
	asked   atomic.Int32
}

func (m *servedLater) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk.Kind == "Widget" && (!m.applied.Load() || m.delay < 0 || int(m.asked.Add(1)) <= m.delay) {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// An object of a kind the artifact's own CustomResourceDefinition adds waits for the kind to
// be served, up to the engine's servedWait; then the delivery fails at it, keeping the
// CustomResourceDefinition in the inventory.
func TestDeliverWaitsForItsCustomResourceDefinitions(t *testing.T) {
	art := artifact(object("example.com/v1", "Widget", "shop", "w"), widgetsCRD())
	for name, tc := range map[string]struct {
		delay int
		ready bool
	}{
		"served after a while": {delay: 2, ready: true},
		"never served":         {delay: -1},
	} {
		t.Run(name, func(t *testing.T) {
			client, clients := newCluster(t)
			var crdApplied atomic.Bool
			clients.mapper = &servedLater{RESTMapper: mapper(true), applied: &crdApplied, delay: tc.delay}
			client.PrependReactor("patch", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
				crdApplied.Store(true)
				return false, nil, nil
			})
			e := New(clients)
			e.servedWait = time.Second
			status, err := e.Deliver(context.Background(), art, target(true, nil))
			if tc.ready {
				if err != nil || !status.Ready || len(status.Inventory) != 2 || status.Inventory[1].ID != "shop_w_example.com_Widget" {
					t.Errorf("status %+v, err %v", status, err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(status.Message, `Applying Widget shop/w (000-widget-w.yaml#1) on cluster east failed: no matches for kind "Widget"`) {
				t.Errorf("status %+v, err %v", status, err)
			}
			if want := []gitopsv1alpha1.InventoryEntry{{ID: "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition", Version: "v1"}}; !cmp.Equal(want, status.Inventory) {
				t.Errorf("inventory %v", status.Inventory)
			}
		})
	}
}

func TestDefinedKinds(t *testing.T) {
	noKind := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "broken.example.com")
	got := definedKinds([]manifests.Object{widgetsCRD(), noKind, object("v1", "ConfigMap", "shop", "settings")})
	if want := map[schema.GroupKind]bool{{Group: "example.com", Kind: "Widget"}: true}; !cmp.Equal(want, got) {
		t.Errorf("definedKinds = %v, want %v", got, want)
	}
}

// widgetsCRD is the CustomResourceDefinition of Widgets, as much of it as the engine reads.
func widgetsCRD() manifests.Object {
	crd := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com")
	crd.Object["spec"] = map[string]interface{}{"group": "example.com", "names": map[string]interface{}{"kind": "Widget", "plural": "widgets"}}
	return crd
}

// Flux's opt-out, kustomize.toolkit.fluxcd.io/prune: disabled (label or annotation, any case),
// keeps an object when a new version drops it and when the artifact goes.
func TestPruneDisabledObjectsStay(t *testing.T) {
	objects := func() []runtime.Object {
		kept := existing(deploymentsGVR, "Deployment", "shop", "web", label)
		kept.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/prune": "disabled"})
		keptByLabel := existing(configMapsGVR, "ConfigMap", "shop", "old", label)
		keptByLabel.SetLabels(map[string]string{gitopsv1alpha1.LabelArtifact: label, "kustomize.toolkit.fluxcd.io/prune": "Disabled"})
		return []runtime.Object{kept, keptByLabel, existing(configMapsGVR, "ConfigMap", "shop", "gone", label)}
	}
	inventory := []gitopsv1alpha1.InventoryEntry{
		{ID: "shop_web_apps_Deployment", Version: "v1"}, {ID: "shop_old__ConfigMap", Version: "v1"}, {ID: "shop_gone__ConfigMap", Version: "v1"},
	}

	client, clients := newCluster(t, objects()...)
	status, err := New(clients).Deliver(context.Background(), artifact(object("v1", "ConfigMap", "shop", "settings")),
		target(true, &gitopsv1alpha1.ArtifactTargetStatus{Inventory: inventory}))
	if err != nil || !status.Ready {
		t.Fatalf("status %+v, err %v", status, err)
	}
	if want := []string{"configmaps/shop/gone"}; !slices.Equal(deleted(client), want) {
		t.Errorf("pruned %v, want %v", deleted(client), want)
	}

	client, clients = newCluster(t, objects()...)
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(true, nil),
		&gitopsv1alpha1.ArtifactTargetStatus{Inventory: inventory}, delivery.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"configmaps/shop/gone"}; !slices.Equal(deleted(client), want) {
		t.Errorf("removed %v, want %v", deleted(client), want)
	}
}

// A version of 200 objects (the benchmark's size) is delivered in one call: one list reads
// them all back (they share a resource and a namespace), then one apply per object.
func TestDeliverManyObjects(t *testing.T) {
	client, clients := newCluster(t)
	var objs []manifests.Object
	for i := range 200 {
		objs = append(objs, object("v1", "ConfigMap", "shop", fmt.Sprintf("settings-%03d", i)))
	}
	status, err := New(clients).Deliver(context.Background(), artifact(objs...), target(true, nil))
	if err != nil || !status.Ready || len(status.Inventory) != 200 {
		t.Fatalf("status ready %v with %d entries, err %v", status.Ready, len(status.Inventory), err)
	}
	if got := len(client.Actions()); got != 202 {
		t.Errorf("%d requests, want 202 (a list to read them back, an apply per object, a list of the ConfigMaps to prune)", got)
	}
	// The inventory is in the artifact's order, whatever order the applies finished in.
	for i, entry := range status.Inventory {
		if want := fmt.Sprintf("shop_settings-%03d__ConfigMap", i); entry.ID != want {
			t.Fatalf("inventory entry %d is %s, want %s", i, entry.ID, want)
		}
	}
}

// lists are the lists made, as resource/namespace?selector.
func lists(client *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range client.Actions() {
		if l, ok := a.(clienttesting.ListAction); ok {
			out = append(out, l.GetResource().Resource+"/"+l.GetNamespace()+"?"+l.GetListRestrictions().Labels.String())
		}
	}
	return out
}

// What a pass applied whose status was lost (its objects carry the label but are in no
// inventory) is pruned when a later version drops it, among the kinds and namespaces of the
// last inventory and the new version, with the inventory's rules: prune disabled stays, so
// does what carries no label or another artifact's, and the Flux engine's own Kustomization.
func TestDeliverPrunesWhatALostPassApplied(t *testing.T) {
	disabled := existing(configMapsGVR, "ConfigMap", "shop", "kept", label)
	disabled.SetAnnotations(map[string]string{"kustomize.toolkit.fluxcd.io/prune": "disabled"})
	client, clients := newCluster(t,
		existing(deploymentsGVR, "Deployment", "shop", "web", label),
		// Applied by the lost pass.
		existing(configMapsGVR, "ConfigMap", "shop", "lost", label),
		existing(deploymentsGVR, "Deployment", "shop", "lost", label),
		existing(configMapsGVR, "ConfigMap", "cache", "lost", label),
		existing(namespacesGVR, "Namespace", "", "lost", label),
		existing(kustomizations, "Kustomization", "flux-system", "lost", label),
		// Not the artifact's to prune.
		disabled,
		existing(configMapsGVR, "ConfigMap", "shop", "other", delivery.ArtifactLabel("team-b", "other")),
		object("v1", "ConfigMap", "shop", "unlabelled").Unstructured,
		existing(kustomizations, "Kustomization", "flux-system", "team-a-app", label),
		// In a namespace neither version names: unknown.
		existing(configMapsGVR, "ConfigMap", "elsewhere", "lost", label),
	)
	previous := &gitopsv1alpha1.ArtifactTargetStatus{Revision: "0.9.0@sha256:old", Inventory: []gitopsv1alpha1.InventoryEntry{
		{ID: "_shop__Namespace", Version: "v1"},
		{ID: "shop_web_apps_Deployment", Version: "v1"},
		{ID: "flux-system_nested_kustomize.toolkit.fluxcd.io_Kustomization", Version: "v1"},
	}}
	status, err := New(clients).Deliver(context.Background(), artifact(
		object("v1", "Namespace", "", "shop"),
		object("v1", "ConfigMap", "shop", "settings"),
		object("v1", "ConfigMap", "cache", "settings"),
	), target(true, previous))
	if err != nil || !status.Ready {
		t.Fatalf("status %+v, err %v", status, err)
	}
	wantDeleted := []string{
		"kustomizations/flux-system/lost", "configmaps/cache/lost", "configmaps/shop/lost", "deployments/shop/lost", "deployments/shop/web", "namespaces//lost",
	}
	got := deleted(client)
	if diff := cmp.Diff(wantDeleted, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if got[len(got)-1] != "namespaces//lost" {
		t.Errorf("deleted %v: Namespaces go last", got)
	}
	for _, kept := range [][3]string{{"shop", "kept"}, {"shop", "other"}, {"shop", "unlabelled"}, {"elsewhere", "lost"}, {"shop", "settings"}} {
		if !exists(t, client, configMapsGVR, kept[0], kept[1]) {
			t.Errorf("ConfigMap %s/%s was deleted", kept[0], kept[1])
		}
	}
	if !exists(t, client, kustomizations, "flux-system", "team-a-app") {
		t.Error("the Flux engine's Kustomization was deleted")
	}
	if want := []gitopsv1alpha1.InventoryEntry{
		{ID: "_shop__Namespace", Version: "v1"}, {ID: "shop_settings__ConfigMap", Version: "v1"}, {ID: "cache_settings__ConfigMap", Version: "v1"},
	}; !cmp.Equal(want, status.Inventory) {
		t.Errorf("inventory %v", status.Inventory)
	}
	// One list per kind, cluster-wide or in each namespace involved, by the artifact's label.
	sel := "gitops.plinth.dev/artifact=" + label
	wantLists := []string{
		"namespaces/?" + sel,
		"deployments/cache?" + sel, "deployments/flux-system?" + sel, "deployments/shop?" + sel,
		"kustomizations/cache?" + sel, "kustomizations/flux-system?" + sel, "kustomizations/shop?" + sel,
		"configmaps/cache?" + sel, "configmaps/flux-system?" + sel, "configmaps/shop?" + sel,
	}
	if diff := cmp.Diff(wantLists, lists(client)); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
}

// Without prune nothing is listed nor deleted; a list that fails fails the delivery, keeping
// everything applied and the last inventory for the next one.
func TestDeliverSweepWithoutPruneOrFailing(t *testing.T) {
	client, clients := newCluster(t, existing(configMapsGVR, "ConfigMap", "shop", "lost", label))
	previous := &gitopsv1alpha1.ArtifactTargetStatus{Revision: "0.9.0@sha256:old",
		Inventory: []gitopsv1alpha1.InventoryEntry{{ID: "shop_old__ConfigMap", Version: "v1"}}}
	art := artifact(object("v1", "ConfigMap", "shop", "settings"))
	if status, err := New(clients).Deliver(context.Background(), art, target(false, previous)); err != nil || !status.Ready {
		t.Fatalf("status %+v, err %v", status, err)
	}
	if len(lists(client)) != 0 || len(deleted(client)) != 0 {
		t.Errorf("without prune: listed %v, deleted %v", lists(client), deleted(client))
	}

	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(configMapsGVR.GroupResource(), "", errors.New("no"))
	})
	status, err := New(clients).Deliver(context.Background(), art, target(true, previous))
	if err == nil || status.Ready || !strings.HasPrefix(status.Message, "Pruning on cluster east failed: listing the ConfigMap objects of the artifact in namespace shop failed") {
		t.Fatalf("status %+v, err %v", status, err)
	}
	want := []gitopsv1alpha1.InventoryEntry{{ID: "shop_settings__ConfigMap", Version: "v1"}, {ID: "shop_old__ConfigMap", Version: "v1"}}
	if !cmp.Equal(want, status.Inventory) || status.Revision != "0.9.0@sha256:old" || len(deleted(client)) != 0 {
		t.Errorf("inventory %v, revision %s, deleted %v", status.Inventory, status.Revision, deleted(client))
	}
}

// Removing the artifact removes what a lost pass applied too, among the last inventory's
// kinds and namespaces.
func TestRemoveSweepsWhatALostPassApplied(t *testing.T) {
	client, clients := newCluster(t,
		existing(deploymentsGVR, "Deployment", "shop", "web", label),
		existing(deploymentsGVR, "Deployment", "shop", "lost", label),
		existing(configMapsGVR, "ConfigMap", "shop", "unknown-kind", label),
		existing(deploymentsGVR, "Deployment", "shop", "other", "someone-else"),
	)
	last := &gitopsv1alpha1.ArtifactTargetStatus{Inventory: []gitopsv1alpha1.InventoryEntry{{ID: "shop_web_apps_Deployment", Version: "v1"}}}
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(true, nil), last, delivery.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"deployments/shop/lost", "deployments/shop/web"}; !cmp.Equal(want, deleted(client), cmpopts.SortSlices(func(a, b string) bool { return a < b })) {
		t.Errorf("deleted %v, want %v", deleted(client), want)
	}

	client.PrependReactor("list", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("unreachable")
	})
	if err := New(clients).Remove(context.Background(), "team-a", "app", target(true, nil), last, delivery.RemoveOptions{}); err == nil ||
		!strings.Contains(err.Error(), "listing the Deployment objects of the artifact in namespace shop failed") {
		t.Errorf("a failing list: %v", err)
	}
}

// Applied is what Deliver applies: placed and labelled, in apply order, so that a drift check
// compares like with like; a pack's engine applies with its own field manager.
func TestAppliedIsWhatDeliverApplies(t *testing.T) {
	client, clients := newCluster(t)
	tg := target(true, nil)
	tg.Spec.TargetNamespace = "staging"
	art := artifact(
		object("apps/v1", "Deployment", "shop", "web"),
		object("rbac.authorization.k8s.io/v1", "ClusterRole", "ignored", "reader"),
	)
	e := NewFor(clients, "plinth-packs", "InfrastructurePackInstance")
	want, err := e.Applied(context.Background(), art, tg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Deliver(context.Background(), art, tg); err != nil {
		t.Fatal(err)
	}
	if len(want) != 2 || want[0].GetKind() != "ClusterRole" || want[0].GetNamespace() != "" || want[1].GetNamespace() != "staging" ||
		want[1].GetLabels()[gitopsv1alpha1.LabelArtifact] != delivery.ArtifactLabel(art.Namespace, art.Name) {
		t.Fatalf("Applied = %v", want)
	}
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			if opts := p.(clienttesting.PatchActionImpl).PatchOptions; opts.FieldManager != "plinth-packs" {
				t.Errorf("%s applied as %q, want plinth-packs", p.GetName(), opts.FieldManager)
			}
		}
	}
	web := get(t, client, deploymentsGVR, "staging", "web")
	if !reflect.DeepEqual(web.GetLabels(), want[1].GetLabels()) || !reflect.DeepEqual(web.GetAnnotations(), want[1].GetAnnotations()) {
		t.Errorf("applied labels %v annotations %v, Applied says %v %v", web.GetLabels(), web.GetAnnotations(), want[1].GetLabels(), want[1].GetAnnotations())
	}
}
