package resourcebinding

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func writeFile(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "provisioners.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadTemplatesRejectsBadFiles(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"missing type":    {"provisioners:\n- outputs: {a: b}\n", "type is required"},
		"duplicate type":  {"provisioners:\n- type: a\n- type: a\n", "defined twice"},
		"bad template":    {"provisioners:\n- type: a\n  outputs: {host: \"{{ .Name \"}\n", "outputs.host"},
		"unknown field":   {"provisioners:\n- type: a\n  output: {}\n", "unknown field"},
		"bad manifests":   {"provisioners:\n- type: a\n  manifests: \"{{ if }}\"\n", "manifests"},
		"unreadable file": {"", "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			path := "/nonexistent/provisioners.yaml"
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			_, err := LoadTemplates(path, Env{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestTemplateOutputs(t *testing.T) {
	provisioners, err := LoadTemplates(writeFile(t, `provisioners:
- type: s3
  outputs:
    bucket: "{{ .Workload }}-{{ .Resource }}-{{ .Params.suffix }}"
    endpoint: "https://s3.{{ .Namespace }}.example.com"
`), Env{})
	if err != nil {
		t.Fatal(err)
	}
	b := &v1b1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-files", Namespace: "team-a"},
		Spec: v1b1.ResourceBindingSpec{WorkloadRef: v1b1.WorkloadReference{Name: "shop"}, ResourceKey: "files", Type: "s3",
			Params: &common.RawObject{Raw: []byte(`{"suffix":"eu"}`)}},
	}
	result, err := provisioners["s3"].Provision(context.Background(), b)
	if err != nil || !result.Ready || result.Values["bucket"] != "shop-files-eu" || result.Values["endpoint"] != "https://s3.team-a.example.com" {
		t.Fatalf("result = %+v, %v", result, err)
	}
	b.Spec.Params = nil
	if _, err := provisioners["s3"].Provision(context.Background(), b); err == nil {
		t.Error("a template reading a missing param must fail, not render <no value>")
	}
}
