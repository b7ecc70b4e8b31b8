package provisioners

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"
)

func TestParseFile(t *testing.T) {
	file := `
- uri: template://example/one
  type: postgres
  class: large
  id: null
  description: One.
  init: |
    x: 1
  outputs: |
    host: db
  expected_outputs: [host]
  supported_params: [size]
- uri: template://example/two
  type: redis
  id: shared-cache
`
	specs, skipped, err := ParseFile([]byte(file))
	if len(skipped) > 0 {
		t.Fatalf("skipped: %v", skipped)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("got %d entries, want 2", len(specs))
	}
	one, two := specs[0], specs[1]
	if one.URI != "template://example/one" || one.Type != "postgres" || !ptrEqual(one.Class, ptr.To("large")) || one.ID != nil ||
		one.Description != "One." || one.Init != "x: 1\n" || one.Outputs != "host: db\n" ||
		strings.Join(one.ExpectedOutputs, ",") != "host" || strings.Join(one.SupportedParams, ",") != "size" {
		t.Errorf("first entry = %+v", one)
	}
	if two.Type != "redis" || two.Class != nil || !ptrEqual(two.ID, ptr.To("shared-cache")) {
		t.Errorf("second entry = %+v", two)
	}
}

func ptrEqual(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func TestParseFileEmpty(t *testing.T) {
	for _, file := range []string{"[]", "", "# nothing\n"} {
		specs, _, err := ParseFile([]byte(file))
		if err != nil || len(specs) != 0 {
			t.Errorf("ParseFile(%q) = %v, %v; want no entries", file, specs, err)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	cases := []struct{ name, file, want string }{
		{"not a list", "uri: template://x\ntype: a\n", "not a YAML list of provisioners"},
		{"not YAML", "- [", "not valid YAML"},
		{"entry not a map", "- template://x\n", "[0]: the entry is not a YAML map"},
		{"null entry", "- null\n", "[0]: the entry is not a YAML map"},
		{"unknown field", "- uri: template://x/a\n  type: aa\n  args: [x]\n", `[0]: the field "args" is not a field of a template provisioner`},
		{"wrong type", "- uri: template://x/a\n  type: aa\n  expected_outputs: host\n", "[0]: the field expected_outputs must be a []string, not a string"},
		{"missing type", "- uri: template://x/a\n", "[0].type: Required value"},
		{"missing uri", "- type: aa\n", "[0].uri: Required value"},
		{"bad template", "- uri: template://x/a\n  type: aa\n- uri: template://x/b\n  type: bb\n  outputs: '{{ .x '\n",
			"[1].outputs: Invalid value: the template does not parse: template: outputs:1: unclosed action"},
		{"several errors", "- uri: https://x\n  type: ''\n", "[0].uri: Invalid value: \"https://x\": the scheme https:// is not supported; only template:// provisioners are supported, [0].type: Required value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseFile([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// score-k8s's own files put cmd:// examples beside their template provisioners: the file loads,
// without them, and each is reported with the reason.
func TestParseFileLeavesOutCommandProvisioners(t *testing.T) {
	file := "- uri: template://ok/a\n  type: aa\n- uri: cmd://bash#x\n  type: aa\n  args: [-c, echo]\n- uri: template://ok/b\n  type: bb\n"
	specs, skipped, err := ParseFile([]byte(file))
	if err != nil || len(specs) != 2 || specs[0].URI != "template://ok/a" || specs[1].URI != "template://ok/b" {
		t.Fatalf("specs = %+v, %v", specs, err)
	}
	want := `[1].uri: Invalid value: "cmd://bash#x": cmd:// provisioners are not supported because plinth-controller runs no commands; use a template:// provisioner`
	if len(skipped) != 1 || skipped[0].Error() != want {
		t.Fatalf("skipped = %v, want %s", skipped, want)
	}
}
