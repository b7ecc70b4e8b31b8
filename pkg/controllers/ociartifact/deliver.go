package ociartifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/reconciliationrequest"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/message"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
)

// deliver gives the pushed version to every target, removes it from the targets dropped from
// spec, and sets status.targets, Delivered, Ready and lastHandledReconcileAt. The error joins
// the failures worth retrying with backoff.
func (p *pass) deliver(ctx context.Context, result *pushed) error {
	spec, st := p.art.Spec, p.status
	art := delivery.Artifact{
		Namespace: p.art.Namespace, Name: p.art.Name,
		URL: artifact.URL(result.endpoint, spec.Repository, ""), Tag: spec.Tag, Digest: st.Digest,
		Objects: result.objects,
	}
	request := p.art.Annotations[gitopsv1alpha1.ReconcileRequestAnnotation]
	before := slices.Clone(st.Targets)

	var errs []error
	for _, t := range before {
		if !slices.ContainsFunc(spec.Targets, func(s gitopsv1alpha1.ArtifactTarget) bool { return s.Cluster == t.Cluster }) {
			errs = append(errs, p.remove(ctx, t))
		}
	}
	targets := make([]gitopsv1alpha1.ArtifactTargetStatus, 0, len(spec.Targets)+len(st.Targets))
	for _, t := range spec.Targets {
		ts, err := p.deliverTo(ctx, art, t, find(before, t.Cluster), request)
		targets = append(targets, ts)
		errs = append(errs, err)
	}
	// Targets dropped from spec that could not be removed yet stay listed, with why.
	for _, t := range st.Targets {
		if !slices.ContainsFunc(spec.Targets, func(s gitopsv1alpha1.ArtifactTarget) bool { return s.Cluster == t.Cluster }) {
			t.Ready = false
			targets = append(targets, t)
		}
	}
	st.Targets = targets

	if err := p.requestReconcile(ctx, art, before); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	p.setDelivered(art, err != nil)
	if request != "" && handled(st.Targets[:len(spec.Targets)], request) {
		st.LastHandledReconcileAt = request
	}
	return err
}

// deliverTo delivers art to one target through its Cluster's engine. A target that cannot be
// delivered to (the Cluster is not registered, has no engine here, or lacks Flux) is not
// Ready with a message saying so, and is looked at again when the Cluster changes.
func (p *pass) deliverTo(ctx context.Context, art delivery.Artifact, t gitopsv1alpha1.ArtifactTarget, prev *gitopsv1alpha1.ArtifactTargetStatus,
	request string) (gitopsv1alpha1.ArtifactTargetStatus, error) {
	notReady := func(message string) gitopsv1alpha1.ArtifactTargetStatus {
		ts := gitopsv1alpha1.ArtifactTargetStatus{Cluster: t.Cluster}
		if prev != nil {
			ts = *prev.DeepCopy()
		}
		ts.Ready, ts.Message = false, message
		return ts
	}
	cluster, err := p.c.clusters.Get(t.Cluster)
	if apierrors.IsNotFound(err) {
		p.reasons[t.Cluster] = gitopsv1alpha1.ReasonClusterNotFound
		return notReady(fmt.Sprintf("Cluster %s is not registered.", t.Cluster)), nil
	}
	if err != nil {
		return notReady(message.Error(err)), err
	}
	name := engineOf(cluster)
	engine, ok := p.c.engines[name]
	if !ok {
		return notReady(fmt.Sprintf("Cluster %s uses the GitOps engine %s, which this plinth-controller does not run.", t.Cluster, name)), nil
	}
	if name == platformv1alpha1.GitOpsEngineFlux {
		if c := meta.FindStatusCondition(cluster.Status.Conditions, platformv1alpha1.ConditionFluxAvailable); c == nil || c.Status != metav1.ConditionTrue {
			msg := fmt.Sprintf("Flux is not available on cluster %s: it has not been detected yet.", t.Cluster)
			if c != nil && c.Message != "" {
				msg = fmt.Sprintf("Flux is not available on cluster %s: %s", t.Cluster, message.Sentence(c.Message))
			}
			ts := notReady(msg)
			ts.Engine = string(name)
			p.reasons[t.Cluster] = gitopsv1alpha1.ReasonFluxNotAvailable
			return ts, nil
		}
	}
	target := delivery.Target{Spec: t, Cluster: cluster, Previous: prev, ReconcileRequest: request}
	if prev != nil && prev.Engine != "" && prev.Engine != string(name) {
		// The Cluster changed engines: what the old one made must go, or both would manage
		// the same objects. The applied objects stay: the new engine applies them again as
		// its own, so the workloads keep running through the switch.
		if err := p.removeWith(ctx, platformv1alpha1.GitOpsEngine(prev.Engine), target, prev, delivery.RemoveOptions{Keep: true}); err != nil {
			return notReady(fmt.Sprintf("Removing the %s delivery from cluster %s failed: %s", prev.Engine, t.Cluster, message.Error(err))), err
		}
		target.Previous = nil
	}
	key := targetKey{artifact: cache.NewObjectName(p.art.Namespace, p.art.Name), cluster: t.Cluster}
	given := delivered{generation: p.art.Generation, revision: art.Revision(), request: request,
		clusterUID: cluster.UID, clusterGeneration: cluster.Generation, at: p.now}
	if prev != nil && prev.Ready && prev.Revision == art.Revision() && prev.Engine == string(name) && p.c.givenRecently(key, given) {
		// Applied already, with nothing changed since: a poll for another target.
		return *prev, nil
	}
	opCtx, cancel := context.WithTimeout(ctx, deliveryTimeout(len(art.Objects)))
	defer cancel()
	ts, err := engine.Deliver(opCtx, art, target)
	ts.Cluster = t.Cluster
	// What the delivery was told about pruning, for removing the target once it is dropped
	// from spec.
	ts.Prune = ptr.To(t.Prune == nil || *t.Prune)
	p.c.remember(key, given, err == nil && ts.Ready)
	if interval, waiting := errkind.WaitFor(err); waiting {
		// Not retried as an error: the target reports the failure and retries by itself, and
		// the artifact is looked at again with backoff up to the target's interval.
		p.reasons[t.Cluster] = gitopsv1alpha1.ReasonDeliveryFailed
		if p.stalledFor == 0 || interval < p.stalledFor {
			p.stalledFor = interval
		}
		return ts, nil
	}
	if err != nil {
		return ts, fmt.Errorf("delivering to cluster %s: %w", t.Cluster, err)
	}
	if !ts.Ready {
		p.inProgress = true
	}
	return ts, nil
}

// givenRecently says whether the target was given the same thing, Ready, within the resync
// period, by the same Cluster generation.
func (c *Controller) givenRecently(key targetKey, now delivered) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.delivered[key]
	return ok && last.generation == now.generation && last.revision == now.revision && last.request == now.request &&
		last.clusterUID == now.clusterUID && last.clusterGeneration == now.clusterGeneration && now.at.Sub(last.at) < c.resync
}

// remember records a delivery that left the target Ready, and forgets any other.
func (c *Controller) remember(key targetKey, given delivered, ready bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ready {
		c.delivered[key] = given
	} else {
		delete(c.delivered, key)
	}
}

// remove undoes the delivery to a target dropped from spec (or of an artifact being deleted)
// and drops its status entry; on failure the entry stays with the reason.
func (p *pass) remove(ctx context.Context, t gitopsv1alpha1.ArtifactTargetStatus) error {
	drop := func() {
		p.status.Targets = slices.DeleteFunc(p.status.Targets, func(s gitopsv1alpha1.ArtifactTargetStatus) bool { return s.Cluster == t.Cluster })
	}
	cluster, err := p.c.clusters.Get(t.Cluster)
	if apierrors.IsNotFound(err) {
		// Gone, and nothing of it reachable.
		drop()
		return nil
	}
	if err != nil {
		return err
	}
	if t.Engine == "" {
		drop() // no engine ever delivered to it
		return nil
	}
	// A target dropped from spec has no entry left: it is removed with the prune of its last
	// delivery (true for a status written before that was recorded, the default then).
	spec := gitopsv1alpha1.ArtifactTarget{Cluster: t.Cluster, Prune: t.Prune}
	if i := slices.IndexFunc(p.art.Spec.Targets, func(s gitopsv1alpha1.ArtifactTarget) bool { return s.Cluster == t.Cluster }); i >= 0 {
		spec = p.art.Spec.Targets[i]
	}
	gitopsv1alpha1.SetDefaults_ArtifactTarget(&spec)
	target := delivery.Target{Spec: spec, Cluster: cluster, Previous: &t}
	if err := p.removeWith(ctx, platformv1alpha1.GitOpsEngine(t.Engine), target, &t, delivery.RemoveOptions{}); err != nil {
		if i := slices.IndexFunc(p.status.Targets, func(s gitopsv1alpha1.ArtifactTargetStatus) bool { return s.Cluster == t.Cluster }); i >= 0 {
			p.status.Targets[i].Ready = false
			p.status.Targets[i].Message = fmt.Sprintf("Removing the artifact from cluster %s failed: %s", t.Cluster, message.Error(err))
		}
		return fmt.Errorf("removing from cluster %s: %w", t.Cluster, err)
	}
	drop()
	return nil
}

// removeWith has the named engine undo its delivery to the target.
func (p *pass) removeWith(ctx context.Context, name platformv1alpha1.GitOpsEngine, target delivery.Target, last *gitopsv1alpha1.ArtifactTargetStatus,
	opts delivery.RemoveOptions) error {
	engine, ok := p.c.engines[name]
	if !ok {
		klog.FromContext(ctx).Info("No engine to remove a delivery with; left on the cluster", "engine", name, "cluster", target.Cluster.Name)
		return nil
	}
	objects := 0
	if last != nil {
		objects = len(last.Inventory)
	}
	opCtx, cancel := context.WithTimeout(ctx, deliveryTimeout(objects))
	defer cancel()
	return engine.Remove(opCtx, p.art.Namespace, p.art.Name, target, last, opts)
}

// setDelivered sets Delivered and Ready from the targets' status.
func (p *pass) setDelivered(art delivery.Artifact, failed bool) {
	st, gen, now := p.status, p.art.Generation, metav1.NewTime(p.now)
	targets := st.Targets[:len(p.art.Spec.Targets)]
	ready := 0
	var waiting *gitopsv1alpha1.ArtifactTargetStatus
	for i := range targets {
		if targets[i].Ready {
			ready++
		} else if waiting == nil {
			waiting = &targets[i]
		}
	}
	switch {
	case len(targets) == 0 && len(st.Targets) == 0:
		conditions.SetAt(&st.Conditions, gen, now, gitopsv1alpha1.ConditionDelivered, metav1.ConditionTrue, gitopsv1alpha1.ReasonNoTargets, "The artifact has no targets.")
	case waiting == nil && len(st.Targets) == len(targets):
		conditions.SetAt(&st.Conditions, gen, now, gitopsv1alpha1.ConditionDelivered, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered,
			fmt.Sprintf("Every target applied revision %s.", art.Revision()))
	default:
		msg := fmt.Sprintf("%d of %d targets applied revision %s.", ready, len(targets), art.Revision())
		if waiting == nil {
			waiting = &st.Targets[len(targets)] // a dropped target not removed yet
		}
		// The reason of the target the message names, when it is waiting for a known cause.
		reason := p.reasons[waiting.Cluster]
		switch {
		case reason != "":
		case failed:
			reason = gitopsv1alpha1.ReasonDeliveryFailed
		default:
			reason = gitopsv1alpha1.ReasonDeliveryInProgress
		}
		if waiting.Message != "" {
			msg += " Cluster " + waiting.Cluster + ": " + waiting.Message
		}
		conditions.SetAt(&st.Conditions, gen, now, gitopsv1alpha1.ConditionDelivered, metav1.ConditionFalse, reason, msg)
	}
	delivered := meta.FindStatusCondition(st.Conditions, gitopsv1alpha1.ConditionDelivered)
	if delivered.Status == metav1.ConditionTrue {
		conditions.SetAt(&st.Conditions, gen, now, gitopsv1alpha1.ConditionReady, metav1.ConditionTrue, gitopsv1alpha1.ReasonDelivered,
			fmt.Sprintf("Version %s is pushed and applied on every target.", p.art.Spec.Version))
		return
	}
	conditions.SetAt(&st.Conditions, gen, now, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, delivered.Reason, delivered.Message)
}

// requestReconcile creates an Automatic ReconciliationRequest of the Flux objects of the
// targets that had applied an earlier revision: the record that the new version was asked to
// land now. Each of its targets names the pushed revision, so that the request succeeds only
// once Flux reports the new version fetched and applied, not when it reconciled the old one.
// Its name derives from the artifact's UID and revision, so asking again after a restart
// finds it there.
func (p *pass) requestReconcile(ctx context.Context, art delivery.Artifact, before []gitopsv1alpha1.ArtifactTargetStatus) error {
	revision := p.status.Revision
	var targets []gitopsv1alpha1.ReconciliationTarget
	for _, t := range before {
		if t.Engine != string(platformv1alpha1.GitOpsEngineFlux) || t.OCIRepository == "" || t.Kustomization == "" ||
			t.Revision == "" || t.Revision == art.Revision() {
			continue
		}
		if !slices.ContainsFunc(p.art.Spec.Targets, func(s gitopsv1alpha1.ArtifactTarget) bool { return s.Cluster == t.Cluster }) {
			continue
		}
		for _, obj := range []struct{ kind, key string }{
			{gitopsv1alpha1.TargetKindOCIRepository, t.OCIRepository}, {gitopsv1alpha1.TargetKindKustomization, t.Kustomization},
		} {
			ns, name, _ := strings.Cut(obj.key, "/")
			targets = append(targets, gitopsv1alpha1.ReconciliationTarget{Cluster: t.Cluster, Kind: obj.kind, Name: name, Namespace: ns,
				Revision: art.Revision()})
		}
	}
	key := cache.NewObjectName(p.art.Namespace, p.art.Name)
	p.c.mu.Lock()
	asked := p.c.requested[key] == revision
	p.c.mu.Unlock()
	if len(targets) == 0 || asked {
		return nil
	}
	req := &gitopsv1alpha1.ReconciliationRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.art.Namespace, Name: requestName(p.art, revision),
			Labels: map[string]string{gitopsv1alpha1.LabelArtifact: delivery.ArtifactLabel(p.art.Namespace, p.art.Name)},
			Annotations: map[string]string{
				gitopsv1alpha1.AnnotationArtifact: delivery.ArtifactAnnotation(p.art.Namespace, p.art.Name),
				// Orders this push before a later one's: the request ends as superseded once
				// the artifact pushed another revision at a later generation.
				reconciliationrequest.AnnotationArtifactGeneration: strconv.FormatInt(p.art.Generation, 10),
			},
			// Records of the artifact's pushes: they go with it.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: gitopsv1alpha1.SchemeGroupVersion.String(), Kind: "OCIArtifact", Name: p.art.Name, UID: p.art.UID,
			}},
		},
		Spec: gitopsv1alpha1.ReconciliationRequestSpec{Targets: targets, Mode: gitopsv1alpha1.ReconciliationModeAutomatic},
	}
	_, err := p.c.plinth.GitopsV1alpha1().ReconciliationRequests(p.art.Namespace).Create(ctx, req, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("asking Flux to reconcile revision %s now: %w", revision, err)
	}
	p.c.mu.Lock()
	p.c.requested[key] = revision
	p.c.mu.Unlock()
	return nil
}

// requestName is the name of the Automatic ReconciliationRequest of a pushed revision:
// the artifact's name (shortened to leave room) and a hash of its UID and the revision.
func requestName(art *gitopsv1alpha1.OCIArtifact, revision string) string {
	sum := sha256.Sum256([]byte(string(art.UID) + "/" + revision))
	name := art.Name
	if len(name) > 50 {
		name = strings.TrimRight(name[:50], "-.")
	}
	return name + "-" + hex.EncodeToString(sum[:])[:10]
}

// handled says whether every target reported the reconcile request handled.
func handled(targets []gitopsv1alpha1.ArtifactTargetStatus, request string) bool {
	for _, t := range targets {
		if t.LastHandledReconcileAt != request {
			return false
		}
	}
	return true
}

// engineOf is the Cluster's GitOps engine, Kubectl unless set.
func engineOf(c *platformv1alpha1.Cluster) platformv1alpha1.GitOpsEngine {
	if c.Spec.GitOps.Engine == "" {
		return platformv1alpha1.GitOpsEngineKubectl
	}
	return c.Spec.GitOps.Engine
}

func find(targets []gitopsv1alpha1.ArtifactTargetStatus, cluster string) *gitopsv1alpha1.ArtifactTargetStatus {
	for i := range targets {
		if targets[i].Cluster == cluster {
			return targets[i].DeepCopy()
		}
	}
	return nil
}

// deleteTag deletes the pushed tag from the registry when the artifact is deleted, unless it
// no longer points to the manifest this artifact pushed (latest, pushed since by another
// artifact).
func (p *pass) deleteTag(ctx context.Context) error {
	st := p.status
	if st.URL == "" {
		return nil // never pushed
	}
	endpoint, repository, tag, ok := artifact.ParseURL(st.URL)
	if !ok {
		return fmt.Errorf("status.url %s is not oci://<endpoint>/<repository>:<tag>", st.URL)
	}
	registries, err := p.c.registries.OCIRegistries(p.art.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	i := slices.IndexFunc(registries, func(r *gitopsv1alpha1.OCIRegistry) bool { return r.Spec.Endpoint == endpoint })
	if i < 0 {
		return nil // the registry is gone, and the tag with it as far as Plinth serves it
	}
	registry := registries[i]
	if registry.Status.Phase != gitopsv1alpha1.RegistryPhaseRunning {
		return fmt.Errorf("OCIRegistry %s is not running (phase %s); tag %s is deleted once it runs", registry.Name, phaseOf(registry), tag)
	}
	defer p.c.repositories.lock(endpoint + "/" + repository)()
	opCtx, cancel := context.WithTimeout(ctx, operationTimeout)
	defer cancel()
	tagged, found, err := artifact.Lookup(opCtx, endpoint, repository, tag)
	if err != nil {
		return fmt.Errorf("reading %s: %w", st.URL, err)
	}
	if !found || tagged.Digest != st.Digest {
		return nil
	}
	return artifact.DeleteTag(opCtx, endpoint, repository, tag)
}
