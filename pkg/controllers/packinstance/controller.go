// Package packinstance is the controller of InfrastructurePackInstances: it delivers the
// current revision of an instance's pack to the instance's cluster and watches what it
// delivered for drift. The pack controller (pkg/controllers/clusterpack) renders packs and
// creates one instance per target cluster; this controller runs one instance per worker, so
// clusters are delivered in parallel and an unreachable cluster holds up only its own
// instance.
//
// Delivery goes through the cluster's GitOps engine. Kubectl: plinth-controller applies the
// revision's objects with server-side apply as field manager plinth-packs, Namespaces and
// CustomResourceDefinitions first, RBAC next, then the rest, and prunes what the previous
// delivery applied and this one lacks (pkg/gitops/delivery/kubectl). Flux: the revision is
// made an OCIArtifact in the namespace of the cluster's registry, pushed and delivered by Flux
// as every OCIArtifact is (pkg/controllers/ociartifact); the instance reads what Flux applied
// from the artifact's status. Each delivery replaces deployedResources, sets deliveredAt and
// upgradeDirection (by [major, minor, patch, revision], pkg/packs/version), and writes the
// delivered version and chart into the spec.
//
// An instance waits until the instances it depends on (same cluster) are Ready. When one of
// them reports Drifted=True, onDrift Block sets DependencyBlocked=True and Ready=False and
// holds deliveries; Warn names the drift in the Ready condition's message; Ignore does
// nothing.
//
// Every drift interval a delivered instance on a Kubectl cluster is compared with what was
// applied (pkg/packs/drift): changed or removed fields the pack set, and deleted objects, are
// Drifted=True with a driftSummary naming them. With the pack's driftPolicy Correct the
// revision is applied again at once and the summary records the correction. On Flux clusters
// kustomize-controller owns the objects and corrects drift itself every interval: the
// instance is not compared, and a Flux failure after delivery shows on its OCIArtifact.
//
// Deleting an instance removes what it delivered from its cluster (the Kubectl engine's
// inventory, or the OCIArtifact, whose removal makes Flux prune) unless the pack retains
// on deletion or the cluster is gone, then releases the finalizer.
//
// In-memory state, all rebuilt after a restart:
//   - the drift checker of each cluster, with the baselines that spare a dry-run per object:
//     a restart costs the first drift pass on each cluster a dry-run per object;
//   - when each instance was last compared with its cluster: after a restart every delivered
//     instance is compared on its first reconcile;
//   - each instance's last spec and status writes, until the informer shows them (loop.Written):
//     a restart starts from caches listed afresh, which hold them.
package packinstance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/clusterpack"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	infraclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/infrastructure/v1alpha1"
	gitopsinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/gitops/v1alpha1"
	infrainformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/infrastructure/v1alpha1"
	platforminformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/platform/v1alpha1"
	gitopslisters "github.com/plinth-dev/plinth/pkg/generated/listers/gitops/v1alpha1"
	infralisters "github.com/plinth-dev/plinth/pkg/generated/listers/infrastructure/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	kubectldelivery "github.com/plinth-dev/plinth/pkg/gitops/delivery/kubectl"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/message"
	"github.com/plinth-dev/plinth/pkg/packs/drift"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
	"github.com/plinth-dev/plinth/pkg/packs/version"
)

// Name names the controller in logs, metrics and events.
const Name = "packinstance"

// FieldManager is the server-side apply field manager of what packs apply on Kubectl
// clusters: drift detection tells the pack's fields by it.
const FieldManager = "plinth-packs"

const (
	// DefaultDriftInterval is how often a delivered instance is compared with its cluster.
	DefaultDriftInterval = time.Minute
	// DefaultPollInterval is how soon an instance delivered through Flux is looked at again
	// while Flux has not applied it.
	DefaultPollInterval = 2 * time.Second
	// operationTimeout and perObjectTimeout bound one delivery, as the OCIArtifact
	// controller's: a cluster that stops answering does not hold a worker.
	operationTimeout = 30 * time.Second
	perObjectTimeout = 100 * time.Millisecond
)

// statusManager names the controller in the managedFields of the instance statuses it writes.
const statusManager = "plinth-" + Name

// Options tune the controller.
type Options struct {
	// DriftInterval is how often a delivered instance is compared with its cluster; zero
	// means DefaultDriftInterval.
	DriftInterval time.Duration
	// PollInterval is how soon an instance delivered through Flux is looked at again while
	// Flux has not applied it; zero means DefaultPollInterval.
	PollInterval time.Duration
	// Clock tells deliveredAt; nil means the real clock.
	Clock clock.PassiveClock
}

// Controller delivers packs to clusters and watches them for drift.
type Controller struct {
	*loop.Loop
	plinth    versioned.Interface
	client    infraclient.InfrastructureV1alpha1Interface
	events    *transition.Recorder
	status    statuswriter.Writer[*infrav1alpha1.InfrastructurePackInstance]
	instances infralisters.InfrastructurePackInstanceLister
	indexer   cache.Indexer
	packs     infralisters.InfrastructureClusterPackLister
	clusters  platformlisters.ClusterLister
	artifacts gitopslisters.OCIArtifactLister
	clients   delivery.Clients
	engine    *kubectldelivery.Engine
	store     *revisions.Store
	drift     time.Duration
	poll      time.Duration
	clock     clock.PassiveClock

	mu sync.Mutex
	// checkers are the drift checkers of each cluster, with the baselines they keep, for the
	// Cluster's UID and generation (a new kubeconfig is a new client).
	checkers map[string]checkerEntry
	// checked is when each instance was last compared with its cluster.
	checked map[cache.ObjectName]time.Time

	// specWritten and statusWritten remember the instances this controller's last spec and
	// status writes returned, until the cache shows them. A delivery writes both, the spec
	// first, and a reconcile woken in between (by the spec update itself, or by the pack)
	// would otherwise read an instance not yet recorded Ready and deliver everything again.
	specWritten, statusWritten loop.Written[*infrav1alpha1.InfrastructurePackInstance]
}

type checkerEntry struct {
	uid        types.UID
	generation int64
	checker    *drift.Checker
}

// byDependency indexes instances by the instances they depend on (namespace/name).
const byDependency = "dependsOn"

// NewController returns the instance controller. It reads instances, packs, Clusters and
// OCIArtifacts from their informers and waits for all of them. An instance is woken when it
// changes, when its pack's status points at another revision or its spec changes, when an
// instance it depends on changes, when its cluster changes, and when the OCIArtifact that
// carries it to a Flux cluster changes.
func NewController(plinth versioned.Interface, recorder events.EventRecorder, instances infrainformers.InfrastructurePackInstanceInformer,
	packs infrainformers.InfrastructureClusterPackInformer, clusters platforminformers.ClusterInformer, artifacts gitopsinformers.OCIArtifactInformer,
	clients delivery.Clients, store *revisions.Store, opts Options) (*Controller, error) {
	if opts.DriftInterval <= 0 {
		opts.DriftInterval = DefaultDriftInterval
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if err := instances.Informer().AddIndexers(cache.Indexers{byDependency: func(obj interface{}) ([]string, error) {
		inst, ok := obj.(*infrav1alpha1.InfrastructurePackInstance)
		if !ok {
			return nil, nil
		}
		out := make([]string, 0, len(inst.Spec.DependsOn))
		for _, d := range inst.Spec.DependsOn {
			out = append(out, inst.Namespace+"/"+d)
		}
		return out, nil
	}}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c := &Controller{
		plinth: plinth, client: plinth.InfrastructureV1alpha1(), events: transition.New(recorder, infrav1alpha1.Reasons),
		instances: instances.Lister(), indexer: instances.Informer().GetIndexer(), packs: packs.Lister(),
		clusters: clusters.Lister(), artifacts: artifacts.Lister(), clients: clients,
		engine: kubectldelivery.NewFor(clients, FieldManager, "InfrastructurePackInstance"),
		store:  store, drift: opts.DriftInterval, poll: opts.PollInterval, clock: opts.Clock,
		checkers: map[string]checkerEntry{}, checked: map[cache.ObjectName]time.Time{},
	}
	c.status = statuswriter.Writer[*infrav1alpha1.InfrastructurePackInstance]{
		FieldManager: statusManager,
		Reasons:      infrav1alpha1.Reasons,
		Conditions:   func(i *infrav1alpha1.InfrastructurePackInstance) []metav1.Condition { return i.Status.Conditions },
		Update: func(ctx context.Context, i *infrav1alpha1.InfrastructurePackInstance, opts metav1.UpdateOptions) (*infrav1alpha1.InfrastructurePackInstance, error) {
			return c.client.InfrastructurePackInstances(i.Namespace).UpdateStatus(ctx, i, opts)
		},
		Events: c.events,
		Rules: []transition.Rule{
			{Condition: infrav1alpha1.ConditionReady, ReadyReason: infrav1alpha1.ReasonDelivered, Action: "Deliver"},
			{Condition: infrav1alpha1.ConditionDrifted, Action: "DetectDrift"},
			{Condition: infrav1alpha1.ConditionDependencyBlocked, Action: "CheckDependencies"},
		},
		Written: &c.statusWritten,
	}
	c.Loop = loop.New(Name, c.reconcile, instances.Informer(), packs.Informer(), clusters.Informer(), artifacts.Informer())
	// An instance's own changes and those of the instances that depend on it.
	if err := c.WatchMapped(instances.Informer(), c.selfAndDependents); err != nil {
		return nil, err
	}
	if err := c.WatchMapped(packs.Informer(), c.packInstances); err != nil {
		return nil, err
	}
	if err := c.WatchMappedIf(clusters.Informer(), c.clusterInstances, loop.SpecOrDeletionChanged); err != nil {
		return nil, err
	}
	if err := c.WatchMapped(artifacts.Informer(), artifactInstance); err != nil {
		return nil, err
	}
	return c, nil
}

func instanceOf(obj interface{}) (*infrav1alpha1.InfrastructurePackInstance, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	inst, ok := obj.(*infrav1alpha1.InfrastructurePackInstance)
	return inst, ok
}

// selfAndDependents maps an instance to itself and to the instances that depend on it.
func (c *Controller) selfAndDependents(obj interface{}) []cache.ObjectName {
	inst, ok := instanceOf(obj)
	if !ok {
		return nil
	}
	keys := []cache.ObjectName{cache.MetaObjectToName(inst)}
	deps, _ := c.indexer.ByIndex(byDependency, inst.Namespace+"/"+inst.Name)
	for _, d := range deps {
		if di, ok := d.(*infrav1alpha1.InfrastructurePackInstance); ok {
			keys = append(keys, cache.MetaObjectToName(di))
		}
	}
	return keys
}

// packInstances maps a pack to its instances on its target clusters.
func (c *Controller) packInstances(obj interface{}) []cache.ObjectName {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pack, ok := obj.(*infrav1alpha1.InfrastructureClusterPack)
	if !ok {
		return nil
	}
	var keys []cache.ObjectName
	for _, st := range pack.Status.Clusters {
		keys = append(keys, cache.NewObjectName(infrav1alpha1.InstanceNamespace(st.Cluster), infrav1alpha1.InstanceName(pack.Name, st.Cluster)))
	}
	for _, name := range pack.Spec.TargetClusters {
		keys = append(keys, cache.NewObjectName(infrav1alpha1.InstanceNamespace(name), infrav1alpha1.InstanceName(pack.Name, name)))
	}
	return keys
}

// clusterInstances maps a Cluster to the instances in its seam-tenant namespace.
func (c *Controller) clusterInstances(obj interface{}) []cache.ObjectName {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	cl, ok := obj.(*platformv1alpha1.Cluster)
	if !ok {
		return nil
	}
	insts, _ := c.instances.InfrastructurePackInstances(infrav1alpha1.InstanceNamespace(cl.Name)).List(everything)
	keys := make([]cache.ObjectName, 0, len(insts))
	for _, inst := range insts {
		keys = append(keys, cache.MetaObjectToName(inst))
	}
	return keys
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.instances.InfrastructurePackInstances(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	inst := c.fresher(key, cached).DeepCopy()
	pack, _ := c.packs.InfrastructureClusterPacks(inst.Labels[infrav1alpha1.LabelPackNamespace]).Get(inst.Spec.ClusterPackRef)
	cluster, _ := c.clusters.Get(inst.Spec.TargetClusterRef)
	if inst.DeletionTimestamp != nil {
		return c.remove(ctx, inst, pack, cluster)
	}
	if pack == nil || pack.Status.Revision == 0 || pack.DeletionTimestamp != nil {
		return nil // nothing to deliver yet, or the pack's finalizer is removing this instance
	}
	before := inst.DeepCopy()
	again, result := c.sync(ctx, key, inst, pack, cluster)
	if err := c.write(ctx, inst, before); err != nil {
		return errors.Join(err, result)
	}
	if result != nil {
		return result
	}
	if again > 0 {
		c.EnqueueAfter(key, again)
	}
	return nil
}

// fresher is the instance to reconcile key from: what this controller's last spec and status
// writes of it returned, while the cache still shows the versions those writes replaced.
func (c *Controller) fresher(key cache.ObjectName, cached *infrav1alpha1.InfrastructurePackInstance) *infrav1alpha1.InfrastructurePackInstance {
	return c.statusWritten.Fresher(key, c.specWritten.Fresher(key, cached))
}

// sync brings the instance to what its cluster, its dependencies and its pack's current
// revision call for: it delivers the revision when the instance does not run it yet, or
// compares the instance with its cluster when a drift pass is due. It says how soon to look
// again without a change (0: only on a change).
func (c *Controller) sync(ctx context.Context, key cache.ObjectName, inst *infrav1alpha1.InfrastructurePackInstance,
	pack *infrav1alpha1.InfrastructureClusterPack, cluster *platformv1alpha1.Cluster) (time.Duration, error) {
	if cluster == nil {
		conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonClusterNotFound,
			fmt.Sprintf("Cluster %s does not exist.", inst.Spec.TargetClusterRef))
		return 0, nil
	}
	deps := c.dependencies(inst)
	if deps.blocked != "" {
		block(inst, deps.blocked)
		return 0, nil
	}
	unblock(inst)
	target := pack.Status.Revision
	again, err := c.drift, error(nil)
	switch {
	case runs(inst, target):
		if engineOf(cluster) == platformv1alpha1.GitOpsEngineKubectl && c.driftDue(key) {
			err = c.checkDrift(ctx, inst, pack, cluster)
		}
	case deps.waiting != "":
		waitForDependencies(inst, target, deps.waiting)
		return 0, nil
	default:
		var done bool
		done, err = c.deliver(ctx, inst, pack, cluster, target)
		if err == nil && !done {
			again = c.poll
		}
	}
	if deps.warning != "" && meta.IsStatusConditionTrue(inst.Status.Conditions, infrav1alpha1.ConditionReady) {
		conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered,
			readyMessage(inst)+" "+deps.warning)
	}
	return again, err
}

// runs says whether the instance is recorded Ready with the target revision: nothing is to be
// delivered.
func runs(inst *infrav1alpha1.InfrastructurePackInstance, target int64) bool {
	return inst.Status.Revision == target && meta.IsStatusConditionTrue(inst.Status.Conditions, infrav1alpha1.ConditionReady)
}

// block holds the instance's deliveries because a dependency drifted under onDrift Block.
func block(inst *infrav1alpha1.InfrastructurePackInstance, why string) {
	conds, gen := &inst.Status.Conditions, inst.Generation
	conditions.Set(conds, gen, infrav1alpha1.ConditionDependencyBlocked, metav1.ConditionTrue, infrav1alpha1.ReasonDependencyBlocked, why)
	conditions.Set(conds, gen, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonDependencyBlocked, why)
	conditions.Set(conds, gen, infrav1alpha1.ConditionProgressing, metav1.ConditionFalse, infrav1alpha1.ReasonDependencyBlocked,
		"Deliveries are held until the dependency is no longer drifted.")
}

// unblock records that no dependency blocks the instance, when it has dependencies or was
// blocked: also when the pack dropped its dependencies, since a Blocked left behind would
// hold the cluster in the pack's summary for good.
func unblock(inst *infrav1alpha1.InfrastructurePackInstance) {
	if len(inst.Spec.DependsOn) > 0 || meta.FindStatusCondition(inst.Status.Conditions, infrav1alpha1.ConditionDependencyBlocked) != nil {
		conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionDependencyBlocked, metav1.ConditionFalse, infrav1alpha1.ReasonDependenciesReady,
			"No dependency blocks this instance.")
	}
}

// waitForDependencies records that the target revision waits for dependencies that are not
// Ready. An instance Ready with an earlier revision stays Ready: it still runs that one.
func waitForDependencies(inst *infrav1alpha1.InfrastructurePackInstance, target int64, waiting string) {
	conds, gen := &inst.Status.Conditions, inst.Generation
	conditions.Set(conds, gen, infrav1alpha1.ConditionProgressing, metav1.ConditionTrue, infrav1alpha1.ReasonWaitingForDependencies, waiting)
	if inst.Status.Revision != target || meta.FindStatusCondition(*conds, infrav1alpha1.ConditionReady) == nil {
		conditions.Set(conds, gen, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonWaitingForDependencies, waiting)
	}
}

// dependencyState is what an instance's dependencies say.
type dependencyState struct {
	// blocked, when set, says which dependency drifted under onDrift Block.
	blocked string
	// waiting, when set, names the dependencies that are not Ready yet.
	waiting string
	// warning, when set, names the dependencies that drifted under onDrift Warn.
	warning string
}

func (c *Controller) dependencies(inst *infrav1alpha1.InfrastructurePackInstance) dependencyState {
	var st dependencyState
	policy := infrav1alpha1.OnDriftWarn
	if p := inst.Spec.DependencyPolicy; p != nil && p.OnDrift != "" {
		policy = p.OnDrift
	}
	var waiting, drifted []string
	for _, name := range inst.Spec.DependsOn {
		dep, err := c.instances.InfrastructurePackInstances(inst.Namespace).Get(name)
		if err != nil || !meta.IsStatusConditionTrue(dep.Status.Conditions, infrav1alpha1.ConditionReady) {
			waiting = append(waiting, name)
			continue
		}
		if meta.IsStatusConditionTrue(dep.Status.Conditions, infrav1alpha1.ConditionDrifted) {
			drifted = append(drifted, name)
		}
	}
	if len(drifted) > 0 {
		switch policy {
		case infrav1alpha1.OnDriftBlock:
			st.blocked = fmt.Sprintf("Dependency %s reports drift and onDrift is Block.", strings.Join(drifted, ", "))
		case infrav1alpha1.OnDriftWarn:
			st.warning = fmt.Sprintf("Warning: dependency %s reports drift.", strings.Join(drifted, ", "))
		}
	}
	if len(waiting) > 0 {
		st.waiting = fmt.Sprintf("Waiting for %s to be Ready on cluster %s.", strings.Join(waiting, ", "), inst.Spec.TargetClusterRef)
	}
	return st
}

// engineOf is the Cluster's GitOps engine, Kubectl unless it says Flux.
func engineOf(cluster *platformv1alpha1.Cluster) platformv1alpha1.GitOpsEngine {
	if cluster.Spec.GitOps.Engine == platformv1alpha1.GitOpsEngineFlux {
		return platformv1alpha1.GitOpsEngineFlux
	}
	return platformv1alpha1.GitOpsEngineKubectl
}

// deliver delivers the revision through the cluster's engine. done is false while Flux has
// not applied it yet (no error: the instance is polled).
func (c *Controller) deliver(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance, pack *infrav1alpha1.InfrastructureClusterPack,
	cluster *platformv1alpha1.Cluster, number int64) (bool, error) {
	rev, err := c.store.Get(ctx, pack.Namespace, pack.Name, number)
	if err != nil {
		conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionReady, metav1.ConditionFalse, infrav1alpha1.ReasonRevisionUnavailable,
			fmt.Sprintf("Revision %d of the pack cannot be read: %s", number, message.Error(err)))
		return false, err
	}
	c.deliveredVersion(ctx, pack, inst)
	if engineOf(cluster) == platformv1alpha1.GitOpsEngineFlux {
		return c.deliverFlux(ctx, inst, pack, cluster, rev)
	}
	conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionProgressing, metav1.ConditionTrue, infrav1alpha1.ReasonDelivering,
		fmt.Sprintf("Delivering revision %d (version %s).", rev.Number, rev.Version))
	art, target, err := c.kubectlArtifact(ctx, inst, pack, cluster, rev)
	if err != nil {
		c.failed(inst, err)
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, operationTimeout+time.Duration(len(art.Objects))*perObjectTimeout)
	defer cancel()
	if err := c.ensureNamespace(ctx, cluster.Name, releaseNamespace(pack, art.Objects)); err != nil {
		c.failed(inst, err)
		return false, err
	}
	st, err := c.engine.Deliver(ctx, art, target)
	inst.Status.DeployedResources = resources(st.Inventory)
	if err != nil {
		c.failed(inst, err)
		return false, err
	}
	c.delivered(inst, pack, rev, fmt.Sprintf("Applied revision %d (version %s): %s.", rev.Number, rev.Version, objects(len(st.Inventory))))
	return true, nil
}

// deliveredVersion makes the spec's version that of the revision the status records as
// delivered, while that revision is kept. The spec is written before the status: after a
// status write that failed, the spec names a version never recorded as delivered, and the
// next delivery's direction must compare with what was.
func (c *Controller) deliveredVersion(ctx context.Context, pack *infrav1alpha1.InfrastructureClusterPack, inst *infrav1alpha1.InfrastructurePackInstance) {
	if inst.Status.DeliveredAt == nil || inst.Status.Revision == 0 {
		return
	}
	if rev, err := c.store.Get(ctx, pack.Namespace, pack.Name, inst.Status.Revision); err == nil {
		inst.Spec.Version = rev.Version
	}
}

// kubectlArtifact is the revision as the Kubectl engine takes it: objects placed in the pack's
// namespace, labelled for this instance, with the last delivery's inventory to prune from.
func (c *Controller) kubectlArtifact(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance, pack *infrav1alpha1.InfrastructureClusterPack,
	cluster *platformv1alpha1.Cluster, rev *revisions.Revision) (delivery.Artifact, delivery.Target, error) {
	_, mapper, err := c.clients.For(ctx, cluster.Name)
	if err != nil {
		return delivery.Artifact{}, delivery.Target{}, err
	}
	objs, err := Place(ObjectsFor(rev, cluster), pack.Spec.TargetNamespace, mapper)
	if err != nil {
		return delivery.Artifact{}, delivery.Target{}, err
	}
	art := delivery.Artifact{Namespace: inst.Namespace, Name: inst.Name, Tag: rev.Version, Digest: rev.Digest, Objects: objs}
	target := delivery.Target{
		Spec:     gitopsv1alpha1.ArtifactTarget{Cluster: cluster.Name, Prune: ptr.To(true)},
		Cluster:  cluster,
		Previous: &gitopsv1alpha1.ArtifactTargetStatus{Inventory: inventory(inst.Status.DeployedResources)},
	}
	return art, target, nil
}

// releaseNamespace is the namespace ensureNamespace must create: the pack's targetNamespace,
// unless the revision itself holds that Namespace (then the engine applies it, and one created
// first would be refused as not the pack's).
func releaseNamespace(pack *infrav1alpha1.InfrastructureClusterPack, objs []manifests.Object) string {
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "" && o.GetName() == pack.Spec.TargetNamespace {
			return ""
		}
	}
	return pack.Spec.TargetNamespace
}

// ensureNamespace creates the pack's release namespace on the cluster when it is missing, as
// `helm install --create-namespace` does: outside the delivered objects, so that it is never
// pruned and several packs may share it.
func (c *Controller) ensureNamespace(ctx context.Context, cluster, namespace string) error {
	if namespace == "" {
		return nil
	}
	client, _, err := c.clients.For(ctx, cluster)
	if err != nil {
		return err
	}
	namespaces := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	if _, err := namespaces.Get(ctx, namespace, metav1.GetOptions{}); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": namespace}}}
	if _, err := namespaces.Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s on cluster %s failed: %w", namespace, cluster, err)
	}
	return nil
}

// failed records a failed delivery: Unreachable when the cluster did not answer.
func (c *Controller) failed(inst *infrav1alpha1.InfrastructurePackInstance, err error) {
	reason, msg := failure(inst, err)
	conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionProgressing, metav1.ConditionFalse, reason, msg)
	conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
}

// failure is the reason and message of a request to the instance's cluster that failed:
// Unreachable when the cluster did not answer (errkind.Unreachable reads the error's types),
// DeliveryFailed when it answered with a refusal.
func failure(inst *infrav1alpha1.InfrastructurePackInstance, err error) (string, string) {
	if errkind.Unreachable(err) {
		return infrav1alpha1.ReasonUnreachable, unreachableMessage(inst.Spec.TargetClusterRef, err)
	}
	return infrav1alpha1.ReasonDeliveryFailed, message.Error(err)
}

// unreachableMessage says in one sentence that the cluster did not answer and how the
// connection failed (dial tcp …: connection refused), without the request's URL and query
// that client-go's error carries.
func unreachableMessage(cluster string, err error) string {
	cause := err
	var op *net.OpError
	if errors.As(err, &op) {
		cause = op
	}
	return message.Sentence(fmt.Sprintf("Cluster %s did not answer: %s", cluster, cause.Error()))
}

// objects is "1 object" or "n objects".
func objects(n int) string {
	if n == 1 {
		return "1 object"
	}
	return strconv.Itoa(n) + " objects"
}

// delivered records a successful delivery of rev: the spec takes the delivered version and
// chart, the status the direction, time, resources and revision.
func (c *Controller) delivered(inst *infrav1alpha1.InfrastructurePackInstance, pack *infrav1alpha1.InfrastructureClusterPack, rev *revisions.Revision, msg string) {
	var previous *version.Version
	if inst.Status.DeliveredAt != nil {
		if v, err := version.Parse(inst.Spec.Version); err == nil {
			previous = &v
		}
	}
	if next, err := version.Parse(rev.Version); err == nil {
		inst.Status.UpgradeDirection = infrav1alpha1.UpgradeDirection(version.DirectionOf(previous, next))
	}
	now := metav1.NewTime(c.clock.Now())
	inst.Status.DeliveredAt = &now
	inst.Status.Revision = rev.Number
	inst.Spec.Version = rev.Version
	inst.Spec.HelmVersion = rev.HelmVersion
	inst.Spec.ChartName, inst.Spec.ChartURL, inst.Spec.ChartVersion = rev.ChartName, rev.ChartURL, rev.ChartVersion
	inst.Status.DriftSummary = ""
	conds, gen := &inst.Status.Conditions, inst.Generation
	conditions.Set(conds, gen, infrav1alpha1.ConditionProgressing, metav1.ConditionFalse, infrav1alpha1.ReasonDelivered, msg)
	conditions.Set(conds, gen, infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, infrav1alpha1.ReasonNoDrift, "Nothing has drifted since the delivery.")
	conditions.Set(conds, gen, infrav1alpha1.ConditionReady, metav1.ConditionTrue, infrav1alpha1.ReasonDelivered, msg)
}

func readyMessage(inst *infrav1alpha1.InfrastructurePackInstance) string {
	if p := meta.FindStatusCondition(inst.Status.Conditions, infrav1alpha1.ConditionProgressing); p != nil && p.Reason == infrav1alpha1.ReasonDelivered {
		return p.Message
	}
	return fmt.Sprintf("Revision %d is delivered.", inst.Status.Revision)
}

// forget drops what the controller remembers of an instance that is gone.
func (c *Controller) forget(key cache.ObjectName) {
	c.mu.Lock()
	delete(c.checked, key)
	c.mu.Unlock()
	c.specWritten.Forget(key)
	c.statusWritten.Forget(key)
}

// write writes what the reconcile changed: the spec first (a delivery records the delivered
// version and chart there), then the status through the status writer, which records an
// event on each Ready, Drifted and DependencyBlocked transition.
func (c *Controller) write(ctx context.Context, inst, before *infrav1alpha1.InfrastructurePackInstance) error {
	base := before
	if !apiequality.Semantic.DeepEqual(inst.Spec, before.Spec) {
		updated, err := c.client.InfrastructurePackInstances(inst.Namespace).Update(ctx, inst, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		c.specWritten.Record(cache.MetaObjectToName(before), before, updated)
		// The status the spec update left is the one read: the status writer compares with it.
		base = updated.DeepCopy()
		base.Status = *before.Status.DeepCopy()
	}
	after := base.DeepCopy()
	after.Status = *inst.Status.DeepCopy()
	after.Status.ObservedGeneration = after.Generation
	_, _, err := c.status.Write(ctx, base, after)
	return err
}

// Place returns a revision's objects for a cluster: namespaced objects that name no namespace
// go to the pack's targetNamespace (Helm's release namespace), cluster-scoped ones stay
// without. Scope comes from the cluster (mapper), or, for a kind the revision itself defines,
// from its CustomResourceDefinition.
func Place(raws []json.RawMessage, namespace string, mapper meta.RESTMapper) ([]manifests.Object, error) {
	objs := make([]manifests.Object, 0, len(raws))
	crdScope := map[schema.GroupKind]bool{}
	for _, raw := range raws {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("the revision holds an object that does not decode: %w", err)
		}
		if u.GetKind() == "CustomResourceDefinition" && u.GroupVersionKind().Group == "apiextensions.k8s.io" {
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
			crdScope[schema.GroupKind{Group: group, Kind: kind}] = scope == "Namespaced"
		}
		objs = append(objs, manifests.Object{Unstructured: u})
	}
	for _, o := range objs {
		if o.GetNamespace() != "" {
			continue
		}
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				o.SetNamespace(namespace)
			}
		case meta.IsNoMatchError(err):
			if crdScope[gvk.GroupKind()] {
				o.SetNamespace(namespace)
			}
		default:
			return nil, err
		}
	}
	return objs, nil
}

// resources are an engine inventory as deployedResources.
func resources(inv []gitopsv1alpha1.InventoryEntry) []infrav1alpha1.DeployedResource {
	out := make([]infrav1alpha1.DeployedResource, 0, len(inv))
	for _, e := range inv {
		parts := strings.Split(e.ID, "_")
		if len(parts) != 4 {
			continue
		}
		apiVersion := e.Version
		if parts[2] != "" {
			apiVersion = parts[2] + "/" + e.Version
		}
		out = append(out, infrav1alpha1.DeployedResource{APIVersion: apiVersion, Kind: parts[3], Namespace: parts[0], Name: parts[1]})
	}
	return out
}

// inventory is deployedResources as an engine inventory, for pruning.
func inventory(res []infrav1alpha1.DeployedResource) []gitopsv1alpha1.InventoryEntry {
	out := make([]gitopsv1alpha1.InventoryEntry, 0, len(res))
	for _, r := range res {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil {
			continue
		}
		out = append(out, gitopsv1alpha1.InventoryEntry{
			ID:      manifests.Key{Group: gv.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}.String(),
			Version: gv.Version,
		})
	}
	return out
}

// ObjectsFor is the render of rev for the cluster's Kubernetes minor version; when the revision
// has none for it (rendered before the cluster was a target, or the cluster was upgraded since),
// the render of the nearest version at or below it, else the lowest one: the templates saw
// capabilities close to the cluster's.
func ObjectsFor(rev *revisions.Revision, cluster *platformv1alpha1.Cluster) []json.RawMessage {
	want := clusterpack.RenderKey(cluster.Status.KubernetesVersion)
	if objs, ok := rev.Renders[want]; ok {
		return objs
	}
	keys := make([]string, 0, len(rev.Renders))
	for k := range rev.Renders {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	best := ""
	for _, k := range keys {
		if best == "" || compareKeys(k, want) <= 0 {
			best = k
		}
	}
	return rev.Renders[best]
}

// compareKeys orders render keys (v1.37) by minor version; "" first.
func compareKeys(a, b string) int {
	minor := func(k string) int {
		var major, minor int
		if _, err := fmt.Sscanf(k, "v%d.%d", &major, &minor); err != nil {
			return -1
		}
		return major*1000 + minor
	}
	return minor(a) - minor(b)
}
