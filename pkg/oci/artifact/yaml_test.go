package artifact

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

// asJSON is a value as JSON decodes it: what every reader of a manifest ends up with.
func asJSON(t testing.TB, v interface{}) interface{} {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out interface{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// expectReadBack checks that YAML 1.1 readers (kubectl's sigs.k8s.io/yaml, the manifests
// package) and YAML 1.2 ones (kustomize's yaml.v3) read the encoded object as the object.
func expectReadBack(t testing.TB, obj map[string]interface{}) {
	t.Helper()
	data, err := encodeYAML(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := asJSON(t, obj)
	var v1 interface{}
	if err := yaml.Unmarshal(data, &v1); err != nil {
		t.Fatalf("sigs.k8s.io/yaml cannot read\n%s: %v", data, err)
	}
	if diff := cmp.Diff(want, asJSON(t, v1)); diff != "" {
		t.Errorf("sigs.k8s.io/yaml reads\n%s\nas another object (-want +got):\n%s", data, diff)
	}
	var v3 interface{}
	if err := yamlv3.Unmarshal(data, &v3); err != nil {
		t.Fatalf("yaml.v3 cannot read\n%s: %v", data, err)
	}
	if diff := cmp.Diff(want, asJSON(t, v3)); diff != "" {
		t.Errorf("yaml.v3 reads\n%s\nas another object (-want +got):\n%s", data, diff)
	}
}

// trickyStrings are strings YAML would read as something else if written plain.
var trickyStrings = []string{
	"", " ", "  lead", "trail ", "true", "True", "yes", "Y", "n", "NO", "on", "Off", "null", "Null", "~",
	"1", "-1", "1.0", "0x1F", "0o17", "017", "1:20", "1e3", ".5", ".inf", "-.inf", ".nan", "NaN", "inf",
	"2001-12-14", "2001-12-14t21:59:43.10-05:00", "-", "- a", "a: b", "a:b", "a:", "#x", "a #b", "@x", "`x",
	"!x", "!!str", "&a", "*a", "%x", "|", ">", "'", "\"", "\\", "tab\there", "line\nline", "end\n", "\r\n",
	"ünïcode", "emoji 😀", "\u2028", "\u0085", "\ufeff", "\x00", "\x7f", "\x1b[0m", "=", "<<", "?", "? x",
	"[a]", "{a: b}", ",", "a, b", "http://example.com/x?y=1#z", "app.kubernetes.io/name", "_under", "nginx:1.27",
	"registry.example.com:5000/shop/web@sha256:abc", "a\\nb", "\"quoted\"", "it's",
}

func TestEncodeYAMLStrings(t *testing.T) {
	for _, s := range trickyStrings {
		expectReadBack(t, map[string]interface{}{"v": s, s: "key", "l": []interface{}{s}})
	}
}

func TestEncodeYAMLInvalidUTF8(t *testing.T) {
	// As encoding/json (and so sigs.k8s.io/yaml) writes it: U+FFFD.
	data, err := encodeYAML(map[string]interface{}{"v": "a\xffb"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]interface{}
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got["v"] != "a\ufffdb" {
		t.Errorf("read back %q", got["v"])
	}
}

func TestEncodeYAMLValues(t *testing.T) {
	expectReadBack(t, map[string]interface{}{
		"int": int64(42), "neg": int64(-7), "big": int64(math.MaxInt64), "int32": int32(5), "goint": 3,
		"zero": 0.0, "half": 0.5, "negf": -2.25, "huge": 1e21, "tiny": 1e-7, "third": 1.0 / 3,
		"number": json.Number("12.50"), "t": true, "f": false, "nil": nil,
		"emptyMap": map[string]interface{}{}, "emptyList": []interface{}{},
		"nested": map[string]interface{}{"a": map[string]interface{}{"b": []interface{}{
			map[string]interface{}{"c": int64(1), "d": []interface{}{"x", []interface{}{"y", map[string]interface{}{"z": "w"}}}},
			[]interface{}{}, map[string]interface{}{}, nil, "s",
		}}},
		"other": struct {
			A string `json:"a"`
		}{A: "b"},
	})
	for _, o := range benchObjects(4) {
		expectReadBack(t, o.Object)
	}
	data, err := encodeYAML(map[string]interface{}{})
	if err != nil || string(data) != "{}\n" {
		t.Errorf("empty object: %q %v", data, err)
	}
}

// The layout is kubectl's: nested maps indented by two, a map's lists at the map's indent.
func TestEncodeYAMLLayout(t *testing.T) {
	data, err := encodeYAML(map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "labels": map[string]interface{}{"app.kubernetes.io/name": "web"}},
		"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{
			"containers": []interface{}{map[string]interface{}{"name": "web", "image": "nginx:1.27",
				"args": []interface{}{"--port", "8080"}, "ports": []interface{}{map[string]interface{}{"containerPort": int64(8080)}}}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    app.kubernetes.io/name: web
  name: web
spec:
  template:
    spec:
      containers:
      - args:
        - "--port"
        - "8080"
        image: nginx:1.27
        name: web
        ports:
        - containerPort: 8080
`
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
}

// Files are read back by the manifests package as the objects they were made of.
func TestFilesReadBackAsTheObjects(t *testing.T) {
	objs := benchObjects(50)
	files, err := Files(objs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := manifests.FromFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(objs) {
		t.Fatalf("%d objects read back, want %d", len(back), len(objs))
	}
	for i := range objs {
		if diff := cmp.Diff(asJSON(t, objs[i].Object), asJSON(t, back[i].Object)); diff != "" {
			t.Errorf("object %d (-want +got):\n%s", i, diff)
		}
	}
}

func FuzzEncodeYAMLString(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		expectReadBack(t, map[string]interface{}{key: value, "l": []interface{}{value, map[string]interface{}{key: []interface{}{value}}}})
	})
}
