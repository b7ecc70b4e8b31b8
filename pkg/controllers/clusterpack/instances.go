package clusterpack

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
)

// syncInstances creates the instance of every target cluster that has none (in its
// seam-tenant-{cluster} namespace, created when missing), keeps the dependencies of each in
// step with the pack, and deletes the instances of clusters the pack no longer targets (their
// finalizer removes what was delivered).
func (c *Controller) syncInstances(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack, targets []*platformv1alpha1.Cluster) error {
	existing := c.packInstances(pack)
	wanted := sets.New[string]()
	var errs []error
	for _, cl := range targets {
		wanted.Insert(cl.Name)
		want := c.desiredInstance(pack, cl.Name)
		inst, ok := existing[cl.Name]
		if !ok {
			errs = append(errs, c.createInstance(ctx, want))
			continue
		}
		if inst.DeletionTimestamp != nil {
			continue // being removed; created again once gone
		}
		if !slices.Equal(inst.Spec.DependsOn, want.Spec.DependsOn) || !apiequality.Semantic.DeepEqual(inst.Spec.DependencyPolicy, want.Spec.DependencyPolicy) {
			updated := inst.DeepCopy()
			updated.Spec.DependsOn, updated.Spec.DependencyPolicy = want.Spec.DependsOn, want.Spec.DependencyPolicy
			_, err := c.client.InfrastructurePackInstances(updated.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
			errs = append(errs, err)
		}
	}
	for cluster, inst := range existing {
		if !wanted.Has(cluster) && inst.DeletionTimestamp == nil {
			errs = append(errs, c.deleteInstance(ctx, inst))
		}
	}
	return errors.Join(errs...)
}

// packInstances are the pack's instances by cluster.
func (c *Controller) packInstances(pack *infrav1alpha1.InfrastructureClusterPack) map[string]*infrav1alpha1.InfrastructurePackInstance {
	objs, _ := c.instances.ByIndex(byPack, pack.Namespace+"/"+pack.Name)
	out := make(map[string]*infrav1alpha1.InfrastructurePackInstance, len(objs))
	for _, o := range objs {
		if inst, ok := o.(*infrav1alpha1.InfrastructurePackInstance); ok {
			out[inst.Spec.TargetClusterRef] = inst
		}
	}
	return out
}

// desiredInstance is the instance of the pack on the cluster as it is created: the seed's
// spec copied from the pack (its version and chart are what the first delivery will deliver;
// later deliveries update them), with the instance finalizer that cleans the cluster up.
func (c *Controller) desiredInstance(pack *infrav1alpha1.InfrastructureClusterPack, cluster string) *infrav1alpha1.InfrastructurePackInstance {
	inst := &infrav1alpha1.InfrastructurePackInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name:       infrav1alpha1.InstanceName(pack.Name, cluster),
			Namespace:  infrav1alpha1.InstanceNamespace(cluster),
			Finalizers: []string{infrav1alpha1.FinalizerPack},
			Labels: map[string]string{
				infrav1alpha1.LabelPack:          pack.Name,
				infrav1alpha1.LabelPackNamespace: pack.Namespace,
				infrav1alpha1.LabelCluster:       cluster,
			},
		},
		Spec: infrav1alpha1.InfrastructurePackInstanceSpec{
			ClusterPackRef:   pack.Name,
			TargetClusterRef: cluster,
			Version:          pack.Status.Version,
			HelmVersion:      pack.Status.HelmVersion,
		},
	}
	for _, dep := range pack.Spec.DependsOn {
		inst.Spec.DependsOn = append(inst.Spec.DependsOn, infrav1alpha1.InstanceName(dep, cluster))
	}
	if p := pack.Spec.DependencyPolicy; p != nil {
		inst.Spec.DependencyPolicy = p.DeepCopy()
	}
	if ch := pack.Spec.Chart; ch != nil {
		inst.Spec.ChartName, inst.Spec.ChartURL, inst.Spec.ChartVersion = ch.Name, ch.URL, pack.Status.ChartVersion
	}
	return inst
}

// createInstance creates the instance, and its namespace first when missing.
func (c *Controller) createInstance(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inst.Namespace, Labels: map[string]string{infrav1alpha1.LabelCluster: inst.Spec.TargetClusterRef}}}
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err := c.client.InfrastructurePackInstances(inst.Namespace).Create(ctx, inst, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Created by a pack of the same name in another namespace, or by hand: not this
		// pack's, so it is left alone; the pack's status shows the cluster as progressing.
		return nil
	}
	return err
}

func (c *Controller) deleteInstance(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance) error {
	uid := inst.UID
	err := c.client.InfrastructurePackInstances(inst.Namespace).Delete(ctx, inst.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// finalize deletes a deleted pack's instances, waits until their finalizers have cleaned the
// clusters up (each instance's deletion wakes the pack), deletes the kept revisions and
// releases the pack.
func (c *Controller) finalize(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack) error {
	if !slices.Contains(pack.Finalizers, infrav1alpha1.FinalizerPack) {
		return nil
	}
	if instances := c.packInstances(pack); len(instances) > 0 {
		return c.removeInstances(ctx, pack, instances)
	}
	if err := c.store.DeleteAll(ctx, pack.Namespace, pack.Name); err != nil {
		return err
	}
	updated := pack.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == infrav1alpha1.FinalizerPack })
	_, err := c.client.InfrastructureClusterPacks(pack.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// removeInstances deletes the instances of a deleted pack that are not being deleted yet, and
// says in the pack's Ready condition which clusters it is waiting for.
func (c *Controller) removeInstances(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack,
	instances map[string]*infrav1alpha1.InfrastructurePackInstance) error {
	var errs []error
	waiting := make([]string, 0, len(instances))
	for cluster, inst := range instances {
		waiting = append(waiting, cluster)
		if inst.DeletionTimestamp == nil {
			errs = append(errs, c.deleteInstance(ctx, inst))
		}
	}
	slices.Sort(waiting)
	before := pack.DeepCopy()
	msg := fmt.Sprintf("Removing the pack from %d clusters: %v.", len(waiting), waiting)
	if pack.Spec.LifecyclePolicies != nil && pack.Spec.LifecyclePolicies.RetainOnDeletion {
		msg = fmt.Sprintf("Deleting the instances on %d clusters; the delivered objects stay (retainOnDeletion).", len(waiting))
	}
	conditions.Set(&pack.Status.Conditions, pack.Generation, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDeleting, msg)
	_, _, err := c.status.Write(ctx, before, pack)
	return errors.Join(append(errs, err)...)
}
