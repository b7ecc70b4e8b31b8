package provisioners

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func validSpec() v1b1.ProvisionerSpec {
	return v1b1.ProvisionerSpec{
		URI: "template://example/db", Type: "postgres",
		Init:            `user: {{ randAlpha 8 | quote }}`,
		State:           `user: {{ dig "user" .Init.user .State | quote }}`,
		Outputs:         `username: {{ .State.user }}`,
		ExpectedOutputs: []string{"username"}, SupportedParams: []string{"size"},
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*v1b1.ProvisionerSpec)
		// want are the fields in error and a piece of each error's text, in order.
		want []string
	}{
		{name: "valid", mutate: func(*v1b1.ProvisionerSpec) {}},
		{name: "class and id set", mutate: func(s *v1b1.ProvisionerSpec) { s.Class, s.ID = ptr.To("large"), ptr.To("shared-db") }},
		{name: "missing uri", mutate: func(s *v1b1.ProvisionerSpec) { s.URI = "" }, want: []string{"spec.uri", "is required"}},
		{name: "cmd uri", mutate: func(s *v1b1.ProvisionerSpec) { s.URI = "cmd://bash#example" },
			want: []string{"spec.uri", "plinth-controller runs no commands; use a template:// provisioner"}},
		{name: "other scheme", mutate: func(s *v1b1.ProvisionerSpec) { s.URI = "https://example.com/p" },
			want: []string{"spec.uri", "https:// is not supported"}},
		{name: "no scheme", mutate: func(s *v1b1.ProvisionerSpec) { s.URI = "example/p" }, want: []string{"spec.uri", "no scheme"}},
		{name: "bad uri", mutate: func(s *v1b1.ProvisionerSpec) { s.URI = "template://%zz" }, want: []string{"spec.uri", "does not parse"}},
		{name: "missing type", mutate: func(s *v1b1.ProvisionerSpec) { s.Type = "" }, want: []string{"spec.type", "is required"}},
		{name: "bad type", mutate: func(s *v1b1.ProvisionerSpec) { s.Type = "post gres" }, want: []string{"spec.type", "2 to 63"}},
		{name: "one-letter type", mutate: func(s *v1b1.ProvisionerSpec) { s.Type = "p" }, want: []string{"spec.type", "2 to 63"}},
		{name: "empty class", mutate: func(s *v1b1.ProvisionerSpec) { s.Class = ptr.To("") }, want: []string{"spec.class", "leave it unset"}},
		{name: "empty id", mutate: func(s *v1b1.ProvisionerSpec) { s.ID = ptr.To(" ") }, want: []string{"spec.id", "must not be empty"}},
		{name: "bad init", mutate: func(s *v1b1.ProvisionerSpec) { s.Init = "{{ .Params.x " }, want: []string{"spec.init", "does not parse"}},
		{name: "bad state", mutate: func(s *v1b1.ProvisionerSpec) { s.State = "{{ end }}" }, want: []string{"spec.state", "does not parse"}},
		{name: "bad shared", mutate: func(s *v1b1.ProvisionerSpec) { s.Shared = "{{ nosuchfunc 1 }}" }, want: []string{"spec.shared", `function "nosuchfunc" not defined`}},
		{name: "env refused", mutate: func(s *v1b1.ProvisionerSpec) { s.Outputs = `home: {{ env "HOME" }}` }, want: []string{"spec.outputs", `function "env" not defined`}},
		{name: "getHostByName refused", mutate: func(s *v1b1.ProvisionerSpec) { s.Outputs = `ip: {{ getHostByName "example.com" }}` }, want: []string{"spec.outputs", `function "getHostByName" not defined`}},
		{name: "expandenv refused", mutate: func(s *v1b1.ProvisionerSpec) { s.Manifests = `- {{ expandenv "$HOME" }}` }, want: []string{"spec.manifests", `function "expandenv" not defined`}},
		{name: "empty output name", mutate: func(s *v1b1.ProvisionerSpec) { s.ExpectedOutputs = []string{"a", ""} }, want: []string{"spec.expected_outputs[1]", "must not be empty"}},
		{name: "repeated output", mutate: func(s *v1b1.ProvisionerSpec) { s.ExpectedOutputs = []string{"a", "a"} }, want: []string{"spec.expected_outputs[1]", "Duplicate"}},
		{name: "repeated param", mutate: func(s *v1b1.ProvisionerSpec) { s.SupportedParams = []string{"x", "y", "x"} }, want: []string{"spec.supported_params[2]", "Duplicate"}},
		{name: "several", mutate: func(s *v1b1.ProvisionerSpec) { s.URI, s.Type = "cmd://x", "" },
			want: []string{"spec.uri", "cmd://", "spec.type", "required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := validSpec()
			tc.mutate(&spec)
			errs := Validate(&spec, field.NewPath("spec"))
			if len(errs) != len(tc.want)/2 {
				t.Fatalf("got %d errors %v, want %d", len(errs), errs, len(tc.want)/2)
			}
			for i, err := range errs {
				if err.Field != tc.want[2*i] || !strings.Contains(err.Error(), tc.want[2*i+1]) {
					t.Errorf("error %d = %q, want field %s and %q", i, err.Error(), tc.want[2*i], tc.want[2*i+1])
				}
			}
		})
	}
}

// A template's parse error names the template but never shows a value.
func TestValidateTemplateErrorHasNoValue(t *testing.T) {
	spec := validSpec()
	spec.Init = "{{ .Params.x "
	errs := Validate(&spec, field.NewPath("spec"))
	want := "spec.init: Invalid value: the template does not parse: template: init:1: unclosed action"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("got %v, want %q", errs, want)
	}
}
