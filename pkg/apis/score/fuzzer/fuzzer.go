// Package fuzzer fills score.dev objects with random, encodable values for round-trip tests.
package fuzzer

import (
	"fmt"

	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score"
)

// Funcs returns the fuzz functions of the score.dev group.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		// A RawObject must hold a JSON object; random bytes would not survive encoding.
		func(r *common.RawObject, c randfill.Continue) {
			r.Raw = []byte(fmt.Sprintf(`{"%s":{"n":%d,"s":"%s"}}`, alnum(c), c.Int31(), alnum(c)))
		},
		// v1b1 defaults an empty protocol to TCP on decode; start from a defaulted value.
		func(p *score.ServicePort, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.Protocol == "" {
				p.Protocol = "TCP"
			}
		},
	}
}

// alnum returns a short random string that JSON encodes without escapes.
func alnum(c randfill.Continue) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	n := 1 + c.Intn(8)
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[c.Intn(len(letters))]
	}
	return string(b)
}
