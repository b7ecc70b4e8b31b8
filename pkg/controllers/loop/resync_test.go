package loop

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SpecDeletionOrResync lets through spec changes, deletions and the informer's resync (the
// same object again), and stops status-only writes (a new resourceVersion, the same
// generation).
func TestSpecDeletionOrResync(t *testing.T) {
	obj := func(rv string, generation int64, deleting bool) *corev1.ConfigMap {
		m := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: rv, Generation: generation}}
		if deleting {
			now := metav1.Now()
			m.DeletionTimestamp = &now
		}
		return m
	}
	for _, c := range []struct {
		name     string
		old, obj interface{}
		want     bool
	}{
		{"status-only write", obj("1", 1, false), obj("2", 1, false), false},
		{"spec change", obj("1", 1, false), obj("2", 2, false), true},
		{"deletion", obj("1", 1, false), obj("2", 1, true), true},
		{"resync", obj("1", 1, false), obj("1", 1, false), true},
		{"not an object (bad input)", "x", obj("1", 1, false), true},
	} {
		if got := SpecDeletionOrResync(c.old, c.obj); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
