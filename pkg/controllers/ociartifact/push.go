package ociartifact

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/message"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
)

// Reasons of the Pushed, Delivered and Ready conditions, and of the events recorded when they
// change.
const (
	// ReasonPushed: the version is in the registry.
	ReasonPushed = "Pushed"
	// ReasonInvalidManifests: the manifests (or the ConfigMap holding them) are missing or not
	// valid; nothing is pushed until they are.
	ReasonInvalidManifests = "InvalidManifests"
	// ReasonRegistryNotReady: the OCIRegistry does not exist or is not Running.
	ReasonRegistryNotReady = "RegistryNotReady"
	// ReasonRegistryUnavailable: the registry is Running but did not answer (it is restarting);
	// retried with backoff.
	ReasonRegistryUnavailable = "RegistryUnavailable"
	// ReasonVersionImmutable: the version's tag holds other content; a pushed version never
	// changes.
	ReasonVersionImmutable = "VersionImmutable"
	// ReasonPushFailed: the push failed; retried with backoff.
	ReasonPushFailed = "PushFailed"
	// ReasonDelivered: every target applied the pushed version.
	ReasonDelivered = "Delivered"
	// ReasonNoTargets: there is nothing to deliver to.
	ReasonNoTargets = "NoTargets"
	// ReasonDeliveryInProgress: a target has not applied the pushed version yet.
	ReasonDeliveryInProgress = "DeliveryInProgress"
	// ReasonClusterNotFound: a target names a Cluster that is not registered; its
	// registration wakes the artifact.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonFluxNotAvailable: a target's Cluster has the GitOps engine Flux, but Flux has not
	// been detected there (not installed, not running, or not probed yet); Flux being
	// detected wakes the artifact.
	ReasonFluxNotAvailable = "FluxNotAvailable"
	// ReasonDeliveryFailed: a delivery to a target failed; retried with backoff.
	ReasonDeliveryFailed = "DeliveryFailed"
	// ReasonDeleteFailed: the artifact is being deleted and its tag could not be deleted yet.
	ReasonDeleteFailed = "DeleteFailed"
	// ReasonLeftBehind: the artifact was deleted without removing everything it delivered or
	// pushed within removalBound; the event names what is left (an event only).
	ReasonLeftBehind = "LeftBehind"
	// ReasonAdopted: the version's tag already held the same content (pushed before the
	// status recorded it), which is kept rather than pushed again (an event only).
	ReasonAdopted = "Adopted"
	// ReasonTagMoved: the pushed version's tag pointed to another manifest than the one
	// pushed (the event of the TagMoved condition).
	ReasonTagMoved = "TagMoved"
	// ReasonRestored: the pushed manifest was put back under its moved tag, the same digest
	// (TagMoved's reason).
	ReasonRestored = "Restored"
	// ReasonPushedAgain: the registry no longer had the pushed manifest, so the version was
	// pushed again under its moved tag, as a new digest (TagMoved's reason).
	ReasonPushedAgain = "PushedAgain"
	// ReasonRestoreFailed: putting the pushed version back under its moved tag failed;
	// retried with backoff (TagMoved's reason).
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonPruneFailed: retention could not delete old versions (an event only).
	ReasonPruneFailed = "PruneFailed"
	// ReasonPruned: retention deleted old versions (an event only).
	ReasonPruned = "Pruned"
)

// pass is one reconcile of an artifact: what it read and the status it builds.
type pass struct {
	c *Controller
	// stored is the artifact as the cache holds it, art a copy with its defaults applied
	// (the server applies them, but an object read from elsewhere may lack them).
	stored, art *gitopsv1alpha1.OCIArtifact
	status      *gitopsv1alpha1.OCIArtifactStatus
	now         time.Time
	// inProgress says an engine reported a target on its way, not failed: it is polled.
	inProgress bool
	// stalledFor, when not zero, says a target's engine reported it failing and retrying by
	// itself (delivery.ErrStalled): the smallest Flux interval of such targets, which bounds
	// the backoff.
	stalledFor time.Duration
	// reasons are the Delivered reasons of targets not Ready for a known cause (not
	// registered, no Flux, stalled), by Cluster; the others are in progress or failed.
	reasons map[string]string
}

func newPass(c *Controller, stored *gitopsv1alpha1.OCIArtifact) *pass {
	art := stored.DeepCopy()
	gitopsv1alpha1.SetObjectDefaults_OCIArtifact(art)
	return &pass{c: c, stored: stored, art: art, status: stored.Status.DeepCopy(), now: c.clock.Now(), reasons: map[string]string{}}
}

// pushed is the artifact's version as it is in the registry.
type pushed struct {
	endpoint string
	objects  []manifests.Object
	// previousRevision is the revision pushed before this pass, when this pass pushed another.
	previousRevision string
}

// push makes sure the artifact's version is in its registry and returns it; nil when it is not
// (the status says why), with an error when trying again may help.
func (p *pass) push(ctx context.Context) (*pushed, error) {
	spec := p.art.Spec
	objects, files, err := p.gather()
	if err != nil {
		p.notPushed(ReasonInvalidManifests, message.Error(err)+" Nothing is pushed until the manifests are valid.")
		return nil, nil
	}
	revision := artifact.Revision(spec.Version, files)

	registry, err := p.c.registries.OCIRegistries(p.art.Namespace).Get(spec.RegistryRef.Name)
	if apierrors.IsNotFound(err) {
		p.notPushed(ReasonRegistryNotReady, fmt.Sprintf("OCIRegistry %s does not exist.", spec.RegistryRef.Name))
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	endpoint := registry.Spec.Endpoint
	url := artifact.URL(endpoint, spec.Repository, spec.Tag)
	st := p.status
	key := cache.NewObjectName(p.art.Namespace, p.art.Name)
	running := registry.Status.Phase == gitopsv1alpha1.RegistryPhaseRunning
	// recorded: the status says the version is pushed, as st.Digest. The registry is looked
	// at again once a resync period (or when asked to reconcile, or once after this process
	// started): the tag may have been deleted by hand, lost with the registry's data, or moved
	// to other content by whoever could write to the registry, and nothing else would ever
	// put it right.
	recorded := st.PushedVersion == spec.Version && st.Revision == revision && st.URL == url && st.Digest != ""
	request := p.art.Annotations[gitopsv1alpha1.ReconcileRequestAnnotation]
	if recorded && (!running || !p.c.registryCheckDue(key, url, st.Digest, request, p.now)) {
		// Pushed already and found there lately (or the registry is not running to look:
		// its phase change wakes the artifact); the registry is not needed.
		p.stillPushed(url)
		return &pushed{endpoint: endpoint, objects: objects}, nil
	}
	if !running {
		msg := fmt.Sprintf("OCIRegistry %s is not running (phase %s).", registry.Name, phaseOf(registry))
		if registry.Status.LastError != "" {
			msg = fmt.Sprintf("OCIRegistry %s is not running (phase %s): %s", registry.Name, phaseOf(registry), message.Sentence(registry.Status.LastError))
		}
		// The registry's status change wakes the artifact.
		p.notPushed(ReasonRegistryNotReady, msg)
		return nil, nil
	}

	// One artifact at a time per repository, from the lookup to the retention: another
	// artifact of the repository could push between this lookup and push, or its retention
	// delete the version pushed here.
	defer p.c.repositories.lock(endpoint + "/" + spec.Repository)()
	opCtx, cancel := context.WithTimeout(ctx, operationTimeout)
	defer cancel()
	tagged, found, err := artifact.Lookup(opCtx, endpoint, spec.Repository, spec.Tag)
	if err != nil && recorded {
		// Not known to be gone: the version stays pushed for this pass (delivering it needs
		// no registry for the Kubectl engine, and Flux pulls it by digest), and the next
		// reconcile looks again.
		klog.FromContext(ctx).V(2).Info("Checking the pushed version in the registry failed", "url", url, "err", err)
		p.stillPushed(url)
		return &pushed{endpoint: endpoint, objects: objects}, nil
	}
	if err != nil {
		p.notPushed(ReasonRegistryUnavailable, fmt.Sprintf("Reading %s from OCIRegistry %s failed: %s", url, registry.Name, message.Error(err)))
		return nil, err
	}
	md := artifact.Metadata{Source: artifact.Source(p.art.Namespace, p.art.Name), Revision: revision, Created: p.now.UTC().Format(time.RFC3339)}
	var digest string
	var adopted bool
	var outcome func() // records the event of what this pass did, once the status is set
	switch {
	case recorded && found && tagged.Digest == st.Digest:
		// Still there as pushed: nothing to do until the next check.
		p.c.registryChecked(key, url, st.Digest, request, p.now)
		p.stillPushed(url)
		return &pushed{endpoint: endpoint, objects: objects}, nil
	case recorded:
		// The tag is gone or points elsewhere. Whatever it points to now, and whatever its
		// annotations claim, it is not what was pushed: the pushed manifest goes back under
		// the tag, the same bytes and digest, so Flux (which pulls by that digest) and the
		// registry agree again; only a registry that lost the manifest gets a new push.
		var restored bool
		restored, err = artifact.Restore(opCtx, endpoint, spec.Repository, spec.Tag, st.Digest)
		digest = st.Digest
		if err == nil && !restored {
			digest, err = artifact.Push(opCtx, endpoint, spec.Repository, spec.Tag, files, md)
		}
		if found {
			outcome = p.tagMoved(url, tagged.Digest, digest, restored, err)
		}
		if err != nil {
			p.notPushed(ReasonPushFailed, fmt.Sprintf("Putting version %s back under %s in OCIRegistry %s failed: %s", spec.Version, url, registry.Name, message.Error(err)))
			if outcome != nil {
				outcome()
			}
			return nil, err
		}
		if outcome == nil {
			how := "put back as " + digest
			if !restored {
				how = "pushed again as " + digest
			}
			outcome = func() {
				transition.Record(p.c.recorder, p.stored, ReasonPushed, "Push",
					fmt.Sprintf("Version %s was missing from %s (deleted from the registry); %s.", spec.Version, url, how))
			}
		}
		if restored {
			// The same manifest as pushed then: pushedAt stays.
			p.c.registryChecked(key, url, digest, request, p.c.clock.Now())
			p.stillPushed(url)
			outcome()
			p.prune(opCtx, registry, endpoint)
			return &pushed{endpoint: endpoint, objects: objects}, nil
		}
	case found:
		// Not recorded: pushed by an earlier pass whose status was lost, or by someone else.
		// Only the same files under the same revision are kept; the annotation alone proves
		// nothing, since anyone who can push writes any annotation.
		layer, err := artifact.LayerDigest(files)
		if err != nil {
			return nil, err
		}
		switch {
		case tagged.Holds(revision, layer):
			digest, adopted = tagged.Digest, true
			outcome = func() {
				transition.Record(p.c.recorder, p.stored, ReasonAdopted, "Push",
					fmt.Sprintf("Version %s was found in %s with the same content as %s; adopted, not pushed again.", spec.Version, url, digest))
			}
		case spec.Version != gitopsv1alpha1.LatestVersion:
			p.notPushed(ReasonVersionImmutable, fmt.Sprintf(
				"Version %s is already pushed to %s with other content (manifest %s); a pushed version never changes, so push the new content as a new version.",
				spec.Version, url, tagged.Digest))
			return nil, nil
		}
	}
	if digest == "" {
		digest, err = artifact.Push(opCtx, endpoint, spec.Repository, spec.Tag, files, md)
		if err != nil {
			p.notPushed(ReasonPushFailed, fmt.Sprintf("Pushing %s to OCIRegistry %s failed: %s", url, registry.Name, message.Error(err)))
			return nil, err
		}
	}
	if !recorded {
		// Another version (or content) than the one whose tag had moved.
		apimeta.RemoveStatusCondition(&st.Conditions, gitopsv1alpha1.ConditionTagMoved)
	}

	// When the push completed, not when the pass began: packaging and pushing a large
	// artifact takes a while. An adopted tag keeps the time this status recorded for its
	// version, if any (it was pushed then, or before).
	done := p.c.clock.Now()
	p.c.registryChecked(key, url, digest, request, done)
	result := &pushed{endpoint: endpoint, objects: objects}
	if st.Revision != "" && st.Revision != revision {
		result.previousRevision = st.Revision
	}
	if !adopted || st.PushedVersion != spec.Version || st.PushedAt == nil {
		st.PushedAt = &metav1.Time{Time: done}
	}
	st.RegistryEndpoint, st.URL, st.Digest, st.Revision, st.PushedVersion = endpoint, url, digest, revision, spec.Version
	msg := fmt.Sprintf("Version %s is pushed to %s as %s.", spec.Version, url, digest)
	setCondition(st, p.art.Generation, p.now, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, ReasonPushed, msg)
	if outcome != nil {
		outcome()
	} else {
		transition.Record(p.c.recorder, p.stored, ReasonPushed, "Push", msg)
	}
	p.prune(opCtx, registry, endpoint)
	return result, nil
}

// tagMoved sets the TagMoved condition for a tag found pointing to foreign instead of the
// pushed manifest, and returns the recording of its Warning event: the pushed manifest was put
// back (restored), pushed again as digest, or putting it back failed (err).
func (p *pass) tagMoved(url, foreign, digest string, restored bool, err error) func() {
	found := fmt.Sprintf("Tag %s in %s pointed to %s instead of the pushed %s", p.art.Spec.Tag, url, foreign, p.status.Digest)
	var reason, msg string
	switch {
	case err != nil:
		reason, msg = ReasonRestoreFailed, fmt.Sprintf("%s; putting the pushed version back failed: %s", found, message.Error(err))
	case restored:
		reason, msg = ReasonRestored, found+"; the pushed version is back under the tag."
	default:
		reason, msg = ReasonPushedAgain, fmt.Sprintf("%s, which the registry no longer has; the version is pushed again as %s.", found, digest)
	}
	msg = message.Sentence(msg)
	setCondition(p.status, p.art.Generation, p.now, gitopsv1alpha1.ConditionTagMoved, metav1.ConditionTrue, reason, msg)
	return func() { transition.Record(p.c.recorder, p.stored, ReasonTagMoved, "Push", msg) }
}

// stillPushed says the version the status records is pushed, as it was.
func (p *pass) stillPushed(url string) {
	setCondition(p.status, p.art.Generation, p.now, gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue, ReasonPushed,
		fmt.Sprintf("Version %s is pushed to %s as %s.", p.art.Spec.Version, url, p.status.Digest))
}

// registryCheck is when an artifact's pushed version was last found in (or pushed to) its
// registry, as what, and under which reconcile request.
type registryCheck struct {
	url, digest, request string
	at                   time.Time
}

// registryCheckDue says whether the registry should be looked at for the pushed version url
// with digest: not since a resync period, or never in this process, or as something else, or
// not since the artifact was asked to reconcile (request, its reconcile.fluxcd.io/requestedAt).
// At most once a resync period otherwise, not on the polls while a target is on its way: the
// lookup holds the repository's lock and costs the registry a request.
func (c *Controller) registryCheckDue(key cache.ObjectName, url, digest, request string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.checked[key]
	return !ok || last.url != url || last.digest != digest || last.request != request || now.Sub(last.at) >= c.resync
}

// registryChecked records that the registry holds url as digest at the time given, under the
// reconcile request given.
func (c *Controller) registryChecked(key cache.ObjectName, url, digest, request string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked == nil {
		c.checked = map[cache.ObjectName]registryCheck{}
	}
	c.checked[key] = registryCheck{url: url, digest: digest, request: request, at: at}
}

// prune applies the registry's retention to the artifact's repository, never deleting the
// version just pushed. A failure does not fail the push: the next push prunes again.
func (p *pass) prune(ctx context.Context, registry *gitopsv1alpha1.OCIRegistry, endpoint string) {
	if registry.Spec.Retention == nil || registry.Spec.Retention.KeepVersions <= 0 {
		return
	}
	spec := p.art.Spec
	deleted, err := artifact.Prune(ctx, endpoint, spec.Repository, int(registry.Spec.Retention.KeepVersions), spec.Tag)
	if err != nil {
		transition.Record(p.c.recorder, p.stored, ReasonPruneFailed, "Push",
			fmt.Sprintf("Deleting versions beyond the newest %d of %s failed: %s", registry.Spec.Retention.KeepVersions, spec.Repository, message.Error(err)))
		return
	}
	if len(deleted) > 0 {
		transition.Record(p.c.recorder, p.stored, ReasonPruned, "Push",
			fmt.Sprintf("Deleted %s from %s, keeping the newest %d versions.", strings.Join(deleted, ", "), spec.Repository, registry.Spec.Retention.KeepVersions))
	}
}

// notPushed records why the version is not in the registry: Pushed and Ready False.
func (p *pass) notPushed(reason, message string) {
	setCondition(p.status, p.art.Generation, p.now, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, reason, message)
	setCondition(p.status, p.art.Generation, p.now, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
}

func phaseOf(r *gitopsv1alpha1.OCIRegistry) gitopsv1alpha1.RegistryPhase {
	if r.Status.Phase == "" {
		return gitopsv1alpha1.RegistryPhaseNotProvisioned
	}
	return r.Status.Phase
}

// gather returns the artifact's objects and the files to package, validated: inline manifests
// as one YAML file each, or the manifest files of the ConfigMap as they are. The error names
// the manifest, or the file and document, of the first problem.
func (p *pass) gather() ([]manifests.Object, map[string][]byte, error) {
	spec := p.art.Spec
	if spec.ConfigMapRef != nil {
		cm, err := p.c.configMaps.ConfigMaps(p.art.Namespace).Get(spec.ConfigMapRef.Name)
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("ConfigMap %s does not exist", spec.ConfigMapRef.Name)
		}
		if err != nil {
			return nil, nil, err
		}
		files := artifact.ConfigMapFiles(cm.Data, cm.BinaryData)
		objects, err := manifests.FromFiles(files)
		if err != nil {
			return nil, nil, fmt.Errorf("ConfigMap %s: %w", cm.Name, err)
		}
		return objects, files, nil
	}
	if len(spec.Manifests) == 0 {
		return nil, nil, manifests.ErrNoObjects
	}
	objects := make([]manifests.Object, 0, len(spec.Manifests))
	for i, raw := range spec.Manifests {
		// Kubernetes' JSON decoding, so that integers stay int64 as in any unstructured object.
		var obj map[string]interface{}
		if err := utiljson.Unmarshal(raw.Raw, &obj); err != nil {
			return nil, nil, fmt.Errorf("spec.manifests[%d]: %w", i, err)
		}
		objects = append(objects, manifests.Object{Unstructured: &unstructured.Unstructured{Object: obj}})
	}
	if errs := manifests.ValidateObjects(objects, func(i int) *field.Path { return field.NewPath("spec", "manifests").Index(i) }); len(errs) > 0 {
		return nil, nil, errs.ToAggregate()
	}
	files, err := artifact.Files(objects)
	if err != nil {
		return nil, nil, err
	}
	return objects, files, nil
}
