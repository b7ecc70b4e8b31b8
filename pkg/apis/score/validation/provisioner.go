package validation

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/provisioners"
)

// ValidateProvisioner checks a new provisioner: a cluster-scoped name and a spec that is a
// working template provisioner in score-k8s's format.
func ValidateProvisioner(p *score.Provisioner) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateProvisionerSpec(&p.Spec, field.NewPath("spec"))...)
}

// ValidateProvisionerUpdate checks an update of a provisioner's metadata and spec; every field
// of the spec may change.
func ValidateProvisionerUpdate(p, old *score.Provisioner) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateProvisionerSpec(&p.Spec, field.NewPath("spec"))...)
}

// validateProvisionerSpec checks the spec as the controller will load it: the format's rules
// live in pkg/provisioners, which works on the versioned type, so the spec is converted first.
func validateProvisionerSpec(spec *score.ProvisionerSpec, fldPath *field.Path) field.ErrorList {
	versioned := &v1b1.ProvisionerSpec{}
	if err := v1b1.Convert_score_ProvisionerSpec_To_v1b1_ProvisionerSpec(spec, versioned, nil); err != nil {
		return field.ErrorList{field.InternalError(fldPath, err)}
	}
	return provisioners.Validate(versioned, fldPath)
}
