package platformpolicy

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

func policy(name string, priority int32, mutate func(p *v1b1.PlatformPolicy)) *v1b1.PlatformPolicy {
	p := &v1b1.PlatformPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1b1.PlatformPolicySpec{Priority: priority}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func workload() *v1b1.Workload {
	return &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec: v1b1.WorkloadSpec{
			Containers: map[string]v1b1.Container{"main": {Image: "registry.example.com/web:v1.2"}},
			Resources:  map[string]v1b1.ResourceSpec{"db": {Type: "postgres"}, "cache": {Type: "redis", Class: "tiny"}},
		},
	}
}

func names(compiled []*Compiled) string {
	var out []string
	for _, c := range compiled {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

func TestSnapshotMatchingOrder(t *testing.T) {
	var s Snapshot
	if got := s.Matching(nil, nil); got != nil {
		t.Errorf("an empty snapshot matched %v", names(got))
	}
	s.Set([]*v1b1.PlatformPolicy{
		policy("b-low", 1, nil),
		policy("c-tie", 10, nil),
		policy("a-high", 10, func(p *v1b1.PlatformPolicy) {
			p.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		}),
		policy("bad", 5, func(p *v1b1.PlatformPolicy) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Nope"}}}
		}),
	})
	if got := names(s.Matching(map[string]string{"team": "a"}, nil)); got != "a-high,c-tie,b-low" {
		t.Errorf("matching team a = %s, want a-high,c-tie,b-low (priority, then name; the bad policy skipped)", got)
	}
	if got := names(s.Matching(map[string]string{"team": "b"}, nil)); got != "c-tie,b-low" {
		t.Errorf("matching team b = %s, want c-tie,b-low", got)
	}
}

func TestNamespaceSelector(t *testing.T) {
	var s Snapshot
	s.Set([]*v1b1.PlatformPolicy{policy("team-ns", 1, func(p *v1b1.PlatformPolicy) {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	})})
	c := s.Matching(nil, map[string]string{"team": "a"})[0]
	if !c.Matches(nil, map[string]string{"team": "a"}) || c.Matches(nil, map[string]string{"team": "b"}) || c.Matches(nil, nil) {
		t.Errorf("namespaceSelector matching is wrong")
	}
}

func TestApplyDefaults(t *testing.T) {
	var s Snapshot
	s.Set([]*v1b1.PlatformPolicy{
		policy("first", 2, func(p *v1b1.PlatformPolicy) {
			p.Spec.Defaults = &v1b1.PolicyDefaults{RuntimeClass: "kubernetes", Labels: map[string]string{"tier": "gold"},
				Resources: map[string]v1b1.ResourceDefaults{"postgres": {Class: "small", Params: &common.RawObject{Raw: []byte(`{"version":16}`)}}}}
		}),
		policy("second", 1, func(p *v1b1.PlatformPolicy) {
			p.Spec.Defaults = &v1b1.PolicyDefaults{RuntimeClass: "kubevirt", Labels: map[string]string{"tier": "silver"},
				Resources: map[string]v1b1.ResourceDefaults{"redis": {Class: "large"}, "dns": {Class: "public"}}}
		}),
	})
	w := workload()
	applied := ApplyDefaults(w, nil, s.Matching(nil, nil))
	if strings.Join(applied, ",") != "first" {
		t.Errorf("applied = %v, want only first (second offers nothing still unset)", applied)
	}
	if w.Spec.RuntimeClass != "kubernetes" || w.Labels["tier"] != "gold" {
		t.Errorf("the higher priority did not win: %q %v", w.Spec.RuntimeClass, w.Labels)
	}
	if db := w.Spec.Resources["db"]; db.Class != "small" || string(db.Params.Raw) != `{"version":16}` {
		t.Errorf("db = %+v", db)
	}
	if cache := w.Spec.Resources["cache"]; cache.Class != "tiny" {
		t.Errorf("an explicit class was overwritten: %+v", cache)
	}

	// A resource only the inline document declares is defaulted through a spec entry that
	// carries its type, which pkg/score merges with the document.
	w = workload()
	resolved := &scorespec.Workload{Resources: map[string]v1b1.ResourceSpec{
		"db": {Type: "postgres"}, "cache": {Type: "redis", Class: "tiny"}, "host": {Type: "dns"},
	}}
	applied = ApplyDefaults(w, resolved, s.Matching(nil, nil)[1:])
	if host := w.Spec.Resources["host"]; strings.Join(applied, ",") != "second" || host != (v1b1.ResourceSpec{Type: "dns", Class: "public"}) {
		t.Errorf("inline-only resource: applied %v, spec entry %+v", applied, host)
	}
}

func TestViolations(t *testing.T) {
	var s Snapshot
	s.Set([]*v1b1.PlatformPolicy{policy("rules", 1, func(p *v1b1.PlatformPolicy) {
		p.Spec.Constraints = &v1b1.PolicyConstraints{
			AllowedRuntimeClasses: []string{"kubernetes"},
			ResourceTypes:         &v1b1.ResourceTypeConstraints{Denied: []string{"redis"}},
			Images:                &v1b1.ImageConstraints{AllowedRegistries: []string{"ghcr.io/acme"}, RequiredTags: []string{"v*"}},
		}
	})})
	w := workload()
	w.Spec.RuntimeClass = "kubevirt"
	resolved, errs := scorespec.Merge(w)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, v := range s.Matching(nil, nil)[0].Violations(NewFacts(w, resolved)) {
		got = append(got, fmt.Sprintf("%s %s: %s", v.Policy, v.Field, v.Message))
	}
	want := []string{
		`rules spec.runtimeClass: runtime class "kubevirt" is not one of the allowed runtime classes (kubernetes)`,
		`rules spec.resources[cache].type: resource type "redis" is denied`,
		`rules spec.containers[main].image: image "registry.example.com/web:v1.2" does not come from an allowed registry (ghcr.io/acme)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f := NewFacts(w, resolved); f.Images[0].Path.String() != field.NewPath("spec", "containers").Key("main").Child("image").String() {
		t.Errorf("image path = %s", f.Images[0].Path)
	}
}

func TestParseImage(t *testing.T) {
	for image, want := range map[string]string{
		"nginx":                          "docker.io library/nginx latest ",
		"nginx:1.27":                     "docker.io library/nginx 1.27 ",
		"someone/app:2":                  "docker.io someone/app 2 ",
		"index.docker.io/someone/app":    "docker.io someone/app latest ",
		"localhost:5000/app:dev":         "localhost:5000 app dev ",
		"registry.example.com/a/b/c:v1":  "registry.example.com a/b/c v1 ",
		"ghcr.io/acme/app@sha256:abc":    "ghcr.io acme/app  sha256:abc",
		"ghcr.io/acme/app:v1@sha256:abc": "ghcr.io acme/app v1 sha256:abc",
	} {
		r := ParseImage(image)
		if got := fmt.Sprintf("%s %s %s %s", r.Registry, r.Repository, r.Tag, r.Digest); got != want {
			t.Errorf("ParseImage(%q) = %q, want %q", image, got, want)
		}
	}
}
