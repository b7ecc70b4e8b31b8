// Package runtime is the controller that hands each WorkloadPlan to the runtime of its class
// and writes the plan's status (phase, Ready condition, runtimeInfo) from the runtime's report.
package runtime

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// Controller reconciles WorkloadPlans.
type Controller struct {
	*loop.Loop
	client   clientset.Interface
	plans    listers.WorkloadPlanLister
	bindings listers.ResourceBindingLister
	runtimes *compute.Registry
}

// New returns the runtime controller.
func New(client clientset.Interface, plans listers.WorkloadPlanLister, bindings listers.ResourceBindingLister, runtimes *compute.Registry) *Controller {
	c := &Controller{client: client, plans: plans, bindings: bindings, runtimes: runtimes}
	c.Loop = loop.New("runtime", c.reconcile)
	return c
}

func (c *Controller) reconcile(ctx context.Context, namespace, name string) error {
	plan, err := c.plans.WorkloadPlans(namespace).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && plan.DeletionTimestamp != nil) {
		c.runtimes.Release(namespace, name)
		return nil
	}
	if err != nil {
		return err
	}
	var report compute.Status
	var applyErr error
	rt, ok := c.runtimes.Get(plan.Spec.RuntimeClass)
	if !ok {
		report = compute.Status{Reason: v1b1.ReasonRuntimeSelecting, Message: fmt.Sprintf("No runtime handles runtime class %q.", plan.Spec.RuntimeClass)}
	} else {
		// Each binding the workload uses, its own or shared, carries the workload's label with
		// the resource name as its value.
		label := v1b1.WorkloadBindingLabel(plan.Spec.WorkloadRef.Name)
		selector, err := labels.Parse(label)
		if err != nil {
			return err
		}
		used, err := c.bindings.ResourceBindings(namespace).List(selector)
		if err != nil {
			return err
		}
		bindings := map[string]*v1b1.ResourceBinding{}
		for _, b := range used {
			bindings[b.Labels[label]] = b
		}
		report, applyErr = rt.Apply(ctx, plan, bindings)
		if applyErr != nil && report.Reason == "" {
			report = compute.Status{Reason: v1b1.ReasonRuntimeProvisioning, Message: "The workload could not be materialized yet."}
		}
	}

	status := plan.Status.DeepCopy()
	status.ObservedGeneration = plan.Generation
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: report.Reason, Message: report.Message, ObservedGeneration: plan.Generation}
	switch {
	case report.Ready:
		cond.Status = metav1.ConditionTrue
		status.Phase = v1b1.PlanPhaseProjected
		if status.LastProjectedTime == nil || !meta.IsStatusConditionTrue(plan.Status.Conditions, "Ready") {
			now := metav1.Now()
			status.LastProjectedTime = &now
		}
	case report.Reason == v1b1.ReasonProjectionError || report.Reason == v1b1.ReasonRuntimeSelecting:
		status.Phase = v1b1.PlanPhaseFailed
	default:
		status.Phase = v1b1.PlanPhasePlanning
		// Look again while rolling out, as the resolver does: an event missed across a leader
		// change must not leave the plan waiting.
		c.EnqueueAfter(namespace, name, 5*time.Second)
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	if ok {
		status.RuntimeInfo = &v1b1.RuntimeInfo{Controller: rt.Name(), State: report.State, Metadata: report.Details}
	}
	if !apiequality.Semantic.DeepEqual(status, &plan.Status) {
		updated := plan.DeepCopy()
		updated.Status = *status
		if _, err := c.client.ScoreV1b1().WorkloadPlans(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: "plinth-runtime"}); err != nil {
			return err
		}
	}
	return applyErr
}
