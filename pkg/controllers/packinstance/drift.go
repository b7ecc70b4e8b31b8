package packinstance

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/message"
	"github.com/plinth-dev/plinth/pkg/packs/drift"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

// driftDue says whether the instance is due a comparison with its cluster, and notes that it
// has one now.
func (c *Controller) driftDue(key cache.ObjectName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if last, ok := c.checked[key]; ok && now.Sub(last) < c.drift {
		return false
	}
	c.checked[key] = now
	return true
}

// checker is the drift checker of the cluster, made again when the Cluster's kubeconfig
// changes; it keeps the baselines that spare a dry-run per object on each pass.
func (c *Controller) checker(ctx context.Context, cluster *platformv1alpha1.Cluster) (*drift.Checker, error) {
	c.mu.Lock()
	e, ok := c.checkers[cluster.Name]
	c.mu.Unlock()
	if ok && e.uid == cluster.UID && e.generation == cluster.Generation {
		return e.checker, nil
	}
	client, mapper, err := c.clients.For(ctx, cluster.Name)
	if err != nil {
		return nil, err
	}
	e = checkerEntry{uid: cluster.UID, generation: cluster.Generation, checker: drift.NewChecker(client, mapper, FieldManager)}
	c.mu.Lock()
	c.checkers[cluster.Name] = e
	c.mu.Unlock()
	return e.checker, nil
}

// checkDrift compares what the instance delivered with its cluster: Drifted and driftSummary
// say what changed; with driftPolicy Correct the revision is applied again and the summary
// records that it was.
func (c *Controller) checkDrift(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance, pack *infrav1alpha1.InfrastructureClusterPack,
	cluster *platformv1alpha1.Cluster) error {
	rev, err := c.store.Get(ctx, pack.Namespace, pack.Name, inst.Status.Revision)
	if err != nil {
		return err
	}
	art, target, err := c.kubectlArtifact(ctx, inst, pack, cluster, rev)
	if err != nil {
		return c.unchecked(inst, err)
	}
	report, err := c.compare(ctx, cluster, art, target)
	if err != nil {
		return c.unchecked(inst, err)
	}
	switch {
	case len(report.Drifted) == 0:
		noDrift(inst, report.Checked)
	case pack.Spec.DriftPolicy != infrav1alpha1.DriftPolicyCorrect:
		drifted(inst, report.Summary())
	default:
		return c.correct(ctx, inst, rev, art, target, report.Summary())
	}
	return nil
}

// compare reads what the last delivery applied and compares it with the cluster.
func (c *Controller) compare(ctx context.Context, cluster *platformv1alpha1.Cluster, art delivery.Artifact, target delivery.Target) (drift.Report, error) {
	expected, err := c.engine.Applied(ctx, art, target)
	if err != nil {
		return drift.Report{}, err
	}
	checker, err := c.checker(ctx, cluster)
	if err != nil {
		return drift.Report{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, operationTimeout+time.Duration(len(expected))*perObjectTimeout)
	defer cancel()
	return checker.Check(ctx, expected)
}

// noDrift records that the delivered objects match what was applied, unless the last pass
// corrected drift: that summary stands until the next delivery or drift.
func noDrift(inst *infrav1alpha1.InfrastructurePackInstance, checked int) {
	if d := meta.FindStatusCondition(inst.Status.Conditions, infrav1alpha1.ConditionDrifted); d != nil && d.Reason == infrav1alpha1.ReasonDriftCorrected {
		return
	}
	inst.Status.DriftSummary = ""
	conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, infrav1alpha1.ReasonNoDrift,
		fmt.Sprintf("The %d delivered objects match what was applied.", checked))
}

// drifted records drift that is left as it is (driftPolicy Detect).
func drifted(inst *infrav1alpha1.InfrastructurePackInstance, summary string) {
	inst.Status.DriftSummary = summary
	conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionDrifted, metav1.ConditionTrue, infrav1alpha1.ReasonDrifted,
		message.Sentence(summary))
}

// correct applies the revision again over drift (driftPolicy Correct) and records that it
// did, or that it failed. The apply gets a deadline of its own: the comparison may have used
// up the reconcile's.
func (c *Controller) correct(ctx context.Context, inst *infrav1alpha1.InfrastructurePackInstance, rev *revisions.Revision,
	art delivery.Artifact, target delivery.Target, summary string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), operationTimeout+time.Duration(len(art.Objects))*perObjectTimeout)
	defer cancel()
	st, err := c.engine.Deliver(ctx, art, target)
	inst.Status.DeployedResources = resources(st.Inventory)
	if err != nil {
		inst.Status.DriftSummary = summary
		conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionDrifted, metav1.ConditionTrue, infrav1alpha1.ReasonDrifted,
			summary+" Correcting it failed: "+message.Error(err))
		return err
	}
	at := c.clock.Now().UTC().Format(time.RFC3339)
	inst.Status.DriftSummary = fmt.Sprintf("Corrected at %s by applying revision %d again: %s", at, rev.Number, summary)
	conditions.Set(&inst.Status.Conditions, inst.Generation, infrav1alpha1.ConditionDrifted, metav1.ConditionFalse, infrav1alpha1.ReasonDriftCorrected,
		message.Sentence(inst.Status.DriftSummary))
	c.events.Record(inst, infrav1alpha1.ReasonDriftCorrected, "CorrectDrift", inst.Status.DriftSummary)
	return nil
}

// unchecked reports a drift pass that could not compare. Drifted keeps its last verdict.
// A cluster that stopped answering is Ready=False, reason Unreachable, as a delivery to it
// would be, so the pack's summary counts it; once it answers again the revision is delivered
// again (an idempotent apply) and the instance is Ready.
func (c *Controller) unchecked(inst *infrav1alpha1.InfrastructurePackInstance, err error) error {
	if errkind.Unreachable(err) {
		c.failed(inst, err)
		return err
	}
	c.events.Record(inst, infrav1alpha1.ReasonDriftCheckFailed, "DetectDrift", "Comparing the delivered objects with the cluster failed: "+message.Error(err))
	return err
}
