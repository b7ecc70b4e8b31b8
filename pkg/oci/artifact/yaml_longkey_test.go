package artifact

import (
	"strings"
	"testing"
)

// Keys past YAML's 1024-character limit on simple keys are written in the explicit form and
// read back, whatever their value and wherever the map is.
func TestLongKeysReadBack(t *testing.T) {
	for _, key := range []string{strings.Repeat("k", 1500), strings.Repeat("\ufffd", 1200), strings.Repeat(`"`, 600)} {
		for name, value := range map[string]interface{}{
			"scalar": "v", "map": map[string]interface{}{"a": int64(1), key: "deep"}, "list": []interface{}{"a", map[string]interface{}{key: "b"}},
			"empty map": map[string]interface{}{}, "empty list": []interface{}{},
		} {
			t.Run(name, func(t *testing.T) {
				expectReadBack(t, map[string]interface{}{key: value, "short": "s", "l": []interface{}{map[string]interface{}{key: value}}})
			})
		}
	}
}
