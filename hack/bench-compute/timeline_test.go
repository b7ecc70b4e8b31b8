package main

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/internal/benchfloor"
	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	tc := func(name string, created, provisioned, ready int) v1alpha1.TenantCompute {
		p := at(provisioned)
		return v1alpha1.TenantCompute{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created)},
			Spec:       v1alpha1.TenantComputeSpec{TenantID: name},
			Status: v1alpha1.TenantComputeStatus{ProvisionResult: &v1alpha1.ProvisionResult{ProvisionedAt: &p},
				Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: at(ready)}}},
		}
	}
	dep := func(tenant string, created, available int, status corev1.ConditionStatus) appsv1.Deployment {
		return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(created), Labels: map[string]string{v1alpha1.LabelTenantID: tenant}},
			Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastTransitionTime: at(1000)},
				{Type: appsv1.DeploymentAvailable, Status: status, LastTransitionTime: at(available)}}}}
	}
	tl := buildTimeline(
		[]v1alpha1.TenantCompute{tc("a", 1, 3, 10), tc("b", 2, 5, 30), tc("c", 2, 6, 40)},
		[]appsv1.Deployment{dep("a", 3, 8, corev1.ConditionTrue), dep("b", 5, 20, corev1.ConditionTrue), dep("c", 6, 30, corev1.ConditionFalse)},
	)
	if got := tl["b"]; !got[0].Equal(t0.Add(2*time.Second)) || !got[3].Equal(t0.Add(20*time.Second)) || !got[4].Equal(t0.Add(30*time.Second)) {
		t.Errorf("b: %v", got)
	}
	if !tl["c"][3].IsZero() {
		t.Errorf("c's Deployment is not Available, yet has a time: %v", tl["c"][3])
	}
	lines := strings.Split(tl.String(), "\n")
	for _, want := range []string{
		"TenantCompute created                 3        1        1        1",
		"Deployment Available                  2        7       19       19",
		"TenantCompute Ready                   3       29       39       39",
		"Deployment Available → TenantCompute Ready 2 2 10 10",
	} {
		found := false
		for _, l := range lines {
			if strings.Join(strings.Fields(l), " ") == strings.Join(strings.Fields(want), " ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no line %q in\n%s", want, tl.String())
		}
	}
	if got := benchfloor.Quantiles(nil); strings.Join(strings.Fields(got), " ") != "- - -" {
		t.Errorf("benchfloor.Quantiles(nil) = %q", got)
	}
}

func TestEventReasons(t *testing.T) {
	ev := func(namespace, kind, reason string, count int32, series *corev1.EventSeries) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, InvolvedObject: corev1.ObjectReference{Kind: kind},
			Reason: reason, Count: count, Series: series}
	}
	got := eventReasons([]corev1.Event{
		ev("tenant-a", "ReplicaSet", "FailedCreate", 3, nil),
		ev("tenant-b", "ReplicaSet", "FailedCreate", 0, nil),
		ev("floor-a", "Pod", "Scheduled", 0, &corev1.EventSeries{Count: 4}),
		ev("team-a", "TenantCompute", "Ready", 1, nil),
	})
	want := benchharness.Counts{"plinth ReplicaSet FailedCreate": 4, "floor Pod Scheduled": 4, "other TenantCompute Ready": 1}
	if got.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
