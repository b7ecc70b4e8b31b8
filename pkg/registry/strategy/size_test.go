package strategy_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/registry/score/workload"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
)

// sized is a valid Workload changed by change.
func sized(change func(w *score.Workload)) *score.Workload {
	w := stored()
	w.Status = score.WorkloadStatus{}
	change(w)
	return w
}

func TestObjectsOverMaxObjectBytesAreRefusedAtTheirLargestPart(t *testing.T) {
	big := strings.Repeat("x", strategy.MaxObjectBytes)
	manyLabels := map[string]string{}
	for i := range 100000 {
		manyLabels["k"+strconv.Itoa(i)] = "v"
	}
	s := strategy.New(newScheme(), workload.Definition)
	status := strategy.NewStatus(newScheme(), workload.Definition)
	for name, tc := range map[string]struct {
		obj  *score.Workload
		want string
	}{
		"a large variable": {obj: sized(func(w *score.Workload) {
			w.Spec.Containers["main"] = score.Container{Image: "nginx:1", Variables: map[string]string{"PAD": big}}
		}), want: "spec"},
		"many labels":        {obj: sized(func(w *score.Workload) { w.Labels = manyLabels }), want: "metadata.labels"},
		"a large annotation": {obj: sized(func(w *score.Workload) { w.Annotations = map[string]string{"a": big} }), want: "metadata.annotations"},
		"a large status": {obj: sized(func(w *score.Workload) {
			for i := range 40 {
				w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: "T" + strconv.Itoa(i), Status: "False", Reason: "R", Message: big[:30000]})
			}
		}), want: "status"},
	} {
		var errs field.ErrorList
		if tc.want == "status" {
			errs = status.ValidateUpdate(context.Background(), tc.obj, stored())
		} else {
			errs = s.Validate(context.Background(), tc.obj)
		}
		var found bool
		for _, e := range errs {
			if e.Type == field.ErrorTypeTooLong && !strings.Contains(e.Field, "[") {
				found = true
				if e.Field != tc.want || len(e.Error()) > 200 {
					t.Errorf("%s: %v, want a short TooLong at %s", name, e, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no TooLong error in %v", name, errs)
		}
	}
}

func TestObjectsUnderMaxObjectBytesPass(t *testing.T) {
	s := strategy.New(newScheme(), workload.Definition)
	w := sized(func(w *score.Workload) {
		w.Spec.Containers["main"] = score.Container{Image: "nginx:1", Variables: map[string]string{"PAD": strings.Repeat("x", strategy.MaxObjectBytes-4096)}}
		// Managed fields do not count: they are the API server's, not the client's.
		w.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "score.dev/v1b1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:` + strings.Repeat("m", 8192) + `":{}}`)}}}
	})
	if errs := s.Validate(context.Background(), w); len(errs) > 0 {
		t.Errorf("a Workload just under the bound: %v", errs)
	}
	if errs := s.ValidateUpdate(context.Background(), w, stored()); len(errs) > 0 {
		t.Errorf("an update just under the bound: %v", errs)
	}
}

// A kind whose internal type has no json tags (the gitops, compute, infrastructure and platform
// groups) is refused at the API's lower-case paths too, not at the Go field's name.
func TestObjectsOverMaxObjectBytesAreRefusedAtAPIPathsForUntaggedTypes(t *testing.T) {
	def := strategy.Definition[*gitops.OCIArtifact]{
		NamespaceScoped:      true,
		Validate:             func(*gitops.OCIArtifact) field.ErrorList { return nil },
		ValidateUpdate:       func(_, _ *gitops.OCIArtifact) field.ErrorList { return nil },
		ValidateStatusUpdate: func(_, _ *gitops.OCIArtifact) field.ErrorList { return nil },
	}
	manifest := common.RawObject{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"` +
		strings.Repeat("x", strategy.MaxObjectBytes) + `"}}`)}
	big := &gitops.OCIArtifact{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team-a"},
		Spec: gitops.OCIArtifactSpec{Name: "a", Version: "1.0.0", Manifests: []common.RawObject{manifest}}}
	errs := strategy.New(runtime.NewScheme(), def).Validate(context.Background(), big)
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeTooLong || errs[0].Field != "spec" {
		t.Errorf("an OCIArtifact with a large manifest: %v, want one TooLong at spec", errs)
	}
	old := big.DeepCopy()
	old.Spec.Manifests = nil
	withStatus := old.DeepCopy()
	withStatus.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "False", Reason: "R", Message: strings.Repeat("x", strategy.MaxObjectBytes)}}
	errs = strategy.NewStatus(runtime.NewScheme(), def).ValidateUpdate(context.Background(), withStatus, old)
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeTooLong || errs[0].Field != "status" {
		t.Errorf("an OCIArtifact with a large status: %v, want one TooLong at status", errs)
	}
}

// An object already over the bound (stored before it existed) may still shrink or keep its size,
// so that its finalizers can go and it can be repaired; it may not grow.
func TestAnObjectOverMaxObjectBytesMayShrinkButNotGrow(t *testing.T) {
	pad := strings.Repeat("x", strategy.MaxObjectBytes+1024)
	old := sized(func(w *score.Workload) {
		w.Finalizers = []string{"score.dev/cleanup"}
		w.Spec.Containers["main"] = score.Container{Image: "nginx:1", Variables: map[string]string{"PAD": pad}}
	})
	s := strategy.New(newScheme(), workload.Definition)
	status := strategy.NewStatus(newScheme(), workload.Definition)

	unfinalized := old.DeepCopy()
	unfinalized.Finalizers = nil
	if errs := s.ValidateUpdate(context.Background(), unfinalized, old); len(errs) > 0 {
		t.Errorf("removing the finalizer of an oversize Workload: %v", errs)
	}
	if errs := s.ValidateUpdate(context.Background(), old.DeepCopy(), old); len(errs) > 0 {
		t.Errorf("an unchanged oversize Workload: %v", errs)
	}
	grown := old.DeepCopy()
	grown.Annotations = map[string]string{"more": "x"}
	if errs := s.ValidateUpdate(context.Background(), grown, old); len(errs) != 1 || errs[0].Type != field.ErrorTypeTooLong {
		t.Errorf("growing an oversize Workload: %v, want one TooLong", errs)
	}
	withStatus := old.DeepCopy()
	withStatus.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Succeeded", Message: "m", LastTransitionTime: metav1.Now()}}
	if errs := status.ValidateUpdate(context.Background(), withStatus, old); len(errs) != 1 || errs[0].Type != field.ErrorTypeTooLong {
		t.Errorf("a status write that grows an oversize Workload: %v, want one TooLong", errs)
	}
}
