package drift

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestSummary(t *testing.T) {
	web := ObjectDrift{Kind: "Deployment", Namespace: "demo", Name: "web", Fields: []string{".spec.replicas"}, Managers: []string{"kubectl-edit"}}
	tests := []struct {
		name   string
		report Report
		want   string
	}{
		{name: "nothing drifted", report: Report{Checked: 40}, want: ""},
		{name: "the contract's example",
			report: Report{Checked: 40, Drifted: []ObjectDrift{web, {Kind: "ConfigMap", Namespace: "demo", Name: "cfg", Missing: true}}},
			want:   "2 of 40 objects drifted: Deployment demo/web (.spec.replicas changed by kubectl-edit); ConfigMap demo/cfg (deleted)"},
		{name: "one object, cluster-scoped",
			report: Report{Checked: 1, Drifted: []ObjectDrift{{Kind: "ClusterRole", Name: "view", Missing: true}}},
			want:   "1 of 1 object drifted: ClusterRole view (deleted)"},
		{name: "changed by nobody known, and removed",
			report: Report{Checked: 3, Drifted: []ObjectDrift{{Kind: "ConfigMap", Namespace: "demo", Name: "cfg",
				Fields: []string{".data.a", ".data.b"}, Removed: []string{".data.b"}}}},
			want: "1 of 3 objects drifted: ConfigMap demo/cfg (.data.a changed; .data.b removed)"},
		{name: "several managers",
			report: Report{Checked: 2, Drifted: []ObjectDrift{{Kind: "Deployment", Namespace: "demo", Name: "web",
				Fields: []string{".spec.replicas", ".spec.paused"}, Managers: []string{"hpa", "kubectl-edit"}}}},
			want: "1 of 2 objects drifted: Deployment demo/web (.spec.replicas, .spec.paused changed by hpa, kubectl-edit)"},
		{name: "long field lists are cut",
			report: Report{Checked: 2, Drifted: []ObjectDrift{{Kind: "ConfigMap", Namespace: "demo", Name: "cfg",
				Fields: []string{".data.a", ".data.b", ".data.c", ".data.d"}}}},
			want: "1 of 2 objects drifted: ConfigMap demo/cfg (.data.a, .data.b, .data.c … changed)"},
		{name: "fields already cut short",
			report: Report{Checked: 2, Drifted: []ObjectDrift{{Kind: "ConfigMap", Namespace: "demo", Name: "cfg",
				Fields: []string{".data.a", ".data.b", More}, Removed: []string{".data.b"}}}},
			want: "1 of 2 objects drifted: ConfigMap demo/cfg (.data.a … changed; .data.b … removed)"},
		{name: "drift without fields",
			report: Report{Checked: 2, Drifted: []ObjectDrift{{Kind: "ConfigMap", Namespace: "demo", Name: "cfg"}}},
			want:   "1 of 2 objects drifted: ConfigMap demo/cfg (changed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.report.Summary(); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestSummaryNamesFiveObjects(t *testing.T) {
	r := Report{Checked: 100}
	for i := 0; i < 8; i++ {
		r.Drifted = append(r.Drifted, ObjectDrift{Kind: "ConfigMap", Namespace: "demo", Name: fmt.Sprintf("cm-%d", i), Missing: true})
	}
	got := r.Summary()
	if !strings.HasPrefix(got, "8 of 100 objects drifted: ConfigMap demo/cm-0 (deleted);") || !strings.HasSuffix(got, "ConfigMap demo/cm-4 (deleted); and 3 more") {
		t.Errorf("summary %s", got)
	}
	if strings.Contains(got, "cm-5") {
		t.Errorf("summary names a sixth object: %s", got)
	}
}

func TestNewObjectDrift(t *testing.T) {
	var changes []fieldChange
	for i := 11; i >= 0; i-- {
		changes = append(changes, fieldChange{path: fieldpath.MakePathOrDie("data", fmt.Sprintf("k%02d", i)), removed: i%2 == 1})
	}
	managers := map[string][]string{".data.k00": {"b", "a"}, ".data.k02": {"a"}, ".data.k01": {"nobody owns a removed field"}}
	d := newObjectDrift("v1", "ConfigMap", "demo", "cfg", changes, func(c fieldChange) []string { return managers[c.path.String()] })
	want := ObjectDrift{APIVersion: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "cfg",
		Fields:   []string{".data.k00", ".data.k01", ".data.k02", ".data.k03", ".data.k04", ".data.k05", ".data.k06", ".data.k07", ".data.k08", ".data.k09", More},
		Removed:  []string{".data.k01", ".data.k03", ".data.k05", ".data.k07", ".data.k09"},
		Managers: []string{"a", "b"}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
