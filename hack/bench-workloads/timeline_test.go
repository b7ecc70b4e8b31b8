package main

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	cond := func(typ string, s int) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, LastTransitionTime: at(s)}
	}
	w := func(name string, created, bindingsReady, ready int) v1b1.Workload {
		return v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created)},
			Status: v1b1.WorkloadStatus{Conditions: []metav1.Condition{cond(v1b1.ConditionBindingsReady, bindingsReady), cond(v1b1.ConditionReady, ready)}}}
	}
	binding := func(name, workload string, created, bound int) v1b1.ResourceBinding {
		bt := at(bound)
		return v1b1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created),
			Labels: map[string]string{v1b1.WorkloadBindingLabel(workload): "dns"}}, Status: v1b1.ResourceBindingStatus{BindingTime: &bt}}
	}
	plan := func(workload string, created int) v1b1.WorkloadPlan {
		return v1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Name: workload, CreationTimestamp: at(created)},
			Spec: v1b1.WorkloadPlanSpec{WorkloadRef: v1b1.PlanWorkloadReference{Name: workload}}}
	}
	deployment := func(workload string, created, available int, status corev1.ConditionStatus) appsv1.Deployment {
		return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: workload, CreationTimestamp: at(created), Labels: map[string]string{v1b1.WorkloadLabel: workload}},
			Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: status, LastTransitionTime: at(available)}}}}
	}
	tl := buildTimeline(
		[]v1b1.Workload{w("a", 0, 3, 12), w("b", 1, 5, 20), {ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: at(2)}}},
		[]v1b1.ResourceBinding{binding("a-dns", "a", 1, 2), binding("a-db", "a", 2, 3), binding("b-dns", "b", 2, 4), binding("x-dns", "x", 9, 9)},
		[]v1b1.WorkloadPlan{plan("a", 4), plan("b", 6), plan("x", 9)},
		[]appsv1.Deployment{deployment("a", 5, 10, corev1.ConditionTrue), deployment("b", 7, 18, corev1.ConditionTrue), deployment("c", 8, 30, corev1.ConditionFalse)},
	)
	if len(tl) != 3 {
		t.Fatalf("%d Workloads in the timeline, want 3: %v", len(tl), tl)
	}
	wantA := []int{0, 2, 3, 3, 4, 5, 10, 12}
	for i, s := range wantA {
		if got := tl["a"][i]; !got.Equal(at(s).Time) {
			t.Errorf("a, %s: %v, want %d s", stages[i], got, s)
		}
	}
	if c := tl["c"]; !c[6].IsZero() || !c[7].IsZero() || !c[1].IsZero() || !c[5].Equal(at(8).Time) {
		t.Errorf("c: %v", c)
	}
	out := tl.String()
	for _, want := range []string{
		"Workload created 3 1 2 2",
		"bindings created 2 2 2 2",
		"Deployment Available 2 10 18 18",
		"Workload Ready 2 12 20 20",
		"Workload created → WorkloadPlan created 2 4 5 5",
		"Deployment created → Deployment Available 2 5 11 11",
		"Deployment Available → Workload Ready 2 2 2 2",
	} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(strings.ReplaceAll(l, "(last)", ""))
			found = found || strings.Join(f, " ") == want
		}
		if !found {
			t.Errorf("no line %q in\n%s", want, out)
		}
	}
}
