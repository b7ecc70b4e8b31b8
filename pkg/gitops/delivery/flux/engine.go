package flux

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/message"
)

// FieldManager is the server-side apply field manager of the Flux objects.
const FieldManager = "plinth-gitops"

// The kinds the engine creates, as the target serves them.
var (
	OCIRepositoryKind = sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind)
	KustomizationKind = kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind)
)

type engine struct {
	clients delivery.Clients
}

// New returns the engine of Clusters with engine Flux, reaching them through clients.
func New(clients delivery.Clients) delivery.Engine {
	return &engine{clients: clients}
}

// Deliver validates and applies the OCIRepository and the Kustomization of art on the target,
// and reports what Flux has applied: Ready once the Kustomization is Ready with art's revision
// applied. A failure Flux reports (the pull or the apply failed; Flux retries by itself) is
// in the status, with an errkind.Waiting error for the target's interval once Flux stopped
// progressing; any other error means the objects are invalid, the cluster cannot be reached, Flux's kinds are
// not served there, or the names are taken by another artifact.
//
// Objects delivered before under other names (the target's namespace changed) are handed
// over first: the old Kustomization's prune is turned off and the old pair deleted, so the
// new pair takes over the applied objects with no outage in between.
func (e *engine) Deliver(ctx context.Context, art delivery.Artifact, target delivery.Target) (gitopsv1alpha1.ArtifactTargetStatus, error) {
	repo, kustomization := Objects(art, target)
	status := gitopsv1alpha1.ArtifactTargetStatus{
		Cluster: target.Cluster.Name, Engine: string(platformv1alpha1.GitOpsEngineFlux),
		OCIRepository: key(repo.Namespace, repo.Name), Kustomization: key(kustomization.Namespace, kustomization.Name),
	}
	fail := func(err error) (gitopsv1alpha1.ArtifactTargetStatus, error) {
		status.Message = message.Error(err)
		return status, err
	}
	if errs := append(ValidateOCIRepository(repo, art.Tag, art.Digest), ValidateKustomization(kustomization, repo)...); len(errs) > 0 {
		return fail(fmt.Errorf("the Flux objects for cluster %s are not valid: %w", target.Cluster.Name, errs.ToAggregate()))
	}
	owner := delivery.ArtifactAnnotation(art.Namespace, art.Name)
	if prev := target.Previous; prev != nil {
		oldKustomization, oldRepo := moved(prev.Kustomization, status.Kustomization), moved(prev.OCIRepository, status.OCIRepository)
		if oldKustomization != "" || oldRepo != "" {
			if err := e.removePair(ctx, owner, target.Cluster.Name, oldKustomization, oldRepo, false); err != nil {
				// Reported under the old names, so that the next attempt hands over again.
				status.OCIRepository, status.Kustomization = prev.OCIRepository, prev.Kustomization
				return fail(fmt.Errorf("handing the objects over from the Flux objects in namespace %s failed: %w", namespaceOf(prev.Kustomization, prev.OCIRepository), err))
			}
		}
	}
	repos, kustomizations, err := e.resources(ctx, target.Cluster.Name, repo.Namespace)
	if err != nil {
		return fail(err)
	}
	liveRepo, err := claim(ctx, repos, repo.Name, owner)
	if err != nil {
		return fail(err)
	}
	liveKustomization, err := claim(ctx, kustomizations, kustomization.Name, owner)
	if err != nil {
		return fail(err)
	}
	keepNewerRequest(&repo.ObjectMeta, liveRepo, target)
	keepNewerRequest(&kustomization.ObjectMeta, liveKustomization, target)
	var appliedRepo sourcev1.OCIRepository
	if err := apply(ctx, repos, repo, &appliedRepo); err != nil {
		return fail(err)
	}
	var applied kustomizev1.Kustomization
	if err := apply(ctx, kustomizations, kustomization, &applied); err != nil {
		return fail(err)
	}
	status = Observe(status, art, &appliedRepo, &applied)
	if !status.Ready && Stalled(art, &appliedRepo, &applied) {
		interval := target.Interval()
		return status, errkind.Waitingf(interval, "%s Flux retries by itself every %s.", status.Message, interval)
	}
	return status, nil
}

// moved is the key the target's objects had before when it differs from now, or "".
func moved(before, now string) string {
	if before == now {
		return ""
	}
	return before
}

// namespaceOf is the namespace of the first non-empty namespace/name key.
func namespaceOf(keys ...string) string {
	for _, k := range keys {
		if ns, _, ok := strings.Cut(k, "/"); ok {
			return ns
		}
	}
	return ""
}

// keepNewerRequest leaves reconcile.fluxcd.io/requestedAt out of obj (what is applied) when the
// live object holds another value that must not be rolled back: a newer one (both RFC 3339
// times), which the ReconciliationRequest controller merge-patches on the objects directly, or
// any other one once Flux handled the artifact's own request. A value another client set is
// owned by it, so leaving it out of the apply leaves it on the object.
func keepNewerRequest(obj *metav1.ObjectMeta, live *unstructured.Unstructured, target delivery.Target) {
	ours := obj.Annotations[gitopsv1alpha1.ReconcileRequestAnnotation]
	if live == nil || ours == "" {
		return
	}
	current := live.GetAnnotations()[gitopsv1alpha1.ReconcileRequestAnnotation]
	if current == "" || current == ours {
		return
	}
	handled := target.Previous != nil && target.Previous.LastHandledReconcileAt == ours
	if newer(current, ours) || handled {
		delete(obj.Annotations, gitopsv1alpha1.ReconcileRequestAnnotation)
	}
}

// newer says whether the request value a is a later time than b; values that are not RFC 3339
// times are not ordered.
func newer(a, b string) bool {
	ta, errA := time.Parse(time.RFC3339Nano, a)
	tb, errB := time.Parse(time.RFC3339Nano, b)
	return errA == nil && errB == nil && ta.After(tb)
}

// Stalled says whether Flux stopped working on art: the OCIRepository or the Kustomization is
// Ready=False for its current spec and not reconciling (Flux marks a failed attempt Reconciling
// with reason ProgressingWithRetry and retries at its interval), with no reconcile request
// pending, and the Kustomization's failure is about art's revision. Anything else (Ready
// Unknown, Reconciling, a new spec, request or revision Flux has not taken up yet) is progress.
func Stalled(art delivery.Artifact, repo *sourcev1.OCIRepository, kustomization *kustomizev1.Kustomization) bool {
	if pending(repo.Annotations, repo.Status.LastHandledReconcileAt) || pending(kustomization.Annotations, kustomization.Status.LastHandledReconcileAt) {
		return false
	}
	if failing(repo.Status.Conditions, repo.Generation) {
		return true
	}
	return failing(kustomization.Status.Conditions, kustomization.Generation) &&
		delivery.SameRevision(kustomization.Status.LastAttemptedRevision, art.Revision())
}

// pending says whether a reconcile request on an object has not been handled yet.
func pending(annotations map[string]string, handled string) bool {
	request := annotations[gitopsv1alpha1.ReconcileRequestAnnotation]
	return request != "" && request != handled
}

// failing says whether Flux's conditions say Ready=False for the object's generation (Flux
// records the generation on each condition it sets; its status.observedGeneration moves only on
// success) and Flux is not at work on it.
func failing(conditions []metav1.Condition, generation int64) bool {
	ready := apimeta.FindStatusCondition(conditions, fluxmeta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.ObservedGeneration != generation {
		return false
	}
	r := apimeta.FindStatusCondition(conditions, fluxmeta.ReconcilingCondition)
	return r == nil || r.Status != metav1.ConditionTrue || r.Reason == fluxmeta.ProgressingWithRetryReason
}

// Remove deletes the target's Kustomization, then its OCIRepository: Flux's finalizer on the
// Kustomization prunes what it applied when its prune is set. Unless the target prunes and
// opts.Keep is unset, prune is turned off first, so that the objects stay for whoever takes
// them over. The names are last's, or those Deliver would use. Objects created for another
// artifact are left alone, and what is gone, or a cluster where Flux's kinds are not served,
// needs nothing removed.
func (e *engine) Remove(ctx context.Context, namespace, name string, target delivery.Target, last *gitopsv1alpha1.ArtifactTargetStatus,
	opts delivery.RemoveOptions) error {
	repoKey := key(Namespace(target), ObjectName(namespace, name))
	kustomizationKey := repoKey
	if last != nil && last.OCIRepository != "" {
		repoKey = last.OCIRepository
	}
	if last != nil && last.Kustomization != "" {
		kustomizationKey = last.Kustomization
	}
	prune := !opts.Keep && (target.Spec.Prune == nil || *target.Spec.Prune)
	return e.removePair(ctx, delivery.ArtifactAnnotation(namespace, name), target.Cluster.Name, kustomizationKey, repoKey, prune)
}

// removePair deletes the Kustomization and the OCIRepository of the given keys (namespace/name)
// when they were created for owner, the Kustomization first; with prune false, the
// Kustomization's prune is turned off before it is deleted. An empty key is skipped.
func (e *engine) removePair(ctx context.Context, owner, cluster, kustomizationKey, repoKey string, prune bool) error {
	for _, obj := range []struct {
		kind schema.GroupVersionKind
		key  string
	}{{KustomizationKind, kustomizationKey}, {OCIRepositoryKind, repoKey}} {
		if obj.key == "" {
			continue
		}
		ns, objName, _ := strings.Cut(obj.key, "/")
		client, err := e.resource(ctx, cluster, obj.kind, ns)
		if apimeta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return err
		}
		current, err := client.Get(ctx, objName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s %s on cluster %s: %w", obj.kind.Kind, obj.key, cluster, err)
		}
		if current.GetAnnotations()[gitopsv1alpha1.AnnotationArtifact] != owner {
			continue
		}
		uid := current.GetUID()
		if obj.kind == KustomizationKind && !prune {
			if err := keepObjects(ctx, client, current); err != nil {
				return fmt.Errorf("turning off prune of Kustomization %s on cluster %s: %w", obj.key, cluster, err)
			}
		}
		err = client.Delete(ctx, objName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting %s %s on cluster %s: %w", obj.kind.Kind, obj.key, cluster, err)
		}
	}
	return nil
}

// keepObjects sets the Kustomization's spec.prune to false unless it is already, so that its
// deletion leaves what it applied: kustomize-controller's finalizer reads prune from the
// object being deleted, which carries the patched spec. The patch names the object's UID, so
// that a Kustomization created again under the name is not changed.
func keepObjects(ctx context.Context, client dynamic.ResourceInterface, current *unstructured.Unstructured) error {
	if prune, found, _ := unstructured.NestedBool(current.Object, "spec", "prune"); found && !prune {
		return nil
	}
	patch, err := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"uid": current.GetUID()},
		"spec":     map[string]interface{}{"prune": false},
	})
	if err != nil {
		return err
	}
	_, err = client.Patch(ctx, current.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// Observe is the target's status from what Flux reports on the objects: Ready when the
// Kustomization is Ready for its current generation with art's revision applied; otherwise
// the message of the first Flux object that is not Ready, the OCIRepository first (a source
// that cannot be pulled explains a Kustomization that cannot apply). Flux pinned to the
// digest reports the revision as the digest alone; the status names it <tag>@<digest> as
// every target does.
func Observe(status gitopsv1alpha1.ArtifactTargetStatus, art delivery.Artifact, repo *sourcev1.OCIRepository, kustomization *kustomizev1.Kustomization) gitopsv1alpha1.ArtifactTargetStatus {
	want := art.Revision()
	status.Revision = kustomization.Status.LastAppliedRevision
	if delivery.SameRevision(status.Revision, want) {
		status.Revision = want
	}
	status.LastHandledReconcileAt = kustomization.Status.LastHandledReconcileAt
	repoReady := apimeta.FindStatusCondition(repo.Status.Conditions, fluxmeta.ReadyCondition)
	ready := apimeta.FindStatusCondition(kustomization.Status.Conditions, fluxmeta.ReadyCondition)
	current := kustomization.Status.ObservedGeneration == kustomization.Generation
	switch {
	case ready != nil && ready.Status == metav1.ConditionTrue && current && status.Revision == want:
		status.Ready = true
		status.Message = fmt.Sprintf("Flux applied revision %s.", want)
	case repoReady != nil && repoReady.Status == metav1.ConditionFalse:
		status.Message = conditionMessage(sourcev1.OCIRepositoryKind, status.OCIRepository, repoReady)
	case ready != nil && ready.Status == metav1.ConditionFalse:
		status.Message = conditionMessage(kustomizev1.KustomizationKind, status.Kustomization, ready)
	case status.Revision != "" && status.Revision != want:
		status.Message = fmt.Sprintf("Flux has not applied revision %s yet; the last applied is %s.", want, status.Revision)
	default:
		status.Message = fmt.Sprintf("Flux has not applied revision %s yet.", want)
	}
	return status
}

// conditionMessage is a Flux object's failing Ready condition in one sentence.
func conditionMessage(kind, key string, c *metav1.Condition) string {
	return message.Sentence(fmt.Sprintf("%s %s is not ready (%s): %s", kind, key, c.Reason, c.Message))
}

// resources are the clients of the target's OCIRepositories and Kustomizations in namespace.
func (e *engine) resources(ctx context.Context, cluster, namespace string) (repos, kustomizations dynamic.ResourceInterface, err error) {
	if repos, err = e.resource(ctx, cluster, OCIRepositoryKind, namespace); err != nil {
		return nil, nil, err
	}
	if kustomizations, err = e.resource(ctx, cluster, KustomizationKind, namespace); err != nil {
		return nil, nil, err
	}
	return repos, kustomizations, nil
}

// resource is the client of kind in namespace on the cluster; a cluster that does not serve
// the kind has no Flux (or an older one), which the error says.
func (e *engine) resource(ctx context.Context, cluster string, kind schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	client, mapper, err := e.clients.For(ctx, cluster)
	if err != nil {
		return nil, err
	}
	mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
	if apimeta.IsNoMatchError(err) {
		return nil, &notServedError{cluster: cluster, kind: kind, err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("finding %s on cluster %s: %w", kind.Kind, cluster, err)
	}
	return client.Resource(mapping.Resource).Namespace(namespace), nil
}

// notServedError is a Flux kind the target cluster does not serve. It is a no-match error,
// so that callers can tell it with meta.IsNoMatchError.
type notServedError struct {
	cluster string
	kind    schema.GroupVersionKind
	err     error
}

func (e *notServedError) Error() string {
	return fmt.Sprintf("cluster %s does not serve Flux's %s %s: Flux is not installed there", e.cluster, e.kind.GroupVersion(), e.kind.Kind)
}

func (e *notServedError) Unwrap() error { return e.err }

// claim refuses to take over name when it exists and was not created for the artifact owner:
// ObjectName joins namespace and name with '-', so team-a/app and team/a-app meet. It returns
// the live object, nil when there is none.
func claim(ctx context.Context, client dynamic.ResourceInterface, name, owner string) (*unstructured.Unstructured, error) {
	current, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if got := current.GetAnnotations()[gitopsv1alpha1.AnnotationArtifact]; got != owner {
		if got == "" {
			got = "no OCIArtifact"
		}
		return nil, fmt.Errorf("%s %s/%s exists for %s, not for %s", current.GetKind(), current.GetNamespace(), name, got, owner)
	}
	return current, nil
}

// apply applies obj with server-side apply, taking over fields another manager set (the
// engine owns these objects), and reads the result, with Flux's status, into into.
func apply(ctx context.Context, client dynamic.ResourceInterface, obj runtime.Object, into runtime.Object) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	applied, err := client.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return fromUnstructured(applied, into)
}

func key(namespace, name string) string { return namespace + "/" + name }
