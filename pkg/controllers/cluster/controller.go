// Package cluster is plinth-controller's target-cluster prober: for every Cluster it opens the
// sealed kubeconfig through a credentials.Provider, probes the cluster's API server and
// KubeVirt, and writes phase, versions, feature gates and conditions to the Cluster's status.
// It probes each cluster again every interval, and at once when its spec (the kubeconfig)
// changes.
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

	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
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

// Controller probes target clusters.
type Controller struct {
	*loop.Loop
	client   platformclient.ClustersGetter
	recorder events.EventRecorder
	lister   platformlisters.ClusterLister
	creds    credentials.Provider
	probe    Prober
	interval time.Duration
	now      func() time.Time
	// started is when this controller was made: a probe time written before it is another
	// process's, and the first probe of this one always writes.
	started time.Time
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
	c := &Controller{client: client, recorder: recorder, lister: clusters.Lister(), creds: creds, probe: probe, interval: interval, now: time.Now}
	c.started = c.now()
	c.Loop = loop.New(Name, c.reconcile, clusters.Informer())
	if err := c.WatchGenerations(clusters.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	name := key.Name
	cl, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		if f, ok := c.creds.(Forgetter); ok {
			f.Forget(name)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if cl.DeletionTimestamp != nil {
		return nil
	}
	status := cl.Status.DeepCopy()
	gen := cl.Generation
	cfg, err := c.creds.GetRESTConfig(ctx, name)
	switch reason := credentials.ReasonOf(err); {
	case err != nil && (reason == "" || reason == credentials.ReasonUnavailable):
		return err // the API or the lister failed: retried with backoff, status untouched
	case err != nil:
		status.Phase = platform.ClusterPhaseUnknown
		c.set(status, gen, platform.ConditionCredentialsValid, Verdict{metav1.ConditionFalse, string(reason), err.Error()})
		c.set(status, gen, platform.ConditionReachable, Verdict{metav1.ConditionUnknown, "NoCredentials", "The cluster was not probed: its credentials cannot be used."})
		c.set(status, gen, platform.ConditionKubeVirtAvailable, Verdict{metav1.ConditionUnknown, "NoCredentials", "The cluster was not probed: its credentials cannot be used."})
	default:
		f := c.probe(ctx, cfg)
		status.Phase, status.APIServerURL = f.Phase, cfg.Host
		if f.Phase == platform.ClusterPhaseHealthy {
			status.KubernetesVersion, status.KubevirtVersion, status.EnabledFeatures = f.KubernetesVersion, f.KubevirtVersion, f.EnabledFeatures
		}
		c.set(status, gen, platform.ConditionCredentialsValid, Verdict{metav1.ConditionTrue, "Loaded", "The kubeconfig decrypts and loads."})
		c.set(status, gen, platform.ConditionReachable, f.Reachable)
		c.set(status, gen, platform.ConditionKubeVirtAvailable, f.KubeVirt)
	}
	now := metav1.NewTime(c.now())
	status.ObservedGeneration = gen
	if last := cl.Status.LastProbeTime; last != nil && !last.Time.Before(c.started) && now.Sub(last.Time) < ProbeTimeRefresh &&
		apiequality.Semantic.DeepEqual(status, &cl.Status) {
		c.EnqueueAfter(key, c.interval)
		return nil
	}
	status.LastProbeTime = &now
	updated := cl.DeepCopy()
	updated.Status = *status
	if _, err := c.client.Clusters().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if cl.Status.Phase != status.Phase {
		klog.FromContext(ctx).Info("Cluster phase changed", "from", cl.Status.Phase, "to", status.Phase)
		c.recordPhase(updated, status)
	}
	c.EnqueueAfter(key, c.interval)
	return nil
}

func (c *Controller) set(status *platform.ClusterStatus, gen int64, conditionType string, v Verdict) {
	apimeta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: conditionType, Status: v.Status, Reason: v.Reason, Message: v.Message, ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(c.now()),
	})
}

// phaseReasons are the event reasons of the phases a probe finds.
var phaseReasons = map[platform.ClusterPhase]string{
	platform.ClusterPhaseHealthy:     "Healthy",
	platform.ClusterPhaseUnhealthy:   "Unhealthy",
	platform.ClusterPhaseUnreachable: "Unreachable",
}

// recordPhase records the cluster's new phase, with the message of the condition that
// explains it. A phase of UNKNOWN means its credentials cannot be used: the event carries the
// CredentialsValid reason (never the credentials).
func (c *Controller) recordPhase(cl *platform.Cluster, status *platform.ClusterStatus) {
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
	transition.Record(c.recorder, cl, reason, "Probe", message)
}
