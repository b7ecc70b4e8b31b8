package reconciliationrequest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
	"github.com/plinth-dev/plinth/pkg/message"
)

// TargetFieldManager is the field manager of the annotation the controller sets on targets.
const TargetFieldManager = "plinth-reconcile"

// targetProblem is a problem with a target, told to the user with reason and message. It comes
// as one of two kinds (pkg/errkind). Stalled fails the request at once: a target or Cluster that
// does not exist, a cluster without Flux, a refusal. Those are a person's setup, do not change
// by themselves within the request's timeout, and failing at once tells the person what to fix
// now instead of after the timeout. Waiting (a cluster that does not answer, a server error,
// throttling) may pass within the timeout, as a network blip or a restarting API server does:
// the request tries again at each poll until its deadline, and times out with the last problem.
type targetProblem struct {
	reason, message string
}

func (e *targetProblem) Error() string { return e.message }

// fails is a target problem that fails the request.
func fails(reason, message string) error {
	return errkind.Stalled(&targetProblem{reason: reason, message: message})
}

// mayPass is a target problem the request tries again after, at its next poll.
func (c *Controller) mayPass(reason, message string) error {
	return errkind.Waiting(&targetProblem{reason: reason, message: message}, c.poll)
}

// observation is what a target reports.
type observation struct {
	// lastHandled is its status.lastHandledReconcileAt.
	lastHandled string
	// ready is its Ready condition's status (True or False for an OCIArtifact's target entry,
	// Unknown while it has none).
	ready metav1.ConditionStatus
	// final says that ready False is the outcome of the reconcile, not progress: Flux sets Ready
	// False when a reconcile fails, and Unknown while it runs.
	final bool
	// revision is the revision the target reports: an OCIRepository's artifact revision, a
	// Kustomization's last applied revision, an OCIArtifact target's revision.
	revision string
	// attempted is the revision a Kustomization last tried to apply (empty for other kinds).
	attempted string
	message   string
}

// handled says whether the target has handled the request value: it reports that value, or a
// later request's (a newer request overwrote the annotation, and its reconcile covers this one).
func (o observation) handled(value string) bool {
	if o.lastHandled == value {
		return true
	}
	handled, err1 := time.Parse(time.RFC3339Nano, o.lastHandled)
	requested, err2 := time.Parse(time.RFC3339Nano, value)
	return err1 == nil && err2 == nil && !handled.Before(requested)
}

// at says whether the target reports the revision the request waits for (any revision when
// the request names none): the same digest, with or without the tag (Flux pinned to a digest
// reports the digest alone).
func (o observation) at(revision string) bool {
	return revision == "" || delivery.SameRevision(o.revision, revision)
}

// failed says whether the target handled the request and the reconcile failed. When the
// request waits for a revision and a Kustomization says the revision it failed to apply is
// another one, the failure is an older revision's: its source has not brought the new one
// yet, and the Kustomization reconciles again when it does.
func (o observation) failed(value, revision string) bool {
	return o.final && o.ready == metav1.ConditionFalse && o.handled(value) &&
		(revision == "" || o.attempted == "" || delivery.SameRevision(o.attempted, revision))
}

// fluxKinds are the Flux kinds a request may target, by spec.targets[].kind.
var fluxKinds = map[string]schema.GroupVersionKind{
	gitopsv1alpha1.TargetKindOCIRepository: flux.OCIRepositoryKind,
	gitopsv1alpha1.TargetKindKustomization: flux.KustomizationKind,
}

// annotationPatch is the merge patch that sets Flux's reconcile request annotation to value.
func annotationPatch(value string) []byte {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		gitopsv1alpha1.ReconcileRequestAnnotation: value,
	}}})
	return patch
}

// request sets the annotation on target i of req.
func (c *Controller) request(ctx context.Context, req *gitopsv1alpha1.ReconciliationRequest, i int, value string) error {
	t := req.Spec.Targets[i]
	if err := c.clusterRegistered(t); err != nil {
		return err
	}
	patch := annotationPatch(value)
	if t.Kind == gitopsv1alpha1.TargetKindOCIArtifact {
		if err := c.artifactTargets(req.Namespace, t); err != nil {
			return err
		}
		_, err := c.client.OCIArtifacts(req.Namespace).Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: TargetFieldManager})
		return c.targetFailure(t, err)
	}
	client, err := c.fluxClient(ctx, t)
	if err != nil {
		return err
	}
	_, err = client.Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: TargetFieldManager})
	return c.targetFailure(t, err)
}

// observe reads what target i of req reports.
func (c *Controller) observe(ctx context.Context, req *gitopsv1alpha1.ReconciliationRequest, i int) (observation, error) {
	t := req.Spec.Targets[i]
	if err := c.clusterRegistered(t); err != nil {
		return observation{}, err
	}
	if t.Kind == gitopsv1alpha1.TargetKindOCIArtifact {
		return c.observeArtifact(req.Namespace, t)
	}
	client, err := c.fluxClient(ctx, t)
	if err != nil {
		return observation{}, err
	}
	u, err := client.Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return observation{}, c.targetFailure(t, err)
	}
	return observeFlux(u)
}

// observeFlux reads a Flux object's handled request, Ready condition and revision: an
// OCIRepository's artifact revision, a Kustomization's last applied revision.
func observeFlux(u *unstructured.Unstructured) (observation, error) {
	var obs observation
	var conditions []metav1.Condition
	switch u.GetKind() {
	case sourcev1.OCIRepositoryKind:
		var repo sourcev1.OCIRepository
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &repo); err != nil {
			return obs, err
		}
		obs.lastHandled, conditions = repo.Status.LastHandledReconcileAt, repo.Status.Conditions
		if repo.Status.Artifact != nil {
			obs.revision = repo.Status.Artifact.Revision
		}
	default:
		var k kustomizev1.Kustomization
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &k); err != nil {
			return obs, err
		}
		obs.lastHandled, conditions, obs.revision = k.Status.LastHandledReconcileAt, k.Status.Conditions, k.Status.LastAppliedRevision
		obs.attempted = k.Status.LastAttemptedRevision
	}
	obs.ready, obs.final = metav1.ConditionUnknown, true
	if ready := apimeta.FindStatusCondition(conditions, fluxmeta.ReadyCondition); ready != nil {
		obs.ready, obs.message = ready.Status, message.Sentence(ready.Message)
	}
	return obs, nil
}

// observeArtifact reads the OCIArtifact's delivery to the target's cluster: its entry in
// status.targets. An entry not Ready may be on its way; the OCIArtifact does not say which.
func (c *Controller) observeArtifact(namespace string, t gitopsv1alpha1.ReconciliationTarget) (observation, error) {
	art, err := c.artifacts.OCIArtifacts(namespace).Get(t.Name)
	if err != nil {
		return observation{}, c.targetFailure(t, err)
	}
	obs := observation{ready: metav1.ConditionUnknown}
	for _, s := range art.Status.Targets {
		if s.Cluster != t.Cluster {
			continue
		}
		obs.lastHandled, obs.revision, obs.message = s.LastHandledReconcileAt, s.Revision, s.Message
		obs.ready = metav1.ConditionFalse
		if s.Ready {
			obs.ready = metav1.ConditionTrue
		}
	}
	return obs, nil
}

// clusterRegistered fails a target whose Cluster is not registered.
func (c *Controller) clusterRegistered(t gitopsv1alpha1.ReconciliationTarget) error {
	_, err := c.clusters.Get(t.Cluster)
	if apierrors.IsNotFound(err) {
		return fails(gitopsv1alpha1.ReasonClusterNotFound, fmt.Sprintf("Cluster %s is not registered.", t.Cluster))
	}
	return err
}

// artifactTargets fails an OCIArtifact target whose OCIArtifact is missing or is not
// delivered to the target's cluster.
func (c *Controller) artifactTargets(namespace string, t gitopsv1alpha1.ReconciliationTarget) error {
	art, err := c.artifacts.OCIArtifacts(namespace).Get(t.Name)
	if err != nil {
		return c.targetFailure(t, err)
	}
	for _, target := range art.Spec.Targets {
		if target.Cluster == t.Cluster {
			return nil
		}
	}
	return fails(gitopsv1alpha1.ReasonTargetNotFound, fmt.Sprintf("OCIArtifact %s is not delivered to cluster %s.", t.Name, t.Cluster))
}

// fluxClient is the client of a Flux target's kind and namespace on its cluster.
func (c *Controller) fluxClient(ctx context.Context, t gitopsv1alpha1.ReconciliationTarget) (dynamic.ResourceInterface, error) {
	kind, ok := fluxKinds[t.Kind]
	if !ok {
		// The API refuses other kinds; a stored one is not something to retry.
		return nil, fails(gitopsv1alpha1.ReasonTargetNotFound, fmt.Sprintf("Kind %s cannot be reconciled.", t.Kind))
	}
	client, mapper, err := c.clients.For(ctx, t.Cluster)
	if err != nil {
		return nil, c.clusterProblem(err)
	}
	mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
	if apimeta.IsNoMatchError(err) {
		return nil, fails(gitopsv1alpha1.ReasonFluxNotInstalled,
			fmt.Sprintf("Cluster %s does not serve Flux's %s %s: Flux is not installed there.", t.Cluster, kind.GroupVersion(), kind.Kind))
	}
	if err != nil {
		// Discovery failed.
		return nil, c.clusterProblem(err)
	}
	namespace := t.Namespace
	if namespace == "" {
		namespace = gitopsv1alpha1.DefaultFluxNamespace
	}
	return client.Resource(mapping.Resource).Namespace(namespace), nil
}

// clusterProblem is a failure to get a Flux target's cluster clients or its discovery:
// Unreachable when the error's type says the cluster did not answer, TargetUnavailable
// otherwise. Either may pass (a restarting cluster, a kubeconfig being rotated), so the request
// tries again until its deadline.
func (c *Controller) clusterProblem(err error) error {
	if errkind.Unreachable(err) {
		return c.mayPass(gitopsv1alpha1.ReasonUnreachable, message.Error(err))
	}
	return c.mayPass(gitopsv1alpha1.ReasonTargetUnavailable, message.Error(err))
}

// targetFailure classifies an error reading or patching a target: a target that is gone or
// forbidden fails the request; any other answer of the target's API server (throttling, a
// server error, a timeout) and a Flux target's cluster that does not answer (told by the
// error's type) are retried until the deadline. An OCIArtifact is read and patched through
// plinth's own API, not its cluster's, so its errors never say the cluster is unreachable.
func (c *Controller) targetFailure(t gitopsv1alpha1.ReconciliationTarget, err error) error {
	var answer apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fails(gitopsv1alpha1.ReasonTargetNotFound, fmt.Sprintf("%s does not exist.", describe(t)))
	case apierrors.IsForbidden(err):
		return fails(gitopsv1alpha1.ReasonForbidden, fmt.Sprintf("Plinth may not reconcile %s.", describe(t)))
	case !errors.As(err, &answer) && t.Kind != gitopsv1alpha1.TargetKindOCIArtifact && errkind.Unreachable(err):
		return c.mayPass(gitopsv1alpha1.ReasonUnreachable, fmt.Sprintf("Cluster %s could not be reached: %s", t.Cluster, message.Error(err)))
	default:
		return c.mayPass(gitopsv1alpha1.ReasonTargetUnavailable, fmt.Sprintf("%s could not be read or asked: %s", describe(t), message.Error(err)))
	}
}
