package ociartifact

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	gitopslisters "github.com/plinth-dev/plinth/pkg/generated/listers/gitops/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	fluxdelivery "github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
)

// DefaultWatchedPollInterval is how soon an artifact is looked at again when every target on
// its way is a Flux target whose Cluster's Kustomizations are watched: the watch wakes it as
// soon as Flux reports, and the poll is only the fallback should the watch miss it.
const DefaultWatchedPollInterval = 10 * time.Second

// kustomizationWatches wake an artifact as soon as Flux reports on the Kustomization of one of
// its targets, instead of at the next poll: Flux applies a new version about a second after
// the Kustomization is applied, and nothing in Plinth's own API changes then. There is one
// informer per target Cluster, of the Kustomizations (any namespace) that carry the artifact
// label, started when a Flux target on the Cluster is first delivered to and stopped when no
// artifact has a Flux target there any more, when the Cluster's UID or generation changes
// (a new kubeconfig: the next delivery starts one with the new clients) and on shutdown.
type kustomizationWatches struct {
	clients   delivery.Clients
	clusters  platformlisters.ClusterLister
	artifacts gitopslisters.OCIArtifactLister
	// enqueue looks at an artifact now: the loop's Enqueue (a test sees the keys through it).
	enqueue func(key cache.ObjectName)

	mu sync.Mutex
	// ctx is the parent of every watch: Run's context once it runs.
	ctx context.Context
	// stopped is set on shutdown: no watch starts after it.
	stopped bool
	// byCluster are the running watches by Cluster name.
	byCluster map[string]*clusterWatch
}

// clusterWatch is the watch of one Cluster's Kustomizations, for the Cluster as it was when
// it started.
type clusterWatch struct {
	uid        types.UID
	generation int64
	informer   cache.SharedIndexInformer
	cancel     context.CancelFunc
	// done is closed once the informer stopped.
	done chan struct{}
	// artifacts are the artifacts with a Flux target on the Cluster: the watch stops when
	// the last one goes.
	artifacts sets.Set[cache.ObjectName]
}

func newKustomizationWatches(clients delivery.Clients, clusters platformlisters.ClusterLister, artifacts gitopslisters.OCIArtifactLister,
	enqueue func(cache.ObjectName)) *kustomizationWatches {
	return &kustomizationWatches{clients: clients, clusters: clusters, artifacts: artifacts, enqueue: enqueue,
		ctx: context.Background(), byCluster: map[string]*clusterWatch{}}
}

// fluxClusters are the Clusters where the artifact has a Flux target the Flux engine
// delivered to (its Kustomization is named): the Clusters to watch for it.
func fluxClusters(art *gitopsv1alpha1.OCIArtifact, st *gitopsv1alpha1.OCIArtifactStatus) []string {
	var clusters []string
	for _, t := range st.Targets {
		if t.Engine == string(platformv1alpha1.GitOpsEngineFlux) && t.Kustomization != "" &&
			slices.ContainsFunc(art.Spec.Targets, func(s gitopsv1alpha1.ArtifactTarget) bool { return s.Cluster == t.Cluster }) {
			clusters = append(clusters, t.Cluster)
		}
	}
	return clusters
}

// track records that the artifact has Flux targets on clusters and on no other Cluster:
// each of them gets a watch unless it has one for the Cluster as it is now, and a watch no
// artifact needs any more stops. A watch that cannot start (the Cluster cannot be reached
// or does not serve Kustomizations) is tried again on the artifact's next reconcile; until
// then its targets are polled as before.
func (w *kustomizationWatches) track(key cache.ObjectName, clusters []string) {
	if w.clients == nil {
		return
	}
	w.mu.Lock()
	for name, cw := range w.byCluster {
		if !slices.Contains(clusters, name) {
			w.releaseLocked(name, cw, key)
		}
	}
	w.mu.Unlock()
	for _, name := range clusters {
		w.watch(key, name)
	}
}

// forget drops an artifact that is gone from every watch.
func (w *kustomizationWatches) forget(key cache.ObjectName) { w.track(key, nil) }

// watch adds the artifact to the watch of the named Cluster, starting one if there is none
// for the Cluster's current UID and generation.
func (w *kustomizationWatches) watch(key cache.ObjectName, name string) {
	current, err := w.clusters.Get(name)
	w.mu.Lock()
	cw := w.byCluster[name]
	// The artifacts of a stale watch move to its successor (should it fail to start, each
	// tries again on its next reconcile, which the Cluster's change wakes).
	artifacts := sets.New(key)
	if cw != nil && (err != nil || cw.uid != current.UID || cw.generation != current.Generation) {
		// Deleted, registered again or given a new kubeconfig: the watch's clients are stale.
		artifacts = artifacts.Union(cw.artifacts)
		w.stopLocked(name, cw)
		cw = nil
	}
	if cw != nil {
		cw.artifacts.Insert(key)
	}
	ctx, stopped := w.ctx, w.stopped
	w.mu.Unlock()
	if cw != nil || err != nil || stopped {
		return
	}
	// Built outside the lock: reaching the cluster's discovery may take a while, and other
	// artifacts' reconciles track their own Clusters meanwhile.
	logger := klog.FromContext(ctx).WithValues("controller", Name, "cluster", name)
	informer, err := w.newInformer(ctx, name)
	if err != nil {
		logger.V(2).Info("Not watching the cluster's Kustomizations; its Flux targets are polled", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if existing := w.byCluster[name]; existing != nil {
		// Another reconcile started one meanwhile; a stale one is replaced on the next track.
		existing.artifacts.Insert(artifacts.UnsortedList()...)
		return
	}
	watchCtx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	cw = &clusterWatch{uid: current.UID, generation: current.Generation, informer: informer, cancel: cancel,
		done: make(chan struct{}), artifacts: artifacts}
	w.byCluster[name] = cw
	go func() {
		defer close(cw.done)
		informer.RunWithContext(watchCtx)
	}()
	logger.V(2).Info("Watching the cluster's Kustomizations")
}

// newInformer is an informer, not started, of the Kustomizations on the named Cluster that
// carry the artifact label, waking their artifacts.
func (w *kustomizationWatches) newInformer(ctx context.Context, name string) (cache.SharedIndexInformer, error) {
	client, mapper, err := w.clients.For(ctx, name)
	if err != nil {
		return nil, err
	}
	kind := fluxdelivery.KustomizationKind
	mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
	if err != nil {
		return nil, fmt.Errorf("cluster %s does not serve %s: %w", name, kind, err)
	}
	informer := dynamicinformer.NewFilteredDynamicInformer(client, mapping.Resource, metav1.NamespaceAll, 0, cache.Indexers{},
		func(opts *metav1.ListOptions) { opts.LabelSelector = gitopsv1alpha1.LabelArtifact }).Informer()
	// Only the artifact annotation and the status are read: the cache keeps no managed fields.
	if err := informer.SetTransform(stripManagedFields); err != nil {
		return nil, err
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, initial bool) {
			// The initial list is what the artifacts' deliveries just read, or older: the
			// Kustomizations created or changed since come as events.
			if !initial {
				w.wake(name, obj)
			}
		},
		UpdateFunc: func(oldObj, obj interface{}) {
			// Flux reports in the status; the engine's own applies change the spec and
			// metadata only.
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := obj.(*unstructured.Unstructured)
			if ok1 && ok2 && !apiequality.Semantic.DeepEqual(o.Object["status"], n.Object["status"]) {
				w.wake(name, obj)
			}
		},
	}); err != nil {
		return nil, err
	}
	return informer, nil
}

// stripManagedFields drops what the watch never reads from the cached objects.
func stripManagedFields(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// wake enqueues the artifact a Kustomization on the named Cluster was made for, when Flux
// gave a verdict (Ready True or False; the Unknown of a reconcile under way tells the target
// nothing new) and the artifact waits for that target: it targets the Cluster, is not being
// deleted, and its status there is not Ready with the revision the Kustomization reports (or
// not written yet). What Flux reports of a target at rest is read at the next resync.
func (w *kustomizationWatches) wake(cluster string, obj interface{}) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !verdict(u) {
		return
	}
	key, err := cache.ParseObjectName(u.GetAnnotations()[gitopsv1alpha1.AnnotationArtifact])
	if err != nil || key.Namespace == "" || key.Name == "" {
		return
	}
	art, err := w.artifacts.OCIArtifacts(key.Namespace).Get(key.Name)
	if err != nil || art.DeletionTimestamp != nil ||
		!slices.ContainsFunc(art.Spec.Targets, func(t gitopsv1alpha1.ArtifactTarget) bool { return t.Cluster == cluster }) {
		return
	}
	applied, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	if i := slices.IndexFunc(art.Status.Targets, func(t gitopsv1alpha1.ArtifactTargetStatus) bool { return t.Cluster == cluster }); i >= 0 {
		if t := art.Status.Targets[i]; t.Ready && delivery.SameRevision(t.Revision, applied) {
			return
		}
	}
	w.enqueue(key)
}

// verdict says whether the Kustomization's Ready condition is True or False.
func verdict(u *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]interface{}); ok && m["type"] == "Ready" {
			return m["status"] == string(metav1.ConditionTrue) || m["status"] == string(metav1.ConditionFalse)
		}
	}
	return false
}

// synced says whether the named Cluster's Kustomizations are watched and the watch has
// listed them.
func (w *kustomizationWatches) synced(cluster string) bool {
	w.mu.Lock()
	cw := w.byCluster[cluster]
	w.mu.Unlock()
	return cw != nil && cw.informer.HasSynced()
}

// releaseLocked drops the artifact from a Cluster's watch and stops the watch when no
// artifact is left.
func (w *kustomizationWatches) releaseLocked(name string, cw *clusterWatch, key cache.ObjectName) {
	cw.artifacts.Delete(key)
	if cw.artifacts.Len() == 0 {
		w.stopLocked(name, cw)
	}
}

// stopLocked stops a Cluster's watch; its informer ends in the background.
func (w *kustomizationWatches) stopLocked(name string, cw *clusterWatch) {
	cw.cancel()
	delete(w.byCluster, name)
	klog.FromContext(w.ctx).V(2).Info("Stopped watching the cluster's Kustomizations", "controller", Name, "cluster", name)
}

// run makes ctx the parent of the watches started from now on.
func (w *kustomizationWatches) run(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctx = ctx
}

// stopAll stops every watch for good and waits until their informers have ended.
func (w *kustomizationWatches) stopAll() {
	w.mu.Lock()
	w.stopped = true
	var done []chan struct{}
	for name, cw := range w.byCluster {
		done = append(done, cw.done)
		w.stopLocked(name, cw)
	}
	w.mu.Unlock()
	for _, d := range done {
		<-d
	}
}

// pollFor is how soon an artifact with a target on its way is looked at again: the watched
// poll interval when every target not Ready is a Flux target whose Cluster's Kustomizations
// are watched and listed (the watch wakes it), the poll interval otherwise.
func (c *Controller) pollFor(art *gitopsv1alpha1.OCIArtifact, st *gitopsv1alpha1.OCIArtifactStatus) time.Duration {
	for _, t := range st.Targets {
		if t.Ready {
			continue
		}
		if t.Engine != string(platformv1alpha1.GitOpsEngineFlux) || t.Kustomization == "" || !c.watches.synced(t.Cluster) ||
			!slices.ContainsFunc(art.Spec.Targets, func(s gitopsv1alpha1.ArtifactTarget) bool { return s.Cluster == t.Cluster }) {
			return c.poll
		}
	}
	return max(c.watchedPoll, c.poll)
}
