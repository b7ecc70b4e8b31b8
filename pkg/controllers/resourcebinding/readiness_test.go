package resourcebinding

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestObjectReady(t *testing.T) {
	for name, tc := range map[string]struct {
		manifest   string
		want       bool
		wantFailed bool
	}{
		"statefulset ready":                {manifest: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 1}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, readyReplicas: 1, currentRevision: r1, updateRevision: r1}", want: true},
		"statefulset starting":             {manifest: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 1}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, readyReplicas: 0}"},
		"statefulset without status":       {manifest: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 1}\nspec: {replicas: 1}"},
		"statefulset of a newer spec":      {manifest: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 2}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, readyReplicas: 1}"},
		"statefulset mid-rollout":          {manifest: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 2}\nspec: {replicas: 2}\nstatus: {observedGeneration: 2, readyReplicas: 2, currentRevision: r1, updateRevision: r2}"},
		"statefulset partition reached":    {manifest: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 2}\nspec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}\nstatus: {observedGeneration: 2, readyReplicas: 3, updatedReplicas: 1, currentRevision: r1, updateRevision: r2}", want: true},
		"statefulset on delete":            {manifest: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {generation: 2}\nspec: {replicas: 1, updateStrategy: {type: OnDelete}}\nstatus: {observedGeneration: 2, readyReplicas: 1, currentRevision: r1, updateRevision: r2}", want: true},
		"deployment available":             {manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 3}\nspec: {replicas: 2}\nstatus: {observedGeneration: 3, replicas: 2, availableReplicas: 2, updatedReplicas: 2}", want: true},
		"deployment rolling":               {manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 3}\nspec: {replicas: 2}\nstatus: {observedGeneration: 3, replicas: 2, availableReplicas: 2, updatedReplicas: 1}"},
		"deployment with no updated yet":   {manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 3}\nspec: {replicas: 2}\nstatus: {observedGeneration: 3, replicas: 2, availableReplicas: 2}"},
		"deployment old pods terminating":  {manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 3}\nspec: {replicas: 2}\nstatus: {observedGeneration: 3, replicas: 3, availableReplicas: 3, updatedReplicas: 2}"},
		"deployment updated not available": {manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 3}\nspec: {replicas: 2}\nstatus: {observedGeneration: 3, replicas: 2, availableReplicas: 1, updatedReplicas: 2}"},
		"deployment of default replicas":   {manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 1}\nspec: {}\nstatus: {observedGeneration: 1, replicas: 1, availableReplicas: 1, updatedReplicas: 1}", want: true},
		"deployment past its deadline":     {manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {generation: 1}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1, conditions: [{type: Progressing, status: \"False\", reason: ProgressDeadlineExceeded}]}", wantFailed: true},
		"daemonset ready":                  {manifest: "apiVersion: apps/v1\nkind: DaemonSet\nstatus: {desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 3, numberAvailable: 3}", want: true},
		"daemonset partly ready":           {manifest: "apiVersion: apps/v1\nkind: DaemonSet\nstatus: {desiredNumberScheduled: 3, numberReady: 2, updatedNumberScheduled: 3, numberAvailable: 2}"},
		"daemonset mid-rollout":            {manifest: "apiVersion: apps/v1\nkind: DaemonSet\nstatus: {desiredNumberScheduled: 3, numberReady: 3, updatedNumberScheduled: 1, numberAvailable: 3}"},
		"job complete":                     {manifest: "apiVersion: batch/v1\nkind: Job\nstatus: {conditions: [{type: Complete, status: \"True\"}]}", want: true},
		"job running":                      {manifest: "apiVersion: batch/v1\nkind: Job\nstatus: {active: 1}"},
		"job failed":                       {manifest: "apiVersion: batch/v1\nkind: Job\nstatus: {conditions: [{type: Failed, status: \"True\"}]}", wantFailed: true},
		"pvc bound":                        {manifest: "apiVersion: v1\nkind: PersistentVolumeClaim\nstatus: {phase: Bound}", want: true},
		"pvc waiting for its consumer":     {manifest: "apiVersion: v1\nkind: PersistentVolumeClaim\nstatus: {phase: Pending}", want: true},
		"pvc lost":                         {manifest: "apiVersion: v1\nkind: PersistentVolumeClaim\nstatus: {phase: Lost}", wantFailed: true},
		"pod ready":                        {manifest: "apiVersion: v1\nkind: Pod\nstatus: {conditions: [{type: Ready, status: \"True\"}]}", want: true},
		"pod failed":                       {manifest: "apiVersion: v1\nkind: Pod\nstatus: {phase: Failed}", wantFailed: true},
		"custom kind not ready":            {manifest: "apiVersion: example.com/v1\nkind: Broker\nstatus: {conditions: [{type: Ready, status: \"False\"}]}"},
		"custom kind ready":                {manifest: "apiVersion: example.com/v1\nkind: Broker\nstatus: {conditions: [{type: Ready, status: \"True\"}]}", want: true},
		"service":                          {manifest: "apiVersion: v1\nkind: Service\nspec: {ports: [{port: 80}]}", want: true},
		"configmap":                        {manifest: "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}", want: true},
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
			got, err := ObjectReady(obj)
			var failed *FailedObjectError
			if tc.wantFailed != errors.As(err, &failed) || (failed != nil && failed.Message == "") {
				t.Fatalf("error %v, want failed=%v", err, tc.wantFailed)
			}
			if got != tc.want {
				t.Errorf("ObjectReady = %v, want %v", got, tc.want)
			}
		})
	}
}
