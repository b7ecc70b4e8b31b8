package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score"
)

func validProvisioner() *score.Provisioner {
	return &score.Provisioner{
		ObjectMeta: metav1.ObjectMeta{Name: "postgres-large"},
		Spec: score.ProvisionerSpec{
			URI:             "template://platform/postgres-large",
			Type:            "postgres",
			Class:           ptr.To("large"),
			Description:     "A dedicated database.",
			Init:            "name: db-{{ .Uid | sha256sum | trunc 8 }}",
			State:           "password: {{ dig \"password\" (randAlphaNum 16) .State | quote }}",
			Outputs:         "host: {{ .Init.name }}\npassword: {{ encodeSecretRef .Init.name \"password\" }}",
			Manifests:       "- apiVersion: v1\n  kind: Service\n  metadata: {name: {{ .Init.name }}}",
			ExpectedOutputs: []string{"host", "password"},
			SupportedParams: []string{"version"},
		},
	}
}

func TestValidateProvisioner(t *testing.T) {
	expectErrors(t, ValidateProvisioner(validProvisioner()))
	for name, tc := range map[string]struct {
		mutate func(*score.Provisioner)
		want   []string
	}{
		"cmd uri":            {func(p *score.Provisioner) { p.Spec.URI = "cmd://python" }, []string{"FieldValueInvalid spec.uri"}},
		"unknown scheme":     {func(p *score.Provisioner) { p.Spec.URI = "https://example.com/postgres" }, []string{"FieldValueInvalid spec.uri"}},
		"no uri":             {func(p *score.Provisioner) { p.Spec.URI = "" }, []string{"FieldValueRequired spec.uri"}},
		"no type":            {func(p *score.Provisioner) { p.Spec.Type = "" }, []string{"FieldValueRequired spec.type"}},
		"bad class":          {func(p *score.Provisioner) { p.Spec.Class = ptr.To("very large") }, []string{"FieldValueInvalid spec.class"}},
		"empty id":           {func(p *score.Provisioner) { p.Spec.ID = ptr.To("") }, []string{"FieldValueInvalid spec.id"}},
		"outputs unparsable": {func(p *score.Provisioner) { p.Spec.Outputs = "host: {{ .Init.name" }, []string{"FieldValueInvalid spec.outputs"}},
		"unknown function":   {func(p *score.Provisioner) { p.Spec.Manifests = "{{ nosuchfunc }}" }, []string{"FieldValueInvalid spec.manifests"}},
		"repeated output": {func(p *score.Provisioner) { p.Spec.ExpectedOutputs = []string{"host", "host"} },
			[]string{"FieldValueDuplicate spec.expected_outputs[1]"}},
		"namespaced":  {func(p *score.Provisioner) { p.Namespace = "team-a" }, []string{"FieldValueForbidden metadata.namespace"}},
		"bad name":    {func(p *score.Provisioner) { p.Name = "Postgres_Large" }, []string{"FieldValueInvalid metadata.name"}},
		"two at once": {func(p *score.Provisioner) { p.Spec.URI, p.Spec.State = "cmd://x", "{{" }, []string{"FieldValueInvalid spec.state", "FieldValueInvalid spec.uri"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := validProvisioner()
			tc.mutate(p)
			expectErrors(t, ValidateProvisioner(p), tc.want...)
		})
	}
}

// The refusal of cmd:// says why in a sentence a platform administrator can act on.
func TestValidateProvisionerCmdMessage(t *testing.T) {
	p := validProvisioner()
	p.Spec.URI = "cmd://python"
	errs := ValidateProvisioner(p)
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, "runs no commands") {
		t.Errorf("errors %v", errs)
	}
}

func TestValidateProvisionerUpdate(t *testing.T) {
	old := validProvisioner()
	old.ResourceVersion = "1"
	p := validProvisioner()
	p.ResourceVersion = "1"
	p.Spec.Type, p.Spec.Class = "mysql", nil
	expectErrors(t, ValidateProvisionerUpdate(p, old))
	p.Spec.Outputs = "{{ end }}"
	expectErrors(t, ValidateProvisionerUpdate(p, old), "FieldValueInvalid spec.outputs")
	p = validProvisioner()
	p.ResourceVersion, p.Name = "1", "renamed"
	expectErrors(t, ValidateProvisionerUpdate(p, old), "FieldValueInvalid metadata.name")
}
