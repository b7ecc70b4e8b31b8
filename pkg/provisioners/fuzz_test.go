package provisioners

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/internal/apifuzz"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

var provisionerKind = schema.GroupKind{Group: v1b1.GroupName, Kind: "Provisioner"}

// unbounded matches template text whose rendering cost the text itself sets: loops over
// ranges it builds, strings and keys it sizes, and sprig's deliberately slow functions
// (bcrypt, scrypt, RSA keys). Provisioners are written by platform admins (a cluster-scoped
// kind and the controller's own file), who are trusted with that cost; the fuzzer renders
// everything else and would otherwise spend its time in one loop.
var unbounded = regexp.MustCompile(`range|until|seq|repeat|rand|indent|pad|wrap|gen[A-Z]|bcrypt|htpasswd|derivePassword|buildCustomCert|template|block|printf|shuffle|substr|trunc|abbrev|\{\{-?\s*\$[^}]*=`)

// FuzzProvisionersFile parses arbitrary provisioners files as the controller loads them: no
// panic; a refusal is a sentence; every entry ParseFile keeps passes Validate and compiles.
func FuzzProvisionersFile(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("defaults", "*.yaml"))
	seeds = append(seeds, filepath.Join(apifuzz.RepoRoot(f), "artifacts", "controller", "provisioners.yaml"))
	for _, path := range seeds {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("- uri: template://x/y\n  type: thing\n  outputs: 'host: {{ .Id }}'\n"))
	f.Add([]byte("- uri: cmd://bash\n  type: thing\n"))
	f.Add([]byte("- {uri: template://x/y, type: thing, unknown: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, skipped, err := ParseFile(data)
		if err != nil {
			if err.Error() == "" {
				t.Error("ParseFile fails without a message")
			}
			return
		}
		for _, s := range skipped {
			if s.Error() == "" {
				t.Error("a skipped entry without a reason")
			}
		}
		for i := range specs {
			if errs := Validate(&specs[i], field.NewPath("spec")); len(errs) > 0 {
				t.Errorf("ParseFile keeps entry %d, which Validate refuses: %v", i, errs)
			}
			if _, err := Compile(specs[i]); err != nil {
				t.Errorf("ParseFile keeps entry %d, which does not compile: %v", i, err)
			}
		}
	})
}

// FuzzProvisionerTemplate puts an arbitrary text in one template of a provisioner: no panic;
// Validate's errors name a field; Compile agrees with Validate; and, when the text's cost is
// bounded (see unbounded), rendering either succeeds with the shapes Render promises or fails
// with a RenderError naming the template.
func FuzzProvisionerTemplate(f *testing.F) {
	for _, s := range []string{
		`host: {{ .Id }}`, `password: {{ dig "password" "x" .State | quote }}`,
		`- {apiVersion: v1, kind: ConfigMap, metadata: {name: {{ .Guid | quote }}}}`,
		`{{ fail "no" }}`, `{{ required "need" .Params.x }}`, `{{ .Missing.x }}`, `{{ env "HOME" }}`,
		`{{ encodeSecretRef "s" "k" }}`, "a: [", `{{ if .Params }}a: 1{{ end }}`, `{{`,
	} {
		for which := range 5 {
			f.Add(uint8(which), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, text string) {
		spec := v1b1.ProvisionerSpec{URI: "template://fuzz/p", Type: "thing"}
		for i, dst := range []*string{&spec.Init, &spec.State, &spec.Shared, &spec.Outputs, &spec.Manifests} {
			if i == int(which)%5 {
				*dst = text
			}
		}
		errs := Validate(&spec, field.NewPath("spec"))
		for _, p := range apifuzz.Problems(provisionerKind, nil, errs) {
			t.Error(p)
		}
		tmpl, err := Compile(spec)
		if (err == nil) != (len(errs) == 0) {
			t.Fatalf("Validate says %v, Compile says %v", errs, err)
		}
		if err != nil || unbounded.MatchString(text) {
			return
		}
		data := Data{Guid: "6a3c1e9e", Uid: "thing.default#w.r", Type: "thing", Class: "default", Id: "w.r",
			Params: map[string]interface{}{"x": "y"}, State: map[string]interface{}{"password": "p"},
			Shared: map[string]interface{}{}, SourceWorkload: "w", Namespace: "team-a"}
		r, err := tmpl.Render(data)
		var re *RenderError
		switch {
		case err != nil && !errors.As(err, &re):
			t.Errorf("Render fails with %T, not a RenderError: %v", err, err)
		case err != nil && (re.Template == "" || re.Message == ""):
			t.Errorf("a RenderError without a template or a message: %+v", re)
		case err == nil && (r.State == nil || r.Shared == nil || r.Outputs == nil || r.Manifests == nil):
			t.Errorf("Render succeeds with a nil part: %+v", r)
		}
	})
}
