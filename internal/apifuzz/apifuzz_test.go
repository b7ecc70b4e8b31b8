package apifuzz

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/install"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
)

var systemKind = schema.GroupKind{Group: "governance.plinth.dev", Kind: "System"}

func TestProblems(t *testing.T) {
	obj := &governance.System{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	for name, tc := range map[string]struct {
		errs field.ErrorList
		want string
	}{
		"none":          {},
		"good":          {errs: field.ErrorList{field.Required(field.NewPath("spec", "x"), "")}},
		"no field path": {errs: field.ErrorList{field.Invalid(nil, "v", "is bad")}, want: "without a field path"},
		"internal":      {errs: field.ErrorList{field.InternalError(field.NewPath("spec"), errTest)}, want: "an internal error"},
	} {
		got := strings.Join(Problems(systemKind, obj, tc.errs), "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", name, got, tc.want)
		}
	}
}

type testError struct{}

func (testError) Error() string { return "boom" }

var errTest = testError{}

// recorder is a one-kind group whose validation records what it was given.
func recorder(seen *[]*governance.System) *Group {
	return &Group{
		Install: install.Install,
		Version: v1alpha1.SchemeGroupVersion,
		Kinds: []Kind{KindOf("System", func() *governance.System { return &governance.System{} },
			func(s *governance.System) field.ErrorList { *seen = append(*seen, s); return nil }, nil, nil)},
	}
}

func TestCheckDecodesEveryMode(t *testing.T) {
	var seen []*governance.System
	g := recorder(&seen)
	bodies := map[int]string{
		0: `{"apiVersion":"governance.plinth.dev/v1alpha1","kind":"System","metadata":{"name":"a"},"spec":{"documentation":"d"}}`,
		1: `{"apiVersion":"governance.plinth.dev/v1alpha1","kind":"System","metadata":{"name":"b"}}`,
		2: "apiVersion: governance.plinth.dev/v1alpha1\nkind: System\nmetadata: {name: c}\n",
		3: "kind: System\nmetadata: {name: d}\n", // the URL's version fills in a missing apiVersion
	}
	for m, body := range bodies {
		g.Check(t, g.selector(0, m), []byte(body))
	}
	docs := map[string]string{}
	for _, s := range seen {
		docs[s.Name] = s.Spec.Documentation
	}
	if len(seen) != len(bodies) || docs["a"] != "d" {
		t.Fatalf("validated %d objects (%+v), want one per mode", len(seen), seen)
	}
	// Strict modes drop a body with an unknown field, as the server refuses it; lenient ones
	// validate it; another kind and a malformed body are never validated.
	seen = nil
	unknown := `{"apiVersion":"governance.plinth.dev/v1alpha1","kind":"System","metadata":{"name":"e"},"bogus":1}`
	for m := range modes {
		g.Check(t, g.selector(0, m), []byte(unknown))
	}
	g.Check(t, 0, []byte(`{"apiVersion":"governance.plinth.dev/v1alpha1","kind":"ManagedVM","metadata":{"name":"f"}}`))
	g.Check(t, 0, []byte(`{"kind":`))
	if len(seen) != 2 {
		t.Errorf("validated %d objects, want the 2 lenient decodes of a body with an unknown field", len(seen))
	}
}

func TestDocuments(t *testing.T) {
	docs := Documents(t, []byte("a: 1\n---\n\n---\nb: 2\n"))
	if len(docs) != 2 || !strings.Contains(string(docs[1]), "b: 2") {
		t.Errorf("documents %q, want the two non-empty ones", docs)
	}
	if len(Examples(t)) == 0 {
		t.Error("no examples")
	}
}
