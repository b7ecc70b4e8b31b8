// Package delivery is the contract between the OCIArtifact controller and the GitOps engines
// that apply a pushed artifact to a target Cluster: Flux (an OCIRepository and a Kustomization
// on the target, delivery/flux) and Kubectl (server-side apply with pruning by
// plinth-controller itself, delivery/kubectl). The controller pushes, then asks the engine of
// each target's Cluster to deliver; it never knows how.
package delivery

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

// Artifact is a pushed version of an OCIArtifact, as the engines need it.
type Artifact struct {
	// Namespace and Name are the OCIArtifact's.
	Namespace, Name string
	// URL is the repository, oci://<endpoint>/<repository>, without the tag.
	URL string
	// Tag is the pushed tag.
	Tag string
	// Digest is the pushed OCI manifest's digest, sha256:<hex>.
	Digest string
	// Objects are the packaged manifests, parsed; the Kubectl engine applies them.
	Objects []manifests.Object
}

// Revision is what a target reports once it applied the artifact, in Flux's form:
// <tag>@<digest>.
func (a Artifact) Revision() string { return a.Tag + "@" + a.Digest }

// SameRevision says whether two revisions name the same pushed manifest: the same digest,
// with or without a tag before it. Flux reports a revision as <tag>@<digest> for an
// OCIRepository that follows a tag and as <digest> alone for one pinned to a digest, as the
// Flux engine's are; a digest names one manifest whatever tag it was pushed under.
func SameRevision(a, b string) bool {
	da, db := digestOf(a), digestOf(b)
	return a == b || (da != "" && da == db)
}

// digestOf is the digest a revision ends with (after its last '@', or all of it), or "" when
// it does not end with one.
func digestOf(revision string) string {
	d := revision[strings.LastIndex(revision, "@")+1:]
	if algorithm, hex, ok := strings.Cut(d, ":"); !ok || algorithm == "" || hex == "" {
		return ""
	}
	return d
}

// Target is one Cluster to deliver to.
type Target struct {
	// Spec is the OCIArtifact's target entry, defaulted.
	Spec gitopsv1alpha1.ArtifactTarget
	// Cluster is the target Cluster; its spec.gitOps picks the engine and Flux's interval.
	Cluster *platformv1alpha1.Cluster
	// Previous is the target's status from the last delivery (nil the first time): the Kubectl
	// engine prunes what its inventory has and the new version lacks.
	Previous *gitopsv1alpha1.ArtifactTargetStatus
	// ReconcileRequest, when not empty, is a reconcile.fluxcd.io/requestedAt value to pass on:
	// the Flux engine sets it on its objects, the Kubectl engine applies again.
	ReconcileRequest string
}

// Interval is Flux's interval for the target: the Cluster's spec.gitOps.fluxInterval, 1m
// unless set.
func (t Target) Interval() time.Duration {
	if i := t.Cluster.Spec.GitOps.FluxInterval; i != nil && i.Duration > 0 {
		return i.Duration
	}
	return platformv1alpha1.DefaultFluxInterval
}

// Engine delivers artifacts to clusters of one spec.gitOps.engine.
type Engine interface {
	// Deliver makes the target apply the artifact (idempotent: called again until the returned
	// status is Ready) and reports what the target has applied so far. An error means the
	// delivery could not be attempted or failed; the status then says why in one sentence.
	// An errkind.Waiting error means the target itself reports the failure and retries on its
	// own (Flux's objects Ready=False, not progressing), at the interval the error names
	// (errkind.WaitFor): looking again sooner learns nothing, so the caller backs off up to
	// it instead of polling or retrying the delivery.
	Deliver(ctx context.Context, art Artifact, target Target) (gitopsv1alpha1.ArtifactTargetStatus, error)
	// Remove undoes Deliver when the artifact or the target goes away: the Flux engine deletes
	// its OCIRepository and Kustomization (Flux prunes the applied objects when prune is set),
	// the Kubectl engine deletes its inventory when prune is set. target.Spec.Prune is the
	// prune the delivery had; opts.Keep overrides it. last is the target's last status.
	// Removing what is already gone succeeds.
	Remove(ctx context.Context, namespace, name string, target Target, last *gitopsv1alpha1.ArtifactTargetStatus, opts RemoveOptions) error
}

// RemoveOptions say how Remove undoes a delivery.
type RemoveOptions struct {
	// Keep leaves every object the delivery applied on the target, whatever its prune: they
	// are handed over to another engine (the Cluster changed engines), which applies them
	// again as its own. The Flux engine turns its Kustomization's prune off before deleting
	// it, the Kubectl engine forgets its inventory.
	Keep bool
}

// Clients gives the engines and the ReconciliationRequest controller their clients of a target
// Cluster, built from its stored kubeconfig and cached per Cluster generation.
type Clients interface {
	// For returns a dynamic client and a REST mapper of the named Cluster.
	For(ctx context.Context, cluster string) (dynamic.Interface, meta.RESTMapper, error)
}
