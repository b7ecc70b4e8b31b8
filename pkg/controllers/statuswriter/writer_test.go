package statuswriter

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
)

var reasons = conditions.Declare("test.plinth.dev",
	conditions.Normal("Succeeded", "Pending"),
	conditions.Warning("DecryptionFailed"),
)

// A Namespace stands in for a typed object with conditions in its status.
func nsConditions(ns *corev1.Namespace) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range ns.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

func withCondition(ns *corev1.Namespace, status corev1.ConditionStatus, reason, message string) *corev1.Namespace {
	out := ns.DeepCopy()
	out.Status.Conditions = []corev1.NamespaceCondition{{Type: "Ready", Status: status, Reason: reason, Message: message}}
	return out
}

type server struct {
	managers []string
	version  int
}

func (s *server) update(_ context.Context, ns *corev1.Namespace, opts metav1.UpdateOptions) (*corev1.Namespace, error) {
	s.managers = append(s.managers, opts.FieldManager)
	s.version++
	out := ns.DeepCopy()
	out.ResourceVersion = strings.Repeat("v", s.version)
	return out, nil
}

func newWriter(s *server, rec events.EventRecorder, written *loop.Written[*corev1.Namespace]) *Writer[*corev1.Namespace] {
	return &Writer[*corev1.Namespace]{
		FieldManager: "plinth-test",
		Reasons:      reasons,
		Conditions:   nsConditions,
		Update:       s.update,
		Events:       transition.New(rec, reasons),
		Rules:        []transition.Rule{{Condition: "Ready", ReadyReason: "Succeeded", Action: "Test"}},
		Written:      written,
	}
}

func TestWriteOnlyRealChanges(t *testing.T) {
	ctx := context.Background()
	s, rec, written := &server{}, events.NewFakeRecorder(10), &loop.Written[*corev1.Namespace]{}
	w := newWriter(s, rec, written)
	base := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u", ResourceVersion: "1"}}

	pending := withCondition(base, corev1.ConditionFalse, "Pending", "Waiting.")
	stored, wrote, err := w.Write(ctx, base, pending)
	if err != nil || !wrote {
		t.Fatalf("first write: wrote=%v err=%v", wrote, err)
	}
	// The same status again: no request, no event.
	if _, wrote, err := w.Write(ctx, stored, stored.DeepCopy()); err != nil || wrote {
		t.Fatalf("unchanged status: wrote=%v err=%v", wrote, err)
	}
	// Until the cache shows the write, the controller reconciles from what the write returned.
	if got := written.Fresher(cache.NewObjectName("", "a"), base); got.ResourceVersion != stored.ResourceVersion {
		t.Errorf("Fresher after a write = version %q, want the written %q", got.ResourceVersion, stored.ResourceVersion)
	}
	if _, _, err := w.Write(ctx, stored, withCondition(stored, corev1.ConditionFalse, "DecryptionFailed", "Cannot decrypt.")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"plinth-test", "plinth-test"}, s.managers); diff != "" {
		t.Errorf("field managers (-want +got):\n%s", diff)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	want := []string{"Normal Pending Waiting.", "Warning DecryptionFailed Cannot decrypt."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// A controller that writes a reason its API group does not declare gets an error and writes
// nothing: every controller test that reaches such a status fails.
func TestWriteRefusesUndeclaredReasons(t *testing.T) {
	s := &server{}
	w := newWriter(s, events.NewFakeRecorder(10), nil)
	base := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	_, wrote, err := w.Write(context.Background(), base, withCondition(base, corev1.ConditionFalse, "ClusterUnreachable", "Down."))
	if err == nil || wrote || len(s.managers) != 0 {
		t.Fatalf("undeclared reason: wrote=%v err=%v requests=%d", wrote, err, len(s.managers))
	}
	if !strings.Contains(err.Error(), `"ClusterUnreachable"`) || !strings.Contains(err.Error(), "test.plinth.dev") {
		t.Errorf("error %q should name the reason and the group", err)
	}
}

func TestWriteNeedsOneWayToWrite(t *testing.T) {
	w := &Writer[*corev1.Namespace]{FieldManager: "plinth-test", Reasons: reasons, Conditions: nsConditions}
	base := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	if _, _, err := w.Write(context.Background(), base, withCondition(base, corev1.ConditionTrue, "Succeeded", "Up.")); err == nil {
		t.Fatal("a writer with neither Update nor Apply wrote")
	}
}
