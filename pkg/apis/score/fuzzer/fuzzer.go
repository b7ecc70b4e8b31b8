// Package fuzzer fills score.dev objects with random, encodable values for round-trip tests.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	commonfuzzer "github.com/plinth-dev/plinth/pkg/apis/common/fuzzer"
	"github.com/plinth-dev/plinth/pkg/apis/score"
)

// Funcs returns the fuzz functions of the score.dev group.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		commonfuzzer.RawObject,
		// v1b1 defaults an empty protocol to TCP on decode; start from a defaulted value.
		func(p *score.ServicePort, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.Protocol == "" {
				p.Protocol = "TCP"
			}
		},
	}
}
