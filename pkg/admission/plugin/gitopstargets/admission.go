// Package gitopstargets is the GitOpsTargets admission plugin: an OCIArtifact or a
// ReconciliationRequest is stored only if every Cluster its spec.targets name exists, so that a
// typo in a cluster name is a 422 naming the field at kubectl apply, not a delivery that fails
// in status later. On update only the targets the update adds are checked: a Cluster removed
// after an artifact named it does not block changes to the artifact (plinth-controller reports
// that target as not Ready).
//
// An OCIArtifact is also created only if no other OCIArtifact of its namespace pushes to the
// same repository of the same OCIRegistry: two artifacts there would push over each other's
// tags, delete the tag the other adopted when deleted, and prune each other's versions by
// retention. Both fields are immutable, so creates are all there is to check.
//
// Clusters and OCIArtifacts come from the Plinth informers, never from etcd per request.
package gitopstargets

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/plinth-dev/plinth/pkg/admission/initializer"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	gitopslisters "github.com/plinth-dev/plinth/pkg/generated/listers/gitops/v1alpha1"
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
	clusters  listers.ClusterLister
	artifacts gitopslisters.OCIArtifactLister
}

var (
	_ admission.ValidationInterface          = &Plugin{}
	_ initializer.WantsPlinthInformerFactory = &Plugin{}
)

// New returns a plugin for OCIArtifact and ReconciliationRequest creates and updates.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetPlinthInformerFactory reads Clusters and OCIArtifacts from the factory; the plugin is
// ready once both caches have synced.
func (p *Plugin) SetPlinthInformerFactory(f informers.SharedInformerFactory) {
	clusters, artifacts := f.Platform().V1alpha1().Clusters(), f.Gitops().V1alpha1().OCIArtifacts()
	p.clusters, p.artifacts = clusters.Lister(), artifacts.Lister()
	p.SetReadyFunc(func() bool { return clusters.Informer().HasSynced() && artifacts.Informer().HasSynced() })
}

// ValidateInitialization requires the Cluster and OCIArtifact informers.
func (p *Plugin) ValidateInitialization() error {
	if p.clusters == nil || p.artifacts == nil {
		return fmt.Errorf("%s admission plugin needs the Plinth informer factory", PluginName)
	}
	return nil
}

// Validate refuses an OCIArtifact or a ReconciliationRequest naming a Cluster that does not
// exist, and a new OCIArtifact for a repository another one of its namespace pushes to: 422
// Invalid, with a NotFound cause at each such spec.targets[i].cluster and a Duplicate cause at
// spec.repository naming the other artifact.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	var kind string
	var clusters, before []string
	var created *gitops.OCIArtifact
	switch a.GetResource().GroupResource() {
	case gitops.Resource("ociartifacts"):
		obj, ok := a.GetObject().(*gitops.OCIArtifact)
		if !ok {
			return nil
		}
		kind, clusters = "OCIArtifact", artifactClusters(obj)
		if a.GetOperation() == admission.Create {
			created = obj
		}
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
	if len(check) == 0 && created == nil {
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
	if created != nil {
		dup, err := p.repositoryTaken(created, a.GetNamespace())
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		errs = append(errs, dup...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(gitops.Kind(kind), a.GetName(), errs)
	}
	return nil
}

// repositoryTaken reports, as a Duplicate at spec.repository, another OCIArtifact of the
// namespace with the same registry and repository (one being deleted holds it until its tag is
// deleted). The repository is the defaulted one (the server defaults before admission), or
// spec.name as defaulting would make it.
func (p *Plugin) repositoryTaken(a *gitops.OCIArtifact, namespace string) (field.ErrorList, error) {
	registry, repository := a.Spec.RegistryRef.Name, a.Spec.Repository
	if repository == "" {
		repository = a.Spec.Name
	}
	if registry == "" || repository == "" {
		return nil, nil // required: validation's to report
	}
	others, err := p.artifacts.OCIArtifacts(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		theirs := o.Spec.Repository
		if theirs == "" {
			theirs = o.Spec.Name
		}
		if o.Name == a.Name || o.Spec.RegistryRef.Name != registry || theirs != repository {
			continue
		}
		dup := field.Duplicate(field.NewPath("spec", "repository"), repository)
		dup.Detail = fmt.Sprintf("OCIArtifact %s already pushes to repository %s of OCIRegistry %s; one artifact per repository", o.Name, repository, registry)
		return field.ErrorList{dup}, nil
	}
	return nil, nil
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
