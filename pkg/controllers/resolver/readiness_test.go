package resolver

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestObjectReady(t *testing.T) {
	for name, tc := range map[string]struct {
		manifest string
		want     bool
	}{
		"statefulset ready":              {"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 1}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, readyReplicas: 1}", true},
		"statefulset starting":           {"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 1}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, readyReplicas: 0}", false},
		"statefulset without status":     {"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 1}\nspec: {replicas: 1}", false},
		"statefulset of a newer spec":    {"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 2}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, readyReplicas: 1}", false},
		"deployment available":           {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 3}\nspec: {replicas: 2}\nstatus: {observedGeneration: 3, availableReplicas: 2, updatedReplicas: 2}", true},
		"deployment rolling":             {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 3}\nspec: {replicas: 2}\nstatus: {observedGeneration: 3, availableReplicas: 2, updatedReplicas: 1}", false},
		"deployment of default replicas": {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 1}\nspec: {}\nstatus: {observedGeneration: 1, availableReplicas: 1, updatedReplicas: 1}", true},
		"daemonset ready":                {"apiVersion: apps/v1\nkind: DaemonSet\nstatus: {desiredNumberScheduled: 3, numberReady: 3}", true},
		"daemonset partly ready":         {"apiVersion: apps/v1\nkind: DaemonSet\nstatus: {desiredNumberScheduled: 3, numberReady: 2}", false},
		"job complete":                   {"apiVersion: batch/v1\nkind: Job\nstatus: {conditions: [{type: Complete, status: \"True\"}]}", true},
		"job running":                    {"apiVersion: batch/v1\nkind: Job\nstatus: {active: 1}", false},
		"pvc bound":                      {"apiVersion: v1\nkind: PersistentVolumeClaim\nstatus: {phase: Bound}", true},
		"pvc pending":                    {"apiVersion: v1\nkind: PersistentVolumeClaim\nstatus: {phase: Pending}", false},
		"pod ready":                      {"apiVersion: v1\nkind: Pod\nstatus: {conditions: [{type: Ready, status: \"True\"}]}", true},
		"custom kind not ready":          {"apiVersion: example.com/v1\nkind: Broker\nstatus: {conditions: [{type: Ready, status: \"False\"}]}", false},
		"custom kind ready":              {"apiVersion: example.com/v1\nkind: Broker\nstatus: {conditions: [{type: Ready, status: \"True\"}]}", true},
		"service":                        {"apiVersion: v1\nkind: Service\nspec: {ports: [{port: 80}]}", true},
		"configmap":                      {"apiVersion: v1\nkind: ConfigMap\ndata: {a: b}", true},
	} {
		t.Run(name, func(t *testing.T) {
			// Decoded as the dynamic client decodes responses: integers are int64.
			data, err := yaml.YAMLToJSON([]byte(tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(data); err != nil {
				t.Fatal(err)
			}
			if got := ObjectReady(obj); got != tc.want {
				t.Errorf("ObjectReady = %v, want %v", got, tc.want)
			}
		})
	}
}
