package packinstance

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
)

// The API server stores an OCIArtifact's manifests re-encoded (compacted, without the newline
// an encoder ends with): read back, they are the same manifests in other bytes. Delivery must
// take them as the same and report what Flux applied, not update the artifact on every pass
// and wait for a push that never comes (TestPacks met this on Cluster local).
func TestFluxDeliveryOfAnArtifactReadBackReencoded(t *testing.T) {
	h := newHarness(t, pack(), fluxCluster("registries/local"), newInstance("infra", "east"))
	h.clients.clusters["east"] = newTarget()
	h.save(revision1(t))
	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	artifacts := h.plinth.GitopsV1alpha1().OCIArtifacts("registries")
	art, err := artifacts.Get(context.Background(), FluxArtifact(h.instance("east")), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for i, m := range art.Spec.Manifests {
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Raw); err != nil {
			t.Fatal(err)
		}
		changed = changed || !bytes.Equal(compact.Bytes(), m.Raw)
		art.Spec.Manifests[i].Raw = compact.Bytes()
	}
	if !changed {
		t.Fatal("the manifests were written compact: re-encoding changes nothing, and the test would prove nothing")
	}
	// As the OCIArtifact controller reports it: status.revision names the content's digest, a
	// target the pushed manifest's, after the tag.
	art.Status.PushedVersion, art.Status.Revision, art.Status.Digest = art.Spec.Version, art.Spec.Version+"@sha256:c0", "sha256:aa"
	// A Flux target reports no inventory: kustomize-controller keeps it on the cluster.
	art.Status.Targets = []gitopsv1alpha1.ArtifactTargetStatus{{Cluster: "east", Engine: "Flux", Ready: true, Revision: art.Spec.Version + "@sha256:aa"}}
	if art, err = artifacts.Update(context.Background(), art, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.artifacts.Add(art); err != nil {
		t.Fatal(err)
	}
	h.plinth.ClearActions()

	if err := h.reconcile("east"); err != nil {
		t.Fatal(err)
	}
	inst := h.instance("east")
	expectCondition(t, inst, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered)
	// What Flux applied is what the artifact holds, placed in the pack's namespace.
	want := []infrav1alpha1.DeployedResource{{APIVersion: "v1", Kind: "ConfigMap", Namespace: "tools", Name: "settings"},
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"}}
	if diff := cmp.Diff(want, inst.Status.DeployedResources); diff != "" {
		t.Errorf("deployedResources (-want +got):\n%s", diff)
	}
	for _, a := range h.plinth.Actions() {
		if a.GetResource().Resource == "ociartifacts" && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("the artifact was written again: %s", a.GetVerb())
		}
	}
}

func TestSameManifests(t *testing.T) {
	raw := func(s string) common.RawObject { return common.RawObject{Raw: []byte(s)} }
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"url":"a&b<c>","n":"1"}}`
	for _, tc := range []struct {
		name string
		a, b []common.RawObject
		same bool
	}{
		{"the same bytes", []common.RawObject{raw(cm)}, []common.RawObject{raw(cm)}, true},
		{"a trailing newline", []common.RawObject{raw(cm + "\n")}, []common.RawObject{raw(cm)}, true},
		{"indented, keys in another order", []common.RawObject{raw(cm)},
			[]common.RawObject{raw("{\n \"kind\": \"ConfigMap\", \"apiVersion\": \"v1\",\n \"data\": {\"n\": \"1\", \"url\": \"a&b<c>\"}, \"metadata\": {\"name\": \"a\"}}")}, true},
		{"HTML characters escaped", []common.RawObject{raw(cm)},
			[]common.RawObject{raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"url":"a\u0026b\u003cc\u003e","n":"1"}}`)}, true},
		{"another value", []common.RawObject{raw(cm)},
			[]common.RawObject{raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"url":"a&b<c>","n":"2"}}`)}, false},
		{"a number written otherwise", []common.RawObject{raw(`{"spec":{"replicas":1}}`)}, []common.RawObject{raw(`{"spec":{"replicas":1.0}}`)}, false},
		{"one more manifest", []common.RawObject{raw(cm)}, []common.RawObject{raw(cm), raw(cm)}, false},
		{"another order", []common.RawObject{raw(cm), raw(`{"kind":"B"}`)}, []common.RawObject{raw(`{"kind":"B"}`), raw(cm)}, false},
		{"not JSON", []common.RawObject{raw(`{`)}, []common.RawObject{raw(`{ `)}, false},
	} {
		if got := sameManifests(tc.a, tc.b); got != tc.same {
			t.Errorf("%s: sameManifests = %t, want %t", tc.name, got, tc.same)
		}
	}
}
