package provisioners

import (
	"errors"
	"testing"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// scoreK8sStyle writes its state's name unquoted, as score-k8s's own templates do.
var scoreK8sStyle = v1b1.ProvisionerSpec{
	State: `name: {{ dig "name" "thing-1" .State | quote }}`,
	Manifests: `- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: {{ .State.name }}
    labels: {team: {{ .Params.team | default "none" }}}
  data:
    shared: {{ .Shared.note | default "none" }}`,
}

// A template that writes a value from outside it (the state, which the namespace's editors can
// change in its Secret; the shared state; the params) unquoted cannot be made to add manifest
// items or keys with a value that spans lines: the render fails, naming the template, instead of
// reading the value as YAML.
func TestAValueFromOutsideCannotAddManifestItems(t *testing.T) {
	tmpl := mustCompile(t, scoreK8sStyle)
	r, err := tmpl.Render(Data{State: map[string]interface{}{"name": "thing-1"}})
	if err != nil || len(r.Manifests) != 1 {
		t.Fatalf("a plain state: %v, %v", r, err)
	}
	for name, data := range map[string]Data{
		// Each would give valid YAML: a second object, or a field of the first.
		"state, an item": {State: map[string]interface{}{"name": "x\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: injected"}},
		"state, a key":   {State: map[string]interface{}{"name": "x\n    namespace: kube-system"}},
		"state, crlf":    {State: map[string]interface{}{"name": "x\r\n- apiVersion: v1\r\n  kind: ConfigMap\r\n  metadata:\r\n    name: injected\r\n"}},
		"shared state":   {Shared: map[string]interface{}{"note": "n\n    injected: y"}},
		"params":         {Params: map[string]interface{}{"team": "a}\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: injected, labels: {team: b}"}},
	} {
		r, err := tmpl.Render(data)
		var re *RenderError
		if !errors.As(err, &re) || re.Template != "manifests" || re.Message != errWrittenAsIs {
			t.Errorf("%s: got %v, %v; want the manifests template's error", name, r, err)
		}
	}

	// Quoted, encoded or indented, a value that spans lines is data, wherever it comes from.
	quoted := mustCompile(t, v1b1.ProvisionerSpec{
		State: `pem: {{ dig "pem" "" .State | quote }}`,
		Outputs: `a: {{ .State.pem | toJson }}
b: {{ .State.pem | b64enc }}
c: |
{{ .State.pem | indent 2 }}
e: {{ .Params.note | quote }}`,
	})
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n- apiVersion: v1\n-----END CERTIFICATE-----\n"
	r, err = quoted.Render(Data{State: map[string]interface{}{"pem": pem}, Params: map[string]interface{}{"note": "one\ntwo"}})
	if err != nil {
		t.Fatalf("quoted values: %v", err)
	}
	if r.Outputs["a"] != pem || r.Outputs["c"] != pem || r.Outputs["e"] != "one\ntwo" || len(r.Outputs) != 4 {
		t.Errorf("outputs %q", r.Outputs)
	}
}
