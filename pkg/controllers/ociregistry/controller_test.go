package ociregistry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/random"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter/applytest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/oci/registry"
	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// freePort is a port nothing listens on, on 127.0.0.1 nor ::1.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if l6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
			_ = l6.Close()
		} else if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		return port
	}
	t.Fatal("no free port")
	return 0
}

func newRegistry(name string, port int, mutate ...func(*gitopsv1alpha1.OCIRegistry)) *gitopsv1alpha1.OCIRegistry {
	reg := &gitopsv1alpha1.OCIRegistry{
		ObjectMeta: metav1.ObjectMeta{Namespace: "plinth-system", Name: name, Generation: 1},
		Spec:       gitopsv1alpha1.OCIRegistrySpec{Endpoint: "localhost:" + strconv.Itoa(port), Port: int32(port)},
	}
	for _, m := range mutate {
		m(reg)
	}
	return reg
}

// fixture is a controller on a fake clientset, with real servers.
type fixture struct {
	t         *testing.T
	c         *Controller
	client    *fake.Clientset
	indexer   cache.Indexer
	recorder  *events.FakeRecorder
	root, vol string
	// full makes every server's storage check report a full disk.
	full atomic.Bool
	// unanswered makes every server's /v2/ probe fail as a slow one does, while it serves.
	unanswered atomic.Bool
	// died makes every server report that it stopped serving on its own.
	died atomic.Bool
}

func setup(t *testing.T, regs ...*gitopsv1alpha1.OCIRegistry) *fixture {
	t.Helper()
	f := &fixture{t: t, recorder: events.NewFakeRecorder(50), root: t.TempDir(), vol: filepath.Join(t.TempDir(), "registries")}
	var objs []runtime.Object
	for _, r := range regs {
		objs = append(objs, r)
	}
	f.client = applytest.Clientset(t, objs...)
	informer := informers.NewSharedInformerFactory(f.client, 0).Gitops().V1alpha1().OCIRegistries()
	f.indexer = informer.Informer().GetIndexer()
	c, err := NewController(f.client.GitopsV1alpha1(), f.recorder, informer,
		Options{DataRoots: []string{f.root}, VolumeDir: f.vol, ProbeInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c.newServer = func(cfg registry.Config) (Server, error) {
		srv, err := registry.New(cfg)
		if err != nil {
			return nil, err
		}
		return &faultyServer{Server: srv, full: &f.full, unanswered: &f.unanswered, died: &f.died}, nil
	}
	f.c = c
	f.refresh()
	t.Cleanup(func() { c.stopAll(klog.Background()) })
	return f
}

// faultyServer is a real server whose storage check can be made to find the disk full, whose
// probes can be made to go unanswered, and which can be made to report that it died.
type faultyServer struct {
	*registry.Server
	full, unanswered, died *atomic.Bool
}

func (s *faultyServer) Ready(ctx context.Context) error {
	if s.unanswered.Load() {
		return errors.New("the registry on " + s.Server.Endpoint() + " does not answer: context deadline exceeded")
	}
	return s.Server.Ready(ctx)
}

func (s *faultyServer) Err() error {
	if s.died.Load() {
		return errors.New("the registry on " + s.Server.Endpoint() + " stopped serving: accept: too many open files")
	}
	return s.Server.Err()
}

func (s *faultyServer) CheckStorage() error {
	if s.full.Load() {
		return &registry.StorageError{Dir: s.DataDir(), Full: true, Err: syscall.ENOSPC}
	}
	return s.Server.CheckStorage()
}

// refresh copies the clientset's objects into the informer's cache, as a watch would.
func (f *fixture) refresh() {
	f.t.Helper()
	list, err := f.client.GitopsV1alpha1().OCIRegistries("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, obj := range f.indexer.List() {
		_ = f.indexer.Delete(obj)
	}
	for i := range list.Items {
		if err := f.indexer.Add(&list.Items[i]); err != nil {
			f.t.Fatal(err)
		}
	}
}

// reconcile reconciles name and refreshes the cache with what it wrote.
func (f *fixture) reconcile(name string) {
	f.t.Helper()
	if err := f.c.reconcile(context.Background(), cache.NewObjectName("plinth-system", name)); err != nil {
		f.t.Fatalf("reconcile %s: %v", name, err)
	}
	f.refresh()
}

func (f *fixture) get(name string) *gitopsv1alpha1.OCIRegistry {
	f.t.Helper()
	reg, err := f.client.GitopsV1alpha1().OCIRegistries("plinth-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return reg
}

// expectEvents compares the events recorded so far with want ("Type Reason" each).
func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	var got []string
	for len(f.recorder.Events) > 0 {
		e := strings.Fields(<-f.recorder.Events)
		got = append(got, e[0]+" "+e[1])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		f.t.Errorf("events (-want +got):\n%s", diff)
	}
}

func expectPhase(t *testing.T, reg *gitopsv1alpha1.OCIRegistry, phase gitopsv1alpha1.RegistryPhase, reason, lastError string) {
	t.Helper()
	cond := apimeta.FindStatusCondition(reg.Status.Conditions, gitopsv1alpha1.ConditionReady)
	if reg.Status.Phase != phase || cond == nil || cond.Reason != reason || !strings.Contains(reg.Status.LastError, lastError) ||
		(lastError == "") != (reg.Status.LastError == "") {
		t.Fatalf("want phase %s, reason %s, lastError containing %q; got %+v", phase, reason, lastError, reg.Status)
	}
	if (cond.Status == metav1.ConditionTrue) != (phase == gitopsv1alpha1.RegistryPhaseRunning) {
		t.Errorf("Ready is %s in phase %s", cond.Status, phase)
	}
}

func answers(port int) bool {
	resp, err := http.Get("http://localhost:" + strconv.Itoa(port) + "/v2/")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// pushImage pushes a random image to ref with the credential of the registry this process runs
// there, as plinth-controller's own pushes do.
func pushImage(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := crane.Push(img, ref, crane.Insecure, crane.WithAuthFromKeychain(registryauth.Local)); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d.String()
}

func TestRunsARegistry(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port))
	f.reconcile("local")
	reg := f.get("local")
	expectPhase(t, reg, gitopsv1alpha1.RegistryPhaseRunning, gitopsv1alpha1.ReasonRunning, "")
	wantPath := filepath.Join(f.vol, "plinth-system-local")
	if reg.Status.URL != "http://localhost:"+strconv.Itoa(port) || reg.Status.StoragePath != wantPath || reg.Status.ObservedGeneration != 1 {
		t.Errorf("status: %+v", reg.Status)
	}
	if len(reg.Finalizers) != 1 || reg.Finalizers[0] != gitopsv1alpha1.RegistryFinalizer {
		t.Errorf("finalizers: %v", reg.Finalizers)
	}
	f.expectEvents("Normal Provisioning", "Normal Running")
	ref := "localhost:" + strconv.Itoa(port) + "/plinth/app:1.0.0"
	pushImage(t, ref)
	if _, err := os.Stat(filepath.Join(wantPath, "docker", "registry", "v2", "repositories", "plinth", "app")); err != nil {
		t.Errorf("the pushed repository is not in the volume: %v", err)
	}

	// A probe that finds it serving writes nothing and records nothing.
	rv := reg.ResourceVersion
	f.reconcile("local")
	if f.get("local").ResourceVersion != rv {
		t.Error("a probe that found nothing new wrote the status")
	}
	f.expectEvents()
}

// TestRestartsARegistryThatStoppedAnswering: a server stopped behind the controller's back
// (its Err is nil, its /v2/ does not answer) is Error at once and started again after
// maxFailedProbes unanswered probes in a row, with its data.
func TestRestartsARegistryThatStoppedAnswering(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port))
	f.reconcile("local")
	f.expectEvents("Normal Provisioning", "Normal Running")
	ref := "localhost:" + strconv.Itoa(port) + "/plinth/app:1.0.0"
	digest := pushImage(t, ref)

	key := cache.NewObjectName("plinth-system", "local")
	if err := f.c.instance(key).server.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for probe := 1; probe < maxFailedProbes; probe++ {
		f.reconcile("local")
		expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonNotRunning, "does not answer")
		if f.c.instance(key) == nil {
			t.Fatalf("stopped after %d unanswered probes", probe)
		}
	}
	f.expectEvents("Warning NotRunning")
	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonNotRunning, "3 probes in a row went unanswered")
	if f.c.instance(key) != nil {
		t.Fatalf("not stopped after %d unanswered probes", maxFailedProbes)
	}

	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseRunning, gitopsv1alpha1.ReasonRunning, "")
	f.expectEvents("Normal Provisioning", "Normal Running")
	if got, err := crane.Digest(ref, crane.Insecure); err != nil || got != digest {
		t.Errorf("after the restart: %q, %v; want %q", got, err, digest)
	}
}

// TestAnUnansweredProbeDoesNotRestartTheRegistry: a probe that times out while the server
// serves (a busy registry) makes it Error but leaves it serving; an answered probe starts the
// count again.
func TestAnUnansweredProbeDoesNotRestartTheRegistry(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port))
	f.reconcile("local")
	f.expectEvents("Normal Provisioning", "Normal Running")
	key := cache.NewObjectName("plinth-system", "local")
	inst := f.c.instance(key)

	f.unanswered.Store(true)
	for probe := 1; probe < maxFailedProbes; probe++ {
		f.reconcile("local")
		expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonNotRunning, "it keeps serving")
	}
	f.expectEvents("Warning NotRunning")
	pushImage(t, "localhost:"+strconv.Itoa(port)+"/plinth/app:1.0.0") // still served
	f.unanswered.Store(false)
	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseRunning, gitopsv1alpha1.ReasonRunning, "")
	f.expectEvents("Normal Running")

	f.unanswered.Store(true)
	for probe := 1; probe < maxFailedProbes; probe++ {
		f.reconcile("local")
	}
	if f.c.instance(key) != inst || !answers(port) {
		t.Fatal("restarted although an answered probe came between the unanswered ones")
	}
}

// TestRestartsARegistryThatDied: a server that reports it stopped serving is started again at
// the next probe, without waiting for more probes.
func TestRestartsARegistryThatDied(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port))
	f.reconcile("local")
	f.expectEvents("Normal Provisioning", "Normal Running")
	key := cache.NewObjectName("plinth-system", "local")

	f.died.Store(true)
	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonNotRunning, "stopped serving")
	if f.c.instance(key) != nil {
		t.Fatal("a server that died was not stopped")
	}
	f.died.Store(false)
	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseRunning, gitopsv1alpha1.ReasonRunning, "")
	f.expectEvents("Warning NotRunning", "Normal Provisioning", "Normal Running")
}

func TestFullDisk(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port))
	f.reconcile("local")
	f.full.Store(true)
	f.reconcile("local")
	reg := f.get("local")
	expectPhase(t, reg, gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonCheckFailed, "the disk holding "+filepath.Join(f.vol, "plinth-system-local")+" is full")
	cond := apimeta.FindStatusCondition(reg.Status.Conditions, gitopsv1alpha1.ConditionReady)
	if !strings.HasPrefix(cond.Message, "The disk holding") || !strings.HasSuffix(cond.Message, "is full.") {
		t.Errorf("message: %q", cond.Message)
	}
	if !answers(port) {
		t.Error("a registry whose disk is full stopped serving reads")
	}
	f.full.Store(false)
	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseRunning, gitopsv1alpha1.ReasonRunning, "")
	f.expectEvents("Normal Provisioning", "Normal Running", "Warning CheckFailed", "Normal Running")
}

func TestPortInUse(t *testing.T) {
	port := freePort(t)
	l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, newRegistry("local", port))
	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonProvisionFailed, "already in use")
	f.expectEvents("Normal Provisioning", "Warning ProvisionFailed")

	_ = l.Close()
	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseRunning, gitopsv1alpha1.ReasonRunning, "")
}

func TestStorage(t *testing.T) {
	f := setup(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		dataPath   string
		volumeName string
		want       string // empty: refused
	}{
		{name: "default", want: filepath.Join(f.vol, "plinth-system-r")},
		{name: "volume", volumeName: "shared", want: filepath.Join(f.vol, "shared")},
		{name: "volume-escape", volumeName: ".."},
		{name: "volume-path", volumeName: "a/b"},
		{name: "in-root", dataPath: filepath.Join(f.root, "r"), want: filepath.Join(f.root, "r")},
		{name: "deep-in-root", dataPath: filepath.Join(f.root, "a", "b", ".", "r"), want: filepath.Join(f.root, "a", "b", "r")},
		{name: "the-root-itself", dataPath: f.root},
		{name: "outside", dataPath: "/etc/plinth"},
		{name: "dotdot", dataPath: f.root + "/../elsewhere"},
		{name: "prefix-sibling", dataPath: f.root + "-other/r"},
		{name: "symlink-out", dataPath: filepath.Join(f.root, "link", "r")},
		{name: "relative", dataPath: "registries/r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry("r", 5000, func(r *gitopsv1alpha1.OCIRegistry) {
				r.Spec.DataPath, r.Spec.VolumeName = tc.dataPath, tc.volumeName
			})
			got, err := f.c.storagePath(reg)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("accepted as %s", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestRefusesADataPathOutsideTheRoots(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port, func(r *gitopsv1alpha1.OCIRegistry) { r.Spec.DataPath = "/etc/plinth-registry" }))
	f.reconcile("local")
	expectPhase(t, f.get("local"), gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonRefused, "spec.dataPath /etc/plinth-registry is not inside")
	f.expectEvents("Warning Refused")
	if answers(port) {
		t.Error("a refused registry was started")
	}
	if _, err := os.Stat("/etc/plinth-registry"); err == nil {
		t.Error("the refused directory was created")
	}
}

func TestRefusesStorageAnotherRegistryUses(t *testing.T) {
	a, b := freePort(t), freePort(t)
	shared := func(r *gitopsv1alpha1.OCIRegistry) { r.Spec.VolumeName = "shared" }
	f := setup(t, newRegistry("a", a, shared), newRegistry("b", b, shared))
	f.reconcile("a")
	f.reconcile("b")
	expectPhase(t, f.get("a"), gitopsv1alpha1.RegistryPhaseRunning, gitopsv1alpha1.ReasonRunning, "")
	expectPhase(t, f.get("b"), gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonRefused, "is in use by OCIRegistry plinth-system/a")
}

func TestRefusesAnEndpointNotOnLocalhost(t *testing.T) {
	f := setup(t, newRegistry("r", 5000, func(r *gitopsv1alpha1.OCIRegistry) { r.Spec.Endpoint = "0.0.0.0:5000" }))
	f.reconcile("r")
	expectPhase(t, f.get("r"), gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonSpecInvalid, "not localhost:<port>")
}

// markDeleted sets the deletion timestamp, as the API server does for an object with
// finalizers.
func (f *fixture) markDeleted(name string) {
	f.t.Helper()
	reg := f.get(name)
	now := metav1.Now()
	reg.DeletionTimestamp = &now
	if _, err := f.client.GitopsV1alpha1().OCIRegistries(reg.Namespace).Update(context.Background(), reg, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

func TestDeleteStopsTheServerAndKeepsTheData(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port))
	f.reconcile("local")
	pushImage(t, "localhost:"+strconv.Itoa(port)+"/plinth/app:1")
	f.markDeleted("local")
	f.reconcile("local")
	if answers(port) {
		t.Error("a deleted registry still answers")
	}
	if fin := f.get("local").Finalizers; len(fin) != 0 {
		t.Errorf("finalizers left: %v", fin)
	}
	if _, err := os.Stat(filepath.Join(f.vol, "plinth-system-local", "docker")); err != nil {
		t.Errorf("the data was not kept: %v", err)
	}
}

func TestDeleteRemovesTheDataWhenAsked(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port, func(r *gitopsv1alpha1.OCIRegistry) {
		r.Spec.DataPath, r.Spec.DeleteDataOnDelete = "", true
	}))
	f.reconcile("local")
	pushImage(t, "localhost:"+strconv.Itoa(port)+"/plinth/app:1")
	f.markDeleted("local")
	f.reconcile("local")
	if _, err := os.Stat(filepath.Join(f.vol, "plinth-system-local")); !os.IsNotExist(err) {
		t.Errorf("the data is still there: %v", err)
	}
	if _, err := os.Stat(f.vol); err != nil {
		t.Errorf("the volume directory itself went: %v", err)
	}
}

func TestAnObjectGoneWithoutFinalizerStopsItsServer(t *testing.T) {
	port := freePort(t)
	f := setup(t, newRegistry("local", port))
	f.reconcile("local")
	if err := f.client.GitopsV1alpha1().OCIRegistries("plinth-system").Delete(context.Background(), "local", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.reconcile("local")
	if answers(port) {
		t.Error("the server of a vanished registry still answers")
	}
}

func TestRunStopsEveryServerWhenItEnds(t *testing.T) {
	a, b := freePort(t), freePort(t)
	client := fake.NewSimpleClientset(newRegistry("a", a), newRegistry("b", b))
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := NewController(client.GitopsV1alpha1(), events.NewFakeRecorder(50), factory.Gitops().V1alpha1().OCIRegistries(),
		Options{VolumeDir: t.TempDir(), ProbeInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return answers(a) && answers(b), nil
	}); err != nil {
		t.Fatal("the registries did not start")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if answers(a) || answers(b) {
		t.Error("a registry still answers after the controller stopped")
	}
}

func TestNewControllerRefusesRelativeDirectories(t *testing.T) {
	client := fake.NewSimpleClientset()
	informer := informers.NewSharedInformerFactory(client, 0).Gitops().V1alpha1().OCIRegistries()
	for _, opts := range []Options{{VolumeDir: "registries"}, {VolumeDir: "/v", DataRoots: []string{"data"}}, {}} {
		if _, err := NewController(client.GitopsV1alpha1(), events.NewFakeRecorder(1), informer, opts); err == nil {
			t.Errorf("%+v was accepted", opts)
		}
	}
}

func TestWaitsForEveryCacheItReads(t *testing.T) {
	looptest.ExpectWaitsForEveryRead(t, func(t *testing.T) (looptest.Controller, []*clienttesting.Fake, func(<-chan struct{})) {
		client := fake.NewSimpleClientset()
		factory := informers.NewSharedInformerFactory(client, 0)
		regs := factory.Gitops().V1alpha1().OCIRegistries()
		c, err := NewController(client.GitopsV1alpha1(), events.NewFakeRecorder(1), regs, Options{VolumeDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return c, []*clienttesting.Fake{&client.Fake},
			func(stop <-chan struct{}) { factory.Start(stop) }
	})
}
