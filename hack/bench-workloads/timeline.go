package main

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/internal/benchfloor"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
)

// Stages of a Workload on its way to Ready, as its objects record them (to the second). A
// Workload without resources has no binding stages.
var stages = []string{"Workload created", "bindings created (last)", "bindings Bound (last)", "Workload BindingsReady",
	"WorkloadPlan created", "Deployment created", "Deployment Available", "Workload Ready"}

// timeline is when each Workload reached each stage; a stage not recorded is the zero time.
type timeline map[string][]time.Time

// readTimeline reads the stages of the Workloads in team-a, their bindings, plans and
// Deployments.
func readTimeline(ctx context.Context, plinth clientset.Interface, kube kubernetes.Interface) (timeline, error) {
	score := plinth.ScoreV1b1()
	workloads, err := score.Workloads(workloadNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	bindings, err := score.ResourceBindings(workloadNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	plans, err := score.WorkloadPlans(workloadNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	deployments, err := kube.AppsV1().Deployments(workloadNamespace).List(ctx, metav1.ListOptions{LabelSelector: v1b1.WorkloadLabel})
	if err != nil {
		return nil, err
	}
	return buildTimeline(workloads.Items, bindings.Items, plans.Items, deployments.Items), nil
}

// later keeps the later of t and u.
func later(t *time.Time, u time.Time) {
	if u.After(*t) {
		*t = u
	}
}

func buildTimeline(workloads []v1b1.Workload, bindings []v1b1.ResourceBinding, plans []v1b1.WorkloadPlan, deployments []appsv1.Deployment) timeline {
	out := timeline{}
	conditionTime := func(conditions []metav1.Condition, condition string) time.Time {
		if c := meta.FindStatusCondition(conditions, condition); c != nil && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
		return time.Time{}
	}
	for i := range workloads {
		w := &workloads[i]
		times := make([]time.Time, len(stages))
		times[0] = w.CreationTimestamp.Time
		times[3] = conditionTime(w.Status.Conditions, v1b1.ConditionBindingsReady)
		times[7] = conditionTime(w.Status.Conditions, v1b1.ConditionReady)
		out[w.Name] = times
	}
	for i := range bindings {
		b := &bindings[i]
		for _, w := range v1b1.WorkloadsOfBinding(b) {
			times, ok := out[w]
			if !ok {
				continue
			}
			later(&times[1], b.CreationTimestamp.Time)
			if b.Status.BindingTime != nil {
				later(&times[2], b.Status.BindingTime.Time)
			}
		}
	}
	for i := range plans {
		if times, ok := out[plans[i].Spec.WorkloadRef.Name]; ok {
			times[4] = plans[i].CreationTimestamp.Time
		}
	}
	for i := range deployments {
		d := &deployments[i]
		times, ok := out[d.Labels[v1b1.WorkloadLabel]]
		if !ok {
			continue
		}
		times[5] = d.CreationTimestamp.Time
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				times[6] = c.LastTransitionTime.Time
			}
		}
	}
	return out
}

// String summarizes the timeline: when the Workloads reached each stage, then the time each
// step took per Workload.
func (t timeline) String() string {
	return benchfloor.StageTable(stages, t, [][2]int{{0, 4}, {4, 5}, {0, 5}, {5, 6}, {6, 7}})
}
