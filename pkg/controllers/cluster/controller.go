// Package cluster is plinth-controller's target-cluster prober: for every Cluster it opens the
// sealed kubeconfig through a credentials.Provider, probes the cluster's API server and
// KubeVirt, and writes phase, versions, feature gates and conditions to the Cluster's status.
// It probes each cluster again every interval, and at once when its spec (the kubeconfig)
// changes.
//
// The clustergitops controller writes the rest of a Cluster's status (status.gitOps and
// FluxAvailable). Each server-side applies only its own part (see part.go), under its own
// field manager, so neither overwrites the other's fields and neither write is refused for
// being based on a copy that misses the other's.
//
// In memory it keeps, besides its informer's cache and queue: the Cluster each of its status
// writes returned, until the cache shows it (loop.Written); when this process started, so that
// its first probe of each Cluster writes the probe time; and, in the credentials provider, each
// cluster's opened REST config. A restart loses none of what the API shows: every Cluster is
// probed, and its probe time written, at once.
package cluster

import (
	"context"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/credentials"
	platformclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/platform/v1alpha1"
	platforminformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/platform/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
)

// Forgetter drops what a provider cached for a deleted cluster.
type Forgetter interface{ Forget(clusterName string) }

// Name names the controller in logs, metrics and events.
const Name = "cluster"

// FieldManager names the prober in a Cluster's managedFields.
const FieldManager = "plinth-cluster"

// Controller probes target clusters.
type Controller struct {
	*loop.Loop
	lister   platformlisters.ClusterLister
	creds    credentials.Provider
	probe    Prober
	interval time.Duration
	now      func() time.Time
	// started is when this controller was made: a probe time written before it is another
	// process's, and the first probe of this one always writes.
	started time.Time
	events  *transition.Recorder
	status  *statuswriter.Writer[*platform.Cluster]
	written *loop.Written[*platform.Cluster]
}

// ProbeTimeRefresh is how old status.lastProbeTime may grow before a probe that found nothing
// new writes it anyway. Writing it at every probe (every interval, 30 s by default) would be a
// status write per cluster twice a minute that tells nobody anything; never writing it would
// leave readers unable to tell a live prober from a stopped one. So it says "probed within
// the last few minutes", and every change of what a probe finds is still written at once.
const ProbeTimeRefresh = 5 * time.Minute

// NewController returns the prober; it probes each cluster every interval, and at once when a
// Cluster is added or its spec changes (not on its own status writes). It reads only Clusters
// (creds reads them too, through the same informer's lister).
func NewController(client platformclient.ClustersGetter, recorder events.EventRecorder, clusters platforminformers.ClusterInformer,
	creds credentials.Provider, probe Prober, interval time.Duration) (*Controller, error) {
	c := &Controller{
		lister: clusters.Lister(), creds: creds, probe: probe, interval: interval, now: time.Now,
		events: transition.New(recorder, platform.Reasons), written: &loop.Written[*platform.Cluster]{},
	}
	c.started = c.now()
	c.status = &statuswriter.Writer[*platform.Cluster]{
		FieldManager: FieldManager,
		Reasons:      platform.Reasons,
		Conditions:   func(cl *platform.Cluster) []metav1.Condition { return cl.Status.Conditions },
		Apply:        statuswriter.ApplyPart(probePart(client)),
		Written:      c.written,
	}
	c.Loop = loop.New(Name, c.reconcile, clusters.Informer())
	if err := c.WatchGenerations(clusters.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.lister.Get(key.Name)
	if apierrors.IsNotFound(err) {
		if f, ok := c.creds.(Forgetter); ok {
			f.Forget(key.Name)
		}
		c.written.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp != nil {
		return nil
	}
	cl := c.written.Fresher(key, cached)
	probed, err := c.probed(ctx, cl)
	if err != nil {
		return err // the API or the lister failed: retried with backoff, status untouched
	}
	stored, wrote, err := c.status.Write(ctx, cl, probed)
	if err != nil {
		return err
	}
	if wrote && cl.Status.Phase != stored.Status.Phase {
		klog.FromContext(ctx).Info("Cluster phase changed", "from", cl.Status.Phase, "to", stored.Status.Phase)
		c.recordPhase(stored)
	}
	c.EnqueueAfter(key, c.interval)
	return nil
}

// probed is cl with what a probe of it finds in the prober's part of its status. An error means
// the credentials could not be read at all (not that they are unusable, which the status says).
func (c *Controller) probed(ctx context.Context, cl *platform.Cluster) (*platform.Cluster, error) {
	out := cl.DeepCopy()
	status, gen, now := &out.Status, cl.Generation, metav1.NewTime(c.now())
	cfg, err := c.creds.GetRESTConfig(ctx, cl.Name)
	switch reason := credentials.ReasonOf(err); {
	case err != nil && (reason == "" || reason == credentials.ReasonUnavailable):
		return nil, err
	case err != nil:
		notProbed := Verdict{metav1.ConditionUnknown, platform.ReasonNoCredentials, "The cluster was not probed: its credentials cannot be used."}
		status.Phase = platform.ClusterPhaseUnknown
		set(status, gen, now, platform.ConditionCredentialsValid, Verdict{metav1.ConditionFalse, string(reason), err.Error()})
		set(status, gen, now, platform.ConditionReachable, notProbed)
		set(status, gen, now, platform.ConditionKubeVirtAvailable, notProbed)
	default:
		f := c.probe(ctx, cfg)
		status.Phase, status.APIServerURL = f.Phase, cfg.Host
		if f.Phase == platform.ClusterPhaseHealthy {
			status.KubernetesVersion, status.KubevirtVersion, status.EnabledFeatures = f.KubernetesVersion, f.KubevirtVersion, f.EnabledFeatures
		}
		set(status, gen, now, platform.ConditionCredentialsValid, Verdict{metav1.ConditionTrue, platform.ReasonLoaded, "The kubeconfig decrypts and loads."})
		set(status, gen, now, platform.ConditionReachable, f.Reachable)
		set(status, gen, now, platform.ConditionKubeVirtAvailable, f.KubeVirt)
	}
	status.ObservedGeneration = gen
	if c.probeTimeDue(cl.Status.LastProbeTime, now) || !apiequality.Semantic.DeepEqual(status, &cl.Status) {
		status.LastProbeTime = &now
	}
	return out, nil
}

// probeTimeDue says whether a probe at now writes its time though it found nothing new: the
// last probe time is this process's first, or ProbeTimeRefresh old.
func (c *Controller) probeTimeDue(last *metav1.Time, now metav1.Time) bool {
	return last == nil || last.Time.Before(c.started) || now.Sub(last.Time) >= ProbeTimeRefresh
}

// set sets one of the prober's conditions to a verdict.
func set(status *platform.ClusterStatus, gen int64, now metav1.Time, conditionType string, v Verdict) {
	conditions.SetAt(&status.Conditions, gen, now, conditionType, v.Status, v.Reason, v.Message)
}

// phaseReasons are the event reasons of the phases a probe finds.
var phaseReasons = map[platform.ClusterPhase]string{
	platform.ClusterPhaseHealthy:     platform.ReasonHealthy,
	platform.ClusterPhaseUnhealthy:   platform.ReasonUnhealthy,
	platform.ClusterPhaseUnreachable: platform.ReasonUnreachable,
}

// recordPhase records the cluster's new phase, with the message of the condition that
// explains it. A phase of UNKNOWN means its credentials cannot be used: the event carries the
// CredentialsValid reason (never the credentials).
func (c *Controller) recordPhase(cl *platform.Cluster) {
	status := &cl.Status
	explaining := platform.ConditionReachable
	if status.Phase == platform.ClusterPhaseHealthy {
		explaining = platform.ConditionKubeVirtAvailable
	}
	reason, ok := phaseReasons[status.Phase]
	if !ok {
		explaining = platform.ConditionCredentialsValid
	}
	cond := apimeta.FindStatusCondition(status.Conditions, explaining)
	if cond == nil {
		return
	}
	if !ok {
		reason = cond.Reason
	}
	message := cond.Message
	if status.Phase == platform.ClusterPhaseHealthy {
		message = "The cluster answers and is healthy."
	}
	c.events.Record(cl, reason, "Probe", message)
}
