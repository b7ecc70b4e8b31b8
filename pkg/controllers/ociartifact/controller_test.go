package ociartifact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/oci"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/controllers/reconciliationrequest"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
	"github.com/plinth-dev/plinth/pkg/oci/artifact/artifacttest"
)

var (
	appKey = cache.NewObjectName("team-a", "app")
	start  = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
)

func raw(t *testing.T, obj map[string]interface{}) common.RawObject {
	t.Helper()
	r, err := common.NewRawObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func deployment(name string) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": name, "namespace": "shop"},
		"spec":     map[string]interface{}{"replicas": int64(2)}}
}

func configMap(name, value string) map[string]interface{} {
	return map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": "shop"},
		"data":     map[string]interface{}{"greeting": value}}
}

// newArtifact is team-a/app, version 1.0.0 with a Deployment and a ConfigMap, to cluster east.
func newArtifact(t *testing.T) *gitopsv1alpha1.OCIArtifact {
	return &gitopsv1alpha1.OCIArtifact{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app", UID: "uid-app", Generation: 1},
		Spec: gitopsv1alpha1.OCIArtifactSpec{
			RegistryRef: gitopsv1alpha1.LocalObjectReference{Name: "local"},
			Name:        "workloads/app", Repository: "team-a/app", Version: "1.0.0",
			Manifests: []common.RawObject{raw(t, deployment("web")), raw(t, configMap("web", "hello"))},
			Targets:   []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}},
		},
	}
}

func cluster(name string, engine platformv1alpha1.GitOpsEngine, flux *metav1.Condition) *platformv1alpha1.Cluster {
	c := &platformv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: platformv1alpha1.ClusterSpec{GitOps: platformv1alpha1.ClusterGitOps{Engine: engine}}}
	if flux != nil {
		c.Status.Conditions = []metav1.Condition{*flux}
	}
	return c
}

// harness runs the controller's reconcile against fake clientsets and a real registry,
// refreshing the caches from the clientsets as the watches would.
type harness struct {
	t          *testing.T
	plinth     *fake.Clientset
	kube       *kubefake.Clientset
	artifacts  cache.Indexer
	registries cache.Indexer
	clusters   cache.Indexer
	configMaps cache.Indexer
	reg        *artifacttest.Registry
	kubectl    *fakeEngine
	flux       *fakeEngine
	recorder   *events.FakeRecorder
	clock      *testingclock.FakeClock
	c          *Controller
}

func newHarness(t *testing.T, art *gitopsv1alpha1.OCIArtifact, objects ...runtime.Object) *harness {
	t.Helper()
	reg := artifacttest.Start(t)
	registry := &gitopsv1alpha1.OCIRegistry{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "local"},
		Spec:       gitopsv1alpha1.OCIRegistrySpec{Endpoint: reg.Endpoint},
		Status:     gitopsv1alpha1.OCIRegistryStatus{Phase: gitopsv1alpha1.RegistryPhaseRunning},
	}
	plinthObjects := []runtime.Object{art, registry,
		cluster("east", platformv1alpha1.GitOpsEngineKubectl, nil),
		cluster("fluxy", platformv1alpha1.GitOpsEngineFlux, &metav1.Condition{Type: platformv1alpha1.ConditionFluxAvailable, Status: metav1.ConditionTrue, Reason: "FluxRunning"}),
		cluster("noflux", platformv1alpha1.GitOpsEngineFlux, &metav1.Condition{Type: platformv1alpha1.ConditionFluxAvailable, Status: metav1.ConditionFalse, Reason: "FluxNotInstalled", Message: "Flux's CRDs are not installed"}),
	}
	var kubeObjects []runtime.Object
	for _, o := range objects {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			kubeObjects = append(kubeObjects, cm)
		} else {
			plinthObjects = append(plinthObjects, o)
		}
	}
	plinth := fake.NewSimpleClientset(plinthObjects...) // NewClientset needs apply configurations, which Plinth does not generate
	looptest.ResourceVersions(&plinth.Fake, plinth.Tracker(), gitopsv1alpha1.SchemeGroupVersion.WithResource("ociartifacts"))
	kube := kubefake.NewSimpleClientset(kubeObjects...)
	pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
	gitops, platform := pf.Gitops().V1alpha1(), pf.Platform().V1alpha1()
	h := &harness{
		t: t, plinth: plinth, kube: kube, reg: reg,
		artifacts: gitops.OCIArtifacts().Informer().GetIndexer(), registries: gitops.OCIRegistries().Informer().GetIndexer(),
		clusters: platform.Clusters().Informer().GetIndexer(), configMaps: kf.Core().V1().ConfigMaps().Informer().GetIndexer(),
		kubectl: &fakeEngine{name: "Kubectl", ready: true}, flux: &fakeEngine{name: "Flux", flux: true, ready: true},
		recorder: events.NewFakeRecorder(100), clock: testingclock.NewFakeClock(start),
	}
	c, err := NewController(plinth, h.recorder, gitops.OCIArtifacts(), gitops.OCIRegistries(), platform.Clusters(), kf.Core().V1().ConfigMaps(),
		map[platformv1alpha1.GitOpsEngine]delivery.Engine{platformv1alpha1.GitOpsEngineKubectl: h.kubectl, platformv1alpha1.GitOpsEngineFlux: h.flux},
		Options{Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	for _, o := range plinthObjects {
		switch o := o.(type) {
		case *gitopsv1alpha1.OCIArtifact:
			h.add(h.artifacts, o)
		case *gitopsv1alpha1.OCIRegistry:
			h.add(h.registries, o)
		case *platformv1alpha1.Cluster:
			h.add(h.clusters, o)
		}
	}
	for _, o := range kubeObjects {
		h.add(h.configMaps, o)
	}
	return h
}

func (h *harness) add(indexer cache.Indexer, obj interface{}) {
	h.t.Helper()
	if err := indexer.Add(obj); err != nil {
		h.t.Fatal(err)
	}
}

// reconcile runs one reconcile of team-a/app and refreshes the artifact's cache.
func (h *harness) reconcile() error {
	h.t.Helper()
	err := h.c.reconcile(context.Background(), appKey)
	h.refresh()
	return err
}

// step is a reconcile that must succeed.
func (h *harness) step() *gitopsv1alpha1.OCIArtifact {
	h.t.Helper()
	if err := h.reconcile(); err != nil {
		h.t.Fatalf("reconcile: %v", err)
	}
	return h.get()
}

// refused is a reconcile that must end Stalled: the push is refused until something changes,
// and not retried.
func (h *harness) refused() *gitopsv1alpha1.OCIArtifact {
	h.t.Helper()
	if err := h.reconcile(); !errkind.IsStalled(err) {
		h.t.Fatalf("reconcile: %v, want a Stalled error", err)
	}
	return h.get()
}

func (h *harness) refresh() {
	h.t.Helper()
	art, err := h.plinth.GitopsV1alpha1().OCIArtifacts("team-a").Get(context.Background(), "app", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if obj, ok, _ := h.artifacts.GetByKey("team-a/app"); ok {
			_ = h.artifacts.Delete(obj)
		}
		return
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.artifacts.Update(art); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get() *gitopsv1alpha1.OCIArtifact {
	h.t.Helper()
	art, err := h.plinth.GitopsV1alpha1().OCIArtifacts("team-a").Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return art
}

// edit changes the stored artifact as a user would; a spec change moves the generation.
func (h *harness) edit(specChange bool, change func(*gitopsv1alpha1.OCIArtifact)) {
	h.t.Helper()
	art := h.get()
	change(art)
	if specChange {
		art.Generation++
	}
	if _, err := h.plinth.GitopsV1alpha1().OCIArtifacts("team-a").Update(context.Background(), art, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.refresh()
}

// setRegistry changes the registry's status in the cache, as its controller would.
func (h *harness) setRegistry(change func(*gitopsv1alpha1.OCIRegistry)) {
	h.t.Helper()
	obj, _, _ := h.registries.GetByKey("team-a/local")
	r := obj.(*gitopsv1alpha1.OCIRegistry).DeepCopy()
	change(r)
	if err := h.registries.Update(r); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) tags() []string {
	h.t.Helper()
	tags, err := artifact.Tags(context.Background(), h.reg.Endpoint, "team-a/app")
	if err != nil {
		h.t.Fatal(err)
	}
	sort.Strings(tags)
	return tags
}

func (h *harness) events() []string {
	var out []string
	for len(h.recorder.Events) > 0 {
		out = append(out, <-h.recorder.Events)
	}
	return out
}

func expectCondition(t *testing.T, art *gitopsv1alpha1.OCIArtifact, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(art.Status.Conditions, condType)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("%s = %+v, want %s %s (conditions %+v)", condType, c, status, reason, art.Status.Conditions)
	}
	return c
}

func TestPushesAndDelivers(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	art := h.step()

	if !slices.Contains(art.Finalizers, gitopsv1alpha1.ArtifactFinalizer) {
		t.Errorf("finalizers %v", art.Finalizers)
	}
	st := art.Status
	tagged, found, err := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0")
	if err != nil || !found {
		t.Fatalf("tag 1.0.0 in the registry: %v %v", found, err)
	}
	digest, revision := tagged.Digest, tagged.Revision
	if st.Digest != digest || st.Revision != revision || !strings.HasPrefix(revision, "1.0.0@sha256:") {
		t.Errorf("status digest %s revision %s, registry %s %s", st.Digest, st.Revision, digest, revision)
	}
	if st.RegistryEndpoint != h.reg.Endpoint || st.URL != "oci://"+h.reg.Endpoint+"/team-a/app:1.0.0" || st.PushedVersion != "1.0.0" ||
		st.PushedAt == nil || !st.PushedAt.Time.Equal(start) || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, gitopsv1alpha1.ReasonPushed)
	expectCondition(t, art, gitopsv1alpha1.ConditionDelivered, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)

	// Flux's own client pulls what was pushed: one file per manifest.
	dir := t.TempDir()
	meta, err := oci.NewClient(nil).Pull(context.Background(), h.reg.Endpoint+"/team-a/app:1.0.0", dir)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Source != "plinth.dev/ociartifact/team-a/app" || meta.Created != start.Format(time.RFC3339) {
		t.Errorf("pulled metadata %+v", meta)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"000-deployment-web.yaml", "001-configmap-web.yaml"}; !slices.Equal(names, want) {
		t.Errorf("pulled files %v, want %v", names, want)
	}

	delivered := h.kubectl.took()
	if len(delivered) != 1 {
		t.Fatalf("delivered %d times", len(delivered))
	}
	d := delivered[0]
	if d.Namespace != "team-a" || d.Name != "app" || d.URL != "oci://"+h.reg.Endpoint+"/team-a/app" || d.Tag != "1.0.0" || d.Digest != digest ||
		len(d.Objects) != 2 || d.Objects[0].GetKind() != "Deployment" {
		t.Errorf("delivered %+v", d)
	}
	target := h.kubectl.lastTarget()
	if target.Cluster.Name != "east" || target.Spec.Path != "./" || target.Spec.Prune == nil || !*target.Spec.Prune || target.Previous != nil {
		t.Errorf("target %+v", target)
	}
	want := []gitopsv1alpha1.ArtifactTargetStatus{{Cluster: "east", Engine: "Kubectl", Prune: ptr.To(true), Ready: true, Revision: "1.0.0@" + digest, Message: "Applied."}}
	if diff := cmp.Diff(want, st.Targets); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if evs := h.events(); len(evs) != 2 || !strings.HasPrefix(evs[0], "Normal Pushed Version 1.0.0 is pushed") || !strings.HasPrefix(evs[1], "Normal Ready") {
		t.Errorf("events %v", evs)
	}

	// Once pushed, a reconcile does not push again: the same digest, no write, no event.
	h.plinth.ClearActions()
	art = h.step()
	if art.Status.Digest != digest {
		t.Errorf("digest moved to %s", art.Status.Digest)
	}
	for _, a := range h.plinth.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if evs := h.events(); len(evs) != 0 {
		t.Errorf("events %v", evs)
	}
}

func TestRegistryNotRunning(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.setRegistry(func(r *gitopsv1alpha1.OCIRegistry) {
		r.Status.Phase, r.Status.LastError = gitopsv1alpha1.RegistryPhaseError, "the port is taken"
	})
	art := h.refused()
	c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonRegistryNotReady)
	if c.Message != "OCIRegistry local is not running (phase Error): The port is taken." {
		t.Errorf("message %q", c.Message)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, gitopsv1alpha1.ReasonRegistryNotReady)
	if tags := h.tags(); len(tags) != 0 || len(h.kubectl.took()) != 0 {
		t.Errorf("pushed %v or delivered with the registry not running", tags)
	}
	if evs := h.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning RegistryNotReady") {
		t.Errorf("events %v", evs)
	}

	h.setRegistry(func(r *gitopsv1alpha1.OCIRegistry) {
		r.Status.Phase, r.Status.LastError = gitopsv1alpha1.RegistryPhaseRunning, ""
	})
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	if tags := h.tags(); !slices.Equal(tags, []string{"1.0.0"}) {
		t.Errorf("tags %v", tags)
	}

	if err := h.registries.Delete(&gitopsv1alpha1.OCIRegistry{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "local"}}); err != nil {
		t.Fatal(err)
	}
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Version = "1.1.0"; a.Spec.Tag = "" })
	art = h.refused()
	if c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonRegistryNotReady); c.Message != "OCIRegistry local does not exist." {
		t.Errorf("message %q", c.Message)
	}
}

// The registry's object says Running but it does not answer (it is restarting): the status
// says so, the reconcile fails to be retried with backoff, and the next one once it is back
// pushes.
func TestRegistryDownDuringAReconcile(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.reg.Stop()
	if err := h.reconcile(); err == nil {
		t.Fatal("a reconcile with the registry down succeeded")
	}
	art := h.get()
	c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonRegistryUnavailable)
	if !strings.HasPrefix(c.Message, "Reading oci://"+h.reg.Endpoint+"/team-a/app:1.0.0 from OCIRegistry local failed: ") {
		t.Errorf("message %q", c.Message)
	}
	if len(h.kubectl.took()) != 0 {
		t.Error("delivered without a push")
	}
	h.reg.Restart()
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	if art.Status.Digest == "" {
		t.Error("not pushed after the registry came back")
	}
}

// A push the registry fails (it is going down) is retried with backoff: the status says so,
// and the next reconcile pushes.
func TestPushFailureIsRetried(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.reg.FailWrites(true)
	if err := h.reconcile(); err == nil {
		t.Fatal("a failed push did not fail the reconcile")
	}
	art := h.get()
	c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonPushFailed)
	if !strings.HasPrefix(c.Message, "Pushing oci://"+h.reg.Endpoint+"/team-a/app:1.0.0 to OCIRegistry local failed: ") {
		t.Errorf("message %q", c.Message)
	}
	if art.Status.Digest != "" || len(h.kubectl.took()) != 0 {
		t.Error("recorded or delivered a failed push")
	}
	h.reg.FailWrites(false)
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
}

func configMapArtifact(t *testing.T) *gitopsv1alpha1.OCIArtifact {
	art := newArtifact(t)
	art.Spec.Manifests = nil
	art.Spec.ConfigMapRef = &gitopsv1alpha1.LocalObjectReference{Name: "app-manifests"}
	return art
}

func manifestsConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app-manifests", ResourceVersion: "1"}, Data: data}
}

func TestInvalidConfigMapManifestsAreNotPushed(t *testing.T) {
	bad := manifestsConfigMap(map[string]string{
		"app.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n---\napiVersion: v1\nmetadata:\n  name: settings\n",
		"notes.txt": "not a manifest",
	})
	h := newHarness(t, configMapArtifact(t), bad)
	art := h.refused()
	c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonInvalidManifests)
	if !strings.Contains(c.Message, "app.yaml#2") || !strings.Contains(c.Message, "kind") || !strings.HasPrefix(c.Message, "ConfigMap app-manifests: ") {
		t.Errorf("message %q does not name the file and document", c.Message)
	}
	if tags := h.tags(); len(tags) != 0 || len(h.kubectl.took()) != 0 {
		t.Errorf("pushed %v or delivered invalid manifests", tags)
	}

	// The ConfigMap fixed: its manifest files are pushed as they are.
	good := bad.DeepCopy()
	good.ResourceVersion = "2"
	good.Data["app.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
	if err := h.configMaps.Update(good); err != nil {
		t.Fatal(err)
	}
	if keys := h.c.byIndex(ArtifactsByConfigMap, configMapKey)(good); len(keys) != 1 || keys[0] != appKey {
		t.Errorf("the ConfigMap wakes %v", keys)
	}
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	dir := t.TempDir()
	if _, err := oci.NewClient(nil).Pull(context.Background(), h.reg.Endpoint+"/team-a/app:1.0.0", dir); err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(dir, "app.yaml"))
	if err != nil || string(content) != good.Data["app.yaml"] {
		t.Errorf("app.yaml pulled as %q, %v", content, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); !os.IsNotExist(err) {
		t.Error("a file that is not a manifest was packaged")
	}
	if d := h.kubectl.took(); len(d) != 1 || len(d[0].Objects) != 2 || d[0].Objects[1].File != "app.yaml#2" {
		t.Errorf("delivered %+v", d)
	}
}

func TestMissingConfigMap(t *testing.T) {
	h := newHarness(t, configMapArtifact(t))
	art := h.refused()
	if c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonInvalidManifests); !strings.HasPrefix(c.Message, "ConfigMap app-manifests does not exist.") {
		t.Errorf("message %q", c.Message)
	}
}

// A pushed version never changes: new content under the same version is refused and nothing of
// it is pushed or delivered, while what was delivered stays.
func TestVersionImmutable(t *testing.T) {
	cm := manifestsConfigMap(map[string]string{"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: one\n"})
	h := newHarness(t, configMapArtifact(t), cm)
	art := h.step()
	pushed := art.Status
	h.kubectl.took()
	h.events()

	changed := cm.DeepCopy()
	changed.ResourceVersion = "2"
	changed.Data["app.yaml"] = strings.Replace(changed.Data["app.yaml"], "one", "two", 1)
	if err := h.configMaps.Update(changed); err != nil {
		t.Fatal(err)
	}
	art = h.refused()
	c := expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, gitopsv1alpha1.ReasonVersionImmutable)
	if !strings.Contains(c.Message, "Version 1.0.0 is already pushed to oci://"+h.reg.Endpoint+"/team-a/app:1.0.0 with other content") {
		t.Errorf("message %q", c.Message)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, gitopsv1alpha1.ReasonVersionImmutable)
	if tagged, _, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); tagged.Digest != pushed.Digest {
		t.Errorf("the tag moved to %s", tagged.Digest)
	}
	if len(h.kubectl.took()) != 0 {
		t.Error("the new content was delivered")
	}
	if art.Status.Digest != pushed.Digest || !cmp.Equal(art.Status.Targets, pushed.Targets) {
		t.Errorf("the pushed version's status changed: %+v", art.Status)
	}
	if evs := h.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning VersionImmutable") {
		t.Errorf("events %v", evs)
	}

	// The new content as a new version is pushed; latest may move.
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Version, a.Spec.Tag = "1.1.0", "" })
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Version, a.Spec.Tag = "latest", "" })
	h.step()
	again := changed.DeepCopy()
	again.ResourceVersion = "3"
	again.Data["app.yaml"] = strings.Replace(again.Data["app.yaml"], "two", "three", 1)
	if err := h.configMaps.Update(again); err != nil {
		t.Fatal(err)
	}
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	if tagged, _, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "latest"); tagged.Digest != art.Status.Digest {
		t.Errorf("latest holds %s, want %s", tagged.Digest, art.Status.Digest)
	}
}

// The same content found under the tag (pushed before the status said so) is adopted, not
// pushed again.
func TestAdoptsTheSamePush(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	digest := h.step().Status.Digest
	h.edit(false, func(a *gitopsv1alpha1.OCIArtifact) { a.Status = gitopsv1alpha1.OCIArtifactStatus{} })
	if _, err := h.plinth.GitopsV1alpha1().OCIArtifacts("team-a").UpdateStatus(context.Background(), h.get(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.refresh()
	h.clock.Step(time.Minute)
	h.events()
	art := h.step()
	if art.Status.Digest != digest {
		t.Errorf("pushed again: digest %s, was %s", art.Status.Digest, digest)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	// Told as what it is, not as a push.
	evs := h.events()
	if !slices.ContainsFunc(evs, func(e string) bool {
		return strings.HasPrefix(e, "Normal Adopted Version 1.0.0 was found in oci://") && strings.HasSuffix(e, "adopted, not pushed again.")
	}) || slices.ContainsFunc(evs, func(e string) bool { return strings.HasPrefix(e, "Normal Pushed") }) {
		t.Errorf("events %v, want Adopted and no Pushed", evs)
	}
}

// Two artifacts of one repository take turns from the lookup to the retention: a push waits
// while another holds the repository.
func TestPushWaitsForTheRepository(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	unlock := h.c.repositories.lock(h.reg.Endpoint + "/team-a/app")
	done := make(chan error)
	go func() { done <- h.c.reconcile(context.Background(), appKey) }()
	select {
	case err := <-done:
		t.Fatalf("pushed while the repository was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if tags := h.tags(); len(tags) != 0 {
		t.Errorf("tags %v while the repository was held", tags)
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if tags := h.tags(); !slices.Equal(tags, []string{"1.0.0"}) {
		t.Errorf("tags %v", tags)
	}
}

func TestKeyedMutex(t *testing.T) {
	var k keyedMutex
	unlockA := k.lock("a")
	unlockB := k.lock("b") // another key does not wait
	got := make(chan struct{})
	go func() {
		unlock := k.lock("a")
		close(got)
		unlock()
	}()
	select {
	case <-got:
		t.Fatal("a held key was locked again")
	case <-time.After(100 * time.Millisecond):
	}
	unlockA()
	<-got
	unlockB()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.locks) != 0 {
		t.Errorf("%d keys kept after their last unlock", len(k.locks))
	}
}

// A delivery gets operationTimeout and 100 ms per object, so that large artifacts are not cut
// off on every attempt.
func TestDeliveryTimeoutGrowsWithTheObjects(t *testing.T) {
	if got := deliveryTimeout(200); got != 50*time.Second {
		t.Errorf("200 objects get %s, want 50s", got)
	}
	h := newHarness(t, newArtifact(t))
	h.step()
	if got := h.kubectl.timeout; got <= operationTimeout || got > operationTimeout+200*time.Millisecond {
		t.Errorf("a delivery of 2 objects got %s, want 30.2s", got)
	}
}

func TestRetention(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.setRegistry(func(r *gitopsv1alpha1.OCIRegistry) {
		r.Spec.Retention = &gitopsv1alpha1.RetentionPolicy{KeepVersions: 2}
	})
	h.step()
	for _, v := range []string{"1.9.0", "1.10.0", "1.11.0"} {
		h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Version, a.Spec.Tag = v, "" })
		h.step()
	}
	if tags := h.tags(); !slices.Equal(tags, []string{"1.10.0", "1.11.0"}) {
		t.Errorf("tags %v, want the newest two", tags)
	}
	evs := h.events()
	for _, want := range []string{"Normal Pruned Deleted 1.0.0 from team-a/app, keeping the newest 2 versions.", "Normal Pruned Deleted 1.9.0 from team-a/app, keeping the newest 2 versions."} {
		if !slices.Contains(evs, want) {
			t.Errorf("no event %q in %v", want, evs)
		}
	}
	// A rollback to an older version keeps what was just pushed.
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Version, a.Spec.Tag = "1.2.0", "" })
	art := h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	if tags := h.tags(); !slices.Equal(tags, []string{"1.10.0", "1.11.0", "1.2.0"}) {
		t.Errorf("tags %v after the rollback", tags)
	}
}

// A reconcile woken right after a status write, before the informer shows it (a Kustomization's
// watch, a poll), starts from what the write returned: it neither takes the new version for a
// push whose status was lost (and adopts it, with an Adopted event) nor writes from the stale
// copy (a conflict).
func TestReconcilesFromItsOwnWrite(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.step()
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) {
		a.Spec.Version, a.Spec.Tag = "1.1.0", ""
		a.Spec.Manifests = []common.RawObject{raw(t, configMap("web", "bonjour"))}
	})
	h.events()
	if err := h.c.reconcile(context.Background(), appKey); err != nil {
		t.Fatal(err)
	}
	pushed := h.get()
	h.plinth.ClearActions()
	if err := h.c.reconcile(context.Background(), appKey); err != nil { // the cache still holds 1.1.0 unpushed
		t.Fatal(err)
	}
	for _, a := range h.plinth.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if evs := h.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal Pushed Version 1.1.0 is pushed") {
		t.Errorf("events %v, want the one push", evs)
	}
	if art := h.get(); art.Status.Digest != pushed.Status.Digest || art.ResourceVersion != pushed.ResourceVersion {
		t.Errorf("status %+v, was %+v", art.Status, pushed.Status)
	}
}

// Two versions in quick succession: the second arrives while the first is still being
// delivered; the newer one is delivered and both are in the registry.
func TestTwoVersionsInQuickSuccession(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.kubectl.ready = false
	art := h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionDelivered, metav1.ConditionFalse, gitopsv1alpha1.ReasonDeliveryInProgress)
	first := art.Status.Digest
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) {
		a.Spec.Version, a.Spec.Tag = "1.1.0", ""
		a.Spec.Manifests = []common.RawObject{raw(t, configMap("web", "bonjour"))}
	})
	h.kubectl.ready = true
	art = h.step()
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
	if art.Status.PushedVersion != "1.1.0" || art.Status.Digest == first || art.Status.Targets[0].Revision != "1.1.0@"+art.Status.Digest {
		t.Errorf("status %+v", art.Status)
	}
	d := h.kubectl.took()
	if last := d[len(d)-1]; last.Tag != "1.1.0" || len(last.Objects) != 1 {
		t.Errorf("last delivered %+v", last)
	}
	if h.kubectl.lastTarget().Previous == nil {
		t.Error("the second delivery did not get the first's status")
	}
	if tags := h.tags(); !slices.Equal(tags, []string{"1.0.0", "1.1.0"}) {
		t.Errorf("tags %v", tags)
	}
}

func TestTargetsOfEveryKind(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "fluxy"}, {Cluster: "noflux"}, {Cluster: "nowhere"}}
	h := newHarness(t, art)
	art = h.step()
	got := map[string]gitopsv1alpha1.ArtifactTargetStatus{}
	for _, s := range art.Status.Targets {
		got[s.Cluster] = s
	}
	if s := got["east"]; !s.Ready || s.Engine != "Kubectl" {
		t.Errorf("east %+v", s)
	}
	if s := got["fluxy"]; !s.Ready || s.Engine != "Flux" || s.OCIRepository != "flux-system/team-a-app" {
		t.Errorf("fluxy %+v", s)
	}
	if s := got["noflux"]; s.Ready || s.Engine != "Flux" || s.Message != "Flux is not available on cluster noflux: Flux's CRDs are not installed." {
		t.Errorf("noflux %+v", s)
	}
	if s := got["nowhere"]; s.Ready || s.Message != "Cluster nowhere is not registered." {
		t.Errorf("nowhere %+v", s)
	}
	if names := []string{art.Status.Targets[0].Cluster, art.Status.Targets[3].Cluster}; !slices.Equal(names, []string{"east", "nowhere"}) {
		t.Errorf("targets not in spec order: %v", art.Status.Targets)
	}
	if len(h.flux.took()) != 1 || len(h.kubectl.took()) != 1 {
		t.Error("an engine was asked for a cluster it does not serve")
	}
	// Not in progress: waiting for Flux, which the reason says and a warning tells.
	c := expectCondition(t, art, gitopsv1alpha1.ConditionDelivered, metav1.ConditionFalse, gitopsv1alpha1.ReasonFluxNotAvailable)
	if !strings.HasPrefix(c.Message, "2 of 4 targets applied revision 1.0.0@sha256:") || !strings.HasSuffix(c.Message, "Cluster noflux: Flux is not available on cluster noflux: Flux's CRDs are not installed.") {
		t.Errorf("message %q", c.Message)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, gitopsv1alpha1.ReasonFluxNotAvailable)
	if evs := h.events(); !slices.ContainsFunc(evs, func(e string) bool { return strings.HasPrefix(e, "Warning FluxNotAvailable ") }) {
		t.Errorf("events %v, want a FluxNotAvailable warning", evs)
	}

	// Each Cluster wakes the artifacts that target it.
	for _, name := range []string{"east", "nowhere"} {
		if keys := h.c.byIndex(ArtifactsByCluster, clusterKey)(cluster(name, "", nil)); len(keys) != 1 || keys[0] != appKey {
			t.Errorf("cluster %s wakes %v", name, keys)
		}
	}
}

// A target naming a Cluster that is not registered is not in progress: ClusterNotFound, a
// warning.
func TestUnregisteredCluster(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "nowhere"}}
	h := newHarness(t, art)
	art = h.step()
	c := expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, gitopsv1alpha1.ReasonClusterNotFound)
	if !strings.HasSuffix(c.Message, "Cluster nowhere: Cluster nowhere is not registered.") {
		t.Errorf("message %q", c.Message)
	}
	if evs := h.events(); !slices.ContainsFunc(evs, func(e string) bool { return strings.HasPrefix(e, "Warning ClusterNotFound ") }) {
		t.Errorf("events %v, want a ClusterNotFound warning", evs)
	}
}

// Polls while a target is on its way do not deliver again to the targets that applied the
// version, until the resync period passes or their Cluster changes.
func TestPollsSkipTargetsAtRest(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "fluxy"}}
	h := newHarness(t, art)
	h.flux.ready = false
	h.step()
	if len(h.kubectl.took()) != 1 || len(h.flux.took()) != 1 {
		t.Fatal("the first reconcile did not deliver to both")
	}
	art = h.step()
	if len(h.kubectl.took()) != 0 || len(h.flux.took()) != 1 {
		t.Error("a poll delivered again to the target at rest, or not to the one on its way")
	}
	if !art.Status.Targets[0].Ready {
		t.Errorf("the skipped target lost its status: %+v", art.Status.Targets[0])
	}

	h.clock.Step(DefaultResyncPeriod)
	h.step()
	if len(h.kubectl.took()) != 1 {
		t.Error("the resync did not deliver again")
	}
	h.step()
	if len(h.kubectl.took()) != 0 {
		t.Error("delivered again right after the resync")
	}
	east := cluster("east", platformv1alpha1.GitOpsEngineKubectl, nil)
	east.Generation = 2
	if err := h.clusters.Update(east); err != nil {
		t.Fatal(err)
	}
	h.step()
	if len(h.kubectl.took()) != 1 {
		t.Error("a Cluster change did not deliver again")
	}
	h.edit(false, func(a *gitopsv1alpha1.OCIArtifact) {
		a.Annotations = map[string]string{gitopsv1alpha1.ReconcileRequestAnnotation: "now"}
	})
	h.step()
	if len(h.kubectl.took()) != 1 {
		t.Error("a reconcile request did not deliver again")
	}
}

// A Flux target that Flux reports failing (not progressing) is not polled: the artifact is
// looked at again with backoff from twice the poll interval up to the Cluster's Flux interval,
// without failing the reconcile; a target on its way again is polled, and the backoff starts
// over.
func TestStalledTargetBacksOff(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "fluxy"}}
	h := newHarness(t, art)
	fluxy := cluster("fluxy", platformv1alpha1.GitOpsEngineFlux, &metav1.Condition{Type: platformv1alpha1.ConditionFluxAvailable, Status: metav1.ConditionTrue})
	fluxy.Spec.GitOps.FluxInterval = &metav1.Duration{Duration: 20 * time.Second}
	if err := h.clusters.Update(fluxy); err != nil {
		t.Fatal(err)
	}
	var delays []time.Duration
	h.c.after = func(key cache.ObjectName, d time.Duration) { delays = append(delays, d) }
	h.flux.ready, h.flux.stalled = false, true
	for range 5 {
		art = h.step() // no error: Flux retries by itself
	}
	want := []time.Duration{4 * time.Second, 8 * time.Second, 16 * time.Second, 20 * time.Second, 20 * time.Second}
	if !slices.Equal(delays, want) {
		t.Errorf("looked at again after %v, want %v", delays, want)
	}
	c := expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, gitopsv1alpha1.ReasonDeliveryFailed)
	if !strings.HasSuffix(c.Message, "Cluster fluxy: Kustomization flux-system/team-a-app is not ready (ReconciliationFailed): dry-run failed.") {
		t.Errorf("message %q", c.Message)
	}

	delays = nil
	h.flux.stalled = false // on its way again
	h.step()
	h.flux.stalled = true
	h.step()
	if want := []time.Duration{DefaultPollInterval, 4 * time.Second}; !slices.Equal(delays, want) {
		t.Errorf("looked at again after %v, want %v", delays, want)
	}
}

func TestDeliveryFailureIsRetried(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.kubectl.err = errors.New("applying Deployment shop/web failed: forbidden")
	if err := h.reconcile(); err == nil {
		t.Fatal("a failed delivery did not fail the reconcile")
	}
	art := h.get()
	expectCondition(t, art, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, gitopsv1alpha1.ReasonPushed)
	c := expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, gitopsv1alpha1.ReasonDeliveryFailed)
	if !strings.Contains(c.Message, "Cluster east: applying Deployment shop/web failed: forbidden") {
		t.Errorf("message %q", c.Message)
	}
}

func TestDroppedTargetIsRemoved(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "fluxy"}}
	h := newHarness(t, art)
	h.step()

	h.flux.removeErr = errors.New("cluster fluxy does not answer")
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Targets = a.Spec.Targets[:1] })
	if err := h.reconcile(); err == nil {
		t.Fatal("a failed removal did not fail the reconcile")
	}
	art = h.get()
	if len(art.Status.Targets) != 2 || art.Status.Targets[1].Ready ||
		art.Status.Targets[1].Message != "Removing the artifact from cluster fluxy failed: Cluster fluxy does not answer." {
		t.Errorf("targets %+v", art.Status.Targets)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionDelivered, metav1.ConditionFalse, gitopsv1alpha1.ReasonDeliveryFailed)

	h.flux.removeErr = nil
	art = h.step()
	if len(art.Status.Targets) != 1 || art.Status.Targets[0].Cluster != "east" {
		t.Errorf("targets %+v", art.Status.Targets)
	}
	if len(h.flux.removed) != 2 || h.flux.removed[1].OCIRepository != "flux-system/team-a-app" {
		t.Errorf("removed %+v", h.flux.removed)
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered)
}

// A Cluster that changes engines has the old engine's delivery removed before the new one's.
func TestEngineChange(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.step()
	if err := h.clusters.Update(cluster("east", platformv1alpha1.GitOpsEngineFlux,
		&metav1.Condition{Type: platformv1alpha1.ConditionFluxAvailable, Status: metav1.ConditionTrue})); err != nil {
		t.Fatal(err)
	}
	art := h.step()
	if len(h.kubectl.removed) != 1 || len(h.flux.took()) != 1 || h.flux.lastTarget().Previous != nil {
		t.Errorf("removed by Kubectl %d, Flux target %+v", len(h.kubectl.removed), h.flux.lastTarget())
	}
	// The workloads are handed over, not deleted: Flux applies them again as its own.
	if !h.kubectl.removeOpts[0].Keep {
		t.Error("the Kubectl delivery was removed with its objects")
	}
	if art.Status.Targets[0].Engine != "Flux" {
		t.Errorf("targets %+v", art.Status.Targets)
	}

	// And back: the Kustomization goes without pruning what Kubectl applies next.
	if err := h.clusters.Update(cluster("east", platformv1alpha1.GitOpsEngineKubectl, nil)); err != nil {
		t.Fatal(err)
	}
	art = h.step()
	if len(h.flux.removeOpts) != 1 || !h.flux.removeOpts[0].Keep || art.Status.Targets[0].Engine != "Kubectl" {
		t.Errorf("removed by Flux with %+v, targets %+v", h.flux.removeOpts, art.Status.Targets)
	}
}

// A target dropped from spec is removed with the prune of its last delivery: prune false
// leaves what it applied; a status written before prune was recorded prunes, the default.
func TestDroppedTargetKeepsItsPrune(t *testing.T) {
	for name, c := range map[string]struct {
		prune     *bool
		forget    bool
		wantPrune bool
	}{
		"prune false": {prune: ptr.To(false), wantPrune: false},
		"prune true":  {prune: ptr.To(true), wantPrune: true},
		"unrecorded":  {prune: ptr.To(false), forget: true, wantPrune: true},
	} {
		t.Run(name, func(t *testing.T) {
			art := newArtifact(t)
			art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "fluxy", Prune: c.prune}}
			h := newHarness(t, art)
			art = h.step()
			if got := art.Status.Targets[1].Prune; got == nil || *got != *c.prune {
				t.Fatalf("recorded prune %v, want %v", got, *c.prune)
			}
			if c.forget {
				art.Status.Targets[1].Prune = nil
				if _, err := h.plinth.GitopsV1alpha1().OCIArtifacts("team-a").UpdateStatus(context.Background(), art, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				h.refresh()
			}
			h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Targets = a.Spec.Targets[:1] })
			h.step()
			if len(h.flux.removeTargets) != 1 {
				t.Fatalf("removed %d times", len(h.flux.removeTargets))
			}
			if got := h.flux.removeTargets[0].Spec.Prune; got == nil || *got != c.wantPrune || h.flux.removeOpts[0].Keep {
				t.Errorf("removed with prune %v, options %+v, want prune %v", got, h.flux.removeOpts[0], c.wantPrune)
			}
		})
	}
}

func TestReconcileRequest(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "fluxy"}}
	h := newHarness(t, art)
	h.step()
	h.edit(false, func(a *gitopsv1alpha1.OCIArtifact) {
		a.Annotations = map[string]string{gitopsv1alpha1.ReconcileRequestAnnotation: "2026-11-23T11:00:00Z"}
	})
	if !wakesArtifact(art, h.get()) {
		t.Error("a reconcile request does not wake the artifact")
	}
	art = h.step()
	if h.kubectl.lastTarget().ReconcileRequest != "2026-11-23T11:00:00Z" || h.flux.lastTarget().ReconcileRequest != "2026-11-23T11:00:00Z" {
		t.Error("the request was not passed to the engines")
	}
	if art.Status.LastHandledReconcileAt != "2026-11-23T11:00:00Z" {
		t.Errorf("lastHandledReconcileAt %q", art.Status.LastHandledReconcileAt)
	}
}

func TestReconcileRequestNotHandledByEveryTarget(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "nowhere"}}
	art.Annotations = map[string]string{gitopsv1alpha1.ReconcileRequestAnnotation: "r1"}
	h := newHarness(t, art)
	if got := h.step().Status.LastHandledReconcileAt; got != "" {
		t.Errorf("lastHandledReconcileAt %q although cluster nowhere did not handle it", got)
	}
}

// A new version of an artifact whose Flux targets applied an earlier one asks them, with an
// Automatic ReconciliationRequest, to reconcile now; once.
func TestAutomaticReconciliationRequest(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "fluxy"}}
	h := newHarness(t, art)
	h.step()
	if reqs := h.requests(); len(reqs) != 0 {
		t.Fatalf("a first delivery asked for a reconcile: %v", reqs)
	}

	h.flux.ready = false // Flux has not applied 1.1.0 yet
	h.edit(true, func(a *gitopsv1alpha1.OCIArtifact) { a.Spec.Version, a.Spec.Tag = "1.1.0", "" })
	art = h.step()
	reqs := h.requests()
	if len(reqs) != 1 {
		t.Fatalf("requests %v", reqs)
	}
	req := reqs[0]
	// Each target must report the pushed revision, as Flux names it (<tag>@<manifest digest>;
	// the tag defaults to the version), for the request to succeed.
	pushed := "1.1.0@" + art.Status.Digest
	if !strings.HasPrefix(art.Status.Digest, "sha256:") || !strings.HasSuffix(art.Status.URL, ":1.1.0") {
		t.Fatalf("pushed to %q as %q", art.Status.URL, art.Status.Digest)
	}
	want := []gitopsv1alpha1.ReconciliationTarget{
		{Cluster: "fluxy", Kind: "OCIRepository", Name: "team-a-app", Namespace: "flux-system", Revision: pushed},
		{Cluster: "fluxy", Kind: "Kustomization", Name: "team-a-app", Namespace: "flux-system", Revision: pushed},
	}
	if diff := cmp.Diff(want, req.Spec.Targets); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if req.Spec.Mode != gitopsv1alpha1.ReconciliationModeAutomatic || req.Name != requestName(art, art.Status.Revision) ||
		len(req.OwnerReferences) != 1 || req.OwnerReferences[0].UID != "uid-app" ||
		req.Labels[gitopsv1alpha1.LabelArtifact] != delivery.ArtifactLabel("team-a", "app") ||
		req.Annotations[reconciliationrequest.AnnotationArtifactGeneration] != strconv.FormatInt(art.Generation, 10) {
		t.Errorf("request %+v", req)
	}
	// Polls until Flux applies it do not ask again; after a restart, asking again finds it.
	creates := func() int {
		n := 0
		for _, a := range h.plinth.Actions() {
			if a.GetVerb() == "create" && a.GetResource().Resource == "reconciliationrequests" {
				n++
			}
		}
		h.plinth.ClearActions()
		return n
	}
	creates()
	h.step()
	if n := creates(); n != 0 {
		t.Errorf("a poll asked again (%d creates)", n)
	}
	h.c.forget(appKey)
	art = h.step()
	if n := creates(); n != 1 || len(h.requests()) != 1 {
		t.Errorf("after a restart: %d creates, requests %v", n, h.requests())
	}
	expectCondition(t, art, gitopsv1alpha1.ConditionDelivered, metav1.ConditionFalse, gitopsv1alpha1.ReasonDeliveryInProgress)
}

func (h *harness) requests() []gitopsv1alpha1.ReconciliationRequest {
	h.t.Helper()
	list, err := h.plinth.GitopsV1alpha1().ReconciliationRequests("team-a").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) markDeleted() {
	h.t.Helper()
	h.edit(false, func(a *gitopsv1alpha1.OCIArtifact) { a.DeletionTimestamp = &metav1.Time{Time: start} })
}

func TestDeletion(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "fluxy"}}
	h := newHarness(t, art)
	h.step()

	h.markDeleted()
	h.reg.Stop()
	if err := h.reconcile(); err == nil {
		t.Fatal("deleted with the registry down")
	}
	if !slices.Contains(h.get().Finalizers, gitopsv1alpha1.ArtifactFinalizer) {
		t.Fatal("the finalizer went before the tag")
	}
	h.reg.Restart()
	if err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if len(h.kubectl.removed) < 1 || len(h.flux.removed) < 1 {
		t.Errorf("removed from Kubectl %d, Flux %d", len(h.kubectl.removed), len(h.flux.removed))
	}
	if _, found, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); found {
		t.Error("the tag is still in the registry")
	}
	if art := h.get(); slices.Contains(art.Finalizers, gitopsv1alpha1.ArtifactFinalizer) {
		t.Errorf("finalizers %v", art.Finalizers)
	}
}

// A deletion that cannot remove everything within removalBound lets the artifact go and warns
// what is left: the targets that could not be removed and the tag.
func TestDeletionIsBounded(t *testing.T) {
	art := newArtifact(t)
	art.Spec.Targets = []gitopsv1alpha1.ArtifactTarget{{Cluster: "east"}, {Cluster: "fluxy"}}
	h := newHarness(t, art)
	h.step()
	h.markDeleted()
	h.flux.removeErr = errors.New("cluster fluxy does not answer")
	h.setRegistry(func(r *gitopsv1alpha1.OCIRegistry) { r.Status.Phase = gitopsv1alpha1.RegistryPhaseError })
	var delays []time.Duration
	h.c.after = func(_ cache.ObjectName, d time.Duration) { delays = append(delays, d) }

	h.clock.Step(90 * time.Second)
	if err := h.reconcile(); err == nil {
		t.Fatal("deleted before the bound although the removal failed")
	}
	if !slices.Contains(h.get().Finalizers, gitopsv1alpha1.ArtifactFinalizer) || !slices.Equal(delays, []time.Duration{30 * time.Second}) {
		t.Fatalf("finalizers %v, looked at again after %v", h.get().Finalizers, delays)
	}
	if len(h.kubectl.removed) != 1 {
		t.Error("a failing target kept the others from being removed")
	}
	h.events()

	h.clock.Step(30 * time.Second)
	if err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(h.get().Finalizers, gitopsv1alpha1.ArtifactFinalizer) {
		t.Fatal("the finalizer stayed past the bound")
	}
	evs := h.events()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning LeftBehind Removing the artifact failed for 2m0s since its deletion; it is deleted and leaves behind "+
		"Kustomization flux-system/team-a-app and OCIRepository flux-system/team-a-app on cluster fluxy, tag oci://") {
		t.Errorf("events %v", evs)
	}
}

func TestDeletionWaitsForRemoval(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.step()
	h.markDeleted()
	h.kubectl.removeErr = errors.New("cluster east does not answer")
	if err := h.reconcile(); err == nil {
		t.Fatal("deleted although the removal failed")
	}
	art := h.get()
	if !slices.Contains(art.Finalizers, gitopsv1alpha1.ArtifactFinalizer) || !strings.Contains(art.Status.Targets[0].Message, "does not answer") {
		t.Errorf("finalizers %v, targets %+v", art.Finalizers, art.Status.Targets)
	}
	if _, found, _ := artifact.Lookup(context.Background(), h.reg.Endpoint, "team-a/app", "1.0.0"); !found {
		t.Error("the tag went before the targets")
	}
}

// Deleting an artifact never pushed, or whose registry is gone, needs nothing from a registry.
func TestDeletionWithoutAPush(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	h.setRegistry(func(r *gitopsv1alpha1.OCIRegistry) { r.Status.Phase = gitopsv1alpha1.RegistryPhaseProvisioning })
	h.refused()
	h.markDeleted()
	if err := h.reconcile(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(h.get().Finalizers, gitopsv1alpha1.ArtifactFinalizer) {
		t.Error("the finalizer stayed")
	}
}

func TestWakes(t *testing.T) {
	art := &gitopsv1alpha1.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	status := art.DeepCopy()
	status.Status.Digest = "sha256:x"
	if wakesArtifact(art, status) {
		t.Error("a status write wakes the artifact")
	}
	spec := art.DeepCopy()
	spec.Generation = 2
	if !wakesArtifact(art, spec) {
		t.Error("a spec change does not wake the artifact")
	}

	probed := cluster("east", "", nil)
	later := probed.DeepCopy()
	later.Status.LastProbeTime = &metav1.Time{Time: start}
	if wakesOnCluster(probed, later) {
		t.Error("a probe time wakes the artifacts")
	}
	withFlux := later.DeepCopy()
	withFlux.Status.Conditions = []metav1.Condition{{Type: platformv1alpha1.ConditionFluxAvailable, Status: metav1.ConditionTrue}}
	if !wakesOnCluster(later, withFlux) {
		t.Error("Flux becoming available does not wake the artifacts")
	}

	reg := &gitopsv1alpha1.OCIRegistry{}
	running := reg.DeepCopy()
	running.Status.Phase = gitopsv1alpha1.RegistryPhaseRunning
	if !wakesOnRegistry(reg, running) || wakesOnRegistry(running, running.DeepCopy()) {
		t.Error("registry wakes")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"}}
	if wakesOnConfigMap(cm, cm.DeepCopy()) {
		t.Error("a resync of a ConfigMap wakes the artifacts")
	}
}

func TestRegistryWakesItsArtifacts(t *testing.T) {
	h := newHarness(t, newArtifact(t))
	keys := h.c.byIndex(ArtifactsByRegistry, registryKey)(&gitopsv1alpha1.OCIRegistry{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "local"}})
	if len(keys) != 1 || keys[0] != appKey {
		t.Errorf("keys %v", keys)
	}
	if keys := h.c.byIndex(ArtifactsByRegistry, registryKey)(&gitopsv1alpha1.OCIRegistry{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "local"}}); len(keys) != 0 {
		t.Errorf("another namespace's registry wakes %v", keys)
	}
}

func TestRequestName(t *testing.T) {
	art := &gitopsv1alpha1.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 60) + "-b", UID: "u"}}
	name := requestName(art, "1.0.0@sha256:x")
	if len(name) > 63 || name == requestName(art, "1.1.0@sha256:y") {
		t.Errorf("name %q", name)
	}
}
