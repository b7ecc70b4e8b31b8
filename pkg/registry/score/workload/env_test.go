package workload

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/validation"
)

func withEnv(vars, env map[string]string) *score.Workload {
	return &score.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"}, Spec: score.WorkloadSpec{Containers: map[string]score.Container{
		"web": {Image: "nginx", Variables: vars, Env: env}}}}
}

func TestEnvAndVariablesOnCreate(t *testing.T) {
	for name, tc := range map[string]struct {
		vars, env, want map[string]string
		invalid         bool
	}{
		"variables only":  {vars: map[string]string{"A": "1"}, want: map[string]string{"A": "1"}},
		"env only (seed)": {env: map[string]string{"A": "1"}, want: map[string]string{"A": "1"}},
		"both, equal":     {vars: map[string]string{"A": "1"}, env: map[string]string{"A": "1"}, want: map[string]string{"A": "1"}},
		"both, different": {vars: map[string]string{"A": "1"}, env: map[string]string{"A": "2"}, invalid: true},
		"neither":         {},
	} {
		t.Run(name, func(t *testing.T) {
			w := withEnv(tc.vars, tc.env)
			Definition.PrepareForCreate(context.Background(), w)
			expectEnv(t, w, tc.want, tc.invalid)
		})
	}
}

func TestEnvAndVariablesOnUpdate(t *testing.T) {
	stored := func() *score.Workload { return withEnv(map[string]string{"A": "1"}, map[string]string{"A": "1"}) }
	for name, tc := range map[string]struct {
		vars, env, want map[string]string
		invalid         bool
	}{
		// A client that knows only variables changes only variables: env follows.
		"variables changed": {vars: map[string]string{"A": "2"}, env: map[string]string{"A": "1"}, want: map[string]string{"A": "2"}},
		// A client that knows only the seed's env: variables follow.
		"env changed":               {vars: map[string]string{"A": "1"}, env: map[string]string{"B": "3"}, want: map[string]string{"B": "3"}},
		"variables removed":         {env: map[string]string{"A": "1"}},
		"both changed alike":        {vars: map[string]string{"C": "4"}, env: map[string]string{"C": "4"}, want: map[string]string{"C": "4"}},
		"both changed, differently": {vars: map[string]string{"C": "4"}, env: map[string]string{"C": "5"}, invalid: true},
	} {
		t.Run(name, func(t *testing.T) {
			w := withEnv(tc.vars, tc.env)
			ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{Verb: "patch"})
			Definition.PrepareForUpdate(ctx, w, stored())
			expectEnv(t, w, tc.want, tc.invalid)
		})
	}
}

// expectEnv checks that the container's env and variables both hold want, or, when invalid,
// that validation refuses the pair at spec.containers[web].env and nothing else.
func expectEnv(t *testing.T, w *score.Workload, want map[string]string, invalid bool) {
	t.Helper()
	c := w.Spec.Containers["web"]
	errs := validation.ValidateWorkload(w)
	if invalid {
		if len(errs) != 1 || errs[0].Field != "spec.containers[web].env" {
			t.Fatalf("errors = %v, want one at spec.containers[web].env", errs)
		}
		return
	}
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	if diff := cmp.Diff(want, c.Variables); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

// kubectl replace sends the whole object: the unchanged file, written with only one of the two
// names, must not clear the map the stored object holds under both.
func TestEnvAndVariablesOnReplace(t *testing.T) {
	for name, sent := range map[string]*score.Workload{
		"file with variables":   withEnv(map[string]string{"A": "1"}, nil),
		"file with env (seed)":  withEnv(nil, map[string]string{"A": "1"}),
		"file with a new value": withEnv(map[string]string{"A": "2"}, nil),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{Verb: "update"})
			Definition.PrepareForUpdate(ctx, sent, withEnv(map[string]string{"A": "1"}, map[string]string{"A": "1"}))
			want := sent.Spec.Containers["web"].Variables
			if len(want) == 0 {
				want = sent.Spec.Containers["web"].Env
			}
			if len(want) == 0 {
				t.Fatal("the replace cleared the map")
			}
			expectEnv(t, sent, want, false)
		})
	}
}
