package transition

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
)

var testReasons = conditions.Declare("test.plinth.dev",
	conditions.Normal("BindingPending", "RuntimeProvisioning", "Succeeded", "Ready", "Bound"),
	conditions.Warning("BindingFailed", "DecryptionFailed"),
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
		fake := events.NewFakeRecorder(5)
		New(fake, testReasons).Conditions(obj, tc.before, tc.after, Rule{Condition: "Ready", ReadyReason: "Ready", Action: "Test"})
		if diff := cmp.Diff(tc.want, recorded(fake), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.what, diff)
		}
	}
}

func TestOutcomesOnlySkipsProgress(t *testing.T) {
	obj := &corev1.ConfigMap{}
	fake := events.NewFakeRecorder(5)
	r := New(fake, testReasons)
	rule := Rule{Condition: "Ready", ReadyReason: "Bound", Action: "Test", OutcomesOnly: true}
	r.Conditions(obj, nil, cond(metav1.ConditionFalse, "BindingPending", "Waiting."), rule)
	r.Conditions(obj, cond(metav1.ConditionFalse, "BindingPending", "Waiting."), cond(metav1.ConditionTrue, "Succeeded", "Up."), rule)
	r.Conditions(obj, cond(metav1.ConditionTrue, "Succeeded", "Up."), cond(metav1.ConditionFalse, "BindingFailed", "Refused."), rule)
	want := []string{"Normal Bound Up.", "Warning BindingFailed Refused."}
	if diff := cmp.Diff(want, recorded(fake)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The event type comes from the group's declaration: a reason declared a warning is one
// whichever controller records it (DecryptionFailed was recorded as Normal when a central
// list here had forgotten it), and one nobody declared is a warning too.
func TestRecordTypesByDeclaration(t *testing.T) {
	fake := events.NewFakeRecorder(5)
	r := New(fake, testReasons)
	r.Record(&corev1.ConfigMap{}, "DecryptionFailed", "Test", "Cannot decrypt.")
	r.Record(&corev1.ConfigMap{}, "Bound", "Test", "Bound.")
	r.Record(&corev1.ConfigMap{}, "NobodyDeclaredThis", "Test", "Odd.")
	want := []string{"Warning DecryptionFailed Cannot decrypt.", "Normal Bound Bound.", "Warning NobodyDeclaredThis Odd."}
	if diff := cmp.Diff(want, recorded(fake)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
