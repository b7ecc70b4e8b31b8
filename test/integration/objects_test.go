package integration

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

const workloadUID = "6a3c1e9e-8f5d-4c3b-9a57-0d5b7c2f4e11"

func newWorkload(name, runtimeClass string) *v1b1.Workload {
	return &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: v1b1.WorkloadSpec{
			RuntimeClass: runtimeClass,
			Resources: map[string]v1b1.ResourceSpec{
				"db": {Type: "postgres", Params: &common.RawObject{Raw: []byte(`{"version":16}`)}},
			},
			Containers: map[string]v1b1.Container{
				"main": {
					Image:     "registry.example.com/web:1.0",
					Variables: map[string]string{"DB_HOST": "${resources.db.host}"},
					Files:     []v1b1.ContainerFile{{Target: "/etc/app.conf", Content: ptr.To("greeting=hello")}},
				},
			},
			Service: &v1b1.ServiceSpec{Ports: map[string]v1b1.ServicePort{"web": {Port: 80, TargetPort: 8080}}},
		},
	}
}

func newPolicy(name string, priority int32) *v1b1.PlatformPolicy {
	return &v1b1.PlatformPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1b1.PlatformPolicySpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			Defaults: &v1b1.PolicyDefaults{RuntimeClass: "kubernetes"},
			Constraints: &v1b1.PolicyConstraints{
				Images: &v1b1.ImageConstraints{AllowedRegistries: []string{"registry.example.com"}},
			},
			Priority: priority,
		},
	}
}

func newBinding(name, workload, key string) *v1b1.ResourceBinding {
	return &v1b1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1b1.ResourceBindingSpec{
			WorkloadRef: v1b1.WorkloadReference{Name: workload, UID: workloadUID},
			ResourceKey: key,
			Type:        "postgres",
			Class:       "small",
		},
	}
}

func newPlan(name string) *v1b1.WorkloadPlan {
	return &v1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1b1.WorkloadPlanSpec{
			WorkloadRef:  v1b1.PlanWorkloadReference{Name: name, UID: workloadUID, Generation: 1},
			RuntimeClass: "kubernetes",
			Projection: v1b1.WorkloadProjection{Containers: map[string]v1b1.ContainerProjection{
				"main": {Image: "registry.example.com/web:1.0", Env: []v1b1.EnvProjection{
					{Name: "DB_HOST", From: &v1b1.BindingOutputSource{BindingKey: "db", OutputKey: "host"}},
				}},
			}},
			Bindings: []v1b1.PlanBinding{{Key: "db", Type: "postgres", Outputs: []string{"host"}, Critical: true}},
		},
	}
}
