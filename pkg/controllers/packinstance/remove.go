package packinstance

import (
	"context"
	"errors"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/message"
)

// cacheKey is the loop's key type.
type cacheKey = cache.ObjectName

var everything = labels.Everything()

func artifactOf(obj interface{}) (*gitopsv1alpha1.OCIArtifact, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	art, ok := obj.(*gitopsv1alpha1.OCIArtifact)
	return art, ok
}

// remove undoes the instance's deliveries before its finalizer goes: the Kubectl engine deletes
// what deployedResources lists (objects still labelled for this instance, as its pruning
// does); on a Flux cluster the instance's OCIArtifact is deleted and its own finalizer has
// Flux prune. Nothing is removed when the pack retains on deletion or the cluster is gone.
func (c *Controller) remove(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance, pack *infrav1alpha1.InfrastructureClusterPack,
	cluster *platformv1alpha1.Cluster) error {
	if !slices.Contains(inst.Finalizers, infrav1alpha1.FinalizerPack) {
		return nil
	}
	retain := pack != nil && pack.Spec.LifecyclePolicies != nil && pack.Spec.LifecyclePolicies.RetainOnDeletion
	if !retain && cluster != nil {
		if gone, err := c.undeliver(ctx, inst, cluster); err != nil || !gone {
			return err
		}
	}
	updated := inst.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == infrav1alpha1.FinalizerPack })
	_, err := c.client.InfrastructurePackInstances(inst.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	c.forget(cache.MetaObjectToName(inst))
	return err
}

// undeliver removes what the instance delivered from its cluster and says whether it is gone.
// On a Flux cluster the instance is looked at again until Flux has pruned; a removal that
// failed on a Kubectl cluster is recorded in the instance's Ready condition.
func (c *Controller) undeliver(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance, cluster *platformv1alpha1.Cluster) (bool, error) {
	if engineOf(cluster) == platformv1alpha1.GitOpsEngineFlux {
		gone, err := c.removeFlux(ctx, inst, cluster)
		if err == nil && !gone {
			c.EnqueueAfter(cache.MetaObjectToName(inst), c.poll)
		}
		return gone, err
	}
	if len(inst.Status.DeployedResources) == 0 {
		return true, nil
	}
	removeCtx, cancel := context.WithTimeout(ctx, operationTimeout+time.Duration(len(inst.Status.DeployedResources))*perObjectTimeout)
	defer cancel()
	last := &gitopsv1alpha1.ArtifactTargetStatus{Inventory: inventory(inst.Status.DeployedResources)}
	target := delivery.Target{Spec: gitopsv1alpha1.ArtifactTarget{Cluster: cluster.Name, Prune: ptr.To(true)}, Cluster: cluster}
	err := c.engine.Remove(removeCtx, inst.Namespace, inst.Name, target, last, delivery.RemoveOptions{})
	if err == nil {
		return true, nil
	}
	before := inst.DeepCopy()
	c.failed(inst, err)
	reason, _ := failure(inst, err)
	conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionReady, metav1.ConditionFalse, reason,
		"Removing the delivered objects failed: "+message.Error(err))
	// The removal's own deadline may be what failed: the status is written with a fresh one.
	writeCtx, cancelWrite := context.WithTimeout(context.WithoutCancel(ctx), operationTimeout)
	defer cancelWrite()
	return false, errors.Join(c.write(writeCtx, inst, before), err)
}
