// Package clustergitops is the controller of Clusters' spec.gitOps: for a Cluster with
// registryEnabled it keeps one OCIRegistry, named after the Cluster and owned by it, in
// plinth-controller's GitOps namespace (the ociregistry controller runs it), and for a Cluster
// with engine Flux it finds out whether Flux's source-controller and kustomize-controller
// serve the cluster, reporting them in status.gitOps.fluxComponents and the FluxAvailable
// condition; with spec.gitOps.installFlux it installs them where no Flux is (see install).
//
// The cluster controller writes the rest of a Cluster's status (its probes). Each
// server-side applies only its own part (this one: status.gitOps and FluxAvailable, see
// part.go), under its own field manager, so neither overwrites the other's fields and neither
// write is refused for being based on a copy that misses the other's.
//
// In memory it keeps, besides its informers' caches and queue: the Flux Leases seen on each
// cluster and when (leaseTracker), the Cluster each of its status writes returned until the
// cache shows it (loop.Written), and, in the delivery clients, each cluster's clients. A
// restart loses the Lease observations: the first detection after it judges each Lease by its
// renewTime on the cluster's clock, within maxClockSkew, instead of by whether it changed.
package clustergitops

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	gitopsclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/gitops/v1alpha1"
	platformclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/platform/v1alpha1"
	gitopsinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/gitops/v1alpha1"
	platforminformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/platform/v1alpha1"
	gitopslisters "github.com/plinth-dev/plinth/pkg/generated/listers/gitops/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
)

// Name names the controller in logs, metrics and events.
const Name = "clustergitops"

// Defaults of Options.
const (
	// DefaultNamespace is where the OCIRegistries of Clusters live.
	DefaultNamespace = "plinth-system"
	// DefaultProbeInterval is how often Flux is looked for on a Flux-engine cluster, as often
	// as the cluster controller probes.
	DefaultProbeInterval = 30 * time.Second
)

// detectTimeout bounds one detection of Flux: an unreachable cluster costs one timeout, not a
// stuck worker.
const detectTimeout = 10 * time.Second

// FieldManager names the controller in a Cluster's managedFields and an OCIRegistry's.
const FieldManager = "plinth-clustergitops"

// Clientset is what the controller writes: Cluster status and OCIRegistries.
type Clientset interface {
	PlatformV1alpha1() platformclient.PlatformV1alpha1Interface
	GitopsV1alpha1() gitopsclient.GitopsV1alpha1Interface
}

// Options tune the controller.
type Options struct {
	// Namespace is where the OCIRegistries of Clusters are created (--gitops-namespace); empty
	// means DefaultNamespace.
	Namespace string
	// ProbeInterval is how often Flux is looked for on each Flux-engine cluster; zero means
	// DefaultProbeInterval.
	ProbeInterval time.Duration
	// FluxManifests are the CRDs Flux is installed with on Clusters with installFlux
	// (--flux-manifests-dir); nil means Flux is not installed anywhere.
	FluxManifests *fluxinstall.Manifests
}

// Controller reconciles Clusters' spec.gitOps.
type Controller struct {
	*loop.Loop
	client     Clientset
	events     *transition.Recorder
	status     *statuswriter.Writer[*platformv1alpha1.Cluster]
	written    *loop.Written[*platformv1alpha1.Cluster]
	clusters   platformlisters.ClusterLister
	registries gitopslisters.OCIRegistryLister
	clients    delivery.Clients
	namespace  string
	probe      time.Duration
	now        func() time.Time
	// leases remembers the Flux Leases seen on each cluster, to tell renewed ones from stale
	// ones without comparing clocks.
	leases *leaseTracker
	// manifests are Flux's CRDs for installs; nil without --flux-manifests-dir.
	manifests *fluxinstall.Manifests
}

// NewController returns the controller. It reads Clusters and OCIRegistries; a Cluster wakes
// it when added or deleted and when its spec changes, an OCIRegistry labelled with a Cluster
// when added or deleted or its spec changes (so one deleted by hand is created again), and
// every Flux-engine Cluster is looked at again every probe interval.
func NewController(client Clientset, recorder events.EventRecorder, clusters platforminformers.ClusterInformer,
	registries gitopsinformers.OCIRegistryInformer, clients delivery.Clients, opts Options) (*Controller, error) {
	c := &Controller{
		client: client, events: transition.New(recorder, platformv1alpha1.Reasons), written: &loop.Written[*platformv1alpha1.Cluster]{},
		clusters: clusters.Lister(), registries: registries.Lister(),
		clients: clients, namespace: opts.Namespace, probe: opts.ProbeInterval, now: time.Now,
		leases: newLeaseTracker(), manifests: opts.FluxManifests,
	}
	c.status = &statuswriter.Writer[*platformv1alpha1.Cluster]{
		FieldManager: FieldManager,
		Reasons:      platformv1alpha1.Reasons,
		Conditions:   func(cl *platformv1alpha1.Cluster) []metav1.Condition { return cl.Status.Conditions },
		Apply:        statuswriter.ApplyPart(gitOpsPart(client.PlatformV1alpha1())),
		Events:       c.events,
		Rules:        []transition.Rule{{Condition: platformv1alpha1.ConditionFluxAvailable, Action: "Detect"}},
		Written:      c.written,
	}
	if c.namespace == "" {
		c.namespace = DefaultNamespace
	}
	if c.probe <= 0 {
		c.probe = DefaultProbeInterval
	}
	c.Loop = loop.New(Name, c.reconcile, clusters.Informer(), registries.Informer())
	if err := c.WatchGenerations(clusters.Informer()); err != nil {
		return nil, err
	}
	// Status-only updates of a registry (the ociregistry controller's probes) change nothing here.
	if err := c.WatchMappedIf(registries.Informer(), clusterOf, loop.SpecOrDeletionChanged); err != nil {
		return nil, err
	}
	return c, nil
}

// clusterOf maps an OCIRegistry to the Cluster its label names.
func clusterOf(obj interface{}) []cache.ObjectName {
	m, err := apimeta.Accessor(obj)
	if err != nil || m.GetLabels()[gitopsv1alpha1.LabelCluster] == "" {
		return nil
	}
	return []cache.ObjectName{cache.NewObjectName("", m.GetLabels()[gitopsv1alpha1.LabelCluster])}
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.clusters.Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.leases.forget(key.Name)
		c.written.Forget(key)
		// Owner references let Kubernetes' garbage collector remove the registry too; this
		// does not wait for one (the local platform runs none).
		return c.deleteRegistriesOf(ctx, key.Name)
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp != nil {
		return nil
	}
	cl := c.written.Fresher(key, cached)
	after := cl.DeepCopy()
	gitOps := &platformv1alpha1.ClusterGitOpsStatus{}
	if cl.Status.GitOps != nil {
		gitOps = cl.Status.GitOps.DeepCopy()
	}

	gitOps.Registry, gitOps.RegistryEndpoint = "", ""
	registryErr := c.ensureRegistry(ctx, cl, gitOps)

	var installErr error
	if cl.Spec.GitOps.Engine == platformv1alpha1.GitOpsEngineFlux {
		var f finding
		f, installErr = c.findFlux(ctx, cl)
		if f.reason != platformv1alpha1.ReasonUnreachable {
			// What was found last stays while the cluster cannot be asked.
			gitOps.FluxComponents = f.components
		}
		conditions.SetAt(&after.Status.Conditions, cl.Generation, metav1.NewTime(c.now()),
			platformv1alpha1.ConditionFluxAvailable, f.status, f.reason, f.message)
	} else {
		c.leases.forget(cl.Name)
		gitOps.FluxComponents = nil
		apimeta.RemoveStatusCondition(&after.Status.Conditions, platformv1alpha1.ConditionFluxAvailable)
	}
	after.Status.GitOps = gitOps
	if apiequality.Semantic.DeepEqual(gitOps, &platformv1alpha1.ClusterGitOpsStatus{}) {
		after.Status.GitOps = nil
	}
	if _, _, err := c.status.Write(ctx, cl, after); err != nil {
		return err
	}
	if registryErr != nil {
		return registryErr
	}
	return installErr
}

// findFlux detects Flux on a Flux-engine cluster, installs it where installFlux asks for it,
// and looks at the cluster again after the probe interval, or sooner while an install is
// under way. The error is an install's, returned for a retry.
func (c *Controller) findFlux(ctx context.Context, cl *platformv1alpha1.Cluster) (finding, error) {
	f := c.detect(ctx, cl.Name)
	next := c.probe
	var err error
	switch {
	case installing(cl, f):
		f, err = c.install(ctx, cl.Name, f)
		if f.reason == platformv1alpha1.ReasonFluxInstalling {
			next = installPoll
		}
	case !cl.Spec.GitOps.InstallFlux:
		f = withInstallHint(f)
	}
	c.EnqueueAfter(cache.NewObjectName("", cl.Name), next)
	return f, err
}

// detect looks for Flux on the cluster.
func (c *Controller) detect(ctx context.Context, cluster string) finding {
	ctx, cancel := context.WithTimeout(ctx, detectTimeout)
	defer cancel()
	dyn, _, err := c.clients.For(ctx, cluster)
	if err != nil {
		return unreachable(err)
	}
	return detectFlux(ctx, dyn, c.leases.freshness(cluster, c.now()))
}

// ensureRegistry keeps the Cluster's OCIRegistry as spec.gitOps says and writes its name and
// endpoint into gitOps once it exists. A registry whose port no longer matches is deleted and
// created again with the new port (the ociregistry controller stops the old server first); its
// data, in the volume named after it, is served again by the new one.
func (c *Controller) ensureRegistry(ctx context.Context, cl *platformv1alpha1.Cluster, gitOps *platformv1alpha1.ClusterGitOpsStatus) error {
	existing, err := c.registries.OCIRegistries(c.namespace).Get(cl.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if apierrors.IsNotFound(err) {
		existing = nil
	}
	owned := existing != nil && ownedBy(existing, cl)
	if !cl.Spec.GitOps.RegistryEnabled {
		if owned {
			return c.deleteRegistry(ctx, existing)
		}
		return nil
	}
	port := cl.Spec.GitOps.RegistryPort
	if port == 0 {
		port = platformv1alpha1.DefaultRegistryPort
	}
	endpoint := net.JoinHostPort("localhost", strconv.Itoa(int(port)))
	switch {
	case existing == nil:
		created, err := c.client.GitopsV1alpha1().OCIRegistries(c.namespace).Create(ctx, c.registryFor(cl, port, endpoint), metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return fmt.Errorf("creating the OCIRegistry of cluster %s: %w", cl.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("OCIRegistry created", "registry", klog.KObj(created), "endpoint", endpoint)
		existing = created
	case !owned:
		c.events.Record(cl, platformv1alpha1.ReasonRegistryConflict, "Reconcile",
			fmt.Sprintf("The OCIRegistry %s/%s exists and does not belong to the cluster; no registry is created for it.", c.namespace, cl.Name))
		return nil
	case existing.DeletionTimestamp != nil:
		return nil // created again once it is gone (its deletion wakes the Cluster)
	case existing.Spec.Port != port || existing.Spec.Endpoint != endpoint:
		return c.deleteRegistry(ctx, existing)
	}
	gitOps.Registry, gitOps.RegistryEndpoint = c.namespace+"/"+existing.Name, endpoint
	return nil
}

// registryFor is the OCIRegistry of a Cluster: named after it, labelled with it, controlled
// by it, its data in the default volume.
func (c *Controller) registryFor(cl *platformv1alpha1.Cluster, port int32, endpoint string) *gitopsv1alpha1.OCIRegistry {
	return &gitopsv1alpha1.OCIRegistry{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.namespace, Name: cl.Name,
			Labels: map[string]string{gitopsv1alpha1.LabelCluster: cl.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: platformv1alpha1.SchemeGroupVersion.String(), Kind: "Cluster", Name: cl.Name, UID: cl.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: gitopsv1alpha1.OCIRegistrySpec{Endpoint: endpoint, Port: port},
	}
}

// ownedBy says whether the Cluster is the registry's controller.
func ownedBy(reg *gitopsv1alpha1.OCIRegistry, cl *platformv1alpha1.Cluster) bool {
	ref := metav1.GetControllerOf(reg)
	return ref != nil && ref.Kind == "Cluster" && ref.APIVersion == platformv1alpha1.SchemeGroupVersion.String() && ref.UID == cl.UID
}

// deleteRegistry deletes a registry, only the one seen (its UID).
func (c *Controller) deleteRegistry(ctx context.Context, reg *gitopsv1alpha1.OCIRegistry) error {
	if reg.DeletionTimestamp != nil {
		return nil
	}
	err := c.client.GitopsV1alpha1().OCIRegistries(reg.Namespace).Delete(ctx, reg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &reg.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting OCIRegistry %s/%s: %w", reg.Namespace, reg.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("OCIRegistry deleted", "registry", klog.KObj(reg))
	return nil
}

// deleteRegistriesOf deletes the registries a deleted Cluster controlled.
func (c *Controller) deleteRegistriesOf(ctx context.Context, cluster string) error {
	if f, ok := c.clients.(interface{ Forget(string) }); ok {
		f.Forget(cluster)
	}
	regs, err := c.registries.OCIRegistries(c.namespace).List(labels.SelectorFromSet(labels.Set{gitopsv1alpha1.LabelCluster: cluster}))
	if err != nil {
		return err
	}
	for _, reg := range regs {
		if ref := metav1.GetControllerOf(reg); ref == nil || ref.Kind != "Cluster" || ref.Name != cluster {
			continue
		}
		if err := c.deleteRegistry(ctx, reg); err != nil {
			return err
		}
	}
	return nil
}
