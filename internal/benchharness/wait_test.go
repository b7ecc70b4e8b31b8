package benchharness

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// SourceOf lists (and watches) through a typed client with the selector it was given.
func TestSourceOfSelects(t *testing.T) {
	client := fake.NewSimpleClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "in", Namespace: "a", Labels: map[string]string{"bench": "floor"}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "out", Namespace: "a"}},
	)
	for selector, want := range map[string]int{"bench": 1, "": 2} {
		obj, err := SourceOf(client.AppsV1().Deployments(""), selector).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(obj.(*appsv1.DeploymentList).Items); got != want {
			t.Errorf("selector %q listed %d, want %d", selector, got, want)
		}
	}
}
