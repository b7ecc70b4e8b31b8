// Package ociartifact is the REST storage of gitops.plinth.dev OCIArtifacts. Beyond the
// generic storage it keeps a pushed version immutable (pushed.go): a registry tag must not
// silently move, so once status.pushedVersion is the spec's version, that version's content
// cannot change.
package ociartifact

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the OCIArtifact's validation for the generic strategies.
var Definition = strategy.Definition[*gitops.OCIArtifact]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateOCIArtifact,
	ValidateUpdate:       validation.ValidateOCIArtifactUpdate,
	ValidateStatusUpdate: validation.ValidateOCIArtifactStatusUpdate,
	PrepareForUpdate:     tagFollowsVersion,
}

// tagFollowsVersion moves a defaulted tag along with the version. The tag is defaulted to the
// version when the object is created and stored so; an update that changes only the version —
// what kubectl apply sends for a manifest without a tag — would otherwise keep the old tag and
// push the new version under it. A tag that differs from its version's default was chosen and
// stays.
func tagFollowsVersion(_ context.Context, obj, old *gitops.OCIArtifact) {
	if obj.Spec.Version != old.Spec.Version && obj.Spec.Tag == old.Spec.Tag && old.Spec.Tag == gitops.DefaultTag(old.Spec.Version) {
		obj.Spec.Tag = gitops.DefaultTag(obj.Spec.Version)
	}
}

// NewREST returns the ociartifacts resource and its status subresource. Updates of the main
// resource (update, patch, server-side apply) are refused with 409 Conflict when they change
// the content of a pushed version; the status subresource cannot change the spec at all.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	main, status, err := store.New(scheme, optsGetter, store.Options[*gitops.OCIArtifact]{
		Resource:         gitops.Resource("ociartifacts"),
		Singular:         "ociartifact",
		NewFunc:          func() *gitops.OCIArtifact { return &gitops.OCIArtifact{} },
		NewListFunc:      func() runtime.Object { return &gitops.OCIArtifactList{} },
		Definition:       Definition,
		SelectableFields: SelectableFields,
		Table:            Table,
		ShortNames:       []string{"ociart"},
		Categories:       []string{"plinth", "gitops"},
	})
	if err != nil {
		return nil, nil, err
	}
	main.Store.BeginUpdate = refuseChangeOfPushedVersion
	return main, status, nil
}

// SelectableFields are the fields beyond metadata that list and watch select on, as
// v1alpha1.FieldSelectors registers them.
func SelectableFields(a *gitops.OCIArtifact) fields.Set {
	return fields.Set{
		"spec.registryRef.name": a.Spec.RegistryRef.Name,
		"spec.repository":       a.Spec.Repository,
		"spec.version":          a.Spec.Version,
	}
}

// digestPrefix is how much of a digest the table prints: sha256: and 12 hex digits, as
// docker images prints image IDs.
const digestPrefix = len("sha256:") + 12

// Table prints REPOSITORY, VERSION, DIGEST, TARGETS and READY.
var Table = table.New([]table.Column{
	{Name: "Repository", Type: "string", Description: "The repository in the registry."},
	{Name: "Version", Type: "string", Description: "The version to push and deliver."},
	{Name: "Digest", Type: "string", Description: "The start of the pushed OCI manifest's digest."},
	{Name: "Targets", Type: "string", Description: "Target Clusters that applied the pushed version, of all targets."},
	{Name: "Ready", Type: "string", Description: "Whether the version is pushed and every target applied it: the Ready condition's status."},
}, func(a *gitops.OCIArtifact) []interface{} {
	digest := a.Status.Digest
	if len(digest) > digestPrefix {
		digest = digest[:digestPrefix]
	}
	ready := string(metav1.ConditionUnknown)
	if c := meta.FindStatusCondition(a.Status.Conditions, gitops.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	return []interface{}{a.Spec.Repository, a.Spec.Version, table.OrNone(digest), readyTargets(a), ready}
})

// readyTargets is <ready>/<total> over the spec's targets: a target the spec dropped does not
// count, even while the status still lists it.
func readyTargets(a *gitops.OCIArtifact) string {
	wanted := sets.New[string]()
	for _, t := range a.Spec.Targets {
		wanted.Insert(t.Cluster)
	}
	ready := sets.New[string]()
	for _, t := range a.Status.Targets {
		if t.Ready && wanted.Has(t.Cluster) {
			ready.Insert(t.Cluster)
		}
	}
	return strconv.Itoa(ready.Len()) + "/" + strconv.Itoa(wanted.Len())
}
