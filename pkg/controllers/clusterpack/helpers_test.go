package clusterpack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/packs/render"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

const packNamespace = "platform"

var (
	packKey = cache.NewObjectName(packNamespace, "infra")
	start   = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
)

// fakeRenderer renders whatever objects it is told to, with a digest of their JSON, or fails
// with err; it records the options of every call.
type fakeRenderer struct {
	mu      sync.Mutex
	objects []map[string]interface{}
	err     error
	calls   []render.Options
	sources []render.Source
}

func (r *fakeRenderer) Render(_ context.Context, src render.Source, opts render.Options) (render.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, opts)
	r.sources = append(r.sources, src)
	if r.err != nil {
		return render.Result{}, r.err
	}
	res := render.Result{}
	if src.Chart != nil {
		res.HelmVersion, res.ChartVersion = "v3.99.0", "1.2.3"
	}
	h := sha256.New()
	for _, o := range r.objects {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(o)}
		raw, err := u.MarshalJSON()
		if err != nil {
			return render.Result{}, err
		}
		h.Write(raw)
		res.Objects = append(res.Objects, u)
	}
	res.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return res, nil
}

func (r *fakeRenderer) renders() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func configMap(name, value string) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name},
		"data":     map[string]interface{}{"value": value}}
}

func rawObject(t *testing.T, obj map[string]interface{}) common.RawObject {
	t.Helper()
	r, err := common.NewRawObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func cluster(name, kubeVersion string, labels map[string]string) *platformv1alpha1.Cluster {
	return &platformv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID("uid-" + name), Labels: labels},
		Status:     platformv1alpha1.ClusterStatus{KubernetesVersion: kubeVersion},
	}
}

// newPack is platform/infra, a raw pack of version v1.0.0 to the clusters named.
func newPack(t *testing.T, clusters ...string) *infrav1alpha1.InfrastructureClusterPack {
	return &infrav1alpha1.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace, Name: "infra", UID: "uid-infra", Generation: 1},
		Spec: infrav1alpha1.InfrastructureClusterPackSpec{
			Version:         "v1.0.0",
			Manifests:       []common.RawObject{rawObject(t, configMap("settings", "one"))},
			TargetNamespace: "tools",
			TargetClusters:  clusters,
		},
	}
}

// harness runs the controller's reconcile against fake clientsets, refreshing the caches from
// them after every reconcile as the watches would.
type harness struct {
	t         *testing.T
	plinth    *fake.Clientset
	kube      *kubefake.Clientset
	packs     cache.Indexer
	instances cache.Indexer
	clusters  cache.Indexer
	renderer  *fakeRenderer
	store     *revisions.Store
	recorder  *events.FakeRecorder
	c         *Controller
}

func newHarness(t *testing.T, pack *infrav1alpha1.InfrastructureClusterPack, clusters ...*platformv1alpha1.Cluster) *harness {
	t.Helper()
	objects := []runtime.Object{pack}
	for _, cl := range clusters {
		objects = append(objects, cl)
	}
	plinth := fake.NewSimpleClientset(objects...) // NewClientset needs apply configurations, which Plinth does not generate
	kube := kubefake.NewClientset()
	pf := informers.NewSharedInformerFactory(plinth, 0)
	infra, platform := pf.Infrastructure().V1alpha1(), pf.Platform().V1alpha1()
	h := &harness{
		t: t, plinth: plinth, kube: kube,
		packs: infra.InfrastructureClusterPacks().Informer().GetIndexer(), instances: infra.InfrastructurePackInstances().Informer().GetIndexer(),
		clusters: platform.Clusters().Informer().GetIndexer(),
		renderer: &fakeRenderer{objects: []map[string]interface{}{configMap("settings", "one"), configMap("more", "two")}},
		store:    revisions.NewStore(kube), recorder: events.NewFakeRecorder(1000),
	}
	c, err := NewController(plinth, kube, h.recorder, infra.InfrastructureClusterPacks(), infra.InfrastructurePackInstances(), platform.Clusters(),
		h.renderer, h.store, Options{Clock: testingclock.NewFakePassiveClock(start)})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	for _, cl := range clusters {
		if err := h.clusters.Add(cl); err != nil {
			t.Fatal(err)
		}
	}
	h.refresh()
	return h
}

// refresh fills the pack and instance caches with what the clientset holds.
func (h *harness) refresh() {
	h.t.Helper()
	ctx := context.Background()
	packs, err := h.plinth.InfrastructureV1alpha1().InfrastructureClusterPacks("").List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var objs []interface{}
	for i := range packs.Items {
		objs = append(objs, &packs.Items[i])
	}
	if err := h.packs.Replace(objs, ""); err != nil {
		h.t.Fatal(err)
	}
	insts, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("").List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	objs = nil
	for i := range insts.Items {
		objs = append(objs, &insts.Items[i])
	}
	if err := h.instances.Replace(objs, ""); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) reconcile() error {
	h.t.Helper()
	err := h.c.reconcile(context.Background(), packKey)
	h.refresh()
	return err
}

// step is a reconcile that must succeed; it returns the stored pack.
func (h *harness) step() *infrav1alpha1.InfrastructureClusterPack {
	h.t.Helper()
	if err := h.reconcile(); err != nil {
		h.t.Fatalf("reconcile: %v", err)
	}
	return h.pack()
}

func (h *harness) pack() *infrav1alpha1.InfrastructureClusterPack {
	h.t.Helper()
	p, err := h.plinth.InfrastructureV1alpha1().InfrastructureClusterPacks(packNamespace).Get(context.Background(), "infra", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// edit changes the stored pack as a user would; a spec change moves the generation.
func (h *harness) edit(specChange bool, change func(*infrav1alpha1.InfrastructureClusterPack)) {
	h.t.Helper()
	p := h.pack()
	change(p)
	if specChange {
		p.Generation++
	}
	if _, err := h.plinth.InfrastructureV1alpha1().InfrastructureClusterPacks(packNamespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.refresh()
}

// instanceNames lists the stored instances as namespace/name, sorted.
func (h *harness) instanceNames() []string {
	h.t.Helper()
	list, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, i := range list.Items {
		out = append(out, i.Namespace+"/"+i.Name)
	}
	sort.Strings(out)
	return out
}

// secrets lists the Secrets of the pack's namespace by name, sorted.
func (h *harness) secrets() []string {
	h.t.Helper()
	list, err := h.kube.CoreV1().Secrets(packNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

// setInstanceStatus changes an instance's status in the clientset and the cache, as the
// instance controller would.
func (h *harness) setInstanceStatus(cluster string, change func(*infrav1alpha1.InfrastructurePackInstance)) {
	h.t.Helper()
	client := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances(infrav1alpha1.InstanceNamespace(cluster))
	inst, err := client.Get(context.Background(), infrav1alpha1.InstanceName("infra", cluster), metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	change(inst)
	if _, err := client.UpdateStatus(context.Background(), inst, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.refresh()
}

// holdInstanceDeletions makes deleting an instance mark it deleted, as the API server does
// for an object with finalizers, instead of removing it.
func (h *harness) holdInstanceDeletions() {
	h.plinth.PrependReactor("delete", "infrastructurepackinstances", func(action clienttesting.Action) (bool, runtime.Object, error) {
		del := action.(clienttesting.DeleteAction)
		obj, err := h.plinth.Tracker().Get(del.GetResource(), del.GetNamespace(), del.GetName())
		if err != nil {
			return true, nil, err
		}
		inst := obj.(*infrav1alpha1.InfrastructurePackInstance).DeepCopy()
		if inst.DeletionTimestamp == nil {
			now := metav1.NewTime(start)
			inst.DeletionTimestamp = &now
		}
		return true, nil, h.plinth.Tracker().Update(del.GetResource(), inst, del.GetNamespace())
	})
}

// deletes lists the instances deleted through the clientset, as namespace/name.
func (h *harness) deletes() []string {
	var out []string
	for _, a := range h.plinth.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && d.GetResource().Resource == "infrastructurepackinstances" {
			out = append(out, d.GetNamespace()+"/"+d.GetName())
		}
	}
	sort.Strings(out)
	return out
}

func expectCondition(t *testing.T, pack *infrav1alpha1.InfrastructureClusterPack, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(pack.Status.Conditions, condType)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("%s = %+v, want %s %s (conditions %+v)", condType, c, status, reason, pack.Status.Conditions)
	}
	return c
}

func namespaceExists(t *testing.T, kube *kubefake.Clientset, name string) *corev1.Namespace {
	t.Helper()
	ns, err := kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// events drains the events recorded so far.
func (h *harness) events() []string {
	var out []string
	for len(h.recorder.Events) > 0 {
		out = append(out, <-h.recorder.Events)
	}
	return out
}

// expectContentWait fails unless err is a content error, looked at again after contentRetry
// rather than retried with backoff.
func expectContentWait(t *testing.T, err error) {
	t.Helper()
	if after, waiting := errkind.WaitFor(err); !waiting || after != contentRetry {
		t.Fatalf("reconcile returned %v, want the content error looked at again after %s, not retried with backoff", err, contentRetry)
	}
}

var errFetch = errors.New("fetching the chart failed: dial tcp 10.0.0.9:443: i/o timeout")
