package resolver

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ObjectReady reports whether an object that a template provisioner applied is ready to be
// used, by the rules kubectl rollout status and Helm's --wait follow for the kinds they know:
// workloads have all their replicas ready for the current generation, a Job has completed, a
// PersistentVolumeClaim is bound, and any other object with a Ready condition has it True.
// Objects with none of these (Services, ConfigMaps, Secrets, ...) are ready once applied.
func ObjectReady(obj *unstructured.Unstructured) bool {
	if generation, observed, found := generations(obj); found && observed < generation {
		return false // the controller has not seen the latest spec yet
	}
	group := obj.GroupVersionKind().Group
	kind := obj.GetKind()
	switch {
	case group == "apps" && (kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet"):
		replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		if !found {
			replicas = 1
		}
		ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
		updated, foundUpdated, _ := unstructured.NestedInt64(obj.Object, "status", "updatedReplicas")
		if kind == "Deployment" {
			available, _, _ := unstructured.NestedInt64(obj.Object, "status", "availableReplicas")
			return available >= replicas && (!foundUpdated || updated >= replicas)
		}
		return ready >= replicas
	case group == "apps" && kind == "DaemonSet":
		desired, found, _ := unstructured.NestedInt64(obj.Object, "status", "desiredNumberScheduled")
		ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "numberReady")
		return found && ready >= desired
	case group == "batch" && kind == "Job":
		return conditionTrue(obj, "Complete")
	case group == "" && kind == "PersistentVolumeClaim":
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		return phase == "Bound"
	case group == "" && kind == "Pod":
		return conditionTrue(obj, "Ready")
	}
	if _, found := condition(obj, "Ready"); found {
		return conditionTrue(obj, "Ready")
	}
	return true
}

// generations returns metadata.generation and status.observedGeneration when the object
// reports the latter.
func generations(obj *unstructured.Unstructured) (int64, int64, bool) {
	observed, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return obj.GetGeneration(), observed, found
}

func condition(obj *unstructured.Unstructured, condType string) (map[string]interface{}, bool) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]interface{}); ok && m["type"] == condType {
			return m, true
		}
	}
	return nil, false
}

func conditionTrue(obj *unstructured.Unstructured, condType string) bool {
	c, found := condition(obj, condType)
	return found && c["status"] == "True"
}
