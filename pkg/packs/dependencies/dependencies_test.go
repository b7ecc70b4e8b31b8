package dependencies

import (
	"slices"
	"testing"
)

func TestCycleThrough(t *testing.T) {
	for _, tc := range []struct {
		name  string
		graph Graph
		from  string
		want  []string
	}{
		{"none", Graph{"a": {"b"}, "b": {"c"}}, "a", nil},
		{"unknown dependency", Graph{"a": {"missing"}}, "a", nil},
		{"self", Graph{"a": {"a"}}, "a", []string{"a", "a"}},
		{"two", Graph{"a": {"b"}, "b": {"a"}}, "a", []string{"a", "b", "a"}},
		{"three", Graph{"a": {"x", "b"}, "b": {"c"}, "c": {"a"}, "x": nil}, "a", []string{"a", "b", "c", "a"}},
		{"cycle elsewhere", Graph{"a": {"b"}, "b": {"c"}, "c": {"b"}}, "a", nil},
		{"diamond", Graph{"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": nil}, "a", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.graph.CycleThrough(tc.from); !slices.Equal(got, tc.want) {
				t.Fatalf("CycleThrough(%q) = %v, want %v", tc.from, got, tc.want)
			}
		})
	}
}
