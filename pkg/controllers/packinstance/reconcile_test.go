package packinstance

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/clusterpack"
)

// errRefused is client-go's error for a cluster whose port is closed.
var errRefused = &url.Error{Op: "Get", URL: "https://10.0.0.7:6443/api?timeout=32s", Err: &net.OpError{
	Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 6443}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
}}

// An unreachable cluster is reported on its own instance, as the pack's summary counts it,
// and holds up no other.
func TestReconcileUnreachableCluster(t *testing.T) {
	h := newHarness(t, pack(), kubeCluster("east", "v1.37.2"), kubeCluster("west", "v1.37.2"),
		newInstance("infra", "east"), newInstance("infra", "west"))
	h.clients.clusters["east"] = newTarget()
	h.clients.clusters["west"] = &targetCluster{err: errRefused}
	h.save(revision1(t))

	err := h.reconcile("west")
	if !errors.Is(err, errRefused) {
		t.Errorf("reconcile returned %v, want the cluster's error (retried with backoff)", err)
	}
	west := h.instance("west")
	c := expectCondition(t, west, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonUnreachable)
	if !strings.Contains(c.Message, "connection refused") {
		t.Errorf("Ready message %q", c.Message)
	}
	expectCondition(t, west, infrav1alpha1.ConditionProgressing, metav1.ConditionFalse, infrav1alpha1.ReasonUnreachable)
	if diff := cmp.Diff([]string{"Warning Unreachable " + c.Message}, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if west.Status.DeliveredAt != nil || west.Status.Revision != 0 {
		t.Errorf("deliveredAt %v revision %d on an unreachable cluster", west.Status.DeliveredAt, west.Status.Revision)
	}
	if st := clusterpack.ClusterStatus(west, 1); st.Phase != infrav1alpha1.ClusterPhaseUnreachable {
		t.Errorf("the pack counts west as %s, want Unreachable", st.Phase)
	}

	if err := h.reconcile("east"); err != nil {
		t.Fatalf("reconcile east: %v", err)
	}
	expectCondition(t, h.instance("east"), infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered)
}

// A cluster that answers with a refusal is a failed delivery, not an unreachable cluster.
func TestReconcileRefusedDelivery(t *testing.T) {
	h := newHarness(t, pack(), kubeCluster("east", "v1.37.2"), newInstance("infra", "east"))
	east := newTarget()
	h.clients.clusters["east"] = east
	h.save(revision1(t))
	east.client.PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission webhook denied the request")
	})
	if err := h.reconcile("east"); err == nil {
		t.Fatal("reconcile succeeded")
	}
	inst := h.instance("east")
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDeliveryFailed)
	// What was applied before the failure is recorded, so that a later delivery prunes it.
	if diff := cmp.Diff([]infrav1alpha1.DeployedResource{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"}},
		inst.Status.DeployedResources); diff != "" {
		t.Errorf("deployedResources (-want +got):\n%s", diff)
	}
}

func TestReconcileNextRevisionPrunesAndUpgrades(t *testing.T) {
	h := newHarness(t, pack(), kubeCluster("east", "v1.37.2"), newInstance("infra", "east"))
	east := newTarget()
	h.clients.clusters["east"] = east
	h.save(revision1(t))
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	rev2 := revision1(t)
	rev2.Number, rev2.Version, rev2.Digest = 2, "v1.1.0", "sha256:2222"
	rev2.Renders["v1.37"] = rev2.Renders["v1.37"][:1] // the ClusterRole is dropped
	h.save(rev2)
	p := pack()
	p.Status.Revision, p.Status.Version = 2, "v1.1.0"
	if err := h.packs.Update(p); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(time.Minute)
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst := h.instance("east")
	if inst.Status.UpgradeDirection != infrav1alpha1.UpgradeDirectionUpgrade || inst.Status.Revision != 2 || inst.Spec.Version != "v1.1.0" ||
		!inst.Status.DeliveredAt.Time.Equal(start.Add(time.Minute)) {
		t.Errorf("direction %s revision %d version %s deliveredAt %v", inst.Status.UpgradeDirection, inst.Status.Revision, inst.Spec.Version, inst.Status.DeliveredAt)
	}
	if diff := cmp.Diff([]infrav1alpha1.DeployedResource{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tools", Name: "settings"}},
		inst.Status.DeployedResources); diff != "" {
		t.Errorf("deployedResources replaced (-want +got):\n%s", diff)
	}
	if east.exists(t, rolesGVR, "", "reader") {
		t.Error("the ClusterRole revision 2 dropped was not pruned")
	}
}

func TestReconcileWaitsForItsDependencies(t *testing.T) {
	dependent := newInstance("infra", "east")
	dependent.Spec.DependsOn = []string{"certs-east"}
	h := newHarness(t, pack(), kubeCluster("east", "v1.37.2"), dependent, newInstance("certs", "east"))
	east := newTarget()
	h.clients.clusters["east"] = east
	h.save(revision1(t))

	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst := h.instance("east")
	c := expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonWaitingForDependencies)
	if c.Message != "Waiting for certs-east to be Ready on cluster east." {
		t.Errorf("Ready message %q", c.Message)
	}
	expectCondition(t, inst, infrav1alpha1.ConditionProgressing, metav1.ConditionTrue, infrav1alpha1.ReasonWaitingForDependencies)
	if applied := east.applied(); len(applied) != 0 {
		t.Errorf("applied %v before the dependency was Ready", applied)
	}
	if st := clusterpack.ClusterStatus(inst, 1); st.Phase != infrav1alpha1.ClusterPhaseProgressing {
		t.Errorf("the pack counts a waiting instance as %s", st.Phase)
	}

	// Ready, it delivers; drifted under Block, it is held.
	setDependency := func(conds ...metav1.Condition) {
		t.Helper()
		dep, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("seam-tenant-east").Get(context.Background(), "certs-east", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep.Status.Conditions = conds
		if _, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("seam-tenant-east").UpdateStatus(context.Background(), dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.refresh()
	}
	ready := metav1.Condition{Type: infrav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: infrav1alpha1.ReasonDelivered}
	setDependency(ready)
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst = h.instance("east")
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered)
	expectCondition(t, inst, infrav1alpha1.ConditionDependencyBlocked, metav1.ConditionFalse, infrav1alpha1.ReasonDependenciesReady)

	h.updateInstance("east", func(i *infrav1alpha1.InfrastructurePackInstance) {
		i.Spec.DependencyPolicy = &infrav1alpha1.DependencyPolicy{OnDrift: infrav1alpha1.OnDriftBlock}
	})
	setDependency(ready, metav1.Condition{Type: infrav1alpha1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: infrav1alpha1.ReasonDrifted})
	applied := len(east.applied())
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst = h.instance("east")
	expectCondition(t, inst, infrav1alpha1.ConditionDependencyBlocked, metav1.ConditionTrue, infrav1alpha1.ReasonDependencyBlocked)
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDependencyBlocked)
	if st := clusterpack.ClusterStatus(inst, 1); st.Phase != infrav1alpha1.ClusterPhaseBlocked {
		t.Errorf("the pack counts a blocked instance as %s", st.Phase)
	}
	if len(east.applied()) != applied {
		t.Error("a blocked instance applied")
	}
}

func TestReconcileWarnsOfADriftedDependency(t *testing.T) {
	dependent := newInstance("infra", "east")
	dependent.Spec.DependsOn = []string{"certs-east"}
	dep := newInstance("certs", "east")
	dep.Status.Conditions = []metav1.Condition{
		{Type: infrav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: infrav1alpha1.ReasonDelivered},
		{Type: infrav1alpha1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: infrav1alpha1.ReasonDrifted},
	}
	h := newHarness(t, pack(), kubeCluster("east", "v1.37.2"), dependent, dep)
	h.clients.clusters["east"] = newTarget()
	h.save(revision1(t))
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	c := expectCondition(t, h.instance("east"), infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered)
	if !strings.Contains(c.Message, "Warning: dependency certs-east reports drift.") {
		t.Errorf("Ready message %q, want the drifted dependency named", c.Message)
	}
}

func TestReconcileWithoutClusterOrRevision(t *testing.T) {
	noRevision := pack()
	noRevision.Status.Revision = 0
	h := newHarness(t, noRevision, newInstance("infra", "east"))
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	if inst := h.instance("east"); len(inst.Status.Conditions) != 0 {
		t.Errorf("conditions %+v before the pack has a revision", inst.Status.Conditions)
	}

	h = newHarness(t, pack(), newInstance("infra", "east"))
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	c := expectCondition(t, h.instance("east"), infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonClusterNotFound)
	if c.Message != "Cluster east does not exist." {
		t.Errorf("Ready message %q", c.Message)
	}

	// A revision the store does not keep.
	h = newHarness(t, pack(), kubeCluster("east", "v1.37.2"), newInstance("infra", "east"))
	h.clients.clusters["east"] = newTarget()
	if err := h.reconcile("east"); err == nil {
		t.Error("reconcile without the revision succeeded")
	}
	expectCondition(t, h.instance("east"), infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonRevisionUnavailable)

	// An instance gone is no error.
	if err := h.c.reconcile(context.Background(), cache.NewObjectName("seam-tenant-east", "gone-east")); err != nil {
		t.Errorf("reconcile of a deleted instance: %v", err)
	}
}

func TestRemove(t *testing.T) {
	for _, tc := range []struct {
		name         string
		retain       bool
		noCluster    bool
		wantRemoved  bool
		unreachable  bool
		wantReleased bool
	}{
		{name: "removes what it delivered", wantRemoved: true, wantReleased: true},
		{name: "retainOnDeletion", retain: true, wantReleased: true},
		{name: "cluster gone", noCluster: true, wantReleased: true},
		{name: "unreachable", unreachable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pack()
			if tc.retain {
				p.Spec.LifecyclePolicies = &infrav1alpha1.LifecyclePolicies{RetainOnDeletion: true}
			}
			h := newHarness(t, p, kubeCluster("east", "v1.37.2"), newInstance("infra", "east"))
			east := newTarget()
			h.clients.clusters["east"] = east
			h.save(revision1(t))
			if err := h.reconcile("east"); err != nil {
				t.Fatal(err)
			}
			now := metav1.NewTime(start)
			h.updateInstance("east", func(i *infrav1alpha1.InfrastructurePackInstance) { i.DeletionTimestamp = &now })
			if tc.noCluster {
				if err := h.clusters.Delete(kubeCluster("east", "")); err != nil {
					t.Fatal(err)
				}
			}
			if tc.unreachable {
				h.clients.clusters["east"] = &targetCluster{err: errRefused}
			}
			err := h.reconcile("east")
			if tc.unreachable != (err != nil) {
				t.Errorf("reconcile returned %v", err)
			}
			inst := h.instance("east")
			if released := !slices.Contains(inst.Finalizers, infrav1alpha1.FinalizerPack); released != tc.wantReleased {
				t.Errorf("finalizers %v", inst.Finalizers)
			}
			if tc.unreachable {
				expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonUnreachable)
			}
			removed := !east.exists(t, configMapsGVR, "tools", "settings") && !east.exists(t, rolesGVR, "", "reader")
			if removed != tc.wantRemoved {
				t.Errorf("objects removed: %v, want %v", removed, tc.wantRemoved)
			}
			// The release namespace is not the pack's to remove.
			if !east.exists(t, namespacesGVR, "", "tools") {
				t.Error("the release namespace was removed")
			}
		})
	}
}

func TestMappings(t *testing.T) {
	dependent := newInstance("infra", "east")
	dependent.Spec.DependsOn = []string{"certs-east"}
	certs := newInstance("certs", "east")
	h := newHarness(t, dependent, certs, newInstance("infra", "west"))

	names := func(keys []cache.ObjectName) []string {
		out := make([]string, 0, len(keys))
		for _, k := range keys {
			out = append(out, k.String())
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff([]string{"seam-tenant-east/certs-east", "seam-tenant-east/infra-east"}, names(h.c.selfAndDependents(certs))); diff != "" {
		t.Errorf("selfAndDependents (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"seam-tenant-east/infra-east"}, names(h.c.selfAndDependents(cache.DeletedFinalStateUnknown{Obj: dependent}))); diff != "" {
		t.Errorf("selfAndDependents of a tombstone (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"seam-tenant-east/certs-east", "seam-tenant-east/infra-east"}, names(h.c.clusterInstances(kubeCluster("east", "")))); diff != "" {
		t.Errorf("clusterInstances (-want +got):\n%s", diff)
	}
	p := pack()
	p.Spec.TargetClusters = []string{"east"}
	p.Status.Clusters = []infrav1alpha1.PackClusterStatus{{Cluster: "west"}}
	if diff := cmp.Diff([]string{"seam-tenant-east/infra-east", "seam-tenant-west/infra-west"}, names(h.c.packInstances(p))); diff != "" {
		t.Errorf("packInstances (-want +got):\n%s", diff)
	}
	art := &gitopsv1alpha1.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationInstance: "seam-tenant-east/infra-east"}}}
	if diff := cmp.Diff([]string{"seam-tenant-east/infra-east"}, names(artifactInstance(art))); diff != "" {
		t.Errorf("artifactInstance (-want +got):\n%s", diff)
	}
	if got := artifactInstance(&gitopsv1alpha1.OCIArtifact{}); len(got) != 0 {
		t.Errorf("artifactInstance of another artifact = %v", got)
	}
	if got := h.c.selfAndDependents(&platformv1alpha1.Cluster{}); len(got) != 0 {
		t.Errorf("selfAndDependents of a Cluster = %v", got)
	}
}

// A reconcile that reads the instance from a cache that does not show this controller's own
// writes yet (the instance before the delivery's spec update, or after it but before the
// status write) reconciles from what the writes returned: it neither delivers everything
// again (the packs benchmark saw each delivery made twice, the spec update waking a reconcile
// that still read the instance as not Ready) nor conflicts with its own write.
func TestReconcileFromAStaleCache(t *testing.T) {
	h := newHarness(t, pack(), kubeCluster("east", "v1.37.2"), newInstance("infra", "east"))
	east := newTarget()
	h.clients.clusters["east"] = east
	h.save(revision1(t))
	unwritten := h.instance("east")
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	delivered := h.instance("east")
	if unwritten.ResourceVersion != "" || delivered.ResourceVersion != "2" {
		t.Fatalf("resourceVersions %q and %q, want a spec and a status write after the first", unwritten.ResourceVersion, delivered.ResourceVersion)
	}
	specOnly := delivered.DeepCopy()
	specOnly.ResourceVersion, specOnly.Status = "1", unwritten.Status
	key := cache.MetaObjectToName(delivered)
	h.c.driftDue(key) // no drift pass now: it would send requests of its own to the cluster
	applied := len(east.applied())
	for _, stale := range []*infrav1alpha1.InfrastructurePackInstance{unwritten, specOnly} {
		if err := h.instances.Update(stale); err != nil {
			t.Fatal(err)
		}
		if err := h.c.reconcile(context.Background(), key); err != nil {
			t.Errorf("reconcile from the instance at version %q: %v", stale.ResourceVersion, err)
		}
		if n := len(east.applied()); n != applied {
			t.Errorf("reconcile from the instance at version %q delivered again", stale.ResourceVersion)
		}
	}
	if got := h.instance("east"); got.ResourceVersion != delivered.ResourceVersion {
		t.Errorf("the instance was written again from a stale cache: version %q", got.ResourceVersion)
	}
	// Once the cache shows the writes, it is read again.
	h.refresh()
	if err := h.c.reconcile(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if n := h.c.specWritten.Len() + h.c.statusWritten.Len(); n != 0 {
		t.Errorf("%d writes remembered after the cache caught up", n)
	}
}

// The direction compares with the version the status records as delivered, not with a spec
// version written before a status write that failed.
func TestReconcileDirectionFromTheDeliveredRevision(t *testing.T) {
	h := newHarness(t, pack(), kubeCluster("east", "v1.37.2"), newInstance("infra", "east"))
	h.clients.clusters["east"] = newTarget()
	h.save(revision1(t))
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	rev2 := revision1(t)
	rev2.Number, rev2.Version, rev2.Digest = 2, "v1.1.0", "sha256:2222"
	h.save(rev2)
	// The spec says v1.1.0 already (its write went through), the status still revision 1.
	h.updateInstance("east", func(inst *infrav1alpha1.InfrastructurePackInstance) { inst.Spec.Version = "v1.1.0" })
	p := pack()
	p.Status.Revision, p.Status.Version = 2, "v1.1.0"
	if err := h.packs.Update(p); err != nil {
		t.Fatal(err)
	}
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	if inst := h.instance("east"); inst.Status.UpgradeDirection != infrav1alpha1.UpgradeDirectionUpgrade {
		t.Errorf("direction %s, want Upgrade from the delivered v1.0.0", inst.Status.UpgradeDirection)
	}
}
