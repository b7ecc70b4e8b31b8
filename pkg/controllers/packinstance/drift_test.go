package packinstance

import (
	"context"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

// driftHarness has instance infra-east delivered (revision of one ConfigMap) to a Kubectl
// cluster. An object deleted on the cluster is drift that needs no dry-run, which the fake
// cluster does not answer as a server would.
func driftHarness(t *testing.T, policy infrav1alpha1.DriftPolicy) (*harness, *targetCluster) {
	t.Helper()
	p := pack()
	p.Spec.DriftPolicy = policy
	h := newHarness(t, p, kubeCluster("east", "v1.37.2"), newInstance("infra", "east"))
	east := newTarget()
	h.clients.clusters["east"] = east
	rev := revision1(t)
	rev.Renders["v1.37"] = rev.Renders["v1.37"][:1]
	h.save(rev)
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	if err := east.client.Resource(configMapsGVR).Namespace("tools").Delete(context.Background(), "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return h, east
}

func TestDriftDetectsADeletedObject(t *testing.T) {
	h, east := driftHarness(t, infrav1alpha1.DriftPolicyDetect)
	if err := h.reconcile("east"); err != nil {
		t.Fatalf("drift pass: %v", err)
	}
	inst := h.instance("east")
	c := expectCondition(t, inst, infrav1alpha1.ConditionDrifted, metav1.ConditionTrue, infrav1alpha1.ReasonDrifted)
	if !strings.Contains(inst.Status.DriftSummary, "settings") || c.Message == "" {
		t.Errorf("driftSummary %q, Drifted message %q: want the deleted ConfigMap named", inst.Status.DriftSummary, c.Message)
	}
	// Detect leaves the cluster as it is, and the instance stays Ready.
	if east.exists(t, configMapsGVR, "tools", "settings") {
		t.Error("Detect re-applied the ConfigMap")
	}
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered)

	// The next pass waits for the drift interval.
	actions := len(east.client.Actions())
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	if n := len(east.client.Actions()); n != actions {
		t.Errorf("%d requests to the cluster before the drift interval passed", n-actions)
	}
	h.clock.Step(DefaultDriftInterval)
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	if n := len(east.client.Actions()); n == actions {
		t.Error("no drift pass after the drift interval")
	}

	// A new delivery clears the drift.
	rev2 := &revisions.Revision{Number: 2, Version: "v1.0.1", Digest: "sha256:2222", RenderedAt: metav1.NewTime(start), Renders: revision1(t).Renders}
	h.save(rev2)
	p := pack()
	p.Status.Revision = 2
	if err := h.packs.Update(p); err != nil {
		t.Fatal(err)
	}
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst = h.instance("east")
	expectCondition(t, inst, infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, infrav1alpha1.ReasonNoDrift)
	if inst.Status.DriftSummary != "" {
		t.Errorf("driftSummary %q after a delivery", inst.Status.DriftSummary)
	}
}

func TestDriftCorrect(t *testing.T) {
	h, east := driftHarness(t, infrav1alpha1.DriftPolicyCorrect)
	h.clock.Step(time.Second)
	if err := h.reconcile("east"); err != nil {
		t.Fatalf("drift pass: %v", err)
	}
	if !east.exists(t, configMapsGVR, "tools", "settings") {
		t.Error("Correct did not apply the deleted ConfigMap again")
	}
	inst := h.instance("east")
	c := expectCondition(t, inst, infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, infrav1alpha1.ReasonDriftCorrected)
	if events := h.events(); !slices.Contains(events, "Normal DriftCorrected "+inst.Status.DriftSummary) {
		t.Errorf("events %q, want DriftCorrected", events)
	}
	if !strings.HasPrefix(inst.Status.DriftSummary, "Corrected at 2026-11-23T10:00:01Z by applying revision 1 again: ") ||
		!strings.Contains(inst.Status.DriftSummary, "settings") || c.Message == "" {
		t.Errorf("driftSummary %q", inst.Status.DriftSummary)
	}
}

func TestDriftPassOnAnUnreachableCluster(t *testing.T) {
	h, _ := driftHarness(t, infrav1alpha1.DriftPolicyDetect)
	h.clients.clusters["east"] = &targetCluster{err: errRefused}
	if err := h.reconcile("east"); err == nil {
		t.Error("a drift pass that could not reach the cluster succeeded")
	}
	// The last drift verdict stands; a cluster that stopped answering after its delivery is
	// Unreachable, so the pack's summary does not count it Ready.
	inst := h.instance("east")
	expectCondition(t, inst, infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, infrav1alpha1.ReasonNoDrift)
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonUnreachable)

	// Back: the revision is applied again and the instance is Ready.
	h.clients.clusters["east"] = newTarget()
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	expectCondition(t, h.instance("east"), infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered)
}

// A pack whose revision holds its own release Namespace gets it applied by the engine, not
// created beforehand (which the engine would refuse as not the pack's).
func TestReleaseNamespace(t *testing.T) {
	p := pack()
	p.Spec.TargetNamespace = "monitoring"
	ns := manifests.Object{Unstructured: &unstructured.Unstructured{Object: object("v1", "Namespace", "", "monitoring")}}
	cm := manifests.Object{Unstructured: &unstructured.Unstructured{Object: object("v1", "ConfigMap", "", "settings")}}
	if got := releaseNamespace(p, []manifests.Object{cm}); got != "monitoring" {
		t.Errorf("releaseNamespace without the Namespace = %q", got)
	}
	if got := releaseNamespace(p, []manifests.Object{ns, cm}); got != "" {
		t.Errorf("releaseNamespace with the Namespace in the revision = %q, want none created", got)
	}
}
