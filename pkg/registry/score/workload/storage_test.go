package workload

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score"
)

// inlineDocument declares two resources, cache and queue, in the Score document only.
const inlineDocument = `{"apiVersion":"score.dev/v1b1","metadata":{"name":"shop"},
"containers":{"main":{"image":"shop:1"}},
"resources":{"cache":{"type":"redis"},"queue":{"type":"amqp"}}}`

// bindingsCell is the BINDINGS cell of the workload's row.
func bindingsCell(t *testing.T, w *score.Workload) string {
	t.Helper()
	tbl, err := Table.ConvertToTable(context.Background(), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range tbl.ColumnDefinitions {
		if c.Name == "Bindings" {
			return tbl.Rows[0].Cells[i].(string)
		}
	}
	t.Fatal("no Bindings column")
	return ""
}

func summaries(phases map[string]score.BindingPhase) []score.BindingSummary {
	var out []score.BindingSummary
	for key, phase := range phases {
		out = append(out, score.BindingSummary{Key: key, Phase: phase})
	}
	return out
}

// TestBindingsCountWhatTheWorkloadDeclares: BINDINGS is bound out of declared, where declared
// is every resource the orchestrator resolved (status.bindings), not spec.resources alone,
// which misses the ones the Score document declares.
func TestBindingsCountWhatTheWorkloadDeclares(t *testing.T) {
	inline := func() *score.Workload {
		return &score.Workload{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"},
			Spec:       score.WorkloadSpec{Source: &score.WorkloadSource{Inline: &common.RawObject{Raw: []byte(inlineDocument)}}},
		}
	}
	mixed := func() *score.Workload {
		w := inline()
		w.Spec.Resources = map[string]score.ResourceSpec{"db": {Type: "postgres"}}
		return w
	}
	for name, tc := range map[string]struct {
		workload *score.Workload
		bindings map[string]score.BindingPhase
		want     string
	}{
		"inline only, all bound": {inline(), map[string]score.BindingPhase{"cache": score.BindingPhaseBound, "queue": score.BindingPhaseBound}, "2/2"},
		"inline only, one bound": {inline(), map[string]score.BindingPhase{"cache": score.BindingPhaseBound, "queue": score.BindingPhasePending}, "1/2"},
		"mixed, one failed":      {mixed(), map[string]score.BindingPhase{"cache": score.BindingPhaseBound, "db": score.BindingPhaseFailed, "queue": score.BindingPhaseBound}, "2/3"},
		"mixed, none bound":      {mixed(), map[string]score.BindingPhase{"cache": score.BindingPhaseBinding, "db": score.BindingPhasePending, "queue": score.BindingPhasePending}, "0/3"},
		// Before the orchestrator's first status write nothing is resolved, bound or declared.
		"not yet observed": {mixed(), nil, "0/0"},
		"no resources":     {&score.Workload{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, nil, "0/0"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.workload.Status.Bindings = summaries(tc.bindings)
			if got := bindingsCell(t, tc.workload); got != tc.want {
				t.Errorf("BINDINGS = %q, want %q", got, tc.want)
			}
		})
	}
}
