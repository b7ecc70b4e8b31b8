package validation_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/internal/apifuzz"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/install"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/validation"
)

// gitopsGroup is every gitops.plinth.dev kind with the validations its registry runs.
var gitopsGroup = apifuzz.Group{
	Install: install.Install,
	Version: v1alpha1.SchemeGroupVersion,
	Kinds: []apifuzz.Kind{
		apifuzz.KindOf("OCIRegistry", func() *gitops.OCIRegistry { return &gitops.OCIRegistry{} },
			validation.ValidateOCIRegistry, validation.ValidateOCIRegistryUpdate, validation.ValidateOCIRegistryStatusUpdate),
		apifuzz.KindOf("OCIArtifact", func() *gitops.OCIArtifact { return &gitops.OCIArtifact{} },
			validation.ValidateOCIArtifact, validation.ValidateOCIArtifactUpdate, validation.ValidateOCIArtifactStatusUpdate),
		apifuzz.KindOf("ReconciliationRequest", func() *gitops.ReconciliationRequest { return &gitops.ReconciliationRequest{} },
			func(r *gitops.ReconciliationRequest) field.ErrorList {
				return validation.ValidateReconciliationRequest(r, time.Now())
			},
			validation.ValidateReconciliationRequestUpdate, validation.ValidateReconciliationRequestStatusUpdate),
	},
}

// FuzzGitOpsObjects decodes arbitrary bodies as gitops.plinth.dev objects and validates what
// decodes: no panic, and every refusal a 422 whose causes name a field.
func FuzzGitOpsObjects(f *testing.F) {
	gitopsGroup.Seed(f, apifuzz.Examples(f)...)
	f.Fuzz(gitopsGroup.Check)
}
