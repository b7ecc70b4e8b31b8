package provisioners

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func mustCompile(t testing.TB, spec v1b1.ProvisionerSpec) *Template {
	t.Helper()
	if spec.URI == "" {
		spec.URI = "template://test/p"
	}
	if spec.Type == "" {
		spec.Type = "thing"
	}
	tmpl, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestCompileRefusesInvalid(t *testing.T) {
	_, err := Compile(v1b1.ProvisionerSpec{URI: "cmd://bash", Type: "thing"})
	if err == nil || !strings.Contains(err.Error(), "uri: Invalid value") {
		t.Fatalf("got %v, want the uri's error", err)
	}
}

// Compile keeps its own copy: changing the caller's spec afterwards changes nothing.
func TestCompileCopiesSpec(t *testing.T) {
	spec := v1b1.ProvisionerSpec{URI: "template://t/p", Type: "thing", ExpectedOutputs: []string{"a"}}
	tmpl := mustCompile(t, spec)
	spec.ExpectedOutputs[0] = "b"
	if tmpl.Spec().ExpectedOutputs[0] != "a" {
		t.Fatal("the Template shares the caller's spec")
	}
}

// State is drawn once and kept: the second render, fed the first's state, keeps the value
// although init draws a new one.
func TestRenderStatePersistsWithDig(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{
		Init:    `password: {{ randAlphaNum 16 | quote }}`,
		State:   `password: {{ dig "password" .Init.password .State | quote }}`,
		Outputs: `password: {{ .State.password | quote }}`,
	})
	first, err := tmpl.Render(Data{})
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := first.State["password"].(string)
	if len(pw) != 16 || first.Outputs["password"] != pw {
		t.Fatalf("first render: state %v, outputs %v", first.State, first.Outputs)
	}
	second, err := tmpl.Render(Data{State: first.State})
	if err != nil {
		t.Fatal(err)
	}
	if second.State["password"] != pw {
		t.Errorf("the state changed across renders")
	}
}

// Without a state template the state is wiped, as in score-k8s: init still reads the old one,
// the templates after state the new, empty one.
func TestRenderNoStateTemplateWipesState(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{Init: `old: {{ .State.old }}`, Outputs: `old: {{ .Init.old }}
now: "{{ .State.old }}"`})
	r, err := tmpl.Render(Data{State: map[string]interface{}{"old": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.State) != 0 || r.State == nil {
		t.Errorf("state = %v, want empty", r.State)
	}
	if r.Outputs["old"] != "x" || r.Outputs["now"] != "<no value>" {
		t.Errorf("outputs = %v: init reads the old state, outputs the new", r.Outputs)
	}
}

func TestRenderSharedMerge(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{
		Shared: `
instance:
  name: {{ dig "instance" "name" "minio-new" .Shared | quote }}
  user: u
gone: null
`,
		Outputs: `name: {{ .Shared.instance.name }}
keep: {{ .Shared.keep }}`,
	})
	shared := map[string]interface{}{
		"instance": map[string]interface{}{"name": "minio-old", "extra": "e"},
		"gone":     "x",
		"keep":     "k",
	}
	r, err := tmpl.Render(Data{Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{
		"instance": map[string]interface{}{"name": "minio-old", "extra": "e", "user": "u"},
		"keep":     "k",
	}
	if !reflect.DeepEqual(r.Shared, want) {
		t.Errorf("shared = %v, want %v", r.Shared, want)
	}
	if r.Outputs["name"] != "minio-old" || r.Outputs["keep"] != "k" {
		t.Errorf("outputs = %v: later templates read the merged shared state", r.Outputs)
	}
	if shared["gone"] != "x" || len(shared["instance"].(map[string]interface{})) != 2 {
		t.Errorf("the caller's shared state changed: %v", shared)
	}
}

func TestMergePatch(t *testing.T) {
	cases := []struct {
		name                string
		target, patch, want map[string]interface{}
	}{
		{"empty patch keeps target", map[string]interface{}{"a": "1"}, nil, map[string]interface{}{"a": "1"}},
		{"nil target", nil, nil, map[string]interface{}{}},
		{"null deletes", map[string]interface{}{"a": "1", "b": "2"}, map[string]interface{}{"a": nil}, map[string]interface{}{"b": "2"}},
		{"scalar replaces", map[string]interface{}{"a": "1"}, map[string]interface{}{"a": int64(2)}, map[string]interface{}{"a": int64(2)}},
		{"list replaces", map[string]interface{}{"a": []interface{}{"x"}}, map[string]interface{}{"a": []interface{}{"y"}}, map[string]interface{}{"a": []interface{}{"y"}}},
		{"map over scalar drops nulls", map[string]interface{}{"a": "1"},
			map[string]interface{}{"a": map[string]interface{}{"b": nil, "c": "3"}}, map[string]interface{}{"a": map[string]interface{}{"c": "3"}}},
		{"map merges", map[string]interface{}{"a": map[string]interface{}{"b": "1", "c": "2"}},
			map[string]interface{}{"a": map[string]interface{}{"c": nil, "d": "4"}}, map[string]interface{}{"a": map[string]interface{}{"b": "1", "d": "4"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergePatch(tc.target, tc.patch); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRenderFail(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{
		Init:    `pw: {{ randAlpha 12 }}`,
		Outputs: `{{ if not .Params.workload }}{{ fail "the param workload is required" }}{{ end }}`,
	})
	_, err := tmpl.Render(Data{})
	var re *RenderError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a RenderError", err)
	}
	if re.Template != "outputs" || re.Message != "the param workload is required" {
		t.Errorf("got %+v", re)
	}
	if err.Error() != "the outputs template failed: the param workload is required" {
		t.Errorf("Error() = %q", err.Error())
	}
}

// Errors name the problem, never a rendered value (which may be a generated password).
func TestRenderErrorsHoldNoValues(t *testing.T) {
	const secret = "s3cr3tPassw0rd"
	cases := []struct {
		name, tmpl, field, want string
	}{
		{"unknown field", `x: {{ .Nope }}`, "outputs", `line 1, column 6, at <.Nope>: can't evaluate field Nope in type *provisioners.Data`},
		{"range over a value", `{{ range .State.pw }}{{ end }}`, "outputs", "line 1, column 15, at <.State.pw>: the template cannot run on these values"},
		{"function error", `x: {{ .State.pw | mustToDate "2006" }}`, "outputs", "at <mustToDate \"2006\">: the function mustToDate failed"},
		{"index error", `x: {{ index (list .State.pw) 5 }}`, "outputs", "the function index failed"},
		{"required", `x: {{ required "the param x is required" .Params.x }}`, "outputs", "the param x is required"},
		{"not a map", `- {{ .State.pw }}`, "outputs", "the result is not a YAML map"},
		{"scalar", `{{ .State.pw }}`, "outputs", "the result is not a YAML map"},
		{"bad YAML", "a: {{ .State.pw }}\n b: [", "outputs", "the result is not valid YAML: line"},
		{"bad map key", "? {a: {{ .State.pw }}}\n: x", "outputs", "the result is not valid YAML"},
		{"manifests not a list", `a: {{ .State.pw }}`, "manifests", "not a YAML list of Kubernetes objects"},
		{"manifest not a map", `- {{ .State.pw }}`, "manifests", "item 0 of the list is not a YAML map"},
		{"manifest without kind", "- apiVersion: v1\n  metadata: {name: {{ .State.pw }}}", "manifests", "item 0 of the list has no kind"},
		{"manifest without name", "- apiVersion: v1\n  kind: Secret\n  data: {pw: {{ .State.pw }}}", "manifests", "item 0 of the list has no metadata.name"},
		{"manifest without apiVersion", "- kind: Secret\n  metadata: {name: a}", "manifests", "item 0 of the list has no apiVersion"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1b1.ProvisionerSpec{State: "pw: " + secret}
			if tc.field == "outputs" {
				spec.Outputs = tc.tmpl
			} else {
				spec.Manifests = tc.tmpl
			}
			_, err := mustCompile(t, spec).Render(Data{})
			var re *RenderError
			if !errors.As(err, &re) || re.Template != tc.field || !strings.Contains(re.Message, tc.want) {
				t.Fatalf("got %v, want a RenderError of %s with %q", err, tc.field, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error %q holds the rendered value", err)
			}
		})
	}
}

// Missing map keys print "<no value>" and do not fail, as with text/template's default that
// score-k8s keeps; params and metadata may be nil.
func TestRenderMissingKey(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{
		Outputs: `a: {{ .Params.missing | quote }}
b: "{{ .Metadata.annotations }}"
c: {{ .Init.nothing | default "fallback" }}`,
	})
	r, err := tmpl.Render(Data{})
	if err != nil {
		t.Fatal(err)
	}
	// quote drops a nil, leaving "a:" which is YAML's null.
	want := map[string]interface{}{"a": nil, "b": "<no value>", "c": "fallback"}
	if !reflect.DeepEqual(r.Outputs, want) {
		t.Errorf("outputs = %v, want %v", r.Outputs, want)
	}
}

func TestRenderEmpty(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{
		Init:      "  \n",
		Outputs:   `{{ if false }}x: 1{{ end }}`,
		Manifests: "{{/* nothing */}}\n",
	})
	r, err := tmpl.Render(Data{})
	if err != nil {
		t.Fatal(err)
	}
	if r.State == nil || len(r.State) != 0 || r.Outputs == nil || len(r.Outputs) != 0 ||
		r.Manifests == nil || len(r.Manifests) != 0 || r.Shared == nil {
		t.Errorf("got %+v, want empty, non-nil results", r)
	}
}

// Every field of Data reaches the templates under score-k8s's name, and results hold JSON-like
// values (int64 for whole numbers, maps keyed by strings), as unstructured objects need.
func TestRenderData(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{
		Init: `svc: {{ .Type }}-{{ .SourceWorkload }}-{{ .Guid | trunc 8 }}`,
		Outputs: `uid: {{ .Uid }}
class: {{ .Class }}
id: {{ .Id }}
size: {{ .Params.size }}
req: {{ required "size is required" .Params.size }}
ann: {{ .Metadata.annotations.a }}
wname: {{ .WorkloadMetadata.name }}
ns: {{ .Namespace }}
init: {{ .Init.svc }}
host: {{ (index .WorkloadServices "api").ServiceName }}
port: {{ (index (index .WorkloadServices "api").Ports "8080").TargetPort }}
pname: {{ (index (index .WorkloadServices "api").Ports "web").Name }}
proto: {{ (index (index .WorkloadServices "api").Ports "web").Protocol }}
nested: {1: {b: [true, 1.5]}}
ref: {{ encodeSecretRef "db-secret" "password" }}`,
		Manifests: `- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: {{ .Init.svc }}
  data:
    replicas: "1"
  replicas: 3`,
	})
	data := Data{
		Guid: "0123456789abcdef", Uid: "postgres.default#web.db", Type: "postgres", Class: "default", Id: "web.db",
		Params: map[string]interface{}{"size": "10"}, Metadata: map[string]interface{}{"annotations": map[string]interface{}{"a": "x"}},
		SourceWorkload: "web", WorkloadMetadata: map[string]interface{}{"name": "web"}, Namespace: "team",
		WorkloadServices: map[string]NetworkService{"api": {ServiceName: "api-svc", Ports: map[string]ServicePort{
			"web": {Name: "web", Port: 80, TargetPort: 8080, Protocol: "TCP"}, "80": {Name: "web", Port: 80, TargetPort: 8080, Protocol: "TCP"},
			"8080": {Name: "alt", Port: 8080, TargetPort: 9090, Protocol: "UDP"}}}},
	}
	r, err := tmpl.Render(data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{
		"uid": "postgres.default#web.db", "class": "default", "id": "web.db", "size": int64(10), "req": int64(10), "ann": "x",
		"wname": "web", "ns": "team", "init": "postgres-web-01234567", "host": "api-svc", "port": int64(9090),
		"pname": "web", "proto": "TCP",
		"nested": map[string]interface{}{"1": map[string]interface{}{"b": []interface{}{true, 1.5}}},
		"ref":    EncodeSecretRef("db-secret", "password"),
	}
	if !reflect.DeepEqual(r.Outputs, want) {
		t.Errorf("outputs = %#v\nwant %#v", r.Outputs, want)
	}
	if len(r.Manifests) != 1 || r.Manifests[0]["replicas"] != int64(3) {
		t.Errorf("manifests = %#v", r.Manifests)
	}
	if data.Init != nil || data.State != nil {
		t.Error("Render changed the caller's data")
	}
}

// A template compiled once renders for many goroutines at once.
func TestRenderConcurrent(t *testing.T) {
	tmpl := mustCompile(t, v1b1.ProvisionerSpec{Init: `a: {{ .Id }}`, Outputs: `id: {{ .Init.a }}`})
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		go func(i int) {
			id := strings.Repeat("x", i+1)
			r, err := tmpl.Render(Data{Id: id})
			if err == nil && r.Outputs["id"] != id {
				err = errors.New("outputs mixed between renders")
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 16; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
