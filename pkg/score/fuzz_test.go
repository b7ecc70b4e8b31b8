package score

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/score-spec/score-go/framework"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apischema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/internal/apifuzz"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

var workloadKind = apischema.GroupKind{Group: v1b1.GroupName, Kind: "Workload"}

// FuzzScoreDocument feeds arbitrary inline Score documents (JSON, or YAML as a client would
// convert it) through what admission and the controller do with them: Resolve, the resource
// order and the projection. No panic, and every refusal names a field.
func FuzzScoreDocument(f *testing.F) {
	f.Add([]byte(webDoc))
	f.Add([]byte(`{"apiVersion":"score.dev/v1b1","metadata":{"name":"web"},"containers":{"main":{"image":"nginx"}}}`))
	f.Add([]byte(`{"apiVersion":"score.dev/v1b1","metadata":{"name":"web"},"containers":{"main":{"image":"nginx","files":[{"target":"/a","content":"${metadata.name}"}]}},"resources":{"a":{"type":"t","params":{"x":"${resources.b.host}"}},"b":{"type":"t","params":{"y":["${resources.a.host}"]}}}}`))
	f.Add([]byte(`{"apiVersion":"score.dev/v1b1","metadata":{"name":"web"},"containers":{"main":{"image":"nginx","files":["legacy"]}}}`))
	for _, sample := range scoreGoSamples(f) {
		f.Add(sample)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		raw := doc
		if asJSON, err := yaml.YAMLToJSON(doc); err == nil {
			raw = asJSON
		}
		// The document's own name, when it has one, so that a sample gets past the name check.
		var head struct {
			Metadata struct{ Name string }
		}
		name := "web"
		if yaml.Unmarshal(raw, &head) == nil && head.Metadata.Name != "" {
			name = head.Metadata.Name
		}
		w := &v1b1.Workload{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			Spec:       v1b1.WorkloadSpec{Source: &v1b1.WorkloadSource{Inline: &common.RawObject{Raw: raw}}},
		}
		resolved, errs := Resolve(w)
		apifuzz.CheckErrors(t, workloadKind, nil, errs)
		if len(errs) > 0 {
			return
		}
		exercise(t, w, resolved)
	})
}

// FuzzPlaceholders puts one arbitrary string everywhere Score expands placeholders — a
// variable, a file, a volume source and a resource's params — and checks it and projects it.
func FuzzPlaceholders(f *testing.F) {
	for _, s := range []string{
		"${resources.db.host}", "${metadata.name}", "$${escaped}", "${resources.db}", "${metadata}",
		"postgres://${resources.db.username}:${resources.db.password}@${resources.db.host}/app",
		"${resources.db..host}", "${unknown.x}", "${", "$$", "${resources.db.a\\.b}", "${}", "$${${metadata.name}}",
		"${resources.missing.x}", "${metadata.annotations.a\\.b}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		params := apifuzz.JSON(t, map[string]interface{}{"p": s, "list": []interface{}{s}})
		w := &v1b1.Workload{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", Annotations: map[string]string{"a.b": "c"}},
			Spec: v1b1.WorkloadSpec{
				Containers: map[string]v1b1.Container{"main": {
					Image:     "nginx",
					Variables: map[string]string{"V": s},
					Files:     []v1b1.ContainerFile{{Target: "/f", Content: ptr.To(s)}},
					Volumes:   []v1b1.ContainerVolume{{Target: "/data", Source: s}},
				}},
				Resources: map[string]v1b1.ResourceSpec{"db": {Type: "postgres", Params: &common.RawObject{Raw: params}}},
			},
		}
		resolved, errs := Resolve(w)
		apifuzz.CheckErrors(t, workloadKind, nil, errs)
		_, _ = framework.SubstituteString(s, func(ref string) (string, error) {
			_ = CheckPlaceholder(ref, sets.New("db"))
			return "", nil
		})
		if len(errs) == 0 {
			exercise(t, w, resolved)
		}
	})
}

// exercise runs what the controller does with a workload admission accepted: the resource
// order, params resolution and the projection, with every resource offering a plain and a
// secret output. Errors are expected (a missing output, a cycle); only a panic or an error
// without a place fails.
func exercise(t *testing.T, w *v1b1.Workload, resolved *Workload) {
	t.Helper()
	outputs := map[string]Outputs{}
	for name := range resolved.Resources {
		outputs[name] = Outputs{Values: map[string]string{"host": name + ".svc"}, Secrets: sets.New("password")}
	}
	_, _ = resolved.ResourceOrder()
	for _, r := range resolved.Resources {
		_, _ = ResolveParams(r.Params, Metadata(w), outputs)
	}
	if _, err := Project(w, resolved, outputs); err != nil {
		if pe, ok := err.(*ProjectionError); ok && (pe.Path == nil || pe.Message == "") {
			t.Errorf("a projection error without a place or a message: %v", err)
		}
	}
}

// scoreGoSamples are score-go's own sample documents, from the module the build uses: go list
// knows its directory whatever GOMODCACHE, GOPATH or the required version are.
func scoreGoSamples(f *testing.F) [][]byte {
	f.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/score-spec/score-go").Output()
	if err != nil || len(bytes.TrimSpace(dir)) == 0 {
		f.Fatalf("finding score-go's module directory: %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(string(bytes.TrimSpace(dir)), "schema", "files", "samples", "*.yaml"))
	if len(matches) == 0 {
		f.Fatalf("score-go's module at %s holds no samples", bytes.TrimSpace(dir))
	}
	var out [][]byte
	for _, m := range matches {
		if data, err := os.ReadFile(m); err == nil {
			out = append(out, data)
		}
	}
	return out
}
