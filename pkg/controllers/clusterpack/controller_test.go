package clusterpack

import (
	"context"
	"errors"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/packs/render"
)

func TestRenderKey(t *testing.T) {
	for in, want := range map[string]string{
		"v1.37.1":         "v1.37",
		"v1.37.1+k3s1":    "v1.37",
		"v1.30.0-rc.1":    "v1.30",
		"1.30":            "v1.30",
		"1.30.2":          "v1.30",
		"":                "",
		"v1":              "",
		"not-a-version-x": "",
	} {
		if got := RenderKey(in); got != want {
			t.Errorf("RenderKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderKeys(t *testing.T) {
	targets := []*platformv1alpha1.Cluster{
		cluster("a", "v1.37.1", nil), cluster("b", "v1.36.0", nil), cluster("c", "v1.37.4", nil), cluster("d", "", nil),
	}
	// d has not reported its version: it adds no render (it gets the nearest one), so its
	// first report does not make a new revision of the same objects.
	if diff := cmp.Diff([]string{"v1.36", "v1.37"}, renderKeys(targets)); diff != "" {
		t.Errorf("renderKeys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{""}, renderKeys(targets[3:])); diff != "" {
		t.Errorf("renderKeys of an unprobed cluster (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"v1.37"}, renderKeys(targets[:1])); diff != "" {
		t.Errorf("renderKeys of one cluster (-want +got):\n%s", diff)
	}
	// No target (or none probed yet) still renders once, without capabilities.
	if diff := cmp.Diff([]string{""}, renderKeys(nil)); diff != "" {
		t.Errorf("renderKeys of no cluster (-want +got):\n%s", diff)
	}
}

func TestCombinedDigest(t *testing.T) {
	a := combinedDigest([]string{"v1.36=sha256:aa", "v1.37=sha256:bb"})
	if b := combinedDigest([]string{"v1.36=sha256:aa", "v1.37=sha256:bb"}); a != b {
		t.Errorf("combinedDigest is not stable: %s, then %s", a, b)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(a) {
		t.Errorf("combinedDigest = %q, want sha256:<64 hex>", a)
	}
	if b := combinedDigest([]string{"v1.37=sha256:bb", "v1.36=sha256:aa"}); a == b {
		t.Errorf("combinedDigest ignores the order of its parts: %s both", a)
	}
	if b := combinedDigest([]string{"v1.36=sha256:aa", "v1.37=sha256:bc"}); a == b {
		t.Errorf("combinedDigest ignores a part's digest: %s both", a)
	}
	// One render's revision has a digest of its own, not the render's.
	if one := combinedDigest([]string{"=sha256:aa"}); one == "sha256:aa" || one == a {
		t.Errorf("combinedDigest of one part = %s", one)
	}
}

func TestWithKustomizationGenerates(t *testing.T) {
	files := map[string][]byte{
		"z.yaml": []byte("z"), "a.yaml": []byte("a"), "b.yml": []byte("b"), "README.md": []byte("read me"),
		"sub/c.yaml": []byte("c"), "base/kustomization.yaml": []byte("elsewhere"),
	}
	out := withKustomization(files, "")
	want := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- \"a.yaml\"\n- \"b.yml\"\n- \"z.yaml\"\n"
	if got := string(out["kustomization.yaml"]); got != want {
		t.Errorf("kustomization.yaml =\n%s\nwant\n%s", got, want)
	}
	if len(out) != len(files)+1 || string(out["a.yaml"]) != "a" || string(out["sub/c.yaml"]) != "c" {
		t.Errorf("the other files changed: %v", keys(out))
	}
	if _, ok := files["kustomization.yaml"]; ok {
		t.Error("withKustomization changed the files it was given")
	}
}

func TestWithKustomizationRespectsPath(t *testing.T) {
	files := map[string][]byte{
		"overlays/prod/x.yaml": []byte("x"), "overlays/prod/a.yml": []byte("a"), "overlays/prod/deep/y.yaml": []byte("y"),
		"overlays/prod/notes.txt": []byte("n"), "base/z.yaml": []byte("z"), "top.yaml": []byte("t"),
	}
	want := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- \"a.yml\"\n- \"x.yaml\"\n"
	for _, dir := range []string{"overlays/prod", "./overlays/prod/", "/overlays/prod"} {
		out := withKustomization(files, dir)
		if got := string(out["overlays/prod/kustomization.yaml"]); got != want {
			t.Errorf("path %q: overlays/prod/kustomization.yaml =\n%s\nwant\n%s", dir, got, want)
		}
		if _, ok := out["kustomization.yaml"]; ok {
			t.Errorf("path %q: a kustomization.yaml at the root was added", dir)
		}
	}
}

func TestWithKustomizationKeepsAnExistingOne(t *testing.T) {
	for _, tc := range []struct {
		name, dir, existing string
	}{
		{"kustomization.yaml", "", "kustomization.yaml"},
		{"kustomization.yml", "", "kustomization.yml"},
		{"Kustomization", "", "Kustomization"},
		{"in the path", "app", "app/kustomization.yaml"},
		{"in the path, Kustomization", "./app", "app/Kustomization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string][]byte{tc.existing: []byte("resources: [deploy.yaml]"), "deploy.yaml": []byte("d"), "app/deploy.yaml": []byte("d")}
			out := withKustomization(files, tc.dir)
			if diff := cmp.Diff(files, out); diff != "" {
				t.Errorf("files changed (-want +got):\n%s", diff)
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func instance(revision int64, conds ...metav1.Condition) *infrav1alpha1.InfrastructurePackInstance {
	return &infrav1alpha1.InfrastructurePackInstance{Status: infrav1alpha1.InfrastructurePackInstanceStatus{Revision: revision, Conditions: conds}}
}

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

func TestClusterStatus(t *testing.T) {
	ready := cond(infrav1alpha1.ConditionReady, metav1.ConditionTrue, "Delivered", "Applied revision 3.")
	for _, tc := range []struct {
		name        string
		inst        *infrav1alpha1.InfrastructurePackInstance
		wantPhase   infrav1alpha1.ClusterPhase
		wantMessage string
	}{
		{"no instance", nil, infrav1alpha1.ClusterPhaseProgressing, "The instance is being created."},
		{"blocked", instance(3, cond(infrav1alpha1.ConditionReady, metav1.ConditionFalse, "DependencyBlocked", "held"),
			cond(infrav1alpha1.ConditionDependencyBlocked, metav1.ConditionTrue, "DependencyBlocked", "Dependency a-east drifted.")),
			infrav1alpha1.ClusterPhaseBlocked, "Dependency a-east drifted."},
		{"blocked wins over drifted", instance(3, ready, cond(infrav1alpha1.ConditionDrifted, metav1.ConditionTrue, "Drifted", "x"),
			cond(infrav1alpha1.ConditionDependencyBlocked, metav1.ConditionTrue, "DependencyBlocked", "Dependency b drifted.")),
			infrav1alpha1.ClusterPhaseBlocked, "Dependency b drifted."},
		{"unreachable", instance(2, cond(infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonUnreachable, "Connection refused.")),
			infrav1alpha1.ClusterPhaseUnreachable, "Connection refused."},
		{"failed", instance(3, cond(infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDeliveryFailed, "Applying failed.")),
			infrav1alpha1.ClusterPhaseFailed, "Applying failed."},
		{"old revision", instance(2, ready), infrav1alpha1.ClusterPhaseProgressing, ""},
		{"not ready yet", instance(3, cond(infrav1alpha1.ConditionReady, metav1.ConditionFalse, "Delivering", "Delivering revision 3.")),
			infrav1alpha1.ClusterPhaseProgressing, "Delivering revision 3."},
		{"no conditions", instance(3), infrav1alpha1.ClusterPhaseProgressing, ""},
		{"drifted", instance(3, ready, cond(infrav1alpha1.ConditionDrifted, metav1.ConditionTrue, "Drifted", "ConfigMap tools/settings: data.value changed.")),
			infrav1alpha1.ClusterPhaseDrifted, "ConfigMap tools/settings: data.value changed."},
		{"ready", instance(3, ready, cond(infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, "NoDrift", "ok")), infrav1alpha1.ClusterPhaseReady, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := ClusterStatus(tc.inst, 3)
			if st.Phase != tc.wantPhase || st.Message != tc.wantMessage {
				t.Errorf("ClusterStatus = %s %q, want %s %q", st.Phase, st.Message, tc.wantPhase, tc.wantMessage)
			}
			if tc.inst != nil && st.Revision != tc.inst.Status.Revision {
				t.Errorf("revision %d, want the instance's %d", st.Revision, tc.inst.Status.Revision)
			}
		})
	}
}

func TestPackKey(t *testing.T) {
	inst := &infrav1alpha1.InfrastructurePackInstance{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		infrav1alpha1.LabelPack: "infra", infrav1alpha1.LabelPackNamespace: "platform"}}}
	if got := PackKey(inst); got != "platform/infra" {
		t.Errorf("PackKey = %q", got)
	}
	delete(inst.Labels, infrav1alpha1.LabelPackNamespace)
	if got := PackKey(inst); got != "" {
		t.Errorf("PackKey without the namespace label = %q, want empty", got)
	}
}

func TestReconcileNewPack(t *testing.T) {
	h := newHarness(t, newPack(t, "east", "west"), cluster("east", "v1.37.1", nil), cluster("west", "v1.36.0", nil))
	p := h.step()
	ctx := context.Background()

	if !slices.Contains(p.Finalizers, infrav1alpha1.FinalizerPack) {
		t.Errorf("finalizers %v, want %s", p.Finalizers, infrav1alpha1.FinalizerPack)
	}
	if p.Status.Revision != 1 || p.Status.Version != "v1.0.0" || p.Status.ObservedGeneration != 1 || !strings.HasPrefix(p.Status.Digest, "sha256:") {
		t.Errorf("status revision %d version %q generation %d digest %q, want 1, v1.0.0, 1, a digest",
			p.Status.Revision, p.Status.Version, p.Status.ObservedGeneration, p.Status.Digest)
	}
	expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionTrue, infrav1alpha1.ReasonRendered)
	if len(p.Status.History) != 1 || p.Status.History[0].Revision != 1 || p.Status.History[0].Digest != p.Status.Digest ||
		!p.Status.History[0].RenderedAt.Time.Equal(start) {
		t.Errorf("history %+v, want revision 1 rendered at %s", p.Status.History, start)
	}

	// Revision 1 is kept, rendered once per Kubernetes minor version of the targets.
	if diff := cmp.Diff([]string{"infra.v1"}, h.secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	rev, err := h.store.Get(ctx, packNamespace, "infra", 1)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Version != "v1.0.0" || rev.Digest != p.Status.Digest || len(rev.Renders["v1.36"]) != 2 || len(rev.Renders["v1.37"]) != 2 || len(rev.Renders) != 2 {
		t.Errorf("revision 1: version %s digest %s renders %v", rev.Version, rev.Digest, rev.Renders)
	}
	var kubeVersions []string
	for _, c := range h.renderer.calls {
		kubeVersions = append(kubeVersions, c.KubeVersion)
		if c.ReleaseName != "infra" || c.Namespace != "tools" {
			t.Errorf("render options %+v, want release infra in namespace tools", c)
		}
	}
	if diff := cmp.Diff([]string{"v1.36.0", "v1.37.0"}, kubeVersions); diff != "" {
		t.Errorf("rendered for (-want +got):\n%s", diff)
	}
	if src := h.renderer.sources[0]; len(src.Manifests) != 1 || src.Chart != nil || src.Kustomize != nil {
		t.Errorf("a raw pack rendered from %+v", src)
	}

	// One instance per cluster, in the cluster's namespace, which is created.
	if diff := cmp.Diff([]string{"seam-tenant-east/infra-east", "seam-tenant-west/infra-west"}, h.instanceNames()); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
	inst, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("seam-tenant-east").Get(ctx, "infra-east", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{infrav1alpha1.LabelPack: "infra", infrav1alpha1.LabelPackNamespace: packNamespace, infrav1alpha1.LabelCluster: "east"}
	if diff := cmp.Diff(wantLabels, inst.Labels); diff != "" {
		t.Errorf("instance labels (-want +got):\n%s", diff)
	}
	wantSpec := infrav1alpha1.InfrastructurePackInstanceSpec{ClusterPackRef: "infra", TargetClusterRef: "east", Version: "v1.0.0"}
	if diff := cmp.Diff(wantSpec, inst.Spec); diff != "" {
		t.Errorf("instance spec (-want +got):\n%s", diff)
	}
	if !slices.Contains(inst.Finalizers, infrav1alpha1.FinalizerPack) {
		t.Errorf("instance finalizers %v", inst.Finalizers)
	}
	for _, cl := range []string{"east", "west"} {
		ns := namespaceExists(t, h.kube, "seam-tenant-"+cl)
		if ns == nil || ns.Labels[infrav1alpha1.LabelCluster] != cl {
			t.Errorf("namespace seam-tenant-%s = %+v, want it labelled for its cluster", cl, ns)
		}
	}

	// Nothing is delivered yet.
	if p.Status.Summary != (infrav1alpha1.PackSummary{Progressing: 2}) || len(p.Status.Clusters) != 2 ||
		p.Status.Clusters[0].Cluster != "east" || p.Status.Clusters[1].Cluster != "west" {
		t.Errorf("summary %+v clusters %+v, want both progressing", p.Status.Summary, p.Status.Clusters)
	}
	expectCondition(t, p, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonNotDelivered)

	// Once both instances run revision 1 the pack is Ready.
	for _, cl := range []string{"east", "west"} {
		h.setInstanceStatus(cl, func(i *infrav1alpha1.InfrastructurePackInstance) {
			i.Status.Revision = 1
			i.Status.Conditions = []metav1.Condition{cond(infrav1alpha1.ConditionReady, metav1.ConditionTrue, "Delivered", "Applied.")}
		})
	}
	p = h.step()
	expectCondition(t, p, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered)
	if diff := cmp.Diff([]string{
		"Normal Rendered Rendered revision 1 of version v1.0.0.",
		"Normal Rendered Rendered revision 1 of version v1.0.0: 2 objects.",
		"Normal NotDelivered Revision 1 runs on 0 of 2 target clusters.",
		"Normal Ready Revision 1 runs on every target cluster (2).",
	}, h.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if p.Status.Summary != (infrav1alpha1.PackSummary{Ready: 2}) {
		t.Errorf("summary %+v, want 2 ready", p.Status.Summary)
	}
	if n := h.renderer.renders(); n != 2 {
		t.Errorf("rendered %d times, want 2: the generation did not change", n)
	}
	if diff := cmp.Diff([]string{"infra.v1"}, h.secrets()); diff != "" {
		t.Errorf("Secrets after a reconcile of the same generation (-want +got):\n%s", diff)
	}
}

func TestReconcileSameGenerationKeepsTheRevision(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	first := h.step()
	second := h.step()
	if n := h.renderer.renders(); n != 1 {
		t.Errorf("rendered %d times, want once", n)
	}
	if second.Status.Revision != 1 || second.Status.Digest != first.Status.Digest {
		t.Errorf("revision %d digest %s, want revision 1 digest %s", second.Status.Revision, second.Status.Digest, first.Status.Digest)
	}
	if diff := cmp.Diff([]string{"infra.v1"}, h.secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

func TestReconcileNewRevisions(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	first := h.step()

	// A new spec that renders the same objects keeps revision 1.
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) {
		p.Spec.Manifests = []common.RawObject{rawObject(t, configMap("settings", "changed but rendered the same"))}
	})
	p := h.step()
	if n := h.renderer.renders(); n != 2 {
		t.Errorf("rendered %d times, want twice: the generation changed", n)
	}
	if p.Status.Revision != 1 || p.Status.Digest != first.Status.Digest || p.Status.ObservedGeneration != 2 {
		t.Errorf("revision %d generation %d, want revision 1 observed at generation 2", p.Status.Revision, p.Status.ObservedGeneration)
	}
	if c := expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionTrue, infrav1alpha1.ReasonRendered); !strings.Contains(c.Message, "Revision 1 is current") {
		t.Errorf("Rendered message %q", c.Message)
	}
	if diff := cmp.Diff([]string{"infra.v1"}, h.secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}

	// Other objects are revision 2.
	h.renderer.objects = []map[string]interface{}{configMap("settings", "two")}
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) {
		p.Spec.Manifests = []common.RawObject{rawObject(t, configMap("settings", "two"))}
	})
	p = h.step()
	if p.Status.Revision != 2 || p.Status.Digest == first.Status.Digest {
		t.Errorf("revision %d digest %s, want revision 2 with a new digest", p.Status.Revision, p.Status.Digest)
	}
	// The same objects under a new version are a revision too: the instances' direction
	// depends on it.
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.Version = "v1.1.0" })
	p = h.step()
	if p.Status.Revision != 3 || p.Status.Version != "v1.1.0" {
		t.Errorf("revision %d version %s, want revision 3 of v1.1.0", p.Status.Revision, p.Status.Version)
	}
	var history []int64
	for _, r := range p.Status.History {
		history = append(history, r.Revision)
	}
	if diff := cmp.Diff([]int64{3, 2, 1}, history); diff != "" {
		t.Errorf("history, newest first (-want +got):\n%s", diff)
	}
	if p.Status.History[0].Version != "v1.1.0" || p.Status.History[2].Version != "v1.0.0" {
		t.Errorf("history %+v", p.Status.History)
	}
	if diff := cmp.Diff([]string{"infra.v1", "infra.v2", "infra.v3"}, h.secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	// The instance takes the new version only from a delivery: its spec is what it runs.
	inst, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("seam-tenant-east").Get(context.Background(), "infra-east", metav1.GetOptions{})
	if err != nil || inst.Spec.Version != "v1.0.0" {
		t.Errorf("instance %+v, %v: want it kept at v1.0.0", inst, err)
	}
}

func TestReconcileRevisionHistoryLimit(t *testing.T) {
	pack := newPack(t, "east")
	pack.Spec.RevisionHistoryLimit = ptr.To[int32](2)
	h := newHarness(t, pack, cluster("east", "v1.37.1", nil))
	h.step()
	for _, v := range []string{"v1.1.0", "v1.2.0", "v1.3.0"} {
		h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.Version = v })
		h.step()
	}
	// Revision 1 runs on east (as its instance says) and is kept beside the newest two.
	if diff := cmp.Diff([]string{"infra.v3", "infra.v4"}, h.secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	h.setInstanceStatus("east", func(i *infrav1alpha1.InfrastructurePackInstance) { i.Status.Revision = 4 })
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.Version = "v1.4.0" })
	p := h.step()
	if diff := cmp.Diff([]string{"infra.v4", "infra.v5"}, h.secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	if len(p.Status.History) != 2 || p.Status.History[0].Revision != 5 || p.Status.History[1].Revision != 4 {
		t.Errorf("history %+v, want revisions 5 and 4", p.Status.History)
	}
}

func TestReconcileKeepsDeployedRevisions(t *testing.T) {
	pack := newPack(t, "east")
	pack.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	h := newHarness(t, pack, cluster("east", "v1.37.1", nil))
	h.step()
	h.setInstanceStatus("east", func(i *infrav1alpha1.InfrastructurePackInstance) { i.Status.Revision = 1 })
	for _, v := range []string{"v1.1.0", "v1.2.0"} {
		h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.Version = v })
		h.step()
	}
	if diff := cmp.Diff([]string{"infra.v1", "infra.v3"}, h.secrets()); diff != "" {
		t.Errorf("Secrets: the revision east runs must stay (-want +got):\n%s", diff)
	}
}

func TestReconcileContentError(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	h.renderer.err = &render.Error{Template: "infra/templates/settings.yaml", Line: 7, Message: "nil pointer evaluating .Values.x"}
	expectContentWait(t, h.reconcile())
	p := h.pack()
	c := expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionFalse, infrav1alpha1.ReasonRenderFailed)
	if events := h.events(); len(events) == 0 || events[0] != "Warning RenderFailed "+c.Message {
		t.Errorf("events %q, want a Warning RenderFailed first", events)
	}
	if !strings.Contains(c.Message, "infra/templates/settings.yaml") || !strings.Contains(c.Message, "line 7") {
		t.Errorf("Rendered message %q, want the template and line", c.Message)
	}
	if p.Status.Revision != 0 || p.Status.ObservedGeneration == p.Generation {
		t.Errorf("revision %d observed generation %d, want nothing rendered and the generation unobserved", p.Status.Revision, p.Status.ObservedGeneration)
	}
	if names := h.instanceNames(); len(names) != 0 {
		t.Errorf("instances %v created without a revision", names)
	}
	if s := h.secrets(); len(s) != 0 {
		t.Errorf("Secrets %v", s)
	}
	expectCondition(t, p, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonNotDelivered)

	// A new spec that renders fixes it.
	h.renderer.err = nil
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.Version = "v1.0.1" })
	p = h.step()
	expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionTrue, infrav1alpha1.ReasonRendered)
	if p.Status.Revision != 1 {
		t.Errorf("revision %d, want 1", p.Status.Revision)
	}
}

func TestReconcileContentErrorKeepsTheCurrentRevision(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	h.step()
	h.renderer.err = &render.Error{Message: "chart infra version 9.9.9 does not exist"}
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.Version = "v9.9.9" })
	expectContentWait(t, h.reconcile())
	p := h.pack()
	expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionFalse, infrav1alpha1.ReasonRenderFailed)
	if p.Status.Revision != 1 || p.Status.Version != "v1.0.0" {
		t.Errorf("revision %d version %s, want revision 1 kept", p.Status.Revision, p.Status.Version)
	}
	if diff := cmp.Diff([]string{"seam-tenant-east/infra-east"}, h.instanceNames()); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
}

func TestReconcileFetchError(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	h.renderer.err = errFetch
	err := h.reconcile()
	if !errors.Is(err, errFetch) {
		t.Fatalf("reconcile returned %v, want the fetch error (retried with backoff)", err)
	}
	p := h.pack()
	c := expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionFalse, infrav1alpha1.ReasonFetchFailed)
	if c.Message == "" {
		t.Error("no message")
	}
	if p.Status.Revision != 0 || len(h.instanceNames()) != 0 {
		t.Errorf("revision %d instances %v after a failed fetch", p.Status.Revision, h.instanceNames())
	}
}

// TestReconcileErrorsQuoteNoURL checks that neither the Rendered condition nor the error the
// reconcile returns (which is logged) quotes a URL from the render's error: a chart archive's or
// a redirect's URL may carry a token. The hosts stay, and the error keeps its kind.
func TestReconcileErrorsQuoteNoURL(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		reason string
	}{
		"fetch":   {fmt.Errorf("pulling: %w", &url.Error{Op: "Get", URL: "https://bot:***@objects.example.com/web.tgz?X-Amz-Signature=s3cret", Err: errFetch}), infrav1alpha1.ReasonFetchFailed},
		"content": {&render.Error{Message: "chart web from https://bot:tok3n@charts.example.com/TOKEN/web.tgz?token=s3cret is not a valid chart archive"}, infrav1alpha1.ReasonRenderFailed},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
			h.renderer.err = tc.err
			err := h.reconcile()
			c := expectCondition(t, h.pack(), infrav1alpha1.ConditionRendered, metav1.ConditionFalse, tc.reason)
			for _, text := range []string{c.Message, fmt.Sprint(err)} {
				for _, secret := range []string{"bot", "tok3n", "s3cret", "TOKEN"} {
					if strings.Contains(text, secret) {
						t.Errorf("%q quotes %q", text, secret)
					}
				}
			}
			if !strings.Contains(c.Message, "example.com") {
				t.Errorf("the message %q does not name the host", c.Message)
			}
			if tc.reason == infrav1alpha1.ReasonFetchFailed && !errors.Is(err, errFetch) {
				t.Errorf("reconcile returned %v, want the fetch error (retried with backoff)", err)
			}
		})
	}
}

func TestReconcileRollback(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	first := h.step()
	h.renderer.objects = []map[string]interface{}{configMap("settings", "two")}
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.Version = "v1.1.0" })
	if p := h.step(); p.Status.Revision != 2 {
		t.Fatalf("revision %d, want 2", p.Status.Revision)
	}
	renders := h.renderer.renders()

	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.RollbackToRevision = ptr.To[int64](1) })
	p := h.step()
	if h.renderer.renders() != renders {
		t.Error("a rollback rendered the pack again")
	}
	if p.Status.Revision != 1 || p.Status.Version != "v1.0.0" || p.Status.Digest != first.Status.Digest {
		t.Errorf("status revision %d version %s digest %s, want revision 1 of v1.0.0", p.Status.Revision, p.Status.Version, p.Status.Digest)
	}
	if c := expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionTrue, infrav1alpha1.ReasonRendered); !strings.Contains(c.Message, "Rolling back to revision 1") {
		t.Errorf("Rendered message %q", c.Message)
	}
	if diff := cmp.Diff([]string{"infra.v1", "infra.v2"}, h.secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

func TestReconcileRollbackToAMissingRevision(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	h.step()
	renders := h.renderer.renders()
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.RollbackToRevision = ptr.To[int64](7) })
	if err := h.reconcile(); !errkind.IsStalled(err) {
		t.Fatalf("reconcile returned %v, want it stalled: only a new spec fixes a missing revision", err)
	}
	p := h.pack()
	c := expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionFalse, infrav1alpha1.ReasonRevisionNotFound)
	if !strings.Contains(c.Message, "Revision 7") {
		t.Errorf("Rendered message %q, want it to name revision 7", c.Message)
	}
	if p.Status.Revision != 1 || h.renderer.renders() != renders {
		t.Errorf("revision %d after %d renders, want revision 1 and no render", p.Status.Revision, h.renderer.renders()-renders)
	}
}

func TestReconcileDeletion(t *testing.T) {
	h := newHarness(t, newPack(t, "east", "west"), cluster("east", "v1.37.1", nil), cluster("west", "v1.37.1", nil))
	h.step()
	h.holdInstanceDeletions()
	now := metav1.NewTime(start)
	h.edit(false, func(p *infrav1alpha1.InfrastructureClusterPack) { p.DeletionTimestamp = &now })

	// First the instances are deleted; their finalizers clean the clusters up meanwhile.
	p := h.step()
	if diff := cmp.Diff([]string{"seam-tenant-east/infra-east", "seam-tenant-west/infra-west"}, h.deletes()); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if !slices.Contains(p.Finalizers, infrav1alpha1.FinalizerPack) {
		t.Error("the pack's finalizer went before its instances")
	}
	if diff := cmp.Diff([]string{"infra.v1"}, h.secrets()); diff != "" {
		t.Errorf("Secrets while instances remain (-want +got):\n%s", diff)
	}
	if c := expectCondition(t, p, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDeleting); !strings.Contains(c.Message, "east") {
		t.Errorf("Ready message %q", c.Message)
	}

	// Instances being deleted are waited for, not deleted again.
	p = h.step()
	if n := len(h.deletes()); n != 2 {
		t.Errorf("%d deletions, want the first 2 only", n)
	}
	if !slices.Contains(p.Finalizers, infrav1alpha1.FinalizerPack) || len(h.secrets()) != 1 {
		t.Errorf("finalizers %v Secrets %v while instances remain", p.Finalizers, h.secrets())
	}

	// Once they are gone the revisions go and the pack is released.
	for _, cl := range []string{"east", "west"} {
		if err := h.plinth.Tracker().Delete(infrav1alpha1.SchemeGroupVersion.WithResource("infrastructurepackinstances"),
			infrav1alpha1.InstanceNamespace(cl), infrav1alpha1.InstanceName("infra", cl)); err != nil {
			t.Fatal(err)
		}
	}
	h.refresh()
	p = h.step()
	if slices.Contains(p.Finalizers, infrav1alpha1.FinalizerPack) {
		t.Errorf("finalizers %v, want the pack released", p.Finalizers)
	}
	if s := h.secrets(); len(s) != 0 {
		t.Errorf("Secrets %v left after the pack", s)
	}
}

func TestReconcileDeletionWithoutInstances(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	h.renderer.err = &render.Error{Message: "bad"}
	_ = h.reconcile() // finalizer added, nothing rendered
	now := metav1.NewTime(start)
	h.edit(false, func(p *infrav1alpha1.InfrastructureClusterPack) { p.DeletionTimestamp = &now })
	if p := h.step(); len(p.Finalizers) != 0 {
		t.Errorf("finalizers %v", p.Finalizers)
	}
}

func TestReconcileDroppedCluster(t *testing.T) {
	h := newHarness(t, newPack(t, "east", "west"), cluster("east", "v1.37.1", nil), cluster("west", "v1.37.1", nil))
	h.step()
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) { p.Spec.TargetClusters = []string{"east"} })
	p := h.step()
	if diff := cmp.Diff([]string{"seam-tenant-west/infra-west"}, h.deletes()); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"seam-tenant-east/infra-east"}, h.instanceNames()); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
	if len(p.Status.Clusters) != 1 || p.Status.Clusters[0].Cluster != "east" {
		t.Errorf("clusters %+v", p.Status.Clusters)
	}
}

func TestReconcileMissingClusterAndSelector(t *testing.T) {
	pack := newPack(t, "ghost")
	pack.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	h := newHarness(t, pack, cluster("east", "v1.37.1", map[string]string{"env": "prod"}),
		cluster("west", "v1.37.1", map[string]string{"env": "dev"}))
	p := h.step()
	if diff := cmp.Diff([]string{"seam-tenant-east/infra-east"}, h.instanceNames()); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
	want := []infrav1alpha1.PackClusterStatus{
		{Cluster: "east", Phase: infrav1alpha1.ClusterPhaseProgressing, Message: "The instance is being created."},
		{Cluster: "ghost", Phase: infrav1alpha1.ClusterPhaseFailed, Message: "Cluster ghost does not exist."},
	}
	if diff := cmp.Diff(want, p.Status.Clusters); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if p.Status.Summary != (infrav1alpha1.PackSummary{Progressing: 1, Failed: 1}) {
		t.Errorf("summary %+v", p.Status.Summary)
	}
}

func TestReconcileChartPack(t *testing.T) {
	pack := newPack(t, "east")
	pack.Spec.Manifests = nil
	pack.Spec.Chart = &infrav1alpha1.PackChart{URL: "oci://registry.example/charts", Name: "infra", Version: ">=1.0.0 <2"}
	pack.Spec.Values = ptr.To(rawObject(t, map[string]interface{}{"replicas": int64(2)}))
	pack.Spec.DependsOn = []string{"cert-manager"}
	pack.Spec.DependencyPolicy = &infrav1alpha1.DependencyPolicy{OnDrift: infrav1alpha1.OnDriftBlock}
	h := newHarness(t, pack, cluster("east", "v1.37.1", nil))
	p := h.step()
	src := h.renderer.sources[0]
	if src.Chart == nil || src.Chart.URL != "oci://registry.example/charts" || src.Chart.Name != "infra" || src.Chart.Version != ">=1.0.0 <2" ||
		!strings.Contains(string(src.Values), `"replicas":2`) {
		t.Errorf("rendered from %+v values %s", src.Chart, src.Values)
	}
	if p.Status.HelmVersion != "v3.99.0" || p.Status.ChartVersion != "1.2.3" {
		t.Errorf("status helm %q chart %q", p.Status.HelmVersion, p.Status.ChartVersion)
	}
	inst, err := h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("seam-tenant-east").Get(context.Background(), "infra-east", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := infrav1alpha1.InfrastructurePackInstanceSpec{
		ClusterPackRef: "infra", TargetClusterRef: "east", Version: "v1.0.0", HelmVersion: "v3.99.0",
		ChartName: "infra", ChartURL: "oci://registry.example/charts", ChartVersion: "1.2.3",
		DependsOn: []string{"cert-manager-east"}, DependencyPolicy: &infrav1alpha1.DependencyPolicy{OnDrift: infrav1alpha1.OnDriftBlock},
	}
	if diff := cmp.Diff(want, inst.Spec); diff != "" {
		t.Errorf("instance spec (-want +got):\n%s", diff)
	}

	// The pack's dependencies are kept in step on its instances.
	h.edit(true, func(p *infrav1alpha1.InfrastructureClusterPack) {
		p.Spec.DependsOn = []string{"cert-manager", "dns"}
		p.Spec.DependencyPolicy = &infrav1alpha1.DependencyPolicy{OnDrift: infrav1alpha1.OnDriftIgnore}
	})
	h.step()
	inst, err = h.plinth.InfrastructureV1alpha1().InfrastructurePackInstances("seam-tenant-east").Get(context.Background(), "infra-east", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inst.Spec.DependsOn, []string{"cert-manager-east", "dns-east"}) || inst.Spec.DependencyPolicy.OnDrift != infrav1alpha1.OnDriftIgnore {
		t.Errorf("instance dependencies %v %+v", inst.Spec.DependsOn, inst.Spec.DependencyPolicy)
	}
}

func TestReconcileKustomizeFromAConfigMap(t *testing.T) {
	pack := newPack(t, "east")
	pack.Spec.Manifests = nil
	pack.Spec.Kustomize = &infrav1alpha1.PackKustomize{ConfigMapRef: &infrav1alpha1.LocalObjectReference{Name: "infra-files"}}
	h := newHarness(t, pack, cluster("east", "v1.37.1", nil))

	// Without its ConfigMap the pack cannot render: RenderFailed naming it, looked at again
	// after contentRetry rather than with backoff.
	expectContentWait(t, h.reconcile())
	c := expectCondition(t, h.pack(), infrav1alpha1.ConditionRendered, metav1.ConditionFalse, infrav1alpha1.ReasonRenderFailed)
	if !strings.Contains(c.Message, "infra-files") {
		t.Errorf("Rendered message %q, want the ConfigMap named", c.Message)
	}
	if n := h.renderer.renders(); n != 0 {
		t.Errorf("rendered %d times without content", n)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace, Name: "infra-files"},
		Data:       map[string]string{"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"},
		BinaryData: map[string][]byte{"more.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: more\n")}}
	if _, err := h.kube.CoreV1().ConfigMaps(packNamespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.edit(true, func(*infrav1alpha1.InfrastructureClusterPack) {})
	p := h.step()
	expectCondition(t, p, infrav1alpha1.ConditionRendered, metav1.ConditionTrue, infrav1alpha1.ReasonRendered)
	src := h.renderer.sources[0]
	if src.Kustomize == nil {
		t.Fatalf("rendered from %+v", src)
	}
	if diff := cmp.Diff([]string{"kustomization.yaml", "more.yaml", "settings.yaml"}, keys(src.Kustomize.Files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestReconcileKustomizeFromAnOCIArtifact(t *testing.T) {
	pack := newPack(t, "east")
	pack.Spec.Manifests = nil
	pack.Spec.Kustomize = &infrav1alpha1.PackKustomize{ArtifactRef: &infrav1alpha1.LocalObjectReference{Name: "infra-art"}}
	h := newHarness(t, pack, cluster("east", "v1.37.1", nil))
	expectContentWait(t, h.reconcile())
	if c := expectCondition(t, h.pack(), infrav1alpha1.ConditionRendered, metav1.ConditionFalse, infrav1alpha1.ReasonRenderFailed); !strings.Contains(c.Message, "infra-art") {
		t.Errorf("Rendered message %q", c.Message)
	}

	art := &gitopsv1alpha1.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace, Name: "infra-art"},
		Spec: gitopsv1alpha1.OCIArtifactSpec{Manifests: []common.RawObject{rawObject(t, configMap("settings", "one"))}}}
	if _, err := h.plinth.GitopsV1alpha1().OCIArtifacts(packNamespace).Create(context.Background(), art, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.edit(true, func(*infrav1alpha1.InfrastructureClusterPack) {})
	h.step()
	files := h.renderer.sources[0].Kustomize.Files
	if len(files) != 2 || !strings.Contains(string(files["kustomization.yaml"]), ".yaml\"") {
		t.Errorf("files %v, kustomization.yaml:\n%s", keys(files), files["kustomization.yaml"])
	}
}

func TestReconcileRendersForANewKubernetesVersion(t *testing.T) {
	h := newHarness(t, newPack(t, "east", "west"), cluster("east", "v1.37.1", nil), cluster("west", "v1.37.0", nil))
	h.step()
	// west is upgraded: the pack's generation is the same, but revision 1 has no render for it.
	if err := h.clusters.Update(cluster("west", "v1.38.0", nil)); err != nil {
		t.Fatal(err)
	}
	p := h.step()
	if p.Status.Revision != 2 {
		t.Fatalf("revision %d, want 2 with a render for v1.38", p.Status.Revision)
	}
	rev, err := h.store.Get(context.Background(), packNamespace, "infra", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rev.Renders["v1.38"]; !ok || len(rev.Renders) != 2 {
		t.Errorf("revision 2 renders %v, want v1.37 and v1.38", keysOf(rev.Renders))
	}
	// Rendered for every target now: nothing more to do.
	renders := h.renderer.renders()
	h.step()
	if h.renderer.renders() != renders {
		t.Error("rendered again although revision 2 has every target's version")
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestReconcileKustomizeFromAnOCIArtifactConfigMap(t *testing.T) {
	pack := newPack(t, "east")
	pack.Spec.Manifests = nil
	pack.Spec.Kustomize = &infrav1alpha1.PackKustomize{ArtifactRef: &infrav1alpha1.LocalObjectReference{Name: "infra-art"}}
	h := newHarness(t, pack, cluster("east", "v1.37.1", nil))
	art := &gitopsv1alpha1.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace, Name: "infra-art"},
		Spec: gitopsv1alpha1.OCIArtifactSpec{ConfigMapRef: &gitopsv1alpha1.LocalObjectReference{Name: "art-files"}}}
	if _, err := h.plinth.GitopsV1alpha1().OCIArtifacts(packNamespace).Create(context.Background(), art, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectContentWait(t, h.reconcile())
	if c := expectCondition(t, h.pack(), infrav1alpha1.ConditionRendered, metav1.ConditionFalse, infrav1alpha1.ReasonRenderFailed); !strings.Contains(c.Message, "art-files") {
		t.Errorf("Rendered message %q, want the artifact's ConfigMap named", c.Message)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: packNamespace, Name: "art-files"},
		Data: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", "notes.txt": "not packaged"}}
	if _, err := h.kube.CoreV1().ConfigMaps(packNamespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.edit(true, func(*infrav1alpha1.InfrastructureClusterPack) {})
	h.step()
	src := h.renderer.sources[0].Kustomize
	// The artifact packages its ConfigMap's manifest files only.
	if diff := cmp.Diff([]string{"a.yaml", "kustomization.yaml"}, keys(src.Files)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestClusterChanged(t *testing.T) {
	base := cluster("east", "v1.37.1", map[string]string{"env": "prod"})
	relabelled := base.DeepCopy()
	relabelled.Labels["env"] = "dev"
	upgraded := base.DeepCopy()
	upgraded.Status.KubernetesVersion = "v1.38.0"
	other := base.DeepCopy()
	other.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name     string
		old, cur interface{}
		want     bool
	}{
		{"labels", base, relabelled, true},
		{"kubernetes version", base, upgraded, true},
		{"other status", base, other, false},
		{"not a cluster", "x", base, true},
	} {
		if got := clusterChanged(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: clusterChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAllPacks(t *testing.T) {
	h := newHarness(t, newPack(t, "east"))
	other := newPack(t, "east")
	other.Namespace = "team-b"
	if err := h.packs.Add(other); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range h.c.allPacks(nil) {
		got = append(got, k.String())
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"platform/infra", "team-b/infra"}, got); diff != "" {
		t.Errorf("allPacks (-want +got):\n%s", diff)
	}
}

// A reconcile that read the pack before the status write of the one that saved its revision
// renders the same objects: it points at that revision instead of saving them again as a new
// one (make run's tour found revisions 1 and 2 of one render).
func TestReconcileFromAStaleCacheKeepsTheSavedRevision(t *testing.T) {
	h := newHarness(t, newPack(t, "east"), cluster("east", "v1.37.1", nil))
	stale := h.pack().DeepCopy()
	h.step()
	// The cache still holds the pack as it was before the first reconcile's status write.
	if err := h.packs.Update(stale); err != nil {
		t.Fatal(err)
	}
	if err := h.c.reconcile(context.Background(), packKey); err != nil && !apierrors.IsConflict(err) {
		t.Fatalf("reconcile: %v", err)
	}
	h.refresh()
	if diff := cmp.Diff([]string{"infra.v1"}, h.secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	if p := h.step(); p.Status.Revision != 1 {
		t.Errorf("revision %d, want 1", p.Status.Revision)
	}
}

// A failure to keep the instances is retried with backoff even when the render is waiting or
// stalled: joined, the render's kind would have the loop wait or stop instead.
func TestOutcome(t *testing.T) {
	waiting, stalled, generic := errkind.Waiting(errors.New("no source"), contentRetry), errkind.Stalled(errors.New("not kept")), errors.New("fetch")
	instErr := errors.New("creating an instance failed")
	for _, tc := range []struct {
		name              string
		render, instances error
		wantWait          bool
		wantStalled       bool
		wantInstances     bool
	}{
		{"content", waiting, nil, true, false, false},
		{"content and instances", waiting, instErr, false, false, true},
		{"missing revision", stalled, nil, false, true, false},
		{"missing revision and instances", stalled, instErr, false, false, true},
		{"fetch and instances", generic, instErr, false, false, true},
	} {
		err := outcome(tc.render, tc.instances)
		if _, wait := errkind.WaitFor(err); wait != tc.wantWait || errkind.IsStalled(err) != tc.wantStalled || errors.Is(err, instErr) != tc.wantInstances {
			t.Errorf("%s: outcome = %v (waiting %v, stalled %v)", tc.name, err, wait, errkind.IsStalled(err))
		}
	}
	if outcome(nil, nil) != nil {
		t.Error("outcome of a reconcile without errors is an error")
	}
}
