// Package workloadplan is the controller that hands each WorkloadPlan to the runtime of its
// class and writes the plan's status (phase, Ready condition, runtimeInfo) from the runtime's
// report; when a plan moves to another runtime class, the runtime that materialized it before
// removes what it made for it (compute.Withdrawer). It is woken by plans, by the Deployments the
// kubernetes runtime makes for them, by the bindings a plan uses (shared ones included), and by
// the objects of a Failed plan's names that the kubernetes runtime refused to take over.
//
// In memory, besides its informers' caches, it keeps the plans its status writes returned until
// the plan cache shows them (loop.Written); the runtimes keep their own (compute.Registry
// releases a deleted plan's). A restart loses nothing the API does not hold: which runtimes
// still have to withdraw a plan is recorded in its status (WithdrawingKey).
package workloadplan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	scoreinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/score/v1b1"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// Name names the controller in logs, metrics and events.
const Name = "workloadplan"

// fieldManager names the controller (the seed's runtime) in the managedFields of the plan
// status it writes.
const fieldManager = "plinth-runtime"

// Controller reconciles WorkloadPlans.
type Controller struct {
	*loop.Loop
	status   *statuswriter.Writer[*v1b1.WorkloadPlan]
	plans    listers.WorkloadPlanLister
	bindings listers.ResourceBindingLister
	runtimes *compute.Registry
	// written holds the plans this controller's status writes returned until the cache has
	// them: Deployment and binding events wake a plan right after its write.
	written loop.Written[*v1b1.WorkloadPlan]
}

// New returns the WorkloadPlan controller, which hands each plan to the runtime registered
// under its runtime class in runtimes (plinth-controller's one compute registry). It reads
// Deployments, Services and Secrets, the objects the kubernetes runtime reads and makes, and
// the informers of every runtime that is a compute.PlanNotifier (the kubevirt runtime's
// ManagedVMs), whose changes wake the plans they belong to.
func New(client clientset.Interface, recorder events.EventRecorder, runtimes *compute.Registry,
	plans scoreinformers.WorkloadPlanInformer, bindings scoreinformers.ResourceBindingInformer,
	deployments appsinformers.DeploymentInformer, services coreinformers.ServiceInformer, secrets coreinformers.SecretInformer) (*Controller, error) {
	c := &Controller{plans: plans.Lister(), bindings: bindings.Lister(), runtimes: runtimes}
	c.status = &statuswriter.Writer[*v1b1.WorkloadPlan]{
		FieldManager: fieldManager,
		Reasons:      v1b1.Reasons,
		Conditions:   func(p *v1b1.WorkloadPlan) []metav1.Condition { return p.Status.Conditions },
		Update: func(ctx context.Context, p *v1b1.WorkloadPlan, opts metav1.UpdateOptions) (*v1b1.WorkloadPlan, error) {
			return client.ScoreV1b1().WorkloadPlans(p.Namespace).UpdateStatus(ctx, p, opts)
		},
		Events: transition.New(recorder, v1b1.Reasons),
		// Plans are the platform's, not the tenant's: their outcomes only, Ready or a warning.
		Rules:   []transition.Rule{{Condition: v1b1.ConditionReady, ReadyReason: v1b1.ReasonReady, Action: "Materialize", OutcomesOnly: true}},
		Written: &c.written,
	}
	reads := []cache.SharedIndexInformer{plans.Informer(), bindings.Informer(), deployments.Informer(), services.Informer(), secrets.Informer()}
	var notifiers []compute.PlanNotifier
	for _, rt := range runtimes.Runtimes() {
		if n, ok := rt.(compute.PlanNotifier); ok {
			notifiers = append(notifiers, n)
			reads = append(reads, n.Informers()...)
		}
	}
	c.Loop = loop.New(Name, c.reconcile, reads...)
	errs := []error{
		c.Watch(plans.Informer()),
		c.WatchMapped(deployments.Informer(), loop.OwnerKeys(v1b1.SchemeGroupVersion.String(), "WorkloadPlan")),
		// An object the kubernetes runtime refused to take over, gone or changed, lets its
		// namesake plan be materialized at once rather than at the next resync.
		c.WatchMapped(deployments.Informer(), c.refusedPlanOf("")),
		c.WatchMapped(services.Informer(), c.refusedPlanOf("")),
		c.WatchMapped(secrets.Informer(), c.refusedPlanOf("-files")),
		c.WatchMapped(bindings.Informer(), plansOfBinding),
	}
	for _, n := range notifiers {
		for _, informer := range n.Informers() {
			errs = append(errs, c.WatchMapped(informer, n.PlansFor))
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// plansOfBinding maps a binding to the plans of the workloads that use it: a shared binding
// feeds every workload that declares it, each marked by its own label (plans are named after
// their workload).
func plansOfBinding(obj interface{}) []cache.ObjectName {
	b, ok := obj.(*v1b1.ResourceBinding)
	if !ok {
		return nil
	}
	var keys []cache.ObjectName
	for _, workload := range v1b1.WorkloadsOfBinding(b) {
		keys = append(keys, cache.NewObjectName(b.Namespace, workload))
	}
	return keys
}

// refusedPlanOf maps an object that no WorkloadPlan controls to the Failed plan it is named
// after (the plan's name followed by suffix): the kubernetes runtime refuses a plan whose
// Deployment, Service or files Secret name is taken by such an object, and the object's
// deletion is what lets the plan go on. Objects of other names, and plans that are not
// Failed, are nothing to wake.
func (c *Controller) refusedPlanOf(suffix string) loop.KeysFunc {
	return func(obj interface{}) []cache.ObjectName {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		name, ok := strings.CutSuffix(m.GetName(), suffix)
		if !ok || name == "" {
			return nil
		}
		if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.APIVersion == v1b1.SchemeGroupVersion.String() && ref.Kind == "WorkloadPlan" {
			return nil
		}
		plan, err := c.plans.WorkloadPlans(m.GetNamespace()).Get(name)
		if err != nil || plan.Status.Phase != v1b1.PlanPhaseFailed {
			return nil
		}
		return []cache.ObjectName{cache.NewObjectName(plan.Namespace, plan.Name)}
	}
}

// reconcile hands the plan to the runtime of its class, after asking the runtimes that
// materialized it before to withdraw, and writes the runtime's report as the plan's status.
func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	namespace, name := key.Namespace, key.Name
	plan, err := c.plans.WorkloadPlans(namespace).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && plan.DeletionTimestamp != nil) {
		c.runtimes.Release(namespace, name)
		c.written.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	plan = c.written.Fresher(key, plan)
	var report compute.Status
	var applyErr, withdrawErr error
	var withdrawing []string
	rt, ok := c.runtimes.Runtime(plan.Spec.RuntimeClass)
	if !ok {
		// The previous runtime's objects stay until a runtime of the new class takes the plan.
		report = compute.Status{Reason: v1b1.ReasonRuntimeSelecting, Message: fmt.Sprintf("No runtime handles runtime class %q.", plan.Spec.RuntimeClass)}
	} else {
		// Before the new runtime materializes the plan, so that an object both make under the
		// plan's name (its Service) is the new runtime's once both are done.
		withdrawing, withdrawErr = c.withdraw(ctx, plan)
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
		if len(withdrawing) > 0 {
			// A previous runtime waits for something (a decision on its VM, whose change wakes
			// the plan too); a plan at rest is not polled otherwise.
			c.EnqueueAfter(key, 30*time.Second)
		}
		if applyErr != nil && report.Reason == "" {
			report = compute.Status{Reason: v1b1.ReasonRuntimeProvisioning, Message: "The workload could not be materialized yet."}
		}
	}

	after := plan.DeepCopy()
	status := &after.Status
	status.ObservedGeneration = plan.Generation
	conditions.Set(&status.Conditions, plan.Generation, v1b1.ConditionReady, conditions.Status(report.Ready), report.Reason, report.Message)
	switch {
	case report.Ready:
		status.Phase = v1b1.PlanPhaseProjected
		if status.LastProjectedTime == nil || !meta.IsStatusConditionTrue(plan.Status.Conditions, v1b1.ConditionReady) {
			now := metav1.Now()
			status.LastProjectedTime = &now
		}
	case report.Reason == v1b1.ReasonProjectionError || report.Reason == v1b1.ReasonPermissionDenied || !ok:
		// Nothing changes until the plan or the runtimes do: a plan the runtime cannot
		// materialize, a request the platform refused, a class no runtime handles.
		status.Phase = v1b1.PlanPhaseFailed
	default:
		status.Phase = v1b1.PlanPhasePlanning
		// Look again while rolling out, as the resolver does: an event missed across a leader
		// change must not leave the plan waiting.
		c.EnqueueAfter(key, 5*time.Second)
	}
	if ok {
		status.RuntimeInfo = &v1b1.RuntimeInfo{Controller: rt.Name(), State: report.State, Metadata: report.Details}
		if len(withdrawing) > 0 {
			// Kept until every previous runtime is done, so that a restart asks them again.
			status.RuntimeInfo.Metadata = maps.Clone(report.Details)
			if status.RuntimeInfo.Metadata == nil {
				status.RuntimeInfo.Metadata = map[string]string{}
			}
			status.RuntimeInfo.Metadata[WithdrawingKey] = strings.Join(withdrawing, ",")
		}
	}
	if _, _, err := c.status.Write(ctx, plan, after); err != nil {
		return err
	}
	return errors.Join(applyErr, withdrawErr)
}

// WithdrawingKey is the key of WorkloadPlan.status.runtimeInfo.metadata naming, comma-separated,
// the runtime classes that materialized the plan before and have not yet removed what they made
// for it.
const WithdrawingKey = "withdrawingRuntimes"

// previousClasses are the runtime classes that materialized the plan before and may still have
// objects for it: the class status.runtimeInfo names, when the plan asks for another one now,
// and those still withdrawing. The status is the record: it names the new runtime only once
// it is written with the classes still to be withdrawn, so a crash between the steps loses
// none of them.
func previousClasses(plan *v1b1.WorkloadPlan) []string {
	info := plan.Status.RuntimeInfo
	if info == nil {
		return nil
	}
	classes := sets.New[string]()
	if info.Controller != "" {
		classes.Insert(info.Controller)
	}
	for _, class := range strings.Split(info.Metadata[WithdrawingKey], ",") {
		if class = strings.TrimSpace(class); class != "" {
			classes.Insert(class)
		}
	}
	classes.Delete(plan.Spec.RuntimeClass)
	return sets.List(classes)
}

// withdraw asks each runtime that materialized the plan before to remove what it made for it
// (compute.Withdrawer) and returns the classes not done yet. A class no runtime handles any
// more is dropped with a log line: nothing is left that could remove its objects.
func (c *Controller) withdraw(ctx context.Context, plan *v1b1.WorkloadPlan) ([]string, error) {
	logger := klog.FromContext(ctx)
	var pending []string
	var errs []error
	for _, class := range previousClasses(plan) {
		rt, ok := c.runtimes.Runtime(class)
		if !ok {
			logger.Info("Ignoring the plan's previous runtime class: no runtime handles it", "plan", klog.KObj(plan), "runtimeClass", class)
			continue
		}
		w, ok := rt.(compute.Withdrawer)
		if !ok {
			continue
		}
		done, err := w.Withdraw(ctx, plan)
		if err != nil {
			errs = append(errs, fmt.Errorf("withdrawing runtime %s: %w", class, err))
		}
		if !done || err != nil {
			pending = append(pending, class)
			continue
		}
		logger.V(2).Info("Previous runtime withdrawn", "plan", klog.KObj(plan), "runtimeClass", class)
	}
	return pending, errors.Join(errs...)
}
