// Package packtargets is the PackTargets admission plugin: an InfrastructureClusterPack is
// stored only if every Cluster its spec.targetClusters names exists, and only if its
// spec.dependsOn does not close a cycle among the packs of its namespace. A typo in a cluster
// name is then a 422 naming the field at kubectl apply, not a delivery that fails in status
// later; and a cycle, which would hold every pack in it forever waiting for the others, never
// reaches the controller. On update only the clusters the update adds are checked: a Cluster
// removed after a pack named it does not block changes to the pack (its instance reports the
// cluster as unreachable).
//
// A pack's name is also unique across namespaces: its instances {pack}-{cluster} live in the
// seam-tenant-{cluster} namespaces every pack shares.
//
// Clusters and packs come from the Plinth informers, never from etcd per request. Two packs
// created at the same instant, each depending on the other, can both pass (each sees the
// other's cache without the new edge): their instances then wait for each other, each naming
// the other, and neither is delivered.
package packtargets

import (
	"context"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/plinth-dev/plinth/pkg/admission/initializer"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	packlisters "github.com/plinth-dev/plinth/pkg/generated/listers/infrastructure/v1alpha1"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/packs/dependencies"
)

// PluginName is the plugin's name in --enable-admission-plugins and the plugin order.
const PluginName = "PackTargets"

// Register adds the plugin to a registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin is the PackTargets admission plugin.
type Plugin struct {
	*admission.Handler
	clusters listers.ClusterLister
	packs    packlisters.InfrastructureClusterPackLister
}

var (
	_ admission.ValidationInterface          = &Plugin{}
	_ initializer.WantsPlinthInformerFactory = &Plugin{}
)

// New returns a plugin for InfrastructureClusterPack creates and updates.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetPlinthInformerFactory reads Clusters and packs from the factory; the plugin is ready once
// both caches have synced.
func (p *Plugin) SetPlinthInformerFactory(f informers.SharedInformerFactory) {
	clusters, packs := f.Platform().V1alpha1().Clusters(), f.Infrastructure().V1alpha1().InfrastructureClusterPacks()
	p.clusters, p.packs = clusters.Lister(), packs.Lister()
	p.SetReadyFunc(func() bool { return clusters.Informer().HasSynced() && packs.Informer().HasSynced() })
}

// ValidateInitialization requires the Cluster and pack informers.
func (p *Plugin) ValidateInitialization() error {
	if p.clusters == nil || p.packs == nil {
		return fmt.Errorf("%s admission plugin needs the Plinth informer factory", PluginName)
	}
	return nil
}

// Validate refuses a pack naming a Cluster that does not exist (a NotFound cause at each such
// spec.targetClusters[i]) or whose dependencies close a cycle (an Invalid cause at
// spec.dependsOn naming it): 422 Invalid.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != infrastructure.Resource("infrastructureclusterpacks") {
		return nil
	}
	pack, ok := a.GetObject().(*infrastructure.InfrastructureClusterPack)
	if !ok {
		return nil
	}
	var before []string
	var depsBefore []string
	if old, ok := a.GetOldObject().(*infrastructure.InfrastructureClusterPack); ok && a.GetOperation() == admission.Update {
		before, depsBefore = old.Spec.TargetClusters, old.Spec.DependsOn
	}
	known := sets.New(before...)
	var check []int
	for i, c := range pack.Spec.TargetClusters {
		if c != "" && !known.Has(c) {
			check = append(check, i)
		}
	}
	depsChanged := !sets.New(depsBefore...).Equal(sets.New(pack.Spec.DependsOn...))
	create := a.GetOperation() == admission.Create
	if len(check) == 0 && !(depsChanged && len(pack.Spec.DependsOn) > 0) && !create {
		return nil
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	var errs field.ErrorList
	for _, i := range check {
		_, err := p.clusters.Get(pack.Spec.TargetClusters[i])
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, field.NotFound(field.NewPath("spec", "targetClusters").Index(i), pack.Spec.TargetClusters[i]))
		case err != nil:
			return apierrors.NewInternalError(err)
		}
	}
	if create {
		// Instances are named {pack}-{cluster} in seam-tenant-{cluster}, namespaces every
		// pack shares: a second pack of the same name in another namespace would find its
		// instances taken.
		all, err := p.packs.List(labels.Everything())
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		for _, o := range all {
			if o.Name == a.GetName() && o.Namespace != a.GetNamespace() {
				dup := field.Duplicate(field.NewPath("metadata", "name"), a.GetName())
				dup.Detail = fmt.Sprintf("InfrastructureClusterPack %s/%s has this name; pack names are unique across namespaces, since their instances {pack}-{cluster} share the seam-tenant-{cluster} namespaces", o.Namespace, o.Name)
				errs = append(errs, dup)
				break
			}
		}
	}
	if depsChanged && len(pack.Spec.DependsOn) > 0 {
		others, err := p.packs.InfrastructureClusterPacks(a.GetNamespace()).List(labels.Everything())
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		graph := dependencies.Graph{}
		for _, o := range others {
			graph[o.Name] = o.Spec.DependsOn
		}
		graph[a.GetName()] = pack.Spec.DependsOn
		if cycle := graph.CycleThrough(a.GetName()); cycle != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "dependsOn"), pack.Spec.DependsOn,
				fmt.Sprintf("closes a dependency cycle (%s); packs in a cycle would wait for each other forever", strings.Join(cycle, " → "))))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(infrastructure.Kind("InfrastructureClusterPack"), a.GetName(), errs)
	}
	return nil
}
