// Package clusterpack is the controller of InfrastructureClusterPacks: it renders a pack's
// content (Helm SDK, krusty or raw, pkg/packs/render) once per Kubernetes minor version among
// its target Clusters, keeps each rendered revision in a Secret (pkg/packs/revisions) so that a
// rollback needs no re-render, creates an InfrastructurePackInstance {pack}-{cluster} in
// seam-tenant-{cluster} for every target, deletes those of clusters no longer targeted, and
// sums up the instances in the pack's status. Delivering a revision to a cluster, and
// watching it for drift, is the instance controller's work (pkg/controllers/packinstance):
// one instance per worker, so clusters are delivered in parallel and an unreachable one holds
// up only itself.
//
// A pack renders when its generation changes (a new spec: a version, values or targets).
// Identical output keeps the revision; different output is a new revision numbered one past
// the newest kept. rollbackToRevision points the pack at a kept revision instead of rendering.
// A rendering error that only a new spec can fix (a template that fails, a chart that does not
// exist) is the Rendered condition, naming the template and line, and is not retried; fetching
// a chart that fails for other reasons is retried with backoff.
//
// Deleting a pack deletes its instances, whose finalizer removes the delivered objects from
// each cluster unless lifecyclePolicies.retainOnDeletion; once they are gone the kept
// revisions are deleted and the pack's finalizer released.
//
// In-memory state: none of the controller's own beyond its informers' caches. The revisions
// store (pkg/packs/revisions) keeps the revisions it decoded; a restart loses only that
// cache, and the next reconcile of each pack reads its current revision's Secret again.
package clusterpack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	infraclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/infrastructure/v1alpha1"
	infrainformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/infrastructure/v1alpha1"
	platforminformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/platform/v1alpha1"
	infralisters "github.com/plinth-dev/plinth/pkg/generated/listers/infrastructure/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/message"
	"github.com/plinth-dev/plinth/pkg/packs/render"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

// Name names the controller in logs, metrics and events.
const Name = "clusterpack"

// fieldManager names the controller in the managedFields of the pack statuses it writes.
const fieldManager = "plinth-" + Name

// renderTimeout bounds one render, fetching the chart included.
const renderTimeout = 2 * time.Minute

// contentRetry is how soon a pack whose content failed to render is rendered again without a
// change of its own: a missing kustomize source may have appeared, or a chart version been
// published, and no informer here reports either. A chart pulled once is cached, so this
// costs a template run, not a download.
const contentRetry = time.Minute

// Options tune the controller.
type Options struct {
	// Clock tells the time of a render; nil means the real clock.
	Clock clock.PassiveClock
}

// Renderer renders a pack's content: *render.Renderer.
type Renderer interface {
	Render(ctx context.Context, src render.Source, opts render.Options) (render.Result, error)
}

// Controller renders packs and keeps their instances.
type Controller struct {
	*loop.Loop
	plinth    versioned.Interface
	client    infraclient.InfrastructureV1alpha1Interface
	kube      kubernetes.Interface
	events    *transition.Recorder
	status    statuswriter.Writer[*infrav1alpha1.InfrastructureClusterPack]
	packs     infralisters.InfrastructureClusterPackLister
	instances cache.Indexer
	clusters  platformlisters.ClusterLister
	renderer  Renderer
	store     *revisions.Store
	clock     clock.PassiveClock
}

// byPack indexes instances by <pack namespace>/<pack name>, from their labels.
const byPack = "pack"

// PackKey is the byPack index value of an instance: its pack's namespace/name, or "" when the
// instance carries no pack labels.
func PackKey(inst *infrav1alpha1.InfrastructurePackInstance) string {
	ns, name := inst.Labels[infrav1alpha1.LabelPackNamespace], inst.Labels[infrav1alpha1.LabelPack]
	if ns == "" || name == "" {
		return ""
	}
	return ns + "/" + name
}

// NewController returns the pack controller. It reads packs, instances and Clusters from their
// informers and waits for all of them. A pack is woken when its spec or deletion changes, when
// one of its instances changes, and when a Cluster is added, deleted or relabelled (a selector
// may now match it) or its Kubernetes version changes.
func NewController(plinth versioned.Interface, kube kubernetes.Interface, recorder events.EventRecorder,
	packs infrainformers.InfrastructureClusterPackInformer, instances infrainformers.InfrastructurePackInstanceInformer,
	clusters platforminformers.ClusterInformer, renderer Renderer, store *revisions.Store, opts Options) (*Controller, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if err := instances.Informer().AddIndexers(cache.Indexers{byPack: func(obj interface{}) ([]string, error) {
		inst, ok := obj.(*infrav1alpha1.InfrastructurePackInstance)
		if !ok || PackKey(inst) == "" {
			return nil, nil
		}
		return []string{PackKey(inst)}, nil
	}}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c := &Controller{
		plinth: plinth, client: plinth.InfrastructureV1alpha1(), kube: kube, events: transition.New(recorder, infrav1alpha1.Reasons),
		packs: packs.Lister(), instances: instances.Informer().GetIndexer(), clusters: clusters.Lister(),
		renderer: renderer, store: store, clock: opts.Clock,
	}
	c.status = statuswriter.Writer[*infrav1alpha1.InfrastructureClusterPack]{
		FieldManager: fieldManager,
		Reasons:      infrav1alpha1.Reasons,
		Conditions:   func(p *infrav1alpha1.InfrastructureClusterPack) []metav1.Condition { return p.Status.Conditions },
		Update: func(ctx context.Context, p *infrav1alpha1.InfrastructureClusterPack, opts metav1.UpdateOptions) (*infrav1alpha1.InfrastructureClusterPack, error) {
			return c.client.InfrastructureClusterPacks(p.Namespace).UpdateStatus(ctx, p, opts)
		},
		Events: c.events,
		Rules: []transition.Rule{
			{Condition: infrav1alpha1.ConditionRendered, Action: "Render"},
			{Condition: infrav1alpha1.ConditionReady, ReadyReason: infrav1alpha1.ReasonReady, Action: "Deliver"},
		},
	}
	c.Loop = loop.New(Name, c.reconcile, packs.Informer(), instances.Informer(), clusters.Informer())
	if err := c.WatchGenerations(packs.Informer()); err != nil {
		return nil, err
	}
	if err := c.WatchMapped(instances.Informer(), func(obj interface{}) []cache.ObjectName {
		inst, ok := obj.(*infrav1alpha1.InfrastructurePackInstance)
		if !ok {
			if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
				inst, ok = tomb.Obj.(*infrav1alpha1.InfrastructurePackInstance)
			}
		}
		if !ok || PackKey(inst) == "" {
			return nil
		}
		return []cache.ObjectName{cache.NewObjectName(inst.Labels[infrav1alpha1.LabelPackNamespace], inst.Labels[infrav1alpha1.LabelPack])}
	}); err != nil {
		return nil, err
	}
	if err := c.WatchMappedIf(clusters.Informer(), c.allPacks, clusterChanged); err != nil {
		return nil, err
	}
	return c, nil
}

// clusterChanged says whether a Cluster update may change which packs target it or how they
// render: its labels or its Kubernetes version.
func clusterChanged(oldObj, obj interface{}) bool {
	old, ok1 := oldObj.(*platformv1alpha1.Cluster)
	cur, ok2 := obj.(*platformv1alpha1.Cluster)
	if !ok1 || !ok2 {
		return true
	}
	return !apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) || old.Status.KubernetesVersion != cur.Status.KubernetesVersion
}

// allPacks maps a Cluster event to every pack: few packs, rare Cluster changes.
func (c *Controller) allPacks(interface{}) []cache.ObjectName {
	packs, err := c.packs.List(labels.Everything())
	if err != nil {
		return nil
	}
	keys := make([]cache.ObjectName, 0, len(packs))
	for _, p := range packs {
		keys = append(keys, cache.MetaObjectToName(p))
	}
	return keys
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.packs.InfrastructureClusterPacks(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pack := cached.DeepCopy()
	if pack.DeletionTimestamp != nil {
		return c.finalize(ctx, pack)
	}
	if !slices.Contains(pack.Finalizers, infrav1alpha1.FinalizerPack) {
		pack.Finalizers = append(pack.Finalizers, infrav1alpha1.FinalizerPack)
		if pack, err = c.client.InfrastructureClusterPacks(pack.Namespace).Update(ctx, pack, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	before := pack.DeepCopy()
	targets, missing := c.targets(pack)
	renderErr := c.revise(ctx, pack, targets)
	var instErr error
	if pack.Status.Revision > 0 {
		instErr = c.syncInstances(ctx, pack, targets)
	}
	c.summarize(pack, targets, missing)
	if renderErr == nil {
		pack.Status.ObservedGeneration = pack.Generation
	}
	if _, _, err := c.status.Write(ctx, before, pack); err != nil {
		return err
	}
	return outcome(renderErr, instErr)
}

// outcome is what the loop does after a reconcile. A failure to keep the instances is retried
// with backoff, and the retry renders again too. Otherwise the render's error decides: content
// that does not render is Waiting for contentRetry (not retried with backoff: a new spec fixes
// it, or the source it lacks appearing, which no informer here reports), a rollback to a
// revision not kept is Stalled until the spec changes, and a failed fetch is retried.
func outcome(renderErr, instErr error) error {
	if instErr != nil && (errkind.IsWaiting(renderErr) || errkind.IsStalled(renderErr)) {
		return instErr
	}
	return errors.Join(renderErr, instErr)
}

// targets returns the pack's target Clusters, sorted by name, and the named ones that do not
// exist.
func (c *Controller) targets(pack *infrav1alpha1.InfrastructureClusterPack) ([]*platformv1alpha1.Cluster, []string) {
	byName := map[string]*platformv1alpha1.Cluster{}
	var missing []string
	for _, name := range pack.Spec.TargetClusters {
		cl, err := c.clusters.Get(name)
		if err != nil {
			missing = append(missing, name)
			continue
		}
		byName[name] = cl
	}
	if pack.Spec.ClusterSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(pack.Spec.ClusterSelector); err == nil {
			matched, _ := c.clusters.List(sel)
			for _, cl := range matched {
				byName[cl.Name] = cl
			}
		}
	}
	out := make([]*platformv1alpha1.Cluster, 0, len(byName))
	for _, cl := range byName {
		out = append(out, cl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, missing
}

// revise points status.revision at the revision to deliver: the kept one rollbackToRevision
// names, or the spec rendered for every Kubernetes version among the targets (a new revision
// when the output differs from the current one's).
func (c *Controller) revise(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack, targets []*platformv1alpha1.Cluster) error {
	if r := pack.Spec.RollbackToRevision; r != nil {
		return c.rollback(ctx, pack, *r)
	}
	keys := renderKeys(targets)
	if c.renderedForEveryTarget(ctx, pack, keys) {
		return nil
	}
	rev, err := c.render(ctx, pack, keys)
	if err != nil {
		return renderFailed(pack, err)
	}
	kept, err := c.store.List(ctx, pack.Namespace, pack.Name)
	if err != nil {
		return err
	}
	if same := c.sameRevision(ctx, pack, rev, kept, keys); same != nil {
		c.point(pack, same)
		conditions.Set(&pack.Status.Conditions, pack.Generation, infrav1alpha1.ConditionRendered, metav1.ConditionTrue, infrav1alpha1.ReasonRendered,
			fmt.Sprintf("Revision %d is current: rendering gives the same objects.", same.Number))
		return nil
	}
	return c.saveRevision(ctx, pack, rev, kept)
}

// rollback points the pack at the kept revision number. A revision not kept is Stalled: only a
// new spec fixes it.
func (c *Controller) rollback(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack, number int64) error {
	if pack.Status.Revision == number && pack.Status.ObservedGeneration == pack.Generation {
		return nil
	}
	rev, err := c.store.Get(ctx, pack.Namespace, pack.Name, number)
	if apierrors.IsNotFound(err) {
		conditions.Set(&pack.Status.Conditions, pack.Generation, infrav1alpha1.ConditionRendered, metav1.ConditionFalse, infrav1alpha1.ReasonRevisionNotFound,
			fmt.Sprintf("Revision %d is not kept; status.history lists the kept revisions.", number))
		return errkind.Stalled(err)
	}
	if err != nil {
		return err
	}
	c.point(pack, rev)
	conditions.Set(&pack.Status.Conditions, pack.Generation, infrav1alpha1.ConditionRendered, metav1.ConditionTrue, infrav1alpha1.ReasonRendered,
		fmt.Sprintf("Rolling back to revision %d (version %s), rendered %s.", rev.Number, rev.Version, rev.RenderedAt.UTC().Format(time.RFC3339)))
	return nil
}

// renderedForEveryTarget says whether the current revision already holds a render of the
// current spec for every key, so there is nothing to render.
func (c *Controller) renderedForEveryTarget(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack, keys []string) bool {
	if pack.Status.Revision == 0 || pack.Status.ObservedGeneration != pack.Generation ||
		!meta.IsStatusConditionTrue(pack.Status.Conditions, infrav1alpha1.ConditionRendered) {
		return false
	}
	current, err := c.store.Get(ctx, pack.Namespace, pack.Name, pack.Status.Revision)
	return err == nil && hasKeys(current, keys)
}

// renderFailed records a render that failed in the Rendered condition and returns its error:
// RenderFailed and Waiting for contentRetry when the pack's content is at fault (a missing
// source, a template that fails), FetchFailed and retried with backoff otherwise. The
// condition and the log quote the error: not the URLs in it, which may carry a token (a chart
// archive's signed URL, a redirect's target).
func renderFailed(pack *infrav1alpha1.InfrastructureClusterPack, err error) error {
	err = render.Redact(err)
	reason := infrav1alpha1.ReasonFetchFailed
	switch {
	case errkind.IsWaiting(err):
		reason = infrav1alpha1.ReasonRenderFailed // a missing ConfigMap or OCIArtifact
	case render.IsContentError(err):
		reason = infrav1alpha1.ReasonRenderFailed
		err = errkind.Waiting(err, contentRetry)
	}
	conditions.Set(&pack.Status.Conditions, pack.Generation, infrav1alpha1.ConditionRendered, metav1.ConditionFalse, reason, message.Error(err))
	return err
}

// sameRevision is the kept revision whose objects rev repeats, if any: the current one, or
// the newest kept, since a reconcile that read the pack before the status write of the one
// that saved it must not save the same objects again under a new number.
func (c *Controller) sameRevision(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack, rev *revisions.Revision,
	kept []revisions.RevisionInfo, keys []string) *revisions.Revision {
	candidates := []int64{pack.Status.Revision}
	if len(kept) > 0 && kept[0].Number != pack.Status.Revision && kept[0].Digest == rev.Digest && kept[0].Version == rev.Version {
		candidates = append(candidates, kept[0].Number)
	}
	for _, n := range candidates {
		if n == 0 {
			continue
		}
		if current, err := c.store.Get(ctx, pack.Namespace, pack.Name, n); err == nil &&
			current.Digest == rev.Digest && current.Version == rev.Version && hasKeys(current, keys) {
			return current
		}
	}
	return nil
}

// saveRevision keeps rev as a new revision numbered one past the newest kept, prunes the kept
// revisions to the pack's limit (never one an instance runs) and points the pack at it.
func (c *Controller) saveRevision(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack, rev *revisions.Revision, kept []revisions.RevisionInfo) error {
	rev.Number = 1
	if len(kept) > 0 {
		rev.Number = kept[0].Number + 1
	}
	if err := c.store.Save(ctx, pack.Namespace, pack.Name, rev); err != nil {
		return err
	}
	limit := infrav1alpha1.DefaultRevisionHistoryLimit
	if l := pack.Spec.RevisionHistoryLimit; l != nil {
		limit = int(*l)
	}
	if err := c.store.Prune(ctx, pack.Namespace, pack.Name, limit, c.deployedRevisions(pack)...); err != nil {
		return err
	}
	c.point(pack, rev)
	if kept, err := c.store.List(ctx, pack.Namespace, pack.Name); err == nil {
		pack.Status.History = history(kept)
	}
	objects := 0
	for _, objs := range rev.Renders {
		objects = max(objects, len(objs))
	}
	conditions.Set(&pack.Status.Conditions, pack.Generation, infrav1alpha1.ConditionRendered, metav1.ConditionTrue, infrav1alpha1.ReasonRendered,
		fmt.Sprintf("Rendered revision %d of version %s: %d %s.", rev.Number, rev.Version, objects, map[bool]string{true: "object", false: "objects"}[objects == 1]))
	c.events.Record(pack, infrav1alpha1.ReasonRendered, "Render", fmt.Sprintf("Rendered revision %d of version %s.", rev.Number, rev.Version))
	return nil
}

// point makes rev the pack's current revision in its status.
func (c *Controller) point(pack *infrav1alpha1.InfrastructureClusterPack, rev *revisions.Revision) {
	pack.Status.Revision = rev.Number
	pack.Status.Version = rev.Version
	pack.Status.Digest = rev.Digest
	pack.Status.HelmVersion = rev.HelmVersion
	pack.Status.ChartVersion = rev.ChartVersion
	if !slices.ContainsFunc(pack.Status.History, func(h infrav1alpha1.PackRevision) bool { return h.Revision == rev.Number }) {
		pack.Status.History = append([]infrav1alpha1.PackRevision{{Revision: rev.Number, Version: rev.Version, Digest: rev.Digest, RenderedAt: rev.RenderedAt}},
			pack.Status.History...)
	}
}

// history is the status form of the kept revisions, newest first.
func history(kept []revisions.RevisionInfo) []infrav1alpha1.PackRevision {
	out := make([]infrav1alpha1.PackRevision, 0, len(kept))
	for _, k := range kept {
		out = append(out, infrav1alpha1.PackRevision{Revision: k.Number, Version: k.Version, Digest: k.Digest, RenderedAt: k.RenderedAt})
	}
	return out
}

// deployedRevisions are the revisions some instance of the pack runs: pruning keeps them, so a
// cluster that has not taken the new revision yet can still be cleaned up and compared.
func (c *Controller) deployedRevisions(pack *infrav1alpha1.InfrastructureClusterPack) []int64 {
	objs, _ := c.instances.ByIndex(byPack, pack.Namespace+"/"+pack.Name)
	var out []int64
	for _, o := range objs {
		if inst, ok := o.(*infrav1alpha1.InfrastructurePackInstance); ok && inst.Status.Revision > 0 {
			out = append(out, inst.Status.Revision)
		}
	}
	return out
}

// RenderKey is the key of a Cluster's render in a revision: its Kubernetes minor version
// (v1.37), which is what Helm's capabilities let templates compare; "" when not probed yet.
func RenderKey(kubernetesVersion string) string {
	v := strings.TrimPrefix(kubernetesVersion, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return "v" + parts[0] + "." + parts[1]
}

// renderKeys are the distinct render keys of the targets, sorted.
//
// A cluster that has not reported its version yet (not probed, or unreachable) adds no key:
// it gets the render of the nearest version (packinstance.ObjectsFor), so that its first
// report does not make a new revision of the same objects and a Redeploy everywhere. Only
// when no target has reported is the pack rendered with Helm's default capabilities ("").
func renderKeys(targets []*platformv1alpha1.Cluster) []string {
	keys := sets.New[string]()
	for _, cl := range targets {
		if k := RenderKey(cl.Status.KubernetesVersion); k != "" {
			keys.Insert(k)
		}
	}
	if keys.Len() == 0 {
		keys.Insert("")
	}
	return sets.List(keys)
}

func hasKeys(rev *revisions.Revision, keys []string) bool {
	for _, k := range keys {
		if _, ok := rev.Renders[k]; !ok {
			return false
		}
	}
	return true
}

// render renders the pack once per key.
func (c *Controller) render(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack, keys []string) (*revisions.Revision, error) {
	ctx, cancel := context.WithTimeout(ctx, renderTimeout)
	defer cancel()
	src, err := c.source(ctx, pack)
	if err != nil {
		return nil, err
	}
	rev := &revisions.Revision{Version: pack.Spec.Version, RenderedAt: metav1.NewTime(c.clock.Now()), Renders: map[string][]json.RawMessage{}}
	if ch := pack.Spec.Chart; ch != nil {
		rev.ChartName, rev.ChartURL = ch.Name, ch.URL
	}
	digests := make([]string, 0, len(keys))
	for _, key := range keys {
		kube := ""
		if key != "" {
			kube = key + ".0"
		}
		res, err := c.renderer.Render(ctx, src, render.Options{ReleaseName: pack.Name, Namespace: pack.Spec.TargetNamespace, KubeVersion: kube})
		if err != nil {
			return nil, err
		}
		objs := make([]json.RawMessage, 0, len(res.Objects))
		for _, o := range res.Objects {
			raw, err := o.MarshalJSON()
			if err != nil {
				return nil, err
			}
			objs = append(objs, raw)
		}
		rev.Renders[key] = objs
		rev.HelmVersion, rev.ChartVersion = res.HelmVersion, res.ChartVersion
		digests = append(digests, key+"="+res.Digest)
	}
	rev.Digest = combinedDigest(digests)
	return rev, nil
}

// combinedDigest is the digest of a revision: of its renders' digests, each with its key, in
// key order. A revision with one render has a digest of its own, not the render's, so that a
// digest never suggests the objects of two differently keyed revisions are the same.
func combinedDigest(parts []string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// source gathers the pack's content: the chart reference and values, the kustomize directory
// from its ConfigMap or OCIArtifact, or the inline manifests.
func (c *Controller) source(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack) (render.Source, error) {
	s := pack.Spec
	switch {
	case s.Chart != nil:
		src := render.Source{Chart: &render.Chart{URL: s.Chart.URL, Name: s.Chart.Name, Version: s.Chart.Version, CABundle: s.Chart.CABundle}}
		if s.Values != nil {
			src.Values = s.Values.Raw
		}
		return src, nil
	case s.Kustomize != nil:
		files, err := c.kustomizeFiles(ctx, pack)
		if err != nil {
			return render.Source{}, err
		}
		return render.Source{Kustomize: &render.Kustomize{Files: withKustomization(files, s.Kustomize.Path), Path: s.Kustomize.Path}}, nil
	default:
		raws := make([][]byte, 0, len(s.Manifests))
		for _, m := range s.Manifests {
			raws = append(raws, m.Raw)
		}
		return render.Source{Manifests: raws}, nil
	}
}

// kustomizeFiles reads a kustomize directory from the pack's ConfigMap (each key a file).
func (c *Controller) kustomizeFiles(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack) (map[string][]byte, error) {
	k := pack.Spec.Kustomize
	if k.ConfigMapRef != nil {
		cm, err := c.kube.CoreV1().ConfigMaps(pack.Namespace).Get(ctx, k.ConfigMapRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, errkind.Waitingf(contentRetry, "ConfigMap %s/%s does not exist", pack.Namespace, k.ConfigMapRef.Name)
		}
		if err != nil {
			return nil, err
		}
		return configMapFiles(cm), nil
	}
	return c.artifactFiles(ctx, pack)
}

// configMapFiles are a ConfigMap's keys as files.
func configMapFiles(cm *corev1.ConfigMap) map[string][]byte {
	files := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		files[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		files[k] = v
	}
	return files
}

// summarize sets the per-cluster phases, the summary counts and the Ready condition from the
// instances.
func (c *Controller) summarize(pack *infrav1alpha1.InfrastructureClusterPack, targets []*platformv1alpha1.Cluster, missing []string) {
	instances := c.packInstances(pack)
	var clusters []infrav1alpha1.PackClusterStatus
	for _, cl := range targets {
		st := ClusterStatus(instances[cl.Name], pack.Status.Revision)
		st.Cluster = cl.Name
		clusters = append(clusters, st)
	}
	for _, name := range missing {
		clusters = append(clusters, infrav1alpha1.PackClusterStatus{Cluster: name, Phase: infrav1alpha1.ClusterPhaseFailed,
			Message: fmt.Sprintf("Cluster %s does not exist.", name)})
	}
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Cluster < clusters[j].Cluster })
	pack.Status.Clusters, pack.Status.Summary = clusters, count(clusters)
	setReady(pack)
}

// count sums the clusters up by phase.
func count(clusters []infrav1alpha1.PackClusterStatus) infrav1alpha1.PackSummary {
	var summary infrav1alpha1.PackSummary
	for _, st := range clusters {
		switch st.Phase {
		case infrav1alpha1.ClusterPhaseReady:
			summary.Ready++
		case infrav1alpha1.ClusterPhaseProgressing:
			summary.Progressing++
		case infrav1alpha1.ClusterPhaseDrifted:
			summary.Drifted++
		case infrav1alpha1.ClusterPhaseBlocked:
			summary.Blocked++
		case infrav1alpha1.ClusterPhaseFailed:
			summary.Failed++
		case infrav1alpha1.ClusterPhaseUnreachable:
			summary.Unreachable++
		}
	}
	return summary
}

// setReady decides the pack's Ready condition from its summary: True once the current revision
// runs (drifted or not) on every target cluster.
func setReady(pack *infrav1alpha1.InfrastructureClusterPack) {
	total, summary := int32(len(pack.Status.Clusters)), pack.Status.Summary
	ready, reason := false, infrav1alpha1.ReasonNotDelivered
	var msg string
	switch {
	case pack.Status.Revision == 0:
		msg = "No revision is rendered yet."
	case total > 0 && summary.Ready+summary.Drifted == total:
		ready, reason = true, infrav1alpha1.ReasonDelivered
		msg = fmt.Sprintf("Revision %d runs on every target cluster (%d).", pack.Status.Revision, total)
	default:
		msg = fmt.Sprintf("Revision %d runs on %d of %d target clusters.", pack.Status.Revision, summary.Ready+summary.Drifted, total)
	}
	conditions.Set(&pack.Status.Conditions, pack.Generation, infrav1alpha1.ConditionReady, conditions.Status(ready), reason, msg)
}

// ClusterStatus is the phase of a pack on the cluster of inst (nil: not created yet), for
// the current revision.
func ClusterStatus(inst *infrav1alpha1.InfrastructurePackInstance, revision int64) infrav1alpha1.PackClusterStatus {
	if inst == nil {
		return infrav1alpha1.PackClusterStatus{Phase: infrav1alpha1.ClusterPhaseProgressing, Message: "The instance is being created."}
	}
	st := infrav1alpha1.PackClusterStatus{Revision: inst.Status.Revision}
	ready := meta.FindStatusCondition(inst.Status.Conditions, infrav1alpha1.ConditionReady)
	switch {
	case meta.IsStatusConditionTrue(inst.Status.Conditions, infrav1alpha1.ConditionDependencyBlocked):
		st.Phase = infrav1alpha1.ClusterPhaseBlocked
	case ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == infrav1alpha1.ReasonUnreachable:
		st.Phase = infrav1alpha1.ClusterPhaseUnreachable
	case ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == infrav1alpha1.ReasonDeliveryFailed:
		st.Phase = infrav1alpha1.ClusterPhaseFailed
	case inst.Status.Revision != revision || ready == nil || ready.Status != metav1.ConditionTrue:
		st.Phase = infrav1alpha1.ClusterPhaseProgressing
	case meta.IsStatusConditionTrue(inst.Status.Conditions, infrav1alpha1.ConditionDrifted):
		st.Phase = infrav1alpha1.ClusterPhaseDrifted
	default:
		st.Phase = infrav1alpha1.ClusterPhaseReady
	}
	if st.Phase != infrav1alpha1.ClusterPhaseReady && ready != nil && ready.Status != metav1.ConditionTrue {
		st.Message = ready.Message
	}
	if st.Phase == infrav1alpha1.ClusterPhaseDrifted || st.Phase == infrav1alpha1.ClusterPhaseBlocked {
		if d := meta.FindStatusCondition(inst.Status.Conditions, infrav1alpha1.ConditionDrifted); d != nil && st.Phase == infrav1alpha1.ClusterPhaseDrifted {
			st.Message = d.Message
		}
		if b := meta.FindStatusCondition(inst.Status.Conditions, infrav1alpha1.ConditionDependencyBlocked); b != nil && st.Phase == infrav1alpha1.ClusterPhaseBlocked {
			st.Message = b.Message
		}
	}
	return st
}
