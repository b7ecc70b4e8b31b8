package benchfloor

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFloorTimeline(t *testing.T) {
	start := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	d := func(created, available int, status corev1.ConditionStatus) appsv1.Deployment {
		return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(start.Add(time.Duration(created) * time.Second))},
			Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: status,
				LastTransitionTime: metav1.NewTime(start.Add(time.Duration(available) * time.Second))}}}}
	}
	got := DeploymentTimeline([]appsv1.Deployment{d(1, 4, corev1.ConditionTrue), d(2, 9, corev1.ConditionTrue), d(3, 50, corev1.ConditionFalse)}, start)
	for _, want := range []string{"Deployment created 3 2 3 3", "Deployment Available 2 4 9 9"} {
		found := false
		for _, l := range strings.Split(got, "\n") {
			found = found || strings.Join(strings.Fields(l), " ") == want
		}
		if !found {
			t.Errorf("no line %q in\n%s", want, got)
		}
	}
}

func TestQuantiles(t *testing.T) {
	got := strings.Fields(Quantiles([]float64{9, 1, 5, 3, 7, 2, 8, 4, 6, 10}))
	if strings.Join(got, " ") != "5 9 10" {
		t.Errorf("got %v, want median 5, p90 9, last 10", got)
	}
	if got := Quantiles(nil); strings.Join(strings.Fields(got), " ") != "- - -" {
		t.Errorf("Quantiles(nil) = %q", got)
	}
}
