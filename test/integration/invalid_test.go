package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestInvalidObjectsRejected sends malformed objects of every kind and checks each is refused
// with 422 Invalid naming the offending field, and that nothing was stored.
func TestInvalidObjectsRejected(t *testing.T) {
	p := framework.StartPlinth(t, framework.Options{})
	ctx := context.Background()
	score := p.Client.ScoreV1b1()
	const ns = "invalid"

	workload := func(mutate func(w *v1b1.Workload)) func() error {
		return func() error {
			w := newWorkload("web", "kubernetes")
			mutate(w)
			_, err := score.Workloads(ns).Create(ctx, w, metav1.CreateOptions{})
			return err
		}
	}
	cases := []struct {
		name   string
		create func() error
		fields []string
	}{
		{"workload name with capitals", workload(func(w *v1b1.Workload) { w.Name = "Web" }), []string{"metadata.name"}},
		{"workload without containers or source", workload(func(w *v1b1.Workload) { w.Spec.Containers = nil }), []string{"spec.containers"}},
		{"source with inline and configMapRef", workload(func(w *v1b1.Workload) {
			w.Spec.Source = &v1b1.WorkloadSource{Inline: &common.RawObject{Raw: []byte(`{"apiVersion":"score.dev/v1b1"}`)},
				ConfigMapRef: &v1b1.ConfigMapKeyReference{Name: "score", Key: "score.yaml"}}
		}), []string{"spec.source"}},
		{"empty source", workload(func(w *v1b1.Workload) { w.Spec.Source = &v1b1.WorkloadSource{} }), []string{"spec.source"}},
		{"container without image", workload(func(w *v1b1.Workload) { w.Spec.Containers["main"] = v1b1.Container{} }), []string{"spec.containers[main].image"}},
		{"file with content and source", workload(func(w *v1b1.Workload) {
			c := w.Spec.Containers["main"]
			c.Files[0].Source = ptrTo("app.conf")
		}), []string{"spec.containers[main].files[0]"}},
		{"file with relative target", workload(func(w *v1b1.Workload) {
			w.Spec.Containers["main"].Files[0].Target = "etc/app.conf"
		}), []string{"spec.containers[main].files[0].target"}},
		{"resource without type", workload(func(w *v1b1.Workload) { w.Spec.Resources["db"] = v1b1.ResourceSpec{} }), []string{"spec.resources[db].type"}},
		{"resource params not an object", workload(func(w *v1b1.Workload) {
			w.Spec.Resources["db"] = v1b1.ResourceSpec{Type: "postgres", Params: &common.RawObject{Raw: []byte(`["a"]`)}}
		}), []string{"spec.resources[db].params"}},
		{"port out of range", workload(func(w *v1b1.Workload) { w.Spec.Service.Ports["web"] = v1b1.ServicePort{Port: 70000} }), []string{"spec.service.ports[web].port"}},
		{"port missing", workload(func(w *v1b1.Workload) { w.Spec.Service.Ports["web"] = v1b1.ServicePort{TargetPort: 8080} }), []string{"spec.service.ports[web].port"}},
		{"port protocol unsupported", workload(func(w *v1b1.Workload) { w.Spec.Service.Ports["web"] = v1b1.ServicePort{Port: 80, Protocol: "SCTP"} }), []string{"spec.service.ports[web].protocol"}},
		{"variable name invalid", workload(func(w *v1b1.Workload) { w.Spec.Containers["main"].Variables["1X"] = "y" }), []string{"spec.containers[main].variables.1X"}},
		{"several errors at once", workload(func(w *v1b1.Workload) {
			w.Spec.RuntimeClass = "Not A Label"
			w.Spec.Containers["main"] = v1b1.Container{}
		}), []string{"spec.runtimeClass", "spec.containers[main].image"}},
		{"policy with bad selector", func() error {
			pol := newPolicy("bad-selector", 1)
			pol.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}
			_, err := score.PlatformPolicies().Create(ctx, pol, metav1.CreateOptions{})
			return err
		}, []string{"spec.selector.matchExpressions[0].operator"}},
		{"policy allowing and denying a type", func() error {
			pol := newPolicy("contradiction", 1)
			pol.Spec.Constraints.ResourceTypes = &v1b1.ResourceTypeConstraints{Allowed: []string{"redis"}, Denied: []string{"redis"}}
			_, err := score.PlatformPolicies().Create(ctx, pol, metav1.CreateOptions{})
			return err
		}, []string{"spec.constraints.resourceTypes.denied[0]"}},
		{"binding without type", func() error {
			b := newBinding("web-db", "web", "db")
			b.Spec.Type = ""
			_, err := score.ResourceBindings(ns).Create(ctx, b, metav1.CreateOptions{})
			return err
		}, []string{"spec.type"}},
		{"binding with malformed workload UID", func() error {
			b := newBinding("web-db", "web", "db")
			b.Spec.WorkloadRef.UID = "1234"
			_, err := score.ResourceBindings(ns).Create(ctx, b, metav1.CreateOptions{})
			return err
		}, []string{"spec.workloadRef.uid"}},
		{"plan without runtimeClass", func() error {
			plan := newPlan("web")
			plan.Spec.RuntimeClass = ""
			_, err := score.WorkloadPlans(ns).Create(ctx, plan, metav1.CreateOptions{})
			return err
		}, []string{"spec.runtimeClass"}},
		{"plan for another workload's name", func() error {
			plan := newPlan("web")
			plan.Spec.WorkloadRef.Name = "api"
			_, err := score.WorkloadPlans(ns).Create(ctx, plan, metav1.CreateOptions{})
			return err
		}, []string{"spec.workloadRef.name"}},
		{"plan env with value and from", func() error {
			plan := newPlan("web")
			plan.Spec.Projection.Containers["main"].Env[0].Value = ptrTo("x")
			_, err := score.WorkloadPlans(ns).Create(ctx, plan, metav1.CreateOptions{})
			return err
		}, []string{"spec.projection.containers[main].env[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create()
			expectInvalid(t, err, tc.fields...)
			status := err.(apierrors.APIStatus).Status()
			if status.Reason != metav1.StatusReasonInvalid || status.Code != 422 {
				t.Errorf("status reason=%s code=%d", status.Reason, status.Code)
			}
			for _, c := range status.Details.Causes {
				if c.Message == "" || strings.Contains(c.Message, "\n") {
					t.Errorf("cause %s has no one-line message: %q", c.Field, c.Message)
				}
			}
		})
	}

	// Nothing half-written: every list is empty.
	wl, _ := score.Workloads(ns).List(ctx, metav1.ListOptions{})
	pols, _ := score.PlatformPolicies().List(ctx, metav1.ListOptions{})
	bs, _ := score.ResourceBindings(ns).List(ctx, metav1.ListOptions{})
	plans, _ := score.WorkloadPlans(ns).List(ctx, metav1.ListOptions{})
	if n := len(wl.Items) + len(pols.Items) + len(bs.Items) + len(plans.Items); n != 0 {
		t.Errorf("%d invalid objects were stored", n)
	}

	t.Run("invalid update keeps the stored object", func(t *testing.T) {
		w, err := score.Workloads(ns).Create(ctx, newWorkload("keep", "kubernetes"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bad := w.DeepCopy()
		bad.Spec.Service.Ports["web"] = v1b1.ServicePort{Port: -5}
		_, err = score.Workloads(ns).Update(ctx, bad, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.service.ports[web].port")
		got, _ := score.Workloads(ns).Get(ctx, "keep", metav1.GetOptions{})
		if got.ResourceVersion != w.ResourceVersion || got.Spec.Service.Ports["web"].Port != 80 {
			t.Errorf("stored object changed: rv %s→%s port %d", w.ResourceVersion, got.ResourceVersion, got.Spec.Service.Ports["web"].Port)
		}
		b, err := score.ResourceBindings(ns).Create(ctx, newBinding("keep-db", "keep", "db"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Spec.ResourceKey = "cache"
		_, err = score.ResourceBindings(ns).Update(ctx, b, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.resourceKey")
	})

	t.Run("malformed JSON is a 400 naming the field", func(t *testing.T) {
		body := `{"apiVersion":"score.dev/v1b1","kind":"Workload","metadata":{"name":"x"},"spec":{"service":{"ports":{"web":{"port":"eighty"}}}}}`
		err := p.Client.ScoreV1b1().RESTClient().Post().Namespace(ns).Resource("workloads").
			SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error()
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "spec.service.ports") {
			t.Errorf("wrong-typed port: %v, want 400 naming spec.service.ports", err)
		}
	})

	t.Run("unknown fields are reported with strict field validation", func(t *testing.T) {
		out, err := framework.KubectlStdin(p.Kubeconfig, `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: typo
  namespace: invalid
spec:
  containers:
    main:
      image: nginx
      imagePullPolicy: Always
`, "create", "--validate=strict", "-f", "-")
		if err == nil || !strings.Contains(out, `unknown field "spec.containers.main.imagePullPolicy"`) {
			t.Errorf("kubectl create --validate=strict with an unknown field: %v\n%s", err, out)
		}
	})
}
