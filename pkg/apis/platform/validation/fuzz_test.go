package validation_test

import (
	"testing"

	"github.com/plinth-dev/plinth/internal/apifuzz"
	"github.com/plinth-dev/plinth/pkg/apis/platform"
	"github.com/plinth-dev/plinth/pkg/apis/platform/install"
	"github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/platform/validation"
)

// platformGroup is the platform.plinth.dev Cluster with the validations its registry runs; its
// kubeconfig is checked by pkg/kubeconfig, fuzzed on its own there.
var platformGroup = apifuzz.Group{
	Install: install.Install,
	Version: v1alpha1.SchemeGroupVersion,
	Kinds: []apifuzz.Kind{
		apifuzz.KindOf("Cluster", func() *platform.Cluster { return &platform.Cluster{} },
			validation.ValidateCluster, validation.ValidateClusterUpdate, validation.ValidateClusterStatusUpdate),
	},
}

// FuzzPlatformObjects decodes arbitrary bodies as Clusters and validates what decodes: no
// panic, and every refusal a 422 whose causes name a field.
func FuzzPlatformObjects(f *testing.F) {
	platformGroup.Seed(f, apifuzz.Examples(f)...)
	f.Fuzz(platformGroup.Check)
}
