package validation_test

import (
	"testing"

	"github.com/plinth-dev/plinth/internal/apifuzz"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/install"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/validation"
)

// infrastructureGroup is every infrastructure.plinth.dev kind with the validations its registry
// runs.
var infrastructureGroup = apifuzz.Group{
	Install: install.Install,
	Version: v1alpha1.SchemeGroupVersion,
	Kinds: []apifuzz.Kind{
		apifuzz.KindOf("InfrastructureClusterPack", func() *infrastructure.InfrastructureClusterPack { return &infrastructure.InfrastructureClusterPack{} },
			validation.ValidateInfrastructureClusterPack, validation.ValidateInfrastructureClusterPackUpdate, validation.ValidateInfrastructureClusterPackStatusUpdate),
		apifuzz.KindOf("InfrastructurePackInstance", func() *infrastructure.InfrastructurePackInstance { return &infrastructure.InfrastructurePackInstance{} },
			validation.ValidateInfrastructurePackInstance, validation.ValidateInfrastructurePackInstanceUpdate, validation.ValidateInfrastructurePackInstanceStatusUpdate),
	},
}

// FuzzInfrastructureObjects decodes arbitrary bodies as infrastructure.plinth.dev objects and
// validates what decodes: no panic, and every refusal a 422 whose causes name a field.
func FuzzInfrastructureObjects(f *testing.F) {
	infrastructureGroup.Seed(f, apifuzz.Examples(f)...)
	f.Fuzz(infrastructureGroup.Check)
}
