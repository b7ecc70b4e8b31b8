// Package validation checks platform.plinth.dev objects. A Cluster's kubeconfig is checked by
// pkg/kubeconfig, whose errors never repeat the kubeconfig's content.
package validation

import (
	"fmt"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cv "github.com/plinth-dev/plinth/pkg/apis/common/validation"
	gitopsvalidation "github.com/plinth-dev/plinth/pkg/apis/gitops/validation"
	"github.com/plinth-dev/plinth/pkg/apis/platform"
	"github.com/plinth-dev/plinth/pkg/kubeconfig"
)

const maxDescription = 4096

var phases = sets.New(platform.ClusterPhaseUnknown, platform.ClusterPhaseHealthy, platform.ClusterPhaseUnhealthy, platform.ClusterPhaseUnreachable)

// SealedPrefix starts the stored (sealed) form of a kubeconfig. It may appear in
// spec.kubeconfig only: a patch that copies it elsewhere (a JSON patch "copy" from
// /spec/kubeconfig) would put the ciphertext where every reader sees it.
const SealedPrefix = "plinth-sealed/"

// ValidateCluster checks a new cluster: a DNS label for a name (it is stamped on VMs and
// tickets) and a usable kubeconfig.
func ValidateCluster(c *platform.Cluster) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(c, false, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	errs = append(errs, kubeconfig.Check([]byte(c.Spec.Kubeconfig), field.NewPath("spec", "kubeconfig"))...)
	errs = append(errs, noSealedCopies(c)...)
	errs = append(errs, validateGitOps(&c.Spec.GitOps, field.NewPath("spec", "gitOps"))...)
	return append(errs, validateDescription(c.Spec.Description)...)
}

func noSealedCopies(c *platform.Cluster) field.ErrorList {
	var errs field.ErrorList
	for path, values := range map[*field.Path]map[string]string{
		field.NewPath("metadata", "annotations"): c.Annotations, field.NewPath("metadata", "labels"): c.Labels,
	} {
		for k, v := range values {
			if strings.Contains(v, SealedPrefix) {
				errs = append(errs, field.Forbidden(path.Key(k), "may not hold a sealed kubeconfig"))
			}
		}
	}
	if strings.Contains(c.Spec.Description, SealedPrefix) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "description"), "may not hold a sealed kubeconfig"))
	}
	return errs
}

// ValidateClusterUpdate checks an update. An update without a kubeconfig keeps the stored one
// (the strategy puts it back before validation), so only a new kubeconfig is checked.
func ValidateClusterUpdate(c, old *platform.Cluster) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(c, old, field.NewPath("metadata"))
	if c.Spec.Kubeconfig != old.Spec.Kubeconfig {
		errs = append(errs, kubeconfig.Check([]byte(c.Spec.Kubeconfig), field.NewPath("spec", "kubeconfig"))...)
	}
	errs = append(errs, noSealedCopies(c)...)
	errs = append(errs, validateGitOps(&c.Spec.GitOps, field.NewPath("spec", "gitOps"))...)
	return append(errs, validateDescription(c.Spec.Description)...)
}

// ValidateClusterStatusUpdate checks what a probe reports.
func ValidateClusterStatusUpdate(c, old *platform.Cluster) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(c, old, field.NewPath("metadata"))
	path := field.NewPath("status")
	if p := c.Status.Phase; p != "" && !phases.Has(p) {
		errs = append(errs, field.NotSupported(path.Child("phase"), p, sets.List(phases)))
	}
	seen := sets.New[string]()
	for i, f := range c.Status.EnabledFeatures {
		if seen.Has(f) {
			errs = append(errs, field.Duplicate(path.Child("enabledFeatures").Index(i), f))
		}
		seen.Insert(f)
	}
	if c.Status.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(path.Child("observedGeneration"), c.Status.ObservedGeneration, "must not be negative"))
	}
	return append(errs, metav1validation.ValidateConditions(c.Status.Conditions, path.Child("conditions"))...)
}

// validateGitOps checks how artifacts reach the cluster: a known engine, a registry port above
// the privileged range (the registry listens on localhost:<registryPort>), required with
// registryEnabled, and a Flux interval greater than zero (the seed's rule). An empty engine is
// accepted as the default, Kubectl: the API's defaulting always sets one, and Clusters stored
// before the field existed have none.
func validateGitOps(g *platform.ClusterGitOps, path *field.Path) field.ErrorList {
	errs := cv.OptionalEnum(g.Engine, path.Child("engine"), platform.GitOpsEngineKubectl, platform.GitOpsEngineFlux)
	// The port becomes the spec.port of the OCIRegistry the Cluster owns: the same range.
	portRange := fmt.Sprintf("between %d and %d", gitopsvalidation.MinRegistryPort, gitopsvalidation.MaxRegistryPort)
	port := path.Child("registryPort")
	switch {
	case g.RegistryPort == 0 && g.RegistryEnabled:
		errs = append(errs, field.Required(port, "a registry port "+portRange+" is required with registryEnabled"))
	case g.RegistryPort != 0 && (g.RegistryPort < gitopsvalidation.MinRegistryPort || g.RegistryPort > gitopsvalidation.MaxRegistryPort):
		errs = append(errs, field.Invalid(port, g.RegistryPort, "must be "+portRange))
	}
	if g.FluxInterval != nil && g.FluxInterval.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("fluxInterval"), g.FluxInterval.Duration.String(), "must be greater than zero"))
	}
	return errs
}

func validateDescription(d string) field.ErrorList {
	if len(d) > maxDescription {
		return field.ErrorList{field.TooLong(field.NewPath("spec", "description"), "", maxDescription)}
	}
	return nil
}
