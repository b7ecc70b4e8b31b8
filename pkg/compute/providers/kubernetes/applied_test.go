package kubernetes

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAppliedCache(t *testing.T) {
	c := newAppliedCache()
	manifest := []byte(`{"spec":{"replicas":1}}`)
	applied := &metav1.ObjectMeta{Generation: 2, ResourceVersion: "10"}
	if c.upToDate("deployments/a/b", manifest, applied) {
		t.Fatal("up to date before any apply")
	}
	c.record("deployments/a/b", manifest, applied)
	for name, tc := range map[string]struct {
		manifest []byte
		live     metav1.Object
		want     bool
	}{
		"unchanged":                         {manifest, &metav1.ObjectMeta{Generation: 2, ResourceVersion: "10"}, true},
		"status written since":              {manifest, &metav1.ObjectMeta{Generation: 2, ResourceVersion: "17"}, true},
		"spec edited by someone else":       {manifest, &metav1.ObjectMeta{Generation: 3, ResourceVersion: "18"}, false},
		"new manifest":                      {[]byte(`{"spec":{"replicas":2}}`), &metav1.ObjectMeta{Generation: 2, ResourceVersion: "10"}, false},
		"object not in the informer (yet)":  {manifest, nil, false},
		"deleted and created again (gen 1)": {manifest, &metav1.ObjectMeta{Generation: 1, ResourceVersion: "30"}, false},
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
	c.record("services/a/b", manifest, &metav1.ObjectMeta{ResourceVersion: "5"})
	if !c.upToDate("services/a/b", manifest, &metav1.ObjectMeta{ResourceVersion: "5"}) {
		t.Error("an untouched service is not up to date")
	}
	if c.upToDate("services/a/b", manifest, &metav1.ObjectMeta{ResourceVersion: "6"}) {
		t.Error("an edited service is up to date")
	}
	c.forget("services/a/b")
	if c.upToDate("services/a/b", manifest, &metav1.ObjectMeta{ResourceVersion: "5"}) {
		t.Error("a forgotten entry is up to date")
	}
}
