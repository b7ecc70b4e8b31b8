package packinstance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

const packNamespace = "platform"

var (
	start         = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	rolesGVR      = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

// testMapper serves Namespaces, ConfigMaps and ClusterRoles.
func testMapper() *meta.DefaultRESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	add := func(gvr schema.GroupVersionResource, kind string, scope meta.RESTScope) {
		m.AddSpecific(gvr.GroupVersion().WithKind(kind), gvr, gvr.GroupVersion().WithResource(strings.ToLower(kind)), scope)
	}
	add(namespacesGVR, "Namespace", meta.RESTScopeRoot)
	add(configMapsGVR, "ConfigMap", meta.RESTScopeNamespace)
	add(rolesGVR, "ClusterRole", meta.RESTScopeRoot)
	return m
}

// targetCluster is a fake target cluster's client and mapper, or the error reaching it gives.
type targetCluster struct {
	client *dynamicfake.FakeDynamicClient
	mapper meta.RESTMapper
	err    error
}

// fakeClients are the clients of fake target clusters by name.
type fakeClients struct {
	mu       sync.Mutex
	clusters map[string]*targetCluster
}

func (f *fakeClients) For(_ context.Context, cluster string) (dynamic.Interface, meta.RESTMapper, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[cluster]
	if !ok {
		return nil, nil, fmt.Errorf("cluster %s is not registered", cluster)
	}
	if c.err != nil {
		return nil, nil, c.err
	}
	return c.client, c.mapper, nil
}

// newTarget is a fake target cluster whose server-side apply creates the object or replaces
// what it declares, as the server does for a sole manager.
func newTarget(objects ...runtime.Object) *targetCluster {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		namespacesGVR: "NamespaceList", configMapsGVR: "ConfigMapList", rolesGVR: "ClusterRoleList",
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
	return &targetCluster{client: client, mapper: testMapper()}
}

// applied lists what was applied on a target, in order, as resource/namespace/name.
func (tc *targetCluster) applied() []string {
	var out []string
	for _, a := range tc.client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType {
			out = append(out, p.GetResource().Resource+"/"+p.GetNamespace()+"/"+p.GetName())
		}
	}
	return out
}

func (tc *targetCluster) exists(t *testing.T, gvr schema.GroupVersionResource, namespace, name string) bool {
	t.Helper()
	_, err := tc.client.Resource(gvr).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func object(apiVersion, kind, namespace, name string) map[string]interface{} {
	md := map[string]interface{}{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "metadata": md}
}

func raws(t *testing.T, objs ...map[string]interface{}) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, 0, len(objs))
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

func kubeCluster(name, kubeVersion string) *platformv1alpha1.Cluster {
	return &platformv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec:       platformv1alpha1.ClusterSpec{GitOps: platformv1alpha1.ClusterGitOps{Engine: platformv1alpha1.GitOpsEngineKubectl}},
		Status:     platformv1alpha1.ClusterStatus{KubernetesVersion: kubeVersion},
	}
}

// pack is platform/infra at revision 1, to the namespace tools.
func pack() *infrav1alpha1.InfrastructureClusterPack {
	return &infrav1alpha1.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace, Name: "infra", UID: "uid-infra", Generation: 1},
		Spec:       infrav1alpha1.InfrastructureClusterPackSpec{Version: "v1.0.0", TargetNamespace: "tools"},
		Status:     infrav1alpha1.InfrastructureClusterPackStatus{Revision: 1, Version: "v1.0.0"},
	}
}

// newInstance is the instance of pack on the cluster, as the pack controller creates it.
func newInstance(packName, cluster string) *infrav1alpha1.InfrastructurePackInstance {
	return &infrav1alpha1.InfrastructurePackInstance{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: infrav1alpha1.InstanceNamespace(cluster), Name: infrav1alpha1.InstanceName(packName, cluster),
			UID: types.UID("uid-" + packName + "-" + cluster), Generation: 1,
			Finalizers: []string{infrav1alpha1.FinalizerPack},
			Labels: map[string]string{infrav1alpha1.LabelPack: packName, infrav1alpha1.LabelPackNamespace: packNamespace,
				infrav1alpha1.LabelCluster: cluster},
		},
		Spec: infrav1alpha1.InfrastructurePackInstanceSpec{ClusterPackRef: packName, TargetClusterRef: cluster},
	}
}

// revision1 is a revision of two objects, rendered for Kubernetes 1.37: a ConfigMap without a
// namespace (the pack's targetNamespace takes it) and a ClusterRole.
func revision1(t *testing.T) *revisions.Revision {
	return &revisions.Revision{Number: 1, Version: "v1.0.0", Digest: "sha256:1111", RenderedAt: metav1.NewTime(start.Add(-time.Hour)),
		Renders: map[string][]json.RawMessage{"v1.37": raws(t,
			object("v1", "ConfigMap", "", "settings"),
			object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"))}}
}

// harness runs the controller's reconcile against fake clientsets and fake target clusters,
// refreshing the instance cache from the clientset after every reconcile as the watch would.
type harness struct {
	t         *testing.T
	plinth    *fake.Clientset
	kube      *kubefake.Clientset
	instances cache.Indexer
	packs     cache.Indexer
	clusters  cache.Indexer
	artifacts cache.Indexer
	clients   *fakeClients
	store     *revisions.Store
	clock     *testingclock.FakeClock
	recorder  *events.FakeRecorder
	c         *Controller
}

func newHarness(t *testing.T, objects ...runtime.Object) *harness {
	t.Helper()
	plinth := fake.NewSimpleClientset(objects...) // NewClientset needs apply configurations, which Plinth does not generate
	looptest.ResourceVersions(&plinth.Fake, plinth.Tracker(), infrav1alpha1.SchemeGroupVersion.WithResource("infrastructurepackinstances"))
	kube := kubefake.NewClientset()
	pf := informers.NewSharedInformerFactory(plinth, 0)
	infra, platform, gitops := pf.Infrastructure().V1alpha1(), pf.Platform().V1alpha1(), pf.Gitops().V1alpha1()
	h := &harness{
		t: t, plinth: plinth, kube: kube,
		instances: infra.InfrastructurePackInstances().Informer().GetIndexer(), packs: infra.InfrastructureClusterPacks().Informer().GetIndexer(),
		clusters: platform.Clusters().Informer().GetIndexer(), artifacts: gitops.OCIArtifacts().Informer().GetIndexer(),
		clients: &fakeClients{clusters: map[string]*targetCluster{}}, store: revisions.NewStore(kube),
		clock: testingclock.NewFakeClock(start), recorder: events.NewFakeRecorder(1000),
	}
	c, err := NewController(plinth, h.recorder, infra.InfrastructurePackInstances(), infra.InfrastructureClusterPacks(),
		platform.Clusters(), gitops.OCIArtifacts(), h.clients, h.store, Options{Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	for _, o := range objects {
		var err error
		switch o := o.(type) {
		case *infrav1alpha1.InfrastructurePackInstance:
			err = h.instances.Add(o)
		case *infrav1alpha1.InfrastructureClusterPack:
			err = h.packs.Add(o)
		case *platformv1alpha1.Cluster:
			err = h.clusters.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) save(rev *revisions.Revision) {
	h.t.Helper()
	if err := h.store.Save(context.Background(), packNamespace, "infra", rev); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) refresh() {
	h.t.Helper()
	list, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	objs := make([]interface{}, 0, len(list.Items))
	for i := range list.Items {
		objs = append(objs, &list.Items[i])
	}
	if err := h.instances.Replace(objs, ""); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) reconcile(cluster string) error {
	h.t.Helper()
	err := h.c.reconcile(context.Background(), cache.NewObjectName(infrav1alpha1.InstanceNamespace(cluster), infrav1alpha1.InstanceName("infra", cluster)))
	h.refresh()
	return err
}

func (h *harness) instance(cluster string) *infrav1alpha1.InfrastructurePackInstance {
	h.t.Helper()
	inst, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances(infrav1alpha1.InstanceNamespace(cluster)).
		Get(context.Background(), infrav1alpha1.InstanceName("infra", cluster), metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return inst
}

// updateInstance changes the stored instance and the cache, as the API server and the watch
// would.
func (h *harness) updateInstance(cluster string, change func(*infrav1alpha1.InfrastructurePackInstance)) {
	h.t.Helper()
	inst := h.instance(cluster)
	change(inst)
	if _, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances(inst.Namespace).Update(context.Background(), inst, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.refresh()
}

// events drains the events recorded so far.
func (h *harness) events() []string {
	var out []string
	for len(h.recorder.Events) > 0 {
		out = append(out, <-h.recorder.Events)
	}
	return out
}

func expectCondition(t *testing.T, inst *infrav1alpha1.InfrastructurePackInstance, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(inst.Status.Conditions, condType)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("%s = %+v, want %s %s (conditions %+v)", condType, c, status, reason, inst.Status.Conditions)
	}
	return c
}
