// Package fuzzer fills governance.plinth.dev objects with random, encodable values for
// round-trip tests.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	commonfuzzer "github.com/plinth-dev/plinth/pkg/apis/common/fuzzer"
	"github.com/plinth-dev/plinth/pkg/apis/governance"
)

// Funcs returns the fuzz functions of the governance.plinth.dev group. v1alpha1 fills
// defaults on decode, so values start defaulted.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		commonfuzzer.RawObject,
		func(s *governance.SystemSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Environment == "" {
				s.Environment = governance.EnvironmentTest
			}
		},
		func(s *governance.ManagedVMSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.RunStrategy == "" {
				s.RunStrategy = governance.RunStrategyAlways
			}
		},
		func(s *governance.ApprovalPolicySpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.RequiredApprovals == 0 {
				s.RequiredApprovals = 1
			}
		},
	}
}
