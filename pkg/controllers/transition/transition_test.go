package transition

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
)

func cond(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: message}}
}

func recorded(r *events.FakeRecorder) []string {
	var out []string
	for len(r.Events) > 0 {
		out = append(out, <-r.Events)
	}
	return out
}

func TestConditionRecordsTransitionsOnly(t *testing.T) {
	obj := &corev1.ConfigMap{}
	pending, provisioning := cond(metav1.ConditionFalse, "BindingPending", "Waiting."), cond(metav1.ConditionFalse, "RuntimeProvisioning", "Rolling out.")
	ready, failed := cond(metav1.ConditionTrue, "Succeeded", "Up."), cond(metav1.ConditionFalse, "BindingFailed", "Refused.")
	for _, tc := range []struct {
		what          string
		before, after []metav1.Condition
		want          []string
	}{
		{"first status", nil, pending, []string{"Normal BindingPending Waiting."}},
		{"same reason, new message", pending, cond(metav1.ConditionFalse, "BindingPending", "Still waiting."), nil},
		{"new reason", pending, provisioning, []string{"Normal RuntimeProvisioning Rolling out."}},
		{"ready", provisioning, ready, []string{"Normal Ready Up."}},
		{"unchanged", ready, ready, nil},
		{"failure is a warning", pending, failed, []string{"Warning BindingFailed Refused."}},
		{"no condition", nil, nil, nil},
	} {
		r := events.NewFakeRecorder(5)
		Condition(r, obj, tc.before, tc.after, "Ready", "Ready", "Test")
		if diff := cmp.Diff(tc.want, recorded(r), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.what, diff)
		}
	}
}

func TestOutcomeSkipsProgress(t *testing.T) {
	obj := &corev1.ConfigMap{}
	r := events.NewFakeRecorder(5)
	Outcome(r, obj, nil, cond(metav1.ConditionFalse, "BindingPending", "Waiting."), "Ready", "Bound", "Test")
	Outcome(r, obj, cond(metav1.ConditionFalse, "BindingPending", "Waiting."), cond(metav1.ConditionTrue, "Succeeded", "Up."), "Ready", "Bound", "Test")
	Outcome(r, obj, cond(metav1.ConditionTrue, "Succeeded", "Up."), cond(metav1.ConditionFalse, "BindingFailed", "Refused."), "Ready", "Bound", "Test")
	want := []string{"Normal Bound Up.", "Warning BindingFailed Refused."}
	if diff := cmp.Diff(want, recorded(r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
