package provisioners

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Decoded YAML becomes the values unstructured objects hold: int64 whole numbers (a float
// beyond int64), maps keyed by strings whatever YAML keyed them by, timestamps as RFC 3339.
func TestNormalize(t *testing.T) {
	var v interface{}
	if err := yaml.Unmarshal([]byte("a: 1\nbig: 18446744073709551615\nf: 1.5\n? true\n: yes\nl: [2, {3: x}]\nd: 2024-01-02\n"), &v); err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{
		"a": int64(1), "big": float64(18446744073709551615), "f": 1.5, "true": "yes",
		"l": []interface{}{int64(2), map[string]interface{}{"3": "x"}}, "d": "2024-01-02T00:00:00Z",
	}
	if got := normalize(v); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
}
