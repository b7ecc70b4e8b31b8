package platformpolicy

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func newPolicy(name string, priority int32, mutate func(p *v1b1.PlatformPolicy)) *v1b1.PlatformPolicy {
	p := &v1b1.PlatformPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1b1.PlatformPolicySpec{Priority: priority}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func workload(labels map[string]string) *score.Workload {
	return &score.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", Labels: labels},
		Spec: score.WorkloadSpec{
			Containers: map[string]score.Container{"main": {Image: "registry.example.com/web:v1.2"}},
			Resources:  map[string]score.ResourceSpec{"db": {Type: "postgres"}, "cache": {Type: "redis", Class: "tiny"}},
		},
	}
}

func newPlugin(t testing.TB, policies ...*v1b1.PlatformPolicy) *Plugin {
	p := New()
	p.SetPolicies(policies)
	p.SetReadyFunc(func() bool { return true })
	return p
}

func attrs(w *score.Workload, op admission.Operation, dryRun bool) admission.Attributes {
	return admission.NewAttributesRecord(w, nil, score.Kind("Workload").WithVersion(""), w.Namespace, w.Name,
		score.Resource("workloads").WithVersion(""), "", op, &metav1.CreateOptions{}, dryRun, &user.DefaultInfo{Name: "alice"})
}

func admit(t testing.TB, p *Plugin, w *score.Workload) error {
	t.Helper()
	a := attrs(w, admission.Create, false)
	if err := p.Admit(context.Background(), a, nil); err != nil {
		return err
	}
	return p.Validate(context.Background(), a, nil)
}

func TestMatchingAndOrder(t *testing.T) {
	p := newPlugin(t,
		newPolicy("b-low", 1, func(p *v1b1.PlatformPolicy) { p.Spec.Defaults = &v1b1.PolicyDefaults{RuntimeClass: "nomad"} }),
		newPolicy("a-high", 10, func(p *v1b1.PlatformPolicy) {
			p.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
			p.Spec.Defaults = &v1b1.PolicyDefaults{RuntimeClass: "kubernetes", Labels: map[string]string{"tier": "gold"}}
		}),
		newPolicy("c-tie", 10, func(p *v1b1.PlatformPolicy) {
			p.Spec.Defaults = &v1b1.PolicyDefaults{Labels: map[string]string{"tier": "silver", "owner": "c"}}
		}),
		newPolicy("expr", 5, func(p *v1b1.PlatformPolicy) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}}}
			p.Spec.Defaults = &v1b1.PolicyDefaults{Annotations: map[string]string{"backup": "daily"}}
		}),
	)
	w := workload(map[string]string{"team": "a"})
	if err := admit(t, p, w); err != nil {
		t.Fatal(err)
	}
	if w.Spec.RuntimeClass != "kubernetes" {
		t.Errorf("runtimeClass = %q, want the highest priority's kubernetes", w.Spec.RuntimeClass)
	}
	if w.Labels["tier"] != "gold" || w.Labels["owner"] != "c" {
		t.Errorf("labels = %v: a-high (priority 10, first by name) must win tier, c-tie fills owner", w.Labels)
	}
	if _, ok := w.Annotations["backup"]; ok {
		t.Errorf("expr policy applied to a workload without env=prod")
	}
	if got := w.Annotations[AppliedPoliciesAnnotation]; got != "a-high,c-tie" {
		t.Errorf("applied annotation = %q, want a-high,c-tie (b-low changed nothing)", got)
	}

	other := workload(map[string]string{"team": "b", "env": "prod"})
	if err := admit(t, p, other); err != nil {
		t.Fatal(err)
	}
	if other.Spec.RuntimeClass != "nomad" || other.Annotations["backup"] != "daily" {
		t.Errorf("team b: runtimeClass %q annotations %v", other.Spec.RuntimeClass, other.Annotations)
	}
	if got := other.Annotations[AppliedPoliciesAnnotation]; got != "c-tie,expr,b-low" {
		t.Errorf("applied annotation = %q, want c-tie,expr,b-low", got)
	}
}

func TestExplicitValuesAreKept(t *testing.T) {
	p := newPlugin(t, newPolicy("defaults", 1, func(p *v1b1.PlatformPolicy) {
		p.Spec.Defaults = &v1b1.PolicyDefaults{RuntimeClass: "kubernetes", Labels: map[string]string{"team": "platform"},
			Resources: map[string]v1b1.ResourceDefaults{
				"postgres": {Class: "small", Params: &common.RawObject{Raw: []byte(`{"version":16}`)}},
				"redis":    {Class: "large"},
			}}
	}))
	w := workload(map[string]string{"team": "a"})
	w.Spec.RuntimeClass = "kubevirt"
	if err := admit(t, p, w); err != nil {
		t.Fatal(err)
	}
	if w.Spec.RuntimeClass != "kubevirt" || w.Labels["team"] != "a" {
		t.Errorf("explicit values overwritten: %q %v", w.Spec.RuntimeClass, w.Labels)
	}
	if db := w.Spec.Resources["db"]; db.Class != "small" || string(db.Params.Raw) != `{"version":16}` {
		t.Errorf("postgres defaults not applied: %+v", db)
	}
	if cache := w.Spec.Resources["cache"]; cache.Class != "tiny" {
		t.Errorf("explicit redis class overwritten: %q", cache.Class)
	}
}

func TestConstraints(t *testing.T) {
	cases := []struct {
		name   string
		spec   v1b1.PolicyConstraints
		mutate func(w *score.Workload)
		fields []string
	}{
		{"runtime allowed", v1b1.PolicyConstraints{AllowedRuntimeClasses: []string{"kubernetes"}}, func(w *score.Workload) { w.Spec.RuntimeClass = "kubernetes" }, nil},
		{"runtime not allowed", v1b1.PolicyConstraints{AllowedRuntimeClasses: []string{"kubernetes"}}, func(w *score.Workload) { w.Spec.RuntimeClass = "kubevirt" }, []string{"spec.runtimeClass"}},
		{"runtime unset", v1b1.PolicyConstraints{AllowedRuntimeClasses: []string{"kubernetes"}}, nil, []string{"spec.runtimeClass"}},
		{"type denied", v1b1.PolicyConstraints{ResourceTypes: &v1b1.ResourceTypeConstraints{Denied: []string{"redis"}}}, nil, []string{"spec.resources[cache].type"}},
		{"type not allowed", v1b1.PolicyConstraints{ResourceTypes: &v1b1.ResourceTypeConstraints{Allowed: []string{"redis"}}}, nil, []string{"spec.resources[db].type"}},
		{"registry allowed", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{AllowedRegistries: []string{"registry.example.com"}}}, nil, nil},
		{"registry not allowed", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{AllowedRegistries: []string{"ghcr.io"}}}, nil, []string{"spec.containers[main].image"}},
		{"docker hub short name", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{AllowedRegistries: []string{"docker.io/library"}}},
			func(w *score.Workload) { w.Spec.Containers["main"] = score.Container{Image: "nginx:1.27"} }, nil},
		{"docker hub user image not under library", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{AllowedRegistries: []string{"docker.io/library"}}},
			func(w *score.Workload) { w.Spec.Containers["main"] = score.Container{Image: "someone/nginx:1.27"} }, []string{"spec.containers[main].image"}},
		{"registry prefix is a path boundary", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{AllowedRegistries: []string{"ghcr.io/acme"}}},
			func(w *score.Workload) { w.Spec.Containers["main"] = score.Container{Image: "ghcr.io/acme-evil/app:1"} }, []string{"spec.containers[main].image"}},
		{"tag pattern matches", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{RequiredTags: []string{"v*"}}}, nil, nil},
		{"tag pattern fails", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{RequiredTags: []string{"v*"}}},
			func(w *score.Workload) {
				w.Spec.Containers["main"] = score.Container{Image: "registry.example.com/web:latest"}
			}, []string{"spec.containers[main].image"}},
		{"no tag means latest", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{RequiredTags: []string{"v*"}}},
			func(w *score.Workload) {
				w.Spec.Containers["main"] = score.Container{Image: "registry.example.com/web"}
			}, []string{"spec.containers[main].image"}},
		{"digest satisfies tags", v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{RequiredTags: []string{"v*"}}},
			func(w *score.Workload) {
				w.Spec.Containers["main"] = score.Container{Image: "registry.example.com/web@sha256:" + strings.Repeat("a", 64)}
			}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			p := newPlugin(t, newPolicy("rules", 1, func(p *v1b1.PlatformPolicy) { p.Spec.Constraints = &spec }))
			w := workload(nil)
			if tc.mutate != nil {
				tc.mutate(w)
			}
			err := admit(t, p, w)
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("unexpected rejection: %v", err)
				}
				return
			}
			status, ok := err.(apierrors.APIStatus)
			if !ok || !apierrors.IsForbidden(err) {
				t.Fatalf("error %v, want 403", err)
			}
			var got []string
			for _, c := range status.Status().Details.Causes {
				if c.Type != ReasonPolicyViolation {
					t.Errorf("cause type %q", c.Type)
				}
				got = append(got, c.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("causes at %v, want %v", got, tc.fields)
			}
			if msg := status.Status().Message; !strings.Contains(msg, `PlatformPolicy "rules"`) || strings.Count(msg, ". ") > 0 {
				t.Errorf("message %q is not one sentence naming the policy", msg)
			}
		})
	}
}

func TestInlineImagesAreConstrained(t *testing.T) {
	p := newPlugin(t, newPolicy("rules", 1, func(p *v1b1.PlatformPolicy) {
		p.Spec.Constraints = &v1b1.PolicyConstraints{Images: &v1b1.ImageConstraints{AllowedRegistries: []string{"registry.example.com"}}}
	}))
	w := &score.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec: score.WorkloadSpec{Source: &score.WorkloadSource{Inline: &common.RawObject{Raw: []byte(
			`{"apiVersion":"score.dev/v1b1","metadata":{"name":"web"},"containers":{"main":{"image":"docker.io/evil/miner"}}}`)}}},
	}
	err := admit(t, p, w)
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details.Causes[0].Field != "spec.source.inline.containers.main.image" {
		t.Fatalf("inline image not constrained: %v", err)
	}
}

func TestOtherResourcesAreIgnored(t *testing.T) {
	p := newPlugin(t, newPolicy("rules", 1, func(p *v1b1.PlatformPolicy) {
		p.Spec.Constraints = &v1b1.PolicyConstraints{AllowedRuntimeClasses: []string{"kubernetes"}}
	}))
	w := workload(nil)
	a := admission.NewAttributesRecord(w, nil, score.Kind("Workload").WithVersion(""), w.Namespace, w.Name,
		score.Resource("workloads").WithVersion(""), "status", admission.Update, &metav1.UpdateOptions{}, false, nil)
	if err := p.Validate(context.Background(), a, nil); err != nil {
		t.Errorf("status updates must not be policed: %v", err)
	}
}
