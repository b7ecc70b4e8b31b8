package ociartifact

import (
	"context"
	"errors"
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

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/message"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
)

// pass is one reconcile of an artifact: what it read and the status it builds.
type pass struct {
	c   *Controller
	key cache.ObjectName
	// stored is the artifact as the reconcile read it, art a copy with its defaults applied
	// (the server applies them, but an object read from elsewhere may lack them).
	stored, art *gitopsv1alpha1.OCIArtifact
	status      *gitopsv1alpha1.OCIArtifactStatus
	now         time.Time
	// inProgress says an engine reported a target on its way, not failed: it is polled.
	inProgress bool
	// stalledFor, when not zero, says a target's engine reported it failing and retrying by
	// itself (an errkind.Waiting error): the smallest time such targets asked to wait, their
	// Flux interval, which bounds the backoff.
	stalledFor time.Duration
	// reasons are the Delivered reasons of targets not Ready for a known cause (not
	// registered, no Flux, stalled), by Cluster; the others are in progress or failed.
	reasons map[string]string
}

func newPass(c *Controller, stored *gitopsv1alpha1.OCIArtifact) *pass {
	art := stored.DeepCopy()
	gitopsv1alpha1.SetObjectDefaults_OCIArtifact(art)
	return &pass{c: c, key: cache.MetaObjectToName(stored), stored: stored, art: art, status: stored.Status.DeepCopy(),
		now: c.clock.Now(), reasons: map[string]string{}}
}

// pushed is the artifact's version as it is in the registry.
type pushed struct {
	endpoint string
	objects  []manifests.Object
}

// version is what a pass pushes: the artifact's files, validated, and where they go.
type version struct {
	objects  []manifests.Object
	files    map[string][]byte
	revision string
	registry *gitopsv1alpha1.OCIRegistry
	// endpoint is the registry's; url is oci://<endpoint>/<repository>:<tag>.
	endpoint, url string
	// request is the artifact's reconcile.fluxcd.io/requestedAt, which asks for a look at the
	// registry too.
	request string
}

func (v *version) pushed() *pushed { return &pushed{endpoint: v.endpoint, objects: v.objects} }

// push makes sure the artifact's version is in its registry and returns it. When it is not,
// the status says why and the error is Stalled when only a change can help (manifests not
// valid, no running registry, a version pushed with other content: each of them wakes the
// artifact when it changes), any other error when trying again may.
//
// The registry is read only when the status records no push of this version, or the pushed
// one is due a look: once a resync period, when asked to reconcile, and once after this
// process started. The tag may have been deleted by hand, lost with the registry's data, or
// moved to other content by whoever could write to the registry, and nothing else would ever
// put it right.
func (p *pass) push(ctx context.Context) (*pushed, error) {
	v, err := p.prepare()
	if err != nil {
		return nil, err
	}
	if p.recorded(v) {
		return p.keepPushed(ctx, v)
	}
	return p.pushNew(ctx, v)
}

// keepPushed keeps the version the status records pushed: it is looked up in the registry
// only when due (checkRecorded), and otherwise taken as pushed — found there lately, or the
// registry not running to look (its phase change wakes the artifact).
func (p *pass) keepPushed(ctx context.Context, v *version) (*pushed, error) {
	if !p.registryLookDue(v) {
		p.stillPushed(v.url)
		return v.pushed(), nil
	}
	return p.withRepository(ctx, v, func(ctx context.Context, tagged artifact.Tagged, found bool, err error) (*pushed, error) {
		return p.checkRecorded(ctx, v, tagged, found, err)
	})
}

// pushNew pushes a version the status does not record, to a running registry: a tag already
// there is adopted or refused (adoptOrRefuse), else the files are pushed.
func (p *pass) pushNew(ctx context.Context, v *version) (*pushed, error) {
	if !running(v.registry) {
		return nil, p.refuse(gitopsv1alpha1.ReasonRegistryNotReady, notRunning(v.registry))
	}
	return p.withRepository(ctx, v, func(ctx context.Context, tagged artifact.Tagged, found bool, err error) (*pushed, error) {
		switch {
		case err != nil:
			return nil, p.failPush(gitopsv1alpha1.ReasonRegistryUnavailable,
				fmt.Sprintf("Reading %s from OCIRegistry %s failed: %s", v.url, v.registry.Name, message.Error(err)), err)
		case found:
			return p.adoptOrRefuse(ctx, v, tagged)
		default:
			return p.pushFresh(ctx, v)
		}
	})
}

// withRepository looks up the artifact's tag and hands what it found to decide, holding the
// repository's lock and bounding the registry operations by operationTimeout. One artifact at
// a time per repository, from the lookup to the retention: another artifact of the repository
// could push between this lookup and push, or its retention delete the version pushed here.
func (p *pass) withRepository(ctx context.Context, v *version,
	decide func(ctx context.Context, tagged artifact.Tagged, found bool, err error) (*pushed, error)) (*pushed, error) {
	defer p.c.repositories.lock(v.endpoint + "/" + p.art.Spec.Repository)()
	ctx, cancel := context.WithTimeout(ctx, operationTimeout)
	defer cancel()
	tagged, found, err := artifact.Lookup(ctx, v.endpoint, p.art.Spec.Repository, p.art.Spec.Tag)
	return decide(ctx, tagged, found, err)
}

// prepare gathers and validates the artifact's files and finds its registry. Nothing is pushed
// from files that are not valid or to a registry that does not exist.
func (p *pass) prepare() (*version, error) {
	spec := p.art.Spec
	objects, files, err := p.gather()
	if err != nil {
		return nil, p.refuse(gitopsv1alpha1.ReasonInvalidManifests, message.Error(err)+" Nothing is pushed until the manifests are valid.")
	}
	registry, err := p.c.registries.OCIRegistries(p.art.Namespace).Get(spec.RegistryRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, p.refuse(gitopsv1alpha1.ReasonRegistryNotReady, fmt.Sprintf("OCIRegistry %s does not exist.", spec.RegistryRef.Name))
	}
	if err != nil {
		return nil, err
	}
	return &version{
		objects: objects, files: files, revision: artifact.Revision(spec.Version, files), registry: registry,
		endpoint: registry.Spec.Endpoint, url: artifact.URL(registry.Spec.Endpoint, spec.Repository, spec.Tag),
		request: p.art.Annotations[gitopsv1alpha1.ReconcileRequestAnnotation],
	}, nil
}

// recorded says whether the status records this version as pushed, as status.digest.
func (p *pass) recorded(v *version) bool {
	st := p.status
	return st.PushedVersion == p.art.Spec.Version && st.Revision == v.revision && st.URL == v.url && st.Digest != ""
}

// registryLookDue says whether the pushed version is to be looked up in its registry on this
// pass: the registry is running and due a look (registryCheckDue).
func (p *pass) registryLookDue(v *version) bool {
	return running(v.registry) && p.c.registryCheckDue(p.key, v.url, p.status.Digest, v.request, p.now)
}

// checkRecorded decides about the version the status records, from the registry's lookup:
// found as pushed, it stays pushed until the next look; the tag gone or pointing elsewhere,
// the pushed manifest is put back. A failed lookup does not tell it gone: the version stays
// pushed for this pass (delivering it needs no registry for the Kubectl engine, and Flux pulls
// it by digest), and the next reconcile looks again.
func (p *pass) checkRecorded(ctx context.Context, v *version, tagged artifact.Tagged, found bool, lookupErr error) (*pushed, error) {
	switch {
	case lookupErr != nil:
		klog.FromContext(ctx).V(2).Info("Checking the pushed version in the registry failed", "url", v.url, "err", lookupErr)
	case found && tagged.Digest == p.status.Digest:
		p.c.registryChecked(p.key, v.url, p.status.Digest, v.request, p.now)
	default:
		return p.putBack(ctx, v, tagged, found)
	}
	p.stillPushed(v.url)
	return v.pushed(), nil
}

// putBack puts the pushed version back under its tag, which is gone or points elsewhere.
// Whatever the tag points to now, and whatever its annotations claim, it is not what was
// pushed: the pushed manifest goes back under the tag, the same bytes and digest, so Flux
// (which pulls by that digest) and the registry agree again; only a registry that lost the
// manifest gets a new push. A tag found pointing elsewhere sets TagMoved.
func (p *pass) putBack(ctx context.Context, v *version, tagged artifact.Tagged, found bool) (*pushed, error) {
	spec, st := p.art.Spec, p.status
	digest := st.Digest
	restored, err := artifact.Restore(ctx, v.endpoint, spec.Repository, spec.Tag, digest)
	if err == nil && !restored {
		digest, err = artifact.Push(ctx, v.endpoint, spec.Repository, spec.Tag, v.files, p.metadata(v))
	}
	if found {
		p.tagMoved(v.url, tagged.Digest, digest, restored, err)
	}
	if err != nil {
		return nil, p.failPush(gitopsv1alpha1.ReasonPushFailed,
			fmt.Sprintf("Putting version %s back under %s in OCIRegistry %s failed: %s", spec.Version, v.url, v.registry.Name, message.Error(err)), err)
	}
	if !found {
		how := "put back as " + digest
		if !restored {
			how = "pushed again as " + digest
		}
		p.pushEvent(gitopsv1alpha1.ReasonPushed, fmt.Sprintf("Version %s was missing from %s (deleted from the registry); %s.", spec.Version, v.url, how))
	}
	if !restored {
		return p.pushedAs(ctx, v, digest, false), nil
	}
	// The same manifest as pushed then: pushedAt stays.
	p.c.registryChecked(p.key, v.url, digest, v.request, p.c.clock.Now())
	p.stillPushed(v.url)
	p.prune(ctx, v)
	return v.pushed(), nil
}

// adoptOrRefuse decides about a tag found holding a version the status does not record: pushed
// by an earlier pass whose status was lost, or by someone else. Only the same files under the
// same revision are kept (adopted, not pushed again); the annotation alone proves nothing,
// since anyone who can push writes any annotation. Other content is refused, unless the
// version is latest, whose tag moves to the new content.
func (p *pass) adoptOrRefuse(ctx context.Context, v *version, tagged artifact.Tagged) (*pushed, error) {
	spec := p.art.Spec
	layer, err := artifact.LayerDigest(v.files)
	if err != nil {
		return nil, err
	}
	switch {
	case tagged.Holds(v.revision, layer):
		p.pushEvent(gitopsv1alpha1.ReasonAdopted,
			fmt.Sprintf("Version %s was found in %s with the same content as %s; adopted, not pushed again.", spec.Version, v.url, tagged.Digest))
		return p.pushedNew(ctx, v, tagged.Digest, true), nil
	case spec.Version == gitopsv1alpha1.LatestVersion:
		return p.pushFresh(ctx, v)
	default:
		return nil, p.refuse(gitopsv1alpha1.ReasonVersionImmutable, fmt.Sprintf(
			"Version %s is already pushed to %s with other content (manifest %s); a pushed version never changes, so push the new content as a new version.",
			spec.Version, v.url, tagged.Digest))
	}
}

// pushFresh pushes the version's files under its tag.
func (p *pass) pushFresh(ctx context.Context, v *version) (*pushed, error) {
	spec := p.art.Spec
	digest, err := artifact.Push(ctx, v.endpoint, spec.Repository, spec.Tag, v.files, p.metadata(v))
	if err != nil {
		return nil, p.failPush(gitopsv1alpha1.ReasonPushFailed, fmt.Sprintf("Pushing %s to OCIRegistry %s failed: %s", v.url, v.registry.Name, message.Error(err)), err)
	}
	p.pushEvent(gitopsv1alpha1.ReasonPushed, pushedMessage(spec.Version, v.url, digest))
	return p.pushedNew(ctx, v, digest, false), nil
}

// pushedNew records a version the status did not record as pushed: another version (or
// content) than the one whose tag had moved, if any, so TagMoved goes.
func (p *pass) pushedNew(ctx context.Context, v *version, digest string, adopted bool) *pushed {
	apimeta.RemoveStatusCondition(&p.status.Conditions, gitopsv1alpha1.ConditionTagMoved)
	return p.pushedAs(ctx, v, digest, adopted)
}

// pushedAs records that the version is in the registry as digest, and applies the registry's
// retention. pushedAt is when the push completed, not when the pass began: packaging and
// pushing a large artifact takes a while. An adopted tag keeps the time this status recorded
// for its version, if any (it was pushed then, or before).
func (p *pass) pushedAs(ctx context.Context, v *version, digest string, adopted bool) *pushed {
	spec, st := p.art.Spec, p.status
	done := p.c.clock.Now()
	p.c.registryChecked(p.key, v.url, digest, v.request, done)
	if !adopted || st.PushedVersion != spec.Version || st.PushedAt == nil {
		st.PushedAt = &metav1.Time{Time: done}
	}
	st.RegistryEndpoint, st.URL, st.Digest, st.Revision, st.PushedVersion = v.endpoint, v.url, digest, v.revision, spec.Version
	conditions.SetAt(&st.Conditions, p.art.Generation, metav1.NewTime(p.now), gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue,
		gitopsv1alpha1.ReasonPushed, pushedMessage(spec.Version, v.url, digest))
	p.prune(ctx, v)
	return v.pushed()
}

// metadata is what the pushed artifact says of itself.
func (p *pass) metadata(v *version) artifact.Metadata {
	return artifact.Metadata{Source: artifact.Source(p.art.Namespace, p.art.Name), Revision: v.revision, Created: p.now.UTC().Format(time.RFC3339)}
}

func pushedMessage(version, url, digest string) string {
	return fmt.Sprintf("Version %s is pushed to %s as %s.", version, url, digest)
}

// tagMoved sets the TagMoved condition for a tag found pointing to foreign instead of the
// pushed manifest, and records its Warning event: the pushed manifest was put back (restored),
// pushed again as digest, or putting it back failed (err).
func (p *pass) tagMoved(url, foreign, digest string, restored bool, err error) {
	found := fmt.Sprintf("Tag %s in %s pointed to %s instead of the pushed %s", p.art.Spec.Tag, url, foreign, p.status.Digest)
	var reason, msg string
	switch {
	case err != nil:
		reason, msg = gitopsv1alpha1.ReasonRestoreFailed, fmt.Sprintf("%s; putting the pushed version back failed: %s", found, message.Error(err))
	case restored:
		reason, msg = gitopsv1alpha1.ReasonRestored, found+"; the pushed version is back under the tag."
	default:
		reason, msg = gitopsv1alpha1.ReasonPushedAgain, fmt.Sprintf("%s, which the registry no longer has; the version is pushed again as %s.", found, digest)
	}
	msg = message.Sentence(msg)
	conditions.SetAt(&p.status.Conditions, p.art.Generation, metav1.NewTime(p.now), gitopsv1alpha1.ConditionTagMoved, metav1.ConditionTrue, reason, msg)
	p.pushEvent(gitopsv1alpha1.ReasonTagMoved, msg)
}

// stillPushed says the version the status records is pushed, as it was.
func (p *pass) stillPushed(url string) {
	conditions.SetAt(&p.status.Conditions, p.art.Generation, metav1.NewTime(p.now), gitopsv1alpha1.ConditionPushed, metav1.ConditionTrue,
		gitopsv1alpha1.ReasonPushed, pushedMessage(p.art.Spec.Version, url, p.status.Digest))
}

// pushEvent records an event of the push on the artifact.
func (p *pass) pushEvent(reason, msg string) {
	p.c.events.Record(p.stored, reason, "Push", msg)
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
func (p *pass) prune(ctx context.Context, v *version) {
	retention := v.registry.Spec.Retention
	if retention == nil || retention.KeepVersions <= 0 {
		return
	}
	spec := p.art.Spec
	deleted, err := artifact.Prune(ctx, v.endpoint, spec.Repository, int(retention.KeepVersions), spec.Tag)
	if err != nil {
		p.pushEvent(gitopsv1alpha1.ReasonPruneFailed,
			fmt.Sprintf("Deleting versions beyond the newest %d of %s failed: %s", retention.KeepVersions, spec.Repository, message.Error(err)))
		return
	}
	if len(deleted) > 0 {
		p.pushEvent(gitopsv1alpha1.ReasonPruned,
			fmt.Sprintf("Deleted %s from %s, keeping the newest %d versions.", strings.Join(deleted, ", "), spec.Repository, retention.KeepVersions))
	}
}

// refuse records why the version is not pushed when only a change can help: Pushed and Ready
// False, and a Stalled error. The change (the manifests, the registry) wakes the artifact.
func (p *pass) refuse(reason, msg string) error {
	p.notPushed(reason, msg)
	return errkind.Stalled(errors.New(msg))
}

// failPush records why the version is not pushed when trying again may help, and returns err
// to be retried with backoff.
func (p *pass) failPush(reason, msg string, err error) error {
	p.notPushed(reason, msg)
	return err
}

// notPushed records why the version is not in the registry: Pushed and Ready False.
func (p *pass) notPushed(reason, msg string) {
	now := metav1.NewTime(p.now)
	conditions.SetAt(&p.status.Conditions, p.art.Generation, now, gitopsv1alpha1.ConditionPushed, metav1.ConditionFalse, reason, msg)
	conditions.SetAt(&p.status.Conditions, p.art.Generation, now, gitopsv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
}

// running says whether the registry serves.
func running(r *gitopsv1alpha1.OCIRegistry) bool {
	return r.Status.Phase == gitopsv1alpha1.RegistryPhaseRunning
}

// notRunning says that the registry does not serve, and why when its status says.
func notRunning(r *gitopsv1alpha1.OCIRegistry) string {
	if r.Status.LastError != "" {
		return fmt.Sprintf("OCIRegistry %s is not running (phase %s): %s", r.Name, phaseOf(r), message.Sentence(r.Status.LastError))
	}
	return fmt.Sprintf("OCIRegistry %s is not running (phase %s).", r.Name, phaseOf(r))
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
