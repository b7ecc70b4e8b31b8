// Package fuzzer fills platform.plinth.dev objects with random, encodable values for round-trip
// tests.
package fuzzer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
	"github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
)

// Funcs returns the fuzz functions of the platform.plinth.dev group. v1alpha1 fills the GitOps
// defaults on decode, so values start defaulted.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(g *platform.ClusterGitOps, c randfill.Continue) {
			c.FillNoCustom(g)
			if g.Engine == "" {
				g.Engine = platform.GitOpsEngineKubectl
			}
			if g.FluxInterval == nil {
				g.FluxInterval = &metav1.Duration{Duration: v1alpha1.DefaultFluxInterval}
			}
			if g.RegistryEnabled && g.RegistryPort == 0 {
				g.RegistryPort = v1alpha1.DefaultRegistryPort
			}
		},
	}
}
