package kubernetes

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestAppliedCache(t *testing.T) {
	c := newAppliedCache()
	manifest := []byte(`{"metadata":{"labels":{"app":"shop"},"annotations":{"a":"1"},"ownerReferences":[{"apiVersion":"score.dev/v1b1","kind":"WorkloadPlan","name":"shop","uid":"plan-1"}]},"spec":{"replicas":1}}`)
	owners := []metav1.OwnerReference{{APIVersion: "score.dev/v1b1", Kind: "WorkloadPlan", Name: "shop", UID: "plan-1"}}
	labels, annotations := map[string]string{"app": "shop"}, map[string]string{"a": "1"}
	meta := func(uid string, generation int64, rv string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{UID: types.UID("uid-" + uid), Generation: generation, ResourceVersion: rv,
			Labels: labels, Annotations: annotations, OwnerReferences: owners}
	}
	applied := meta("1", 1, "10")
	if c.upToDate("deployments/a/b", manifest, applied) {
		t.Fatal("up to date before any apply")
	}
	c.record("deployments/a/b", manifest, applied)
	for name, tc := range map[string]struct {
		manifest []byte
		live     *metav1.ObjectMeta
		want     bool
	}{
		"unchanged":                   {manifest, meta("1", 1, "10"), true},
		"status written since":        {manifest, meta("1", 1, "17"), true},
		"spec edited by someone else": {manifest, meta("1", 2, "18"), false},
		"new manifest":                {[]byte(`{"spec":{"replicas":2}}`), meta("1", 1, "10"), false},
		"object not in the informer":  {manifest, nil, false},
		// Recreated objects start again at generation 1, which the cached entry also has.
		"deleted and created again": {manifest, meta("2", 1, "30"), false},
		"label removed": {manifest, &metav1.ObjectMeta{UID: "uid-1", Generation: 1, ResourceVersion: "19",
			Annotations: annotations, OwnerReferences: owners}, false},
		"annotation changed": {manifest, &metav1.ObjectMeta{UID: "uid-1", Generation: 1, ResourceVersion: "19",
			Labels: labels, Annotations: map[string]string{"a": "2"}, OwnerReferences: owners}, false},
		"owner reference removed": {manifest, &metav1.ObjectMeta{UID: "uid-1", Generation: 1, ResourceVersion: "19",
			Labels: labels, Annotations: annotations}, false},
		"another writer's annotation added": {manifest, &metav1.ObjectMeta{UID: "uid-1", Generation: 1, ResourceVersion: "19",
			Labels: labels, Annotations: map[string]string{"a": "1", "deployment.kubernetes.io/revision": "1"}, OwnerReferences: owners}, true},
	} {
		t.Run(name, func(t *testing.T) {
			var live metav1.Object
			if tc.live != nil {
				live = tc.live
			}
			if got := c.upToDate("deployments/a/b", tc.manifest, live); got != tc.want {
				t.Errorf("upToDate = %v, want %v", got, tc.want)
			}
		})
	}

	// Kinds without a generation are compared by resourceVersion.
	c.record("services/a/b", manifest, meta("3", 0, "5"))
	if !c.upToDate("services/a/b", manifest, meta("3", 0, "5")) {
		t.Error("an untouched service is not up to date")
	}
	if c.upToDate("services/a/b", manifest, meta("3", 0, "6")) {
		t.Error("an edited service is up to date")
	}
	c.forget("services/a/b")
	if c.upToDate("services/a/b", manifest, meta("3", 0, "5")) {
		t.Error("a forgotten entry is up to date")
	}
}
