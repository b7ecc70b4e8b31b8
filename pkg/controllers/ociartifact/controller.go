// Package ociartifact is the controller that packages OCIArtifacts in Flux's artifact format,
// pushes them to their OCIRegistry and delivers them to their target Clusters through the
// GitOps engine of each (pkg/gitops/delivery), and is the only writer of their status.
//
// A reconcile gathers the artifact's files (inline manifests or a ConfigMap's files) and
// validates them before anything is pushed; the revision <version>@sha256:<content> tells
// whether the version is pushed already. A version is pushed once: found in the registry with
// other content it is refused (VersionImmutable) unless it is latest; found with the same
// content it is adopted. After a push the registry's retention is applied, and for Flux
// targets that had applied an earlier version an Automatic ReconciliationRequest records the
// "reconcile now" of the new one. Each target Cluster gets the pushed version through its
// engine; targets dropped from spec are removed. The artifact is looked at again as soon as
// Flux reports on the Kustomization of one of its Flux targets (a watch per target Cluster,
// watch.go), and every poll interval while an engine reports a target on its way (every
// watched poll interval, the fallback, when all of them are watched; targets that applied the
// version are not delivered to again on those polls), with backoff while a push or a delivery
// fails (up to the Cluster's Flux interval while Flux reports a target failing and retries by
// itself), and every resync period otherwise; a Cluster being registered or getting Flux
// wakes it. A push refused until something changes (manifests not valid, no running registry,
// a version pushed with other content) is errkind.Stalled: not retried, woken by the change.
//
// Deleting an OCIArtifact removes what its engines created on every target and deletes its
// tag from the registry before the finalizer lets it go; what cannot be removed within two
// minutes is left behind, named in a LeftBehind warning.
//
// State the controller keeps in memory, and what a restart loses:
//   - written: each artifact's last status write until the informer shows it (loop.Written),
//     so a reconcile woken right after it — by a Kustomization's watch, a poll — starts from
//     what it wrote, not from a cache that lacks the push (which it would take for a push
//     whose status was lost, and adopt). A restart starts from a synced cache: nothing lost.
//   - requested: the revision each artifact last asked its Flux targets to reconcile. After a
//     restart it is asked once more; the request's name, derived from the revision, makes
//     that an AlreadyExists.
//   - delivered: what each target was given, Ready, so polls skip it. After a restart every
//     target is delivered to once.
//   - checked: when each pushed version was last found in its registry. After a restart each
//     artifact looks at its registry once.
//   - stalls: the backoff exponent of artifacts with a target Flux reports failing. After a
//     restart the backoff starts over.
//   - repositories: the lock of each registry repository, held only during a push.
//   - watches: the Kustomization informers of the target Clusters. After a restart each starts
//     again on the first reconcile of an artifact with a Flux target there; until it has
//     listed, the targets are polled.
package ociartifact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	gitopsinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/gitops/v1alpha1"
	platforminformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/platform/v1alpha1"
	gitopslisters "github.com/plinth-dev/plinth/pkg/generated/listers/gitops/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/message"
)

// Name names the controller in logs, metrics and events.
const Name = "ociartifact"

// FieldManager is the field manager of the controller's writes to OCIArtifacts.
const FieldManager = "plinth-ociartifact"

const (
	// DefaultPollInterval is how soon an artifact with a target not Ready is looked at again.
	DefaultPollInterval = 2 * time.Second
	// DefaultResyncPeriod is how often an artifact at rest is delivered again: the Kubectl
	// engine applies it again (undoing changes made by hand), the Flux engine reports what Flux
	// applied since.
	DefaultResyncPeriod = 10 * time.Minute
	// operationTimeout bounds one registry operation and one delivery to a target, so that a
	// registry or cluster that stops answering does not hold a worker.
	operationTimeout = 30 * time.Second
	// perObjectTimeout is added to operationTimeout for each object a delivery applies or a
	// removal deletes: the Kubectl engine makes a request or two per object, so a fixed bound
	// would fail every attempt of a large artifact (200 objects get 50 s) however healthy the
	// cluster.
	perObjectTimeout = 100 * time.Millisecond
	// removalBound is how long a deleted artifact waits for its targets and its tag to be
	// removed. A Cluster that is gone for good or a registry stuck in Error would otherwise
	// hold the artifact, and its name, forever; past the bound a warning names what is left
	// behind and the finalizer goes.
	removalBound = 2 * time.Minute
)

// deliveryTimeout bounds one delivery or removal of that many objects.
func deliveryTimeout(objects int) time.Duration {
	return operationTimeout + time.Duration(objects)*perObjectTimeout
}

// Options tune the controller.
type Options struct {
	// ResyncPeriod is how often an artifact at rest is delivered again; zero means
	// DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// PollInterval is how soon an artifact with a target not Ready is looked at again; zero
	// means DefaultPollInterval.
	PollInterval time.Duration
	// Clock tells the time for pushedAt and the created annotation; nil means the real clock.
	Clock clock.PassiveClock
	// Clients reach the target Clusters, to watch the Kustomizations of Flux targets: an
	// artifact is looked at as soon as Flux reports on one of its targets. Nil means no
	// watches: Flux targets are polled every PollInterval.
	Clients delivery.Clients
	// WatchedPollInterval is how soon an artifact is looked at again when every target on its
	// way is watched (the fallback should a watch miss an event); zero means
	// DefaultWatchedPollInterval.
	WatchedPollInterval time.Duration
}

// Controller pushes and delivers OCIArtifacts.
type Controller struct {
	*loop.Loop
	plinth versioned.Interface
	// events records the artifacts' events, typed by the gitops vocabulary.
	events *transition.Recorder
	// status writes the artifacts' status and records Ready's transitions.
	status *statuswriter.Writer[*gitopsv1alpha1.OCIArtifact]
	// written is each artifact's last status write until the informer shows it.
	written    loop.Written[*gitopsv1alpha1.OCIArtifact]
	artifacts  gitopslisters.OCIArtifactLister
	indexer    cache.Indexer
	registries gitopslisters.OCIRegistryLister
	clusters   platformlisters.ClusterLister
	configMaps corelisters.ConfigMapLister
	engines    map[platformv1alpha1.GitOpsEngine]delivery.Engine
	resync     time.Duration
	poll       time.Duration
	clock      clock.PassiveClock
	// watchedPoll is the poll of an artifact whose targets on their way are all watched.
	watchedPoll time.Duration
	// watches wake artifacts when Flux reports on their targets' Kustomizations.
	watches *kustomizationWatches

	mu sync.Mutex
	// requested is the revision each artifact last asked its Flux targets to reconcile, so
	// that polls until Flux applied it do not ask again; after a restart the request's
	// name, derived from the revision, makes asking again harmless.
	requested map[cache.ObjectName]string
	// delivered is what each target was last given in this process, Ready: polls while
	// another target is on its way skip it instead of applying everything again. It is in
	// memory on purpose (recording it would write status on every delivery); after a start
	// every target is delivered to once.
	delivered map[targetKey]delivered
	// repositories serializes the registry operations on each <endpoint>/<repository>.
	repositories keyedMutex
	// after looks at an artifact again after a delay: the loop's EnqueueAfter (a test sees
	// the delays through it).
	after func(key cache.ObjectName, d time.Duration)
	// stalls counts the reconciles in a row of each artifact that found a target stalled
	// (Flux failing and retrying by itself) and none on its way: the backoff's exponent.
	stalls map[cache.ObjectName]int
	// checked is when each artifact's pushed version was last found in its registry (see
	// registryCheckDue); in memory: after a start each artifact looks once.
	checked map[cache.ObjectName]registryCheck
}

// targetKey is one target of one artifact.
type targetKey struct {
	artifact cache.ObjectName
	cluster  string
}

// delivered is what a target was given and when, and the Cluster as it was.
type delivered struct {
	generation        int64
	revision, request string
	clusterUID        types.UID
	clusterGeneration int64
	at                time.Time
}

// NewController returns the OCIArtifact controller. It reads OCIArtifacts, OCIRegistries,
// Clusters and ConfigMaps from their informers and waits for all of them. An artifact is woken
// when its spec, deletion or reconcile request changes (not by its own status writes), when
// its registry's phase or endpoint changes, when a Cluster it targets changes its spec or
// FluxAvailable condition, and when its ConfigMap changes. engines are the delivery engines by
// Cluster spec.gitOps.engine.
func NewController(plinth versioned.Interface, recorder events.EventRecorder, artifacts gitopsinformers.OCIArtifactInformer,
	registries gitopsinformers.OCIRegistryInformer, clusters platforminformers.ClusterInformer, configMaps coreinformers.ConfigMapInformer,
	engines map[platformv1alpha1.GitOpsEngine]delivery.Engine, opts Options) (*Controller, error) {
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = DefaultResyncPeriod
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.WatchedPollInterval <= 0 {
		opts.WatchedPollInterval = DefaultWatchedPollInterval
	}
	if err := artifacts.Informer().AddIndexers(Indexers); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c := &Controller{
		plinth: plinth, events: transition.New(recorder, gitopsv1alpha1.Reasons), engines: engines,
		artifacts: artifacts.Lister(), indexer: artifacts.Informer().GetIndexer(), registries: registries.Lister(),
		clusters: clusters.Lister(), configMaps: configMaps.Lister(),
		resync: opts.ResyncPeriod, poll: opts.PollInterval, clock: opts.Clock, watchedPoll: opts.WatchedPollInterval,
		requested: map[cache.ObjectName]string{}, delivered: map[targetKey]delivered{}, stalls: map[cache.ObjectName]int{},
	}
	c.status = &statuswriter.Writer[*gitopsv1alpha1.OCIArtifact]{
		FieldManager: FieldManager,
		Reasons:      gitopsv1alpha1.Reasons,
		Conditions:   func(a *gitopsv1alpha1.OCIArtifact) []metav1.Condition { return a.Status.Conditions },
		Update: func(ctx context.Context, a *gitopsv1alpha1.OCIArtifact, opts metav1.UpdateOptions) (*gitopsv1alpha1.OCIArtifact, error) {
			return plinth.GitopsV1alpha1().OCIArtifacts(a.Namespace).UpdateStatus(ctx, a, opts)
		},
		Events: c.events,
		// Ready's transitions only: each push records its own event.
		Rules:   []transition.Rule{{Condition: gitopsv1alpha1.ConditionReady, ReadyReason: gitopsv1alpha1.ReasonReady, Action: "Reconcile"}},
		Written: &c.written,
	}
	c.Loop = loop.New(Name, c.reconcile, artifacts.Informer(), registries.Informer(), clusters.Informer(), configMaps.Informer())
	c.after = c.EnqueueAfter
	c.watches = newKustomizationWatches(opts.Clients, c.clusters, c.artifacts, c.Enqueue)
	if err := c.WatchMappedIf(artifacts.Informer(), loop.Self, wakesArtifact); err != nil {
		return nil, err
	}
	if err := c.WatchMappedIf(registries.Informer(), c.byIndex(ArtifactsByRegistry, registryKey), wakesOnRegistry); err != nil {
		return nil, err
	}
	if err := c.WatchMappedIf(clusters.Informer(), c.byIndex(ArtifactsByCluster, clusterKey), wakesOnCluster); err != nil {
		return nil, err
	}
	if err := c.WatchMappedIf(configMaps.Informer(), c.byIndex(ArtifactsByConfigMap, configMapKey), wakesOnConfigMap); err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs the controller until ctx ends, and the watches of the target Clusters'
// Kustomizations with it: they stop before Run returns.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.watches.run(ctx)
	defer c.watches.stopAll()
	return c.Loop.Run(ctx, workers)
}

// wakesArtifact: a spec change, a deletion or a new reconcile request; not status writes.
func wakesArtifact(oldObj, obj interface{}) bool {
	o, ok1 := oldObj.(*gitopsv1alpha1.OCIArtifact)
	n, ok2 := obj.(*gitopsv1alpha1.OCIArtifact)
	return !ok1 || !ok2 || o.Generation != n.Generation || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
		o.Annotations[gitopsv1alpha1.ReconcileRequestAnnotation] != n.Annotations[gitopsv1alpha1.ReconcileRequestAnnotation]
}

// wakesOnRegistry: the registry started or stopped serving, or moved.
func wakesOnRegistry(oldObj, obj interface{}) bool {
	o, ok1 := oldObj.(*gitopsv1alpha1.OCIRegistry)
	n, ok2 := obj.(*gitopsv1alpha1.OCIRegistry)
	return !ok1 || !ok2 || o.Status.Phase != n.Status.Phase || o.Spec.Endpoint != n.Spec.Endpoint
}

// wakesOnCluster: a new spec (engine, interval, kubeconfig) or Flux coming or going; not the
// probe times every probe writes.
func wakesOnCluster(oldObj, obj interface{}) bool {
	o, ok1 := oldObj.(*platformv1alpha1.Cluster)
	n, ok2 := obj.(*platformv1alpha1.Cluster)
	return !ok1 || !ok2 || o.Generation != n.Generation ||
		meta.IsStatusConditionTrue(o.Status.Conditions, platformv1alpha1.ConditionFluxAvailable) !=
			meta.IsStatusConditionTrue(n.Status.Conditions, platformv1alpha1.ConditionFluxAvailable)
}

// wakesOnConfigMap: the ConfigMap changed (a resync replays it unchanged).
func wakesOnConfigMap(oldObj, obj interface{}) bool {
	o, ok1 := oldObj.(*corev1.ConfigMap)
	n, ok2 := obj.(*corev1.ConfigMap)
	return !ok1 || !ok2 || o.ResourceVersion != n.ResourceVersion
}

// byIndex maps an object to the artifacts whose index entry is its key.
func (c *Controller) byIndex(index string, key func(obj interface{}) (string, bool)) loop.KeysFunc {
	return func(obj interface{}) []cache.ObjectName {
		k, ok := key(obj)
		if !ok {
			return nil
		}
		found, err := c.indexer.ByIndex(index, k)
		if err != nil {
			return nil
		}
		keys := make([]cache.ObjectName, 0, len(found))
		for _, o := range found {
			if art, ok := o.(*gitopsv1alpha1.OCIArtifact); ok {
				keys = append(keys, cache.NewObjectName(art.Namespace, art.Name))
			}
		}
		return keys
	}
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	art, err := c.artifacts.OCIArtifacts(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	art = c.written.Fresher(key, art)
	if art.DeletionTimestamp != nil {
		return c.finalize(ctx, art)
	}
	if art, err = c.ensureFinalizer(ctx, art); err != nil {
		return err
	}
	p := newPass(c, art)
	p.status.ObservedGeneration = art.Generation
	result, err := p.push(ctx)
	if err != nil {
		// Not pushed: the status says why. A refusal (Stalled) waits for a change; failures
		// that may pass (the registry is down or restarting) are retried with backoff.
		if werr := c.writeStatus(ctx, art, p.status); werr != nil {
			return werr
		}
		return err
	}
	deliveryErr := p.deliver(ctx, result)
	c.watches.track(key, fluxClusters(p.art, p.status))
	if err := c.writeStatus(ctx, art, p.status); err != nil {
		return err
	}
	if deliveryErr != nil {
		return deliveryErr
	}
	c.after(key, c.nextLook(key, p))
	return nil
}

// ensureFinalizer adds the artifact's finalizer before anything is pushed or delivered, so
// that a delete leaves nothing behind, and returns the artifact as stored.
func (c *Controller) ensureFinalizer(ctx context.Context, art *gitopsv1alpha1.OCIArtifact) (*gitopsv1alpha1.OCIArtifact, error) {
	if slices.Contains(art.Finalizers, gitopsv1alpha1.ArtifactFinalizer) {
		return art, nil
	}
	updated := art.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, gitopsv1alpha1.ArtifactFinalizer)
	return c.plinth.GitopsV1alpha1().OCIArtifacts(art.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
}

// nextLook is how soon a delivered artifact is looked at again.
func (c *Controller) nextLook(key cache.ObjectName, p *pass) time.Duration {
	switch {
	case p.inProgress:
		// An engine is on its way (Flux has not applied yet): the watch of its Cluster's
		// Kustomizations wakes it when Flux reports, the poll is the fallback.
		c.settle(key)
		return c.pollFor(p.art, p.status)
	case p.stalledFor > 0:
		// Flux reports a failure and retries by itself at its interval: polling it every
		// poll interval would cost requests on the target and learn nothing new.
		return c.backoff(key, p.stalledFor)
	default:
		// At rest, or waiting for a Cluster to be registered or get Flux, which wakes it.
		c.settle(key)
		return c.resync
	}
}

// writeStatus writes st as art's status when it changed, and records Ready's transitions
// (each push records its own event).
func (c *Controller) writeStatus(ctx context.Context, art *gitopsv1alpha1.OCIArtifact, st *gitopsv1alpha1.OCIArtifactStatus) error {
	updated := art.DeepCopy()
	updated.Status = *st
	_, _, err := c.status.Write(ctx, art, updated)
	return err
}

// finalize removes the artifact from its targets and then its tag from the registry, and lets
// the object go. What cannot be removed within removalBound of the deletion is left behind,
// named in a warning.
func (c *Controller) finalize(ctx context.Context, art *gitopsv1alpha1.OCIArtifact) error {
	if !slices.Contains(art.Finalizers, gitopsv1alpha1.ArtifactFinalizer) {
		return nil
	}
	key := cache.NewObjectName(art.Namespace, art.Name)
	waited := c.clock.Since(art.DeletionTimestamp.Time)
	p := newPass(c, art)
	var errs []error
	var left []string
	for _, t := range slices.Clone(p.status.Targets) {
		if err := p.remove(ctx, t); err != nil {
			errs = append(errs, err)
			left = append(left, leftOn(t))
		}
	}
	// The tag goes after the targets, which may still pull it, unless they are given up.
	if len(errs) == 0 || waited >= removalBound {
		if err := p.deleteTag(ctx); err != nil {
			conditions.SetAt(&p.status.Conditions, art.Generation, metav1.NewTime(c.clock.Now()), gitopsv1alpha1.ConditionReady, metav1.ConditionFalse,
				gitopsv1alpha1.ReasonDeleteFailed, message.Error(err))
			errs = append(errs, err)
			left = append(left, "tag "+p.status.URL)
		}
	}
	if len(errs) > 0 && waited < removalBound {
		if werr := c.writeStatus(ctx, art, p.status); werr != nil {
			return werr
		}
		// Looked at again when the bound passes at the latest, whatever the backoff.
		c.after(key, removalBound-waited)
		return errors.Join(errs...)
	}
	if len(errs) > 0 {
		c.events.Record(art, gitopsv1alpha1.ReasonLeftBehind, "Delete", fmt.Sprintf(
			"Removing the artifact failed for %s since its deletion; it is deleted and leaves behind %s.", removalBound, strings.Join(left, ", ")))
	}
	updated := art.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == gitopsv1alpha1.ArtifactFinalizer })
	if _, err := c.plinth.GitopsV1alpha1().OCIArtifacts(art.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Artifact removed from its targets and registry, finalizer removed", "leftBehind", left)
	c.forget(key)
	return nil
}

// leftOn names what a target that could not be removed keeps.
func leftOn(t gitopsv1alpha1.ArtifactTargetStatus) string {
	switch {
	case t.Kustomization != "" || t.OCIRepository != "":
		return fmt.Sprintf("Kustomization %s and OCIRepository %s on cluster %s", t.Kustomization, t.OCIRepository, t.Cluster)
	case len(t.Inventory) > 0:
		return fmt.Sprintf("%d objects applied by the %s engine on cluster %s", len(t.Inventory), t.Engine, t.Cluster)
	default:
		return "what was delivered to cluster " + t.Cluster
	}
}

// backoff is how soon an artifact with a stalled target is looked at again: twice the poll
// interval, doubling with each reconcile in a row that finds it stalled, up to limit (the
// stalled targets' Flux interval).
func (c *Controller) backoff(key cache.ObjectName, limit time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(c.stalls[key]+1, 30) // 2^30 poll intervals exceed any interval
	c.stalls[key] = n
	return max(min(c.poll<<n, limit), c.poll)
}

// settle ends the backoff of an artifact with no stalled target left.
func (c *Controller) settle(key cache.ObjectName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.stalls, key)
}

// forget drops what the controller keeps in memory of an artifact that is gone.
func (c *Controller) forget(key cache.ObjectName) {
	c.watches.forget(key)
	c.written.Forget(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.requested, key)
	delete(c.stalls, key)
	delete(c.checked, key)
	for k := range c.delivered {
		if k.artifact == key {
			delete(c.delivered, k)
		}
	}
}
