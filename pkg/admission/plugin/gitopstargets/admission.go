// Package gitopstargets is the GitOpsTargets admission plugin: an OCIArtifact or a
// ReconciliationRequest is stored only if every Cluster its spec.targets name exists, so that a
// typo in a cluster name is a 422 naming the field at kubectl apply, not a delivery that fails
// in status later. On update only the targets the update adds are checked: a Cluster removed
// after an artifact named it does not block changes to the artifact (plinth-controller reports
// that target as not Ready).
//
// Clusters come from the Plinth informer, never from etcd per request.
package gitopstargets

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/plinth-dev/plinth/pkg/admission/initializer"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
)

// PluginName is the plugin's name in --enable-admission-plugins and the plugin order.
const PluginName = "GitOpsTargets"

// Register adds the plugin to a registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin is the GitOpsTargets admission plugin.
type Plugin struct {
	*admission.Handler
	clusters listers.ClusterLister
}

var (
	_ admission.ValidationInterface          = &Plugin{}
	_ initializer.WantsPlinthInformerFactory = &Plugin{}
)

// New returns a plugin for OCIArtifact and ReconciliationRequest creates and updates.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetPlinthInformerFactory reads Clusters from the factory; the plugin is ready once their
// cache has synced.
func (p *Plugin) SetPlinthInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Platform().V1alpha1().Clusters()
	p.clusters = informer.Lister()
	p.SetReadyFunc(admission.ReadyFunc(informer.Informer().HasSynced))
}

// ValidateInitialization requires the Cluster informer.
func (p *Plugin) ValidateInitialization() error {
	if p.clusters == nil {
		return fmt.Errorf("%s admission plugin needs the Plinth informer factory", PluginName)
	}
	return nil
}

// Validate refuses an OCIArtifact or a ReconciliationRequest naming a Cluster that does not
// exist: 422 Invalid, with a NotFound cause at each such spec.targets[i].cluster.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	var kind string
	var clusters, before []string
	switch a.GetResource().GroupResource() {
	case gitops.Resource("ociartifacts"):
		obj, ok := a.GetObject().(*gitops.OCIArtifact)
		if !ok {
			return nil
		}
		kind, clusters = "OCIArtifact", artifactClusters(obj)
		if old, ok := a.GetOldObject().(*gitops.OCIArtifact); ok && a.GetOperation() == admission.Update {
			before = artifactClusters(old)
		}
	case gitops.Resource("reconciliationrequests"):
		obj, ok := a.GetObject().(*gitops.ReconciliationRequest)
		if !ok {
			return nil
		}
		kind, clusters = "ReconciliationRequest", requestClusters(obj)
		if old, ok := a.GetOldObject().(*gitops.ReconciliationRequest); ok && a.GetOperation() == admission.Update {
			before = requestClusters(old)
		}
	default:
		return nil
	}
	// On update, what the stored object already named was admitted then; an update without
	// its old object (never the case in the API server) is judged as a create: in full.
	known := sets.New(before...)
	var check []int
	for i, c := range clusters {
		if c != "" && !known.Has(c) {
			check = append(check, i)
		}
	}
	if len(check) == 0 {
		return nil
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	var errs field.ErrorList
	for _, i := range check {
		_, err := p.clusters.Get(clusters[i])
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, field.NotFound(field.NewPath("spec", "targets").Index(i).Child("cluster"), clusters[i]))
		case err != nil:
			return apierrors.NewInternalError(err)
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(gitops.Kind(kind), a.GetName(), errs)
	}
	return nil
}

// artifactClusters are the target Clusters of an artifact, in the order of spec.targets.
func artifactClusters(a *gitops.OCIArtifact) []string {
	out := make([]string, len(a.Spec.Targets))
	for i, t := range a.Spec.Targets {
		out[i] = t.Cluster
	}
	return out
}

// requestClusters are the Clusters of a request's targets, in the order of spec.targets.
func requestClusters(r *gitops.ReconciliationRequest) []string {
	out := make([]string, len(r.Spec.Targets))
	for i, t := range r.Spec.Targets {
		out[i] = t.Cluster
	}
	return out
}
