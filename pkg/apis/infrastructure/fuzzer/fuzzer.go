// Package fuzzer fills infrastructure.ontai.dev objects with random, encodable values for
// round-trip tests.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	commonfuzzer "github.com/plinth-dev/plinth/pkg/apis/common/fuzzer"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
)

// Funcs returns the fuzz functions of the infrastructure.ontai.dev group: values and inline
// manifests are raw JSON objects, and v1alpha1 fills defaults on decode, so values start
// defaulted.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		commonfuzzer.RawObject,
		func(s *infrastructure.InfrastructureClusterPackSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.DriftPolicy == "" {
				s.DriftPolicy = infrastructure.DriftPolicyDetect
			}
			if s.DependencyPolicy == nil {
				s.DependencyPolicy = &infrastructure.DependencyPolicy{}
			}
			if s.TargetNamespace == "" {
				s.TargetNamespace = infrastructure.DefaultTargetNamespace
			}
			if s.RevisionHistoryLimit == nil {
				limit := int32(v1alpha1.DefaultRevisionHistoryLimit)
				s.RevisionHistoryLimit = &limit
			}
		},
		func(p *infrastructure.DependencyPolicy, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.OnDrift == "" {
				p.OnDrift = infrastructure.OnDriftWarn
			}
		},
	}
}
