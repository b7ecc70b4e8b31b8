package validation_test

import (
	"testing"

	"github.com/plinth-dev/plinth/internal/apifuzz"
	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/install"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/apis/score/validation"
)

// scoreGroup is every score.dev kind with the validations its registry strategy runs.
var scoreGroup = apifuzz.Group{
	Install: install.Install,
	Version: v1b1.SchemeGroupVersion,
	Kinds: []apifuzz.Kind{
		apifuzz.KindOf("Workload", func() *score.Workload { return &score.Workload{} },
			validation.ValidateWorkload, validation.ValidateWorkloadUpdate, validation.ValidateWorkloadStatusUpdate),
		apifuzz.KindOf("PlatformPolicy", func() *score.PlatformPolicy { return &score.PlatformPolicy{} },
			validation.ValidatePlatformPolicy, validation.ValidatePlatformPolicyUpdate, validation.ValidatePlatformPolicyStatusUpdate),
		apifuzz.KindOf("Provisioner", func() *score.Provisioner { return &score.Provisioner{} },
			validation.ValidateProvisioner, validation.ValidateProvisionerUpdate, nil),
		apifuzz.KindOf("ResourceBinding", func() *score.ResourceBinding { return &score.ResourceBinding{} },
			validation.ValidateResourceBinding, validation.ValidateResourceBindingUpdate, validation.ValidateResourceBindingStatusUpdate),
		apifuzz.KindOf("WorkloadPlan", func() *score.WorkloadPlan { return &score.WorkloadPlan{} },
			validation.ValidateWorkloadPlan, validation.ValidateWorkloadPlanUpdate, validation.ValidateWorkloadPlanStatusUpdate),
	},
}

// FuzzScoreObjects decodes arbitrary bodies as score.dev objects and validates what decodes:
// no panic, and every refusal a 422 whose causes name a field.
func FuzzScoreObjects(f *testing.F) {
	scoreGroup.Seed(f, apifuzz.Examples(f)...)
	f.Fuzz(scoreGroup.Check)
}
