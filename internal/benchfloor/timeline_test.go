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

func TestStageTable(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	stages := []string{"created", "children made (last)", "ready"}
	times := map[string][]time.Time{
		"a": {at(10), at(12), at(20)},
		"b": {at(11), {}, at(40)}, // no child stage: left out of that stage and of its steps
		"c": {at(12)},             // a short record (bad input) counts for the stages it has
	}
	got := StageTable(stages, times, [][2]int{{0, 1}, {1, 2}, {0, 2}})
	lines := map[string]bool{}
	for _, l := range strings.Split(got, "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{
		"created 3 1 2 2",
		"children made (last) 1 2 2 2",
		"ready 2 10 30 30",
		"created → children made 1 2 2 2",
		"children made → ready 1 8 8 8",
		"created → ready 2 10 29 29",
	} {
		if !lines[want] {
			t.Errorf("no line %q in\n%s", want, got)
		}
	}
	if empty := StageTable(stages, nil, nil); strings.Count(empty, "\n") != 1+len(stages) || !strings.Contains(strings.Join(strings.Fields(empty), " "), "created 0 - - -") {
		t.Errorf("no objects:\n%s", empty)
	}
}
