package kubernetes

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Only what status and the applied cache read wakes a plan; kube-controller-manager's other
// status writes and its revision annotation do not. A resync, a deletion and non-Deployments do.
func TestDeploymentChanged(t *testing.T) {
	base := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", UID: "u1", Generation: 1, ResourceVersion: "10",
				Labels: map[string]string{"app.kubernetes.io/name": "shop"}, Annotations: map[string]string{"team": "a"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "WorkloadPlan", Name: "shop", UID: "p1"}}},
			Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(d *appsv1.Deployment)
		want   bool
	}{
		{"resync", func(d *appsv1.Deployment) {}, true},
		{"replicas counted", func(d *appsv1.Deployment) { d.Status.Replicas = 1 }, false},
		{"ready replicas", func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1 }, false},
		{"unavailable replicas", func(d *appsv1.Deployment) { d.Status.UnavailableReplicas = 1 }, false},
		{"conditions", func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: "True"}}
		}, false},
		{"revision annotation added", func(d *appsv1.Deployment) { d.Annotations["deployment.kubernetes.io/revision"] = "1" }, false},
		{"label added", func(d *appsv1.Deployment) { d.Labels["extra"] = "x" }, false},
		{"available replicas", func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }, true},
		{"updated replicas", func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }, true},
		{"observed generation", func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 2 }, true},
		{"generation", func(d *appsv1.Deployment) { d.Generation = 2 }, true},
		{"spec replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](2) }, true},
		{"recreated", func(d *appsv1.Deployment) { d.UID = "u2" }, true},
		{"deleting", func(d *appsv1.Deployment) { d.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
		{"label removed", func(d *appsv1.Deployment) { delete(d.Labels, "app.kubernetes.io/name") }, true},
		{"annotation changed", func(d *appsv1.Deployment) { d.Annotations["team"] = "b" }, true},
		{"owner removed", func(d *appsv1.Deployment) { d.OwnerReferences = nil }, true},
	} {
		old, obj := base(), base()
		tc.change(obj)
		if tc.name != "resync" {
			obj.ResourceVersion = "11"
		}
		if got := DeploymentChanged(old, obj); got != tc.want {
			t.Errorf("%s: DeploymentChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !DeploymentChanged("not a deployment", base()) {
		t.Error("an object that is not a Deployment does not count as changed")
	}
}
