package strategy_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/install"
	"github.com/plinth-dev/plinth/pkg/registry/score/workload"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}

func stored() *score.Workload {
	return &score.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", Generation: 3, ResourceVersion: "7", Labels: map[string]string{"app": "web"}},
		Spec:       score.WorkloadSpec{RuntimeClass: "kubernetes", Containers: map[string]score.Container{"main": {Image: "nginx:1"}}},
		Status:     score.WorkloadStatus{ObservedGeneration: 3, Endpoint: ptr.To("http://web")},
	}
}

func TestPrepareForCreateDropsStatusAndStartsGeneration(t *testing.T) {
	s := strategy.New(newScheme(), workload.Definition)
	w := stored()
	s.PrepareForCreate(context.Background(), w)
	if w.Generation != 1 {
		t.Errorf("generation = %d, want 1", w.Generation)
	}
	if w.Status.Endpoint != nil || w.Status.ObservedGeneration != 0 {
		t.Errorf("status was not cleared: %+v", w.Status)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	s := strategy.New(newScheme(), workload.Definition)
	cases := map[string]struct {
		mutate         func(w *score.Workload)
		wantGeneration int64
	}{
		"spec change bumps generation":          {func(w *score.Workload) { w.Spec.RuntimeClass = "kubevirt" }, 4},
		"label change keeps generation":         {func(w *score.Workload) { w.Labels["tier"] = "front" }, 3},
		"client-set generation is ignored":      {func(w *score.Workload) { w.Generation = 99 }, 3},
		"status sent on main resource is reset": {func(w *score.Workload) { w.Status.Endpoint = ptr.To("http://evil") }, 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := stored()
			w := old.DeepCopy()
			tc.mutate(w)
			s.PrepareForUpdate(context.Background(), w, old)
			if w.Generation != tc.wantGeneration {
				t.Errorf("generation = %d, want %d", w.Generation, tc.wantGeneration)
			}
			if *w.Status.Endpoint != "http://web" {
				t.Errorf("status changed through the main resource: %q", *w.Status.Endpoint)
			}
		})
	}
}

func TestStatusUpdateKeepsSpecAndMetadata(t *testing.T) {
	s := strategy.NewStatus(newScheme(), workload.Definition)
	old := stored()
	w := old.DeepCopy()
	w.Spec.RuntimeClass = "kubevirt"
	w.Labels = map[string]string{"hijacked": "yes"}
	w.Status.Endpoint = ptr.To("https://web.example.com")
	s.PrepareForUpdate(context.Background(), w, old)
	if w.Spec.RuntimeClass != "kubernetes" {
		t.Errorf("spec changed through status: %q", w.Spec.RuntimeClass)
	}
	if w.Labels["hijacked"] != "" || w.Labels["app"] != "web" {
		t.Errorf("labels changed through status: %v", w.Labels)
	}
	if *w.Status.Endpoint != "https://web.example.com" {
		t.Errorf("status not taken: %q", *w.Status.Endpoint)
	}
	if w.Generation != 3 {
		t.Errorf("generation = %d, want 3", w.Generation)
	}
}

func TestResetFields(t *testing.T) {
	main := strategy.New(newScheme(), workload.Definition).GetResetFields()["score.dev/v1b1"]
	if !main.Has(fieldpath.MakePathOrDie("status")) || main.Has(fieldpath.MakePathOrDie("spec")) {
		t.Errorf("main resource reset fields = %v, want status only", main)
	}
	status := strategy.NewStatus(newScheme(), workload.Definition).GetResetFields()["score.dev/v1b1"]
	if !status.Has(fieldpath.MakePathOrDie("spec")) || status.Has(fieldpath.MakePathOrDie("status")) {
		t.Errorf("status reset fields = %v, want spec and metadata", status)
	}
}

func TestValidationIsTheKinds(t *testing.T) {
	s := strategy.New(newScheme(), workload.Definition)
	w := stored()
	w.Spec.Containers = nil
	if errs := s.Validate(context.Background(), w); len(errs) != 1 || errs[0].Field != "spec.containers" {
		t.Errorf("Validate = %v, want one error on spec.containers", errs)
	}
}

// A Workload records who created it or last changed its spec, from the request's user only:
// what a client writes in the annotation is replaced, and writes that leave the spec alone
// (labels, a forged annotation, status) keep the recorded user.
func TestRecordRequester(t *testing.T) {
	s := strategy.New(newScheme(), workload.Definition)
	status := strategy.NewStatus(newScheme(), workload.Definition)
	as := func(name string) context.Context {
		return genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name})
	}
	recorded := func(w *score.Workload) string { return w.Annotations[common.AnnotationRequestedBy] }

	created := stored()
	created.Annotations = map[string]string{common.AnnotationRequestedBy: "bob", "note": "kept"}
	s.PrepareForCreate(as("alice"), created)
	if recorded(created) != "alice" || created.Annotations["note"] != "kept" {
		t.Errorf("after alice's create: %v, want requested-by alice", created.Annotations)
	}
	anonymous := stored()
	anonymous.Annotations = map[string]string{common.AnnotationRequestedBy: "bob"}
	s.PrepareForCreate(context.Background(), anonymous)
	if _, ok := anonymous.Annotations[common.AnnotationRequestedBy]; ok {
		t.Errorf("a create without a user kept the client's %q", recorded(anonymous))
	}

	for name, tc := range map[string]struct {
		user   string
		mutate func(w *score.Workload)
		want   string
	}{
		"a spec change records its writer": {"carol", func(w *score.Workload) { w.Spec.RuntimeClass = "kubevirt" }, "carol"},
		"a spec change with a forged value records the writer": {"carol", func(w *score.Workload) {
			w.Spec.RuntimeClass = "kubevirt"
			w.Annotations[common.AnnotationRequestedBy] = "bob"
		}, "carol"},
		"a label change keeps the recorded user":     {"carol", func(w *score.Workload) { w.Labels["tier"] = "front" }, "alice"},
		"a forged value alone is replaced":           {"carol", func(w *score.Workload) { w.Annotations[common.AnnotationRequestedBy] = "bob" }, "alice"},
		"removing the annotation does not remove it": {"carol", func(w *score.Workload) { delete(w.Annotations, common.AnnotationRequestedBy) }, "alice"},
	} {
		t.Run(name, func(t *testing.T) {
			old := stored()
			old.Annotations = map[string]string{common.AnnotationRequestedBy: "alice"}
			w := old.DeepCopy()
			tc.mutate(w)
			s.PrepareForUpdate(as(tc.user), w, old)
			if got := recorded(w); got != tc.want {
				t.Errorf("requested-by %q, want %q", got, tc.want)
			}
			if old.Annotations[common.AnnotationRequestedBy] != "alice" {
				t.Errorf("the stored object's annotations were changed")
			}
		})
	}

	old := stored()
	old.Annotations = map[string]string{common.AnnotationRequestedBy: "alice"}
	w := old.DeepCopy()
	w.Annotations[common.AnnotationRequestedBy] = "bob"
	w.Status.Endpoint = ptr.To("https://web.example.com")
	status.PrepareForUpdate(as("plinth-controller"), w, old)
	if recorded(w) != "alice" {
		t.Errorf("a status write changed requested-by to %q", recorded(w))
	}
}
