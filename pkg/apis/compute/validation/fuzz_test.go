package validation_test

import (
	"testing"

	"github.com/plinth-dev/plinth/internal/apifuzz"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/apis/compute/install"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/compute/validation"
)

// computeGroup is every compute.plinth.dev kind with the validations its registry runs.
var computeGroup = apifuzz.Group{
	Install: install.Install,
	Version: v1alpha1.SchemeGroupVersion,
	Kinds: []apifuzz.Kind{
		apifuzz.KindOf("TenantCompute", func() *compute.TenantCompute { return &compute.TenantCompute{} },
			validation.ValidateTenantCompute, validation.ValidateTenantComputeUpdate, validation.ValidateTenantComputeStatusUpdate),
		apifuzz.KindOf("ComputeProvider", func() *compute.ComputeProvider { return &compute.ComputeProvider{} },
			validation.ValidateComputeProvider, validation.ValidateComputeProviderUpdate, validation.ValidateComputeProviderStatusUpdate),
		apifuzz.KindOf("TenantIDClaim", func() *compute.TenantIDClaim { return &compute.TenantIDClaim{} },
			validation.ValidateTenantIDClaim, validation.ValidateTenantIDClaimUpdate, nil),
	},
}

// FuzzComputeObjects decodes arbitrary bodies as compute.plinth.dev objects and validates what
// decodes: no panic, and every refusal a 422 whose causes name a field.
func FuzzComputeObjects(f *testing.F) {
	computeGroup.Seed(f, apifuzz.Examples(f)...)
	f.Fuzz(computeGroup.Check)
}
