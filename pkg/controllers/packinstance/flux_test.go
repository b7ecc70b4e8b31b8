package packinstance

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
)

func fluxCluster(registry string) *platformv1alpha1.Cluster {
	cl := kubeCluster("east", "v1.37.2")
	cl.Spec.GitOps.Engine = platformv1alpha1.GitOpsEngineFlux
	if registry != "" {
		cl.Status.GitOps = &platformv1alpha1.ClusterGitOpsStatus{Registry: registry}
	}
	return cl
}

// artifact puts the stored OCIArtifact name in the cache (added or replaced), with its status
// changed as the OCIArtifact controller would report it.
func (h *harness) artifact(name string, status func(*gitopsv1alpha1.OCIArtifactStatus)) *gitopsv1alpha1.OCIArtifact {
	h.t.Helper()
	art, err := h.plinth.GitopsV1alpha1().OCIArtifacts("registries").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if status != nil {
		status(&art.Status)
	}
	if err := h.artifacts.Add(art); err != nil {
		h.t.Fatal(err)
	}
	return art
}

func TestFluxDelivery(t *testing.T) {
	h := newHarness(t, pack(), fluxCluster("registries/local"), newInstance("infra", "east"))
	east := newTarget()
	h.clients.clusters["east"] = east
	h.save(revision1(t))

	// The revision becomes an OCIArtifact for the cluster's registry.
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst := h.instance("east")
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDelivering)
	expectCondition(t, inst, infrav1alpha1.ConditionProgressing, metav1.ConditionTrue, infrav1alpha1.ReasonDelivering)
	name := FluxArtifact(inst)
	art := h.artifact(name, nil)
	if art.Annotations[AnnotationInstance] != "seam-tenant-east/infra-east" || art.Labels[infrav1alpha1.LabelPack] != "infra" ||
		art.Labels[infrav1alpha1.LabelCluster] != "east" {
		t.Errorf("artifact metadata %+v", art.ObjectMeta)
	}
	if art.Spec.RegistryRef.Name != "local" || art.Spec.Version != "1.0.0-rev.1" || art.Spec.Repository != "packs/platform/infra/east" ||
		len(art.Spec.Targets) != 1 || art.Spec.Targets[0].Cluster != "east" || art.Spec.Targets[0].Prune == nil || !*art.Spec.Targets[0].Prune {
		t.Errorf("artifact spec %+v", art.Spec)
	}
	var namespaces []string
	for _, m := range art.Spec.Manifests {
		var obj struct {
			Metadata struct{ Namespace string } `json:"metadata"`
		}
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			t.Fatal(err)
		}
		namespaces = append(namespaces, obj.Metadata.Namespace)
	}
	if diff := cmp.Diff([]string{"tools", ""}, namespaces); diff != "" {
		t.Errorf("placed manifests' namespaces (-want +got):\n%s", diff)
	}
	if !east.exists(t, namespacesGVR, "", "tools") {
		t.Error("the release namespace was not created")
	}

	// Not pushed yet.
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	if c := expectCondition(t, h.instance("east"), infrav1alpha1.ConditionProgressing, metav1.ConditionTrue, infrav1alpha1.ReasonDelivering); !strings.Contains(c.Message, "Pushing the revision") {
		t.Errorf("Progressing message %q", c.Message)
	}

	// Pushed, not applied yet: Flux reports the revision but not Ready.
	h.artifact(name, func(s *gitopsv1alpha1.OCIArtifactStatus) {
		s.PushedVersion, s.Revision, s.Digest = "1.0.0-rev.1", "1.0.0-rev.1@sha256:c0", "sha256:aa"
		s.Targets = []gitopsv1alpha1.ArtifactTargetStatus{{Cluster: "west", Ready: true, Revision: "1.0.0-rev.1@sha256:aa"},
			{Cluster: "east", Revision: "1.0.0-rev.1@sha256:aa", Message: "Kustomization is reconciling"}}
	})
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst = h.instance("east")
	if c := expectCondition(t, inst, infrav1alpha1.ConditionProgressing, metav1.ConditionTrue, infrav1alpha1.ReasonDelivering); !strings.Contains(c.Message, "Kustomization is reconciling") {
		t.Errorf("Progressing message %q", c.Message)
	}
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDelivering)

	// Applied by Flux.
	h.artifact(name, func(s *gitopsv1alpha1.OCIArtifactStatus) {
		s.PushedVersion, s.Revision, s.Digest = "1.0.0-rev.1", "1.0.0-rev.1@sha256:c0", "sha256:aa"
		s.Targets = []gitopsv1alpha1.ArtifactTargetStatus{{Cluster: "east", Ready: true, Revision: "1.0.0-rev.1@sha256:aa",
			Inventory: []gitopsv1alpha1.InventoryEntry{{ID: "tools_settings__ConfigMap", Version: "v1"}, {ID: "_reader_rbac.authorization.k8s.io_ClusterRole", Version: "v1"}}}}
	})
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst = h.instance("east")
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered)
	if inst.Status.UpgradeDirection != infrav1alpha1.UpgradeDirectionInitial || inst.Status.Revision != 1 || len(inst.Status.DeployedResources) != 2 {
		t.Errorf("direction %s revision %d deployedResources %+v", inst.Status.UpgradeDirection, inst.Status.Revision, inst.Status.DeployedResources)
	}

	// Deleting the instance deletes its artifact, and waits until it is gone.
	now := metav1.NewTime(start)
	h.updateInstance("east", func(i *infrav1alpha1.InfrastructurePackInstance) { i.DeletionTimestamp = &now })
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.plinth.GitopsV1alpha1().OCIArtifacts("registries").Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		t.Error("the artifact was not deleted")
	}
	if !slices.Contains(h.instance("east").Finalizers, infrav1alpha1.FinalizerPack) {
		t.Error("the finalizer went while the artifact (and what Flux applied) remains")
	}
	if err := h.artifacts.Delete(art); err != nil {
		t.Fatal(err)
	}
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(h.instance("east").Finalizers, infrav1alpha1.FinalizerPack) {
		t.Error("the finalizer stayed after the artifact went")
	}
}

func TestFluxDeliveryWithoutARegistry(t *testing.T) {
	h := newHarness(t, pack(), fluxCluster(""), newInstance("infra", "east"))
	h.clients.clusters["east"] = newTarget()
	h.save(revision1(t))
	if err := h.reconcile("east"); err != nil {
		t.Fatalf("reconcile returned %v: a Cluster change wakes the instance", err)
	}
	c := expectCondition(t, h.instance("east"), infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDeliveryFailed)
	if !strings.Contains(c.Message, "registry") {
		t.Errorf("Ready message %q", c.Message)
	}
}
