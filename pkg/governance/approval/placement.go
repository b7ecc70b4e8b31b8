package approval

import (
	"cmp"
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/platform"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

// checkPlacement decides whether an approval of a create may place the VM on the chosen
// cluster — the decision's, or the one an earlier approver of the same ticket chose. The
// cluster must be registered, its last probe HEALTHY with KubeVirt available, and it must
// enable every KubeVirt feature the (possibly replaced) spec requires. What the probes report
// is the platform's knowledge of the cluster; an approval against stale knowledge fails later,
// at materialization, and the ticket says so.
func (f *Flow) checkPlacement(ctx context.Context, t *governance.ApprovalTicket, d *governance.TicketDecision) error {
	name := d.Cluster
	if name == "" {
		name = t.Status.Cluster
	}
	vm := t.Spec.TargetRef.Name
	params := apperror.Params{"ticket": t.Name, "vm": vm}
	if name == "" {
		return apperror.New(apperror.ClusterRequired, ticketResource, t.Name, params,
			"Approving the creation of ManagedVM %q chooses its target cluster: set cluster.", vm)
	}
	params["cluster"] = name
	obj, err := f.stores.Clusters.Get(inNamespace(ctx, ""), name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return apperror.New(apperror.ClusterNotFound, ticketResource, t.Name, params, "Cluster %q is not registered.", name)
	}
	if err != nil {
		return err
	}
	c := obj.(*platform.Cluster)
	spec := t.Spec.RequestedSpec
	switch {
	case d.ModifiedSpec != nil:
		spec = *d.ModifiedSpec
	case t.Status.ModifiedSpec != nil:
		spec = *t.Status.ModifiedSpec
	}
	degraded, missing := unfit(c, spec)
	if degraded {
		phase := cmp.Or(c.Status.Phase, platform.ClusterPhaseUnknown)
		params["phase"] = string(phase)
		return apperror.New(apperror.ClusterDegraded, ticketResource, t.Name, params,
			"Cluster %q is %s or has no KubeVirt available; VMs are placed on HEALTHY clusters with KubeVirt.", name, phase)
	}
	if len(missing) > 0 {
		params["features"] = strings.Join(missing, ",")
		return apperror.New(apperror.ClusterMissingFeatures, ticketResource, t.Name, params,
			"Cluster %q does not enable %s, which ManagedVM %q requires.", name, strings.Join(missing, ", "), vm)
	}
	return nil
}

// unfit says why a cluster cannot take a VM of spec: degraded when its last probe is not
// HEALTHY with KubeVirt available; missing, the required features it does not enable. Both
// approvals and automatic placement decide by it.
func unfit(c *platform.Cluster, spec governance.ManagedVMSpec) (degraded bool, missing []string) {
	degraded = c.Status.Phase != platform.ClusterPhaseHealthy || !apimeta.IsStatusConditionTrue(c.Status.Conditions, platformv1alpha1.ConditionKubeVirtAvailable)
	return degraded, sets.List(sets.New(spec.RequiredFeatures...).Difference(sets.New(c.Status.EnabledFeatures...)))
}

// autoPlace chooses a cluster for a create that needs no approval, since no approver chooses
// one: the first registered cluster, by name, that a checkPlacement would accept. With none,
// the create is refused as degraded.
func (f *Flow) autoPlace(ctx context.Context, vmName string, spec governance.ManagedVMSpec) (string, error) {
	obj, err := f.stores.Clusters.List(inNamespace(ctx, ""), &metainternalversion.ListOptions{})
	if err != nil {
		return "", err
	}
	clusters := obj.(*platform.ClusterList).Items
	slices.SortFunc(clusters, func(a, b platform.Cluster) int { return strings.Compare(a.Name, b.Name) })
	for i := range clusters {
		if degraded, missing := unfit(&clusters[i], spec); !degraded && len(missing) == 0 {
			return clusters[i].Name, nil
		}
	}
	return "", apperror.New(apperror.ClusterDegraded, vmResource, vmName, apperror.Params{"vm": vmName, "features": strings.Join(spec.RequiredFeatures, ",")},
		"No HEALTHY cluster with KubeVirt offers what ManagedVM %q requires, and its creation needs no approver to choose one.", vmName)
}

// VMsOnCluster lists the ManagedVMs (namespace/name) placed on a cluster, in every namespace:
// a cluster that hosts any may not be deleted. A VM whose deletion is approved does not count:
// should its cluster be gone for good, unregistering it is how the deletion completes.
func (f *Flow) VMsOnCluster(ctx context.Context, cluster string) ([]string, error) {
	obj, err := f.stores.VMs.List(inNamespace(ctx, metav1.NamespaceAll), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, vm := range obj.(*governance.ManagedVMList).Items {
		deletionApproved := vm.DeletionTimestamp != nil && !hasFinalizer(&vm)
		if vm.Status.Cluster == cluster && !deletionApproved {
			out = append(out, vm.Namespace+"/"+vm.Name)
		}
	}
	return out, nil
}
