package resourcebinding

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/plinth-dev/plinth/pkg/errkind"
)

// FailedObjectError is an applied object that reports it has failed for good (a Job with a
// Failed condition, a Deployment past its progress deadline, a lost claim). Retrying the
// apply cannot help, so it is returned marked errkind.Stalled: the binding goes Failed with
// this message and waits for the object or the binding to change.
type FailedObjectError struct {
	// Kind and Name identify the object.
	Kind, Name string
	// Message is one neutral sentence for the binding's status.
	Message string
}

func (e *FailedObjectError) Error() string { return e.Message }

// ObjectReady reports whether an object that a template provisioner applied is ready to be
// used, by the rules kubectl rollout status follows for the kinds it knows: a workload has
// rolled out its current generation completely (every replica updated, no old replica left,
// every updated replica available), a Job has completed, and any other object with a Ready
// condition has it True. Objects with none of these (Services, ConfigMaps, Secrets, ...) are
// ready once applied. A status field the controller has not written yet counts as zero.
//
// A PersistentVolumeClaim is ready unless it is Lost: with a WaitForFirstConsumer storage
// class (the default of most clusters) it binds only once a pod uses it, and that pod is the
// workload this binding holds back, so waiting for Bound would never end.
func ObjectReady(obj *unstructured.Unstructured) (bool, error) {
	group, kind := obj.GroupVersionKind().Group, obj.GetKind()
	failed := func(message string) (bool, error) {
		return false, errkind.Stalled(&FailedObjectError{Kind: kind, Name: obj.GetName(), Message: message})
	}
	if generation, observed, found := generations(obj); found && observed < generation {
		return false, nil // the controller has not seen the latest spec yet
	}
	switch {
	case group == "apps" && kind == "Deployment":
		if c, ok := condition(obj, "Progressing"); ok && c["reason"] == "ProgressDeadlineExceeded" {
			return failed("The resource did not finish rolling out within its progress deadline.")
		}
		replicas := specReplicas(obj)
		updated, current := statusInt(obj, "updatedReplicas"), statusInt(obj, "replicas")
		return updated >= replicas && current <= updated && statusInt(obj, "availableReplicas") >= updated, nil
	case group == "apps" && kind == "StatefulSet":
		if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "updateStrategy", "type"); strategy == "OnDelete" {
			return statusInt(obj, "readyReplicas") >= specReplicas(obj), nil
		}
		replicas := specReplicas(obj)
		if statusInt(obj, "readyReplicas") < replicas {
			return false, nil
		}
		if partition, found, _ := unstructured.NestedInt64(obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition"); found && partition > 0 {
			// Only the replicas at or above the partition are meant to update.
			return statusInt(obj, "updatedReplicas") >= replicas-partition, nil
		}
		currentRevision, _, _ := unstructured.NestedString(obj.Object, "status", "currentRevision")
		updateRevision, _, _ := unstructured.NestedString(obj.Object, "status", "updateRevision")
		return currentRevision == updateRevision, nil
	case group == "apps" && kind == "ReplicaSet":
		return statusInt(obj, "readyReplicas") >= specReplicas(obj), nil
	case group == "apps" && kind == "DaemonSet":
		desired, found, _ := unstructured.NestedInt64(obj.Object, "status", "desiredNumberScheduled")
		if !found {
			return false, nil
		}
		if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "updateStrategy", "type"); strategy == "OnDelete" {
			return statusInt(obj, "numberReady") >= desired, nil
		}
		return statusInt(obj, "updatedNumberScheduled") >= desired && statusInt(obj, "numberAvailable") >= desired, nil
	case group == "batch" && kind == "Job":
		if conditionTrue(obj, "Failed") {
			return failed("The resource's setup job failed.")
		}
		return conditionTrue(obj, "Complete"), nil
	case group == "" && kind == "PersistentVolumeClaim":
		if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase == "Lost" {
			return failed("The resource's volume claim lost its volume.")
		}
		return true, nil
	case group == "" && kind == "Pod":
		if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase == "Failed" {
			return failed("The resource's pod failed.")
		}
		return conditionTrue(obj, "Ready"), nil
	}
	if _, found := condition(obj, "Ready"); found {
		return conditionTrue(obj, "Ready"), nil
	}
	return true, nil
}

// specReplicas is spec.replicas, which the API server defaults to 1.
func specReplicas(obj *unstructured.Unstructured) int64 {
	replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return replicas
}

// statusInt is an integer status field; a field the controller has not written yet is zero.
func statusInt(obj *unstructured.Unstructured, field string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, "status", field)
	return v
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
