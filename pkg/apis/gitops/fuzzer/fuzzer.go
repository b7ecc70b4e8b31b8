// Package fuzzer fills gitops.plinth.dev objects with random, encodable values for round-trip
// tests.
package fuzzer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	commonfuzzer "github.com/plinth-dev/plinth/pkg/apis/common/fuzzer"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
)

// Funcs returns the fuzz functions of the gitops.plinth.dev group: inline manifests are raw
// JSON objects, and v1alpha1 fills defaults on decode, so values start defaulted.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		commonfuzzer.RawObject,
		func(s *gitops.OCIRegistrySpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Port == 0 {
				s.Port = 5000
			}
			if s.Endpoint == "" {
				s.Endpoint = fmt.Sprintf("localhost:%d", s.Port)
			}
		},
		func(s *gitops.OCIArtifactSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Repository == "" {
				s.Repository = s.Name
			}
			if s.Tag == "" && s.Version != "" {
				s.Tag = gitops.DefaultTag(s.Version)
			}
		},
		func(t *gitops.ArtifactTarget, c randfill.Continue) {
			c.FillNoCustom(t)
			if t.Namespace == "" {
				t.Namespace = gitops.DefaultFluxNamespace
			}
			if t.Path == "" {
				t.Path = gitops.DefaultPath
			}
			if t.Prune == nil {
				prune := c.Bool()
				t.Prune = &prune
			}
		},
		func(s *gitops.ReconciliationRequestSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Mode == "" {
				s.Mode = gitops.ReconciliationModeManual
			}
			if s.Timeout == nil {
				s.Timeout = &metav1.Duration{Duration: v1alpha1.DefaultReconciliationTimeout}
			}
		},
		func(t *gitops.ReconciliationTarget, c randfill.Continue) {
			c.FillNoCustom(t)
			if t.Namespace == "" && (t.Kind == gitops.TargetKindOCIRepository || t.Kind == gitops.TargetKindKustomization) {
				t.Namespace = gitops.DefaultFluxNamespace
			}
		},
	}
}
