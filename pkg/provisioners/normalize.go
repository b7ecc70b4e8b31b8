package provisioners

import (
	"fmt"
	"math"
	"time"
)

// normalize turns what YAML decodes into the JSON-like values Kubernetes' unstructured objects
// hold: maps keyed by strings, int64 for whole numbers, strings for timestamps.
func normalize(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []interface{}:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	case int:
		return int64(x)
	case time.Time:
		// YAML reads an unquoted date as a timestamp; score-k8s writes it back as RFC 3339.
		return x.Format(time.RFC3339Nano)
	case uint64:
		if x > math.MaxInt64 {
			return float64(x)
		}
		return int64(x)
	default:
		return v
	}
}
