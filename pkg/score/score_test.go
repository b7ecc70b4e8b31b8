package score

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func inlineWorkload(name, doc string) *v1b1.Workload {
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		panic(err)
	}
	return &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
		Spec:       v1b1.WorkloadSpec{Source: &v1b1.WorkloadSource{Inline: &common.RawObject{Raw: raw}}},
	}
}

const webDoc = `
apiVersion: score.dev/v1b1
metadata: {name: web}
containers:
  main:
    image: registry.example.com/web:1.0
    variables:
      DB_HOST: ${resources.db.host}
      GREETING: hello from ${metadata.name}
      PRICE: $${not.a.placeholder}
resources:
  db:
    type: postgres
service:
  ports:
    http: {port: 8080}
`

func fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	sort.Strings(out)
	return out
}

// TestScoreGoSampleIsValid resolves score-go's full sample inline. Its one file read from a
// path beside the document is refused, at that file, with what to write instead: inline there
// is nothing beside it. With that file's text given as content the sample is valid.
func TestScoreGoSampleIsValid(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join(scoreGoDir(t), "schema", "files", "samples", "score-full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, errs := Resolve(inlineWorkload("example-workload-name123", string(sample)))
	want := "spec.source.inline.containers[container-one1].files[/my/file].source"
	if len(errs) != 1 || errs[0].Field != want || errs[0].Type != field.ErrorTypeForbidden || !strings.Contains(errs[0].Detail, "spec.source.configMapRef") {
		t.Fatalf("score-go's full sample: %v, want one refusal at %s", errs, want)
	}
	withContent := strings.Replace(string(sample), "source: file.txt", `content: "the file's text"`, 1)
	if withContent == string(sample) {
		t.Fatal("the sample no longer reads file.txt")
	}
	w := inlineWorkload("example-workload-name123", withContent)
	resolved, errs := Resolve(w)
	if len(errs) != 0 {
		t.Fatalf("score-go's full sample with content: %v", errs)
	}
	if len(resolved.Containers) == 0 || resolved.Service == nil {
		t.Errorf("sample resolved to %+v", resolved)
	}
}

func TestResolve(t *testing.T) {
	cases := map[string]struct {
		workload *v1b1.Workload
		want     []string
	}{
		"valid inline document": {inlineWorkload("web", webDoc), nil},
		"wrong apiVersion": {inlineWorkload("web", strings.Replace(webDoc, "score.dev/v1b1", "score.dev/v2", 1)),
			[]string{"spec.source.inline.apiVersion"}},
		"unknown field": {inlineWorkload("web", webDoc+"extras: {a: b}\n"), []string{"spec.source.inline"}},
		"missing image": {inlineWorkload("web", strings.Replace(webDoc, "image: registry.example.com/web:1.0", "command: [run]", 1)),
			[]string{"spec.source.inline.containers.main"}},
		"name differs from the Workload": {inlineWorkload("api", webDoc), []string{"spec.source.inline.metadata.name"}},
		"unknown placeholder root": {inlineWorkload("web", strings.Replace(webDoc, "${metadata.name}", "${secrets.token}", 1)),
			[]string{"spec.source.inline.containers.main.variables.GREETING"}},
		"undeclared resource": {inlineWorkload("web", strings.Replace(webDoc, "${resources.db.host}", "${resources.cache.host}", 1)),
			[]string{"spec.source.inline.containers.main.variables.DB_HOST"}},
		"empty placeholder": {inlineWorkload("web", strings.Replace(webDoc, "${metadata.name}", "${}", 1)),
			[]string{"spec.source.inline.containers.main.variables.GREETING"}},
		"metadata without key": {inlineWorkload("web", strings.Replace(webDoc, "${metadata.name}", "${metadata}", 1)),
			[]string{"spec.source.inline.containers.main.variables.GREETING"}},
		"resource without name": {inlineWorkload("web", strings.Replace(webDoc, "${resources.db.host}", "${resources}", 1)),
			[]string{"spec.source.inline.containers.main.variables.DB_HOST"}},
		"escaped placeholder is literal": {inlineWorkload("web", strings.Replace(webDoc, "${resources.db.host}", "$${resources.nope.host}", 1)), nil},
		"not an object": {func() *v1b1.Workload {
			w := inlineWorkload("web", webDoc)
			w.Spec.Source.Inline.Raw = []byte(`["a"]`)
			return w
		}(), []string{"spec.source.inline"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := Resolve(tc.workload)
			if got := fields(errs); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("errors at %v, want %v (%v)", got, tc.want, errs)
			}
		})
	}
}

func TestPlaceholdersInSpecSections(t *testing.T) {
	w := &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1b1.WorkloadSpec{
			Containers: map[string]v1b1.Container{"web": {
				Image:     "nginx",
				Variables: map[string]string{"DB_HOST": "${resources.db.host}", "OK": "${metadata.name}"},
				Files: []v1b1.ContainerFile{
					{Target: "/a", Content: ptr.To("${resources.missing.x}")},
					{Target: "/b", Content: ptr.To("${whatever}"), NoExpand: true},
				},
				Volumes: []v1b1.ContainerVolume{{Target: "/data", Source: "${resources.vol}"}},
			}},
			Resources: map[string]v1b1.ResourceSpec{
				"vol": {Type: "volume"},
				"dns": {Type: "dns", Params: &common.RawObject{Raw: []byte(`{"alias":["${resources.nope.host}"]}`)}},
			},
		},
	}
	_, errs := Resolve(w)
	want := []string{
		"spec.containers[web].files[0].content",
		"spec.containers[web].variables.DB_HOST",
		"spec.resources[dns].params[alias][0]",
	}
	if got := fields(errs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("errors at %v, want %v (%v)", got, want, errs)
	}
}

func TestMergeSpecAndInline(t *testing.T) {
	w := inlineWorkload("web", webDoc)
	w.Spec.Containers = map[string]v1b1.Container{
		"main":    {Image: "registry.example.com/web:1.0", Args: []string{"--verbose"}},
		"sidecar": {Image: "registry.example.com/proxy:2"},
	}
	w.Spec.Resources = map[string]v1b1.ResourceSpec{"db": {Type: "postgres", Class: "large"}}
	resolved, errs := Resolve(w)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	main := resolved.Containers["main"]
	if main.Variables["DB_HOST"] == "" || len(main.Args) != 1 {
		t.Errorf("main container not merged field by field: %+v", main)
	}
	if resolved.Resources["db"].Class != "large" || len(resolved.Containers) != 2 {
		t.Errorf("merge lost elements: %+v", resolved)
	}
	images := resolved.Images(field.NewPath("spec"))
	if len(images) != 2 || images[0].Path.String() != "spec.containers[main].image" {
		t.Errorf("images = %+v", images)
	}

	w.Spec.Containers["main"] = v1b1.Container{Image: "registry.example.com/web:2.0"}
	_, errs = Resolve(w)
	if got := fields(errs); strings.Join(got, ",") != "spec.containers[main].image" {
		t.Errorf("disagreeing image: errors at %v (%v)", got, errs)
	}
}

// scoreGoDir finds score-go in the module cache, for its shipped samples.
func scoreGoDir(t *testing.T) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(os.Getenv("HOME"), "go", "pkg", "mod", "github.com", "score-spec", "score-go@v1.12.0"))
	if gomodcache := os.Getenv("GOMODCACHE"); gomodcache != "" {
		matches, _ = filepath.Glob(filepath.Join(gomodcache, "github.com", "score-spec", "score-go@v1.12.0"))
	}
	if len(matches) == 0 {
		t.Skip("score-go v1.12.0 is not in the module cache")
	}
	return matches[0]
}

// TestFileSourceNeedsAConfigMap: files[].source names a file beside the Score document. A
// workload whose document is inline, or which has none, is refused at each such file; one
// whose document is kept in a ConfigMap is not (the file is a key of that ConfigMap).
func TestFileSourceNeedsAConfigMap(t *testing.T) {
	spec := func(source *v1b1.WorkloadSource) *v1b1.Workload {
		return &v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"}, Spec: v1b1.WorkloadSpec{
			Source: source,
			Containers: map[string]v1b1.Container{"main": {Image: "nginx", Files: []v1b1.ContainerFile{
				{Target: "/etc/a.conf", Content: ptr.To("a")},
				{Target: "/etc/b.conf", Source: ptr.To("b.conf")},
			}}},
		}}
	}
	_, errs := Merge(spec(nil))
	if got := fields(errs); len(got) != 1 || got[0] != "spec.containers[main].files[1].source" || errs[0].Type != field.ErrorTypeForbidden {
		t.Errorf("without a document: %v", errs)
	}
	cm := &v1b1.WorkloadSource{ConfigMapRef: &v1b1.ConfigMapKeyReference{Name: "web", Key: "score.yaml"}}
	if _, errs := Merge(spec(cm)); len(errs) != 0 {
		t.Errorf("with a ConfigMap document: %v", errs)
	}
}
