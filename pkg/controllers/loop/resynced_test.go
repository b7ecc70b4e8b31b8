package loop

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An update with the resourceVersion it had is a resync; any write moves it. Objects without
// metadata are no resync.
func TestResynced(t *testing.T) {
	at := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name     string
		old, obj interface{}
		want     bool
	}{
		{"replayed", at("7"), at("7"), true},
		{"written", at("7"), at("8"), false},
		{"not an object", "a", at("7"), false},
	} {
		if got := Resynced(tc.old, tc.obj); got != tc.want {
			t.Errorf("%s: Resynced = %v, want %v", tc.name, got, tc.want)
		}
	}
}
