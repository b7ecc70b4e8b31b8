package kubernetes

import (
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// DeploymentChanged says whether an update of a Deployment can change what the runtime does
// for its plan: a field status reads (generation, spec.replicas, status.observedGeneration,
// updatedReplicas, availableReplicas) or one the applied cache compares (UID, generation,
// the labels, annotations and owner references the manifest sets), its deletion, or an
// informer resync. kube-controller-manager writes a Deployment's status three or four times
// while it rolls out (replicas, readyReplicas, conditions) and adds its revision annotation;
// a plan woken by each of those would report the same status. Anything that is not a
// Deployment counts as changed.
func DeploymentChanged(oldObj, obj interface{}) bool {
	o, ok1 := oldObj.(*appsv1.Deployment)
	n, ok2 := obj.(*appsv1.Deployment)
	if !ok1 || !ok2 {
		return true
	}
	return o.ResourceVersion == n.ResourceVersion ||
		o.UID != n.UID || o.Generation != n.Generation || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
		ptr.Deref(o.Spec.Replicas, 1) != ptr.Deref(n.Spec.Replicas, 1) ||
		o.Status.ObservedGeneration != n.Status.ObservedGeneration ||
		o.Status.UpdatedReplicas != n.Status.UpdatedReplicas ||
		o.Status.AvailableReplicas != n.Status.AvailableReplicas ||
		lostOrChanged(o.Labels, n.Labels) || lostOrChanged(o.Annotations, n.Annotations) ||
		!apiequality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
}

// lostOrChanged says whether a key of before is missing from after or has another value there.
// A key only added cannot take away one the manifest set (the applied cache asks whether the
// live object still holds those), so additions, such as the Deployment controller's revision
// annotation, do not count.
func lostOrChanged(before, after map[string]string) bool {
	for k, v := range before {
		if got, ok := after[k]; !ok || got != v {
			return true
		}
	}
	return false
}
