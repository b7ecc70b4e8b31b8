// Package validation checks infrastructure.ontai.dev objects: a pack's version grammar
// (vX.Y.Z[-rN]), that it has exactly one kind of content, its chart reference, values and inline
// manifests, targets, dependencies and policies; an instance's seed rules (its name and
// namespace follow its pack and cluster, those two never change, onDrift and upgradeDirection
// are the seed's enums) and the status values. What needs other objects is checked in
// admission (pkg/admission/plugin/packtargets): that named target Clusters exist and that
// dependencies form no cycle.
package validation

import (
	"crypto/x509"
	"fmt"
	"net/url"
	pathpkg "path"
	"strings"

	"github.com/Masterminds/semver/v3"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cv "github.com/plinth-dev/plinth/pkg/apis/common/validation"
	gitopsvalidation "github.com/plinth-dev/plinth/pkg/apis/gitops/validation"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/packs/version"
)

const (
	// MaxRevisionHistoryLimit is the most rendered revisions a pack may keep: each is a Secret
	// of up to a MiB on the management cluster.
	MaxRevisionHistoryLimit = 100
	// MaxClusterNameLength is the longest target Cluster name a pack may name: its instances
	// live in namespace seam-tenant-{cluster}, a DNS label of at most 63 characters.
	MaxClusterNameLength = 63 - len(infrastructure.InstanceNamespacePrefix)
	// MaxTargets is how many clusters one pack may name; a selector may match more.
	MaxTargets = 200
)

var (
	driftPolicies = []infrastructure.DriftPolicy{infrastructure.DriftPolicyDetect, infrastructure.DriftPolicyCorrect}
	onDrift       = []infrastructure.OnDriftPolicy{infrastructure.OnDriftBlock, infrastructure.OnDriftWarn, infrastructure.OnDriftIgnore}
	directions    = []infrastructure.UpgradeDirection{infrastructure.UpgradeDirectionInitial, infrastructure.UpgradeDirectionUpgrade,
		infrastructure.UpgradeDirectionRollback, infrastructure.UpgradeDirectionRedeploy}
	phases = []infrastructure.ClusterPhase{infrastructure.ClusterPhaseReady, infrastructure.ClusterPhaseProgressing, infrastructure.ClusterPhaseDrifted,
		infrastructure.ClusterPhaseBlocked, infrastructure.ClusterPhaseFailed, infrastructure.ClusterPhaseUnreachable}
)

// ValidateInfrastructureClusterPack checks a new pack. Its name is a DNS label, so that its
// instances' names {pack}-{cluster} are DNS subdomains.
func ValidateInfrastructureClusterPack(p *infrastructure.InfrastructureClusterPack) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, validatePackSpec(&p.Spec, p.Name, field.NewPath("spec"))...)
}

// ValidateInfrastructureClusterPackUpdate checks an update: every spec rule again (the spec
// may change; a change is a new delivery).
func ValidateInfrastructureClusterPackUpdate(p, old *infrastructure.InfrastructureClusterPack) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validatePackSpec(&p.Spec, p.Name, field.NewPath("spec"))...)
}

// ValidateInfrastructureClusterPackStatusUpdate checks what plinth-controller writes.
func ValidateInfrastructureClusterPackStatusUpdate(p, old *infrastructure.InfrastructureClusterPack) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	path := field.NewPath("status")
	s := &p.Status
	errs = append(errs, nonNegative(s.ObservedGeneration, path.Child("observedGeneration"))...)
	errs = append(errs, nonNegative(s.Revision, path.Child("revision"))...)
	if s.Version != "" {
		errs = append(errs, packVersion(s.Version, path.Child("version"))...)
	}
	for i, c := range s.Clusters {
		p := path.Child("clusters").Index(i)
		errs = append(errs, clusterName(c.Cluster, p.Child("cluster"))...)
		errs = append(errs, cv.Enum(c.Phase, p.Child("phase"), phases...)...)
	}
	for i, h := range s.History {
		p := path.Child("history").Index(i)
		if h.Revision < 1 {
			errs = append(errs, field.Invalid(p.Child("revision"), h.Revision, "must be at least 1"))
		}
		errs = append(errs, packVersion(h.Version, p.Child("version"))...)
	}
	return append(errs, metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))...)
}

func validatePackSpec(s *infrastructure.InfrastructureClusterPackSpec, name string, path *field.Path) field.ErrorList {
	errs := packVersion(s.Version, path.Child("version"))
	errs = append(errs, validateContent(s, path)...)
	if s.TargetNamespace != "" {
		errs = append(errs, cv.DNSLabel(s.TargetNamespace, path.Child("targetNamespace"))...)
	}
	if len(s.TargetClusters) == 0 && s.ClusterSelector == nil {
		errs = append(errs, field.Required(path.Child("targetClusters"), "a pack needs targetClusters, a clusterSelector or both"))
	}
	if len(s.TargetClusters) > MaxTargets {
		errs = append(errs, field.TooMany(path.Child("targetClusters"), len(s.TargetClusters), MaxTargets))
	}
	errs = append(errs, cv.UniqueStrings(s.TargetClusters, path.Child("targetClusters"), clusterName)...)
	if s.ClusterSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.ClusterSelector, metav1validation.LabelSelectorValidationOptions{}, path.Child("clusterSelector"))...)
	}
	errs = append(errs, cv.UniqueStrings(s.DependsOn, path.Child("dependsOn"), cv.DNSLabel)...)
	for i, d := range s.DependsOn {
		if d == name {
			errs = append(errs, field.Invalid(path.Child("dependsOn").Index(i), d, "a pack cannot depend on itself"))
		}
	}
	if s.DependencyPolicy != nil {
		errs = append(errs, cv.OptionalEnum(s.DependencyPolicy.OnDrift, path.Child("dependencyPolicy", "onDrift"), onDrift...)...)
	}
	errs = append(errs, cv.OptionalEnum(s.DriftPolicy, path.Child("driftPolicy"), driftPolicies...)...)
	if r := s.RollbackToRevision; r != nil && *r < 1 {
		errs = append(errs, field.Invalid(path.Child("rollbackToRevision"), *r, "must be the number of a kept revision (status.history), at least 1"))
	}
	if l := s.RevisionHistoryLimit; l != nil && (*l < 1 || *l > MaxRevisionHistoryLimit) {
		errs = append(errs, field.Invalid(path.Child("revisionHistoryLimit"), *l, fmt.Sprintf("must be between 1 and %d", MaxRevisionHistoryLimit)))
	}
	return errs
}

// validateContent checks that exactly one of chart, kustomize and manifests is set, and it.
func validateContent(s *infrastructure.InfrastructureClusterPackSpec, path *field.Path) field.ErrorList {
	errs := cv.OneOf(path, map[string]bool{"chart": s.Chart != nil, "kustomize": s.Kustomize != nil, "manifests": len(s.Manifests) > 0})
	if s.Values != nil && len(s.Values.Raw) > 0 {
		if s.Chart == nil {
			errs = append(errs, field.Forbidden(path.Child("values"), "values are a chart's; set them only with spec.chart"))
		}
		errs = append(errs, cv.Object(s.Values, path.Child("values"))...)
	}
	if s.Chart != nil {
		errs = append(errs, validateChart(s.Chart, path.Child("chart"))...)
	}
	if k := s.Kustomize; k != nil {
		kp := path.Child("kustomize")
		errs = append(errs, cv.OneOf(kp, map[string]bool{"artifactRef": k.ArtifactRef != nil, "configMapRef": k.ConfigMapRef != nil})...)
		if k.ArtifactRef != nil {
			errs = append(errs, requiredName(k.ArtifactRef.Name, kp.Child("artifactRef", "name"))...)
		}
		if k.ConfigMapRef != nil {
			errs = append(errs, requiredName(k.ConfigMapRef.Name, kp.Child("configMapRef", "name"))...)
		}
		if k.Path != "" && (pathpkg.IsAbs(k.Path) || strings.HasPrefix(pathpkg.Clean(k.Path), "..")) {
			errs = append(errs, field.Invalid(kp.Child("path"), k.Path, "must be a relative directory inside the source"))
		}
	}
	// Inline manifests follow an OCIArtifact's rules, Secrets refused among them: the pack is
	// readable by whoever reads it, so a Secret there would be a credential in plain text in an
	// API response (a chart renders its Secrets instead, kept in Secrets).
	return append(errs, gitopsvalidation.ValidateManifests(s.Manifests, path.Child("manifests"))...)
}

// validateChart checks a chart reference: an https repository or an oci:// registry, a chart
// name, a version or constraint, and a CA bundle that holds certificates.
func validateChart(c *infrastructure.PackChart, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	urlPath := path.Child("url")
	// A refused URL is echoed in the 422 and in audit logs, so a value that may hold a
	// password is shown redacted, or not at all when it does not parse.
	switch u, err := url.Parse(c.URL); {
	case c.URL == "":
		errs = append(errs, field.Required(urlPath, "an https chart repository or an oci:// registry is required"))
	case err != nil:
		errs = append(errs, field.Invalid(urlPath, "<url>", "must be an https:// chart repository or an oci:// registry, such as oci://localhost:5000/charts"))
	case u.User != nil:
		errs = append(errs, field.Invalid(urlPath, u.Redacted(), "must not hold credentials"))
	case u.Host == "" || (u.Scheme != "https" && u.Scheme != "oci"):
		errs = append(errs, field.Invalid(urlPath, c.URL, "must be an https:// chart repository or an oci:// registry, such as oci://localhost:5000/charts"))
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		// The renderer appends /index.yaml or /<name> to the URL: a query or a fragment would
		// end up in the middle of it, and a query is where tokens hide.
		errs = append(errs, field.Invalid(urlPath, u.Scheme+"://"+u.Host+u.EscapedPath(), "must not have a query or a fragment"))
	}
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(path.Child("name"), "the chart's name is required"))
	case strings.ContainsAny(c.Name, "/:@ ") || len(c.Name) > 250:
		errs = append(errs, field.Invalid(path.Child("name"), c.Name, "must be a chart name, without '/', ':', '@' or spaces"))
	}
	if c.Version == "" {
		errs = append(errs, field.Required(path.Child("version"), "a chart version or semver constraint is required"))
	} else if _, err := semver.NewConstraint(c.Version); err != nil {
		errs = append(errs, field.Invalid(path.Child("version"), c.Version, "must be a chart version or a semver constraint such as \">=1.2.0 <2\""))
	}
	if len(c.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.CABundle) {
		errs = append(errs, field.Invalid(path.Child("caBundle"), "<bytes>", "must hold PEM-encoded certificates"))
	}
	return errs
}

func requiredName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return cv.DNSSubdomain(name, path)
}

// packVersion checks a pack version, vX.Y.Z or vX.Y.Z-rN.
func packVersion(v string, path *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "a version vX.Y.Z or vX.Y.Z-rN is required")}
	}
	if _, err := version.Parse(v); err != nil {
		return field.ErrorList{field.Invalid(path, v, err.Error())}
	}
	return nil
}

// clusterName checks a required Cluster name short enough for its instances' namespace.
func clusterName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "a Cluster name is required (kubectl get clusters lists them)")}
	}
	if len(name) > MaxClusterNameLength {
		return field.ErrorList{field.TooLong(path, name, MaxClusterNameLength)}
	}
	return cv.DNSLabel(name, path)
}

func nonNegative(n int64, path *field.Path) field.ErrorList {
	if n < 0 {
		return field.ErrorList{field.Invalid(path, n, "must not be negative")}
	}
	return nil
}

// ValidateInfrastructurePackInstance checks a new instance against the seed's rules: it is
// named {clusterPackRef}-{targetClusterRef} in namespace seam-tenant-{targetClusterRef}.
func ValidateInfrastructurePackInstance(i *infrastructure.InfrastructurePackInstance) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&i.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, validateInstanceSpec(&i.Spec, spec)...)
	if i.Spec.ClusterPackRef != "" && i.Spec.TargetClusterRef != "" {
		if want := i.Spec.ClusterPackRef + "-" + i.Spec.TargetClusterRef; i.Name != want {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), i.Name, fmt.Sprintf("must be %s: {clusterPackRef}-{targetClusterRef}", want)))
		}
		if want := infrastructure.InstanceNamespacePrefix + i.Spec.TargetClusterRef; i.Namespace != want {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), i.Namespace, fmt.Sprintf("must be %s: seam-tenant-{targetClusterRef}", want)))
		}
	}
	return errs
}

// ValidateInfrastructurePackInstanceUpdate checks an update: the pack and cluster an instance
// records never change; the rest is what a new delivery sets.
func ValidateInfrastructurePackInstanceUpdate(i, old *infrastructure.InfrastructurePackInstance) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&i.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, validateInstanceSpec(&i.Spec, spec)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(i.Spec.ClusterPackRef, old.Spec.ClusterPackRef, spec.Child("clusterPackRef"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(i.Spec.TargetClusterRef, old.Spec.TargetClusterRef, spec.Child("targetClusterRef"))...)
}

// ValidateInfrastructurePackInstanceStatusUpdate checks what plinth-controller writes.
func ValidateInfrastructurePackInstanceStatusUpdate(i, old *infrastructure.InfrastructurePackInstance) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&i.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	path := field.NewPath("status")
	s := &i.Status
	errs = append(errs, cv.OptionalEnum(s.UpgradeDirection, path.Child("upgradeDirection"), directions...)...)
	errs = append(errs, nonNegative(s.Revision, path.Child("revision"))...)
	errs = append(errs, nonNegative(s.ObservedGeneration, path.Child("observedGeneration"))...)
	for j, r := range s.DeployedResources {
		p := path.Child("deployedResources").Index(j)
		if r.APIVersion == "" {
			errs = append(errs, field.Required(p.Child("apiVersion"), ""))
		}
		if r.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), ""))
		}
		if r.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
	}
	return append(errs, metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))...)
}

func validateInstanceSpec(s *infrastructure.InfrastructurePackInstanceSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.ClusterPackRef == "" {
		errs = append(errs, field.Required(path.Child("clusterPackRef"), "the name of the InfrastructureClusterPack is required"))
	} else {
		errs = append(errs, cv.DNSLabel(s.ClusterPackRef, path.Child("clusterPackRef"))...)
	}
	errs = append(errs, clusterName(s.TargetClusterRef, path.Child("targetClusterRef"))...)
	if s.Version != "" {
		errs = append(errs, packVersion(s.Version, path.Child("version"))...)
	}
	errs = append(errs, cv.UniqueStrings(s.DependsOn, path.Child("dependsOn"), cv.DNSSubdomain)...)
	if s.DependencyPolicy != nil {
		errs = append(errs, cv.OptionalEnum(s.DependencyPolicy.OnDrift, path.Child("dependencyPolicy", "onDrift"), onDrift...)...)
	}
	return errs
}
