// Package validation checks gitops.plinth.dev objects: the seed's rules (an endpoint is
// localhost:<port>, a version is semver or latest, the URL pattern), the OCI grammars of
// repositories and tags, the inline manifests (with pkg/gitops/manifests, as plinth-controller
// checks a ConfigMap's files before a push), immutable fields and status values. What needs
// other objects is checked elsewhere: that a target Cluster exists in admission
// (pkg/admission/plugin/gitopstargets), that a pushed version keeps its content in the
// registry (pkg/registry/gitops/ociartifact, 409 Conflict).
package validation

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	cv "github.com/plinth-dev/plinth/pkg/apis/common/validation"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/platform"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

const (
	// MaxReconciliationTargets is how many objects one ReconciliationRequest may name:
	// plinth-controller follows each until it has handled the request.
	MaxReconciliationTargets = 50
	// MaxReconciliationTimeout is the longest a ReconciliationRequest may wait for its
	// targets; Flux's own default timeout for a reconcile is far shorter.
	MaxReconciliationTimeout = time.Hour
	// MaxRequestedAtSkew is how far a new ReconciliationRequest's spec.requestedAt may be from
	// the server's time: the value becomes the targets' reconcile annotation, and a request
	// counts as handled once a target reports that time or a later one, so a far-future value
	// would make every later request look handled. Five minutes allows for clocks that drift.
	MaxRequestedAtSkew = 5 * time.Minute
	// MaxTargetRevisionLength is how long a ReconciliationRequest target's revision may be: a
	// tag (at most 128 characters), "@" and a digest (sha256:<64 hex>, or a longer algorithm's)
	// fit well within it.
	MaxTargetRevisionLength = 256
)

var (
	registryPhases       = []gitops.RegistryPhase{gitops.RegistryPhaseNotProvisioned, gitops.RegistryPhaseProvisioning, gitops.RegistryPhaseRunning, gitops.RegistryPhaseError}
	reconciliationPhases = []gitops.ReconciliationPhase{gitops.ReconciliationPending, gitops.ReconciliationInProgress, gitops.ReconciliationSucceeded, gitops.ReconciliationFailed}
	reconciliationModes  = []gitops.ReconciliationMode{gitops.ReconciliationModeAutomatic, gitops.ReconciliationModeManual}
	targetKinds          = []string{gitops.TargetKindOCIRepository, gitops.TargetKindKustomization, gitops.TargetKindOCIArtifact}
	// engines are the values of a target's status.targets[].engine: a Cluster's
	// spec.gitOps.engine.
	engines = []string{string(platform.GitOpsEngineKubectl), string(platform.GitOpsEngineFlux)}
)

// ValidateOCIRegistry checks a new OCIRegistry. Its name is a DNS label: without dataPath or
// volumeName, the data lives in a volume (a directory) named after it.
func ValidateOCIRegistry(r *gitops.OCIRegistry) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(r, true, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, validateRegistrySpec(&r.Spec, field.NewPath("spec"))...)
}

// ValidateOCIRegistryUpdate checks an update through the main resource: the spec as on create,
// and where the registry listens and stores its data unchanged — moving either would strand
// the pushed artifacts and every OCIRepository pointing at the endpoint.
func ValidateOCIRegistryUpdate(r, old *gitops.OCIRegistry) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(r, old, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, validateRegistrySpec(&r.Spec, spec)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(r.Spec.Endpoint, old.Spec.Endpoint, spec.Child("endpoint"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(r.Spec.Port, old.Spec.Port, spec.Child("port"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(r.Spec.DataPath, old.Spec.DataPath, spec.Child("dataPath"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(r.Spec.VolumeName, old.Spec.VolumeName, spec.Child("volumeName"))...)
}

// ValidateOCIRegistryStatusUpdate checks what plinth-controller reports.
func ValidateOCIRegistryStatusUpdate(r, old *gitops.OCIRegistry) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(r, old, field.NewPath("metadata"))
	s, path := r.Status, field.NewPath("status")
	errs = append(errs, cv.OptionalEnum(s.Phase, path.Child("phase"), registryPhases...)...)
	if s.URL != "" {
		errs = append(errs, cv.URI(s.URL, path.Child("url"))...)
	}
	if s.StoragePath != "" {
		errs = append(errs, cv.AbsolutePath(s.StoragePath, path.Child("storagePath"))...)
	}
	errs = append(errs, observedGeneration(s.ObservedGeneration, path)...)
	return append(errs, metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))...)
}

func validateRegistrySpec(s *gitops.OCIRegistrySpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	portPath := path.Child("port")
	if s.Port == 0 {
		errs = append(errs, field.Required(portPath, fmt.Sprintf("a port between %d and %d is required", MinRegistryPort, MaxRegistryPort)))
	} else if s.Port < MinRegistryPort || s.Port > MaxRegistryPort {
		errs = append(errs, field.Invalid(portPath, s.Port, fmt.Sprintf("must be between %d and %d", MinRegistryPort, MaxRegistryPort)))
	}
	endpointPath := path.Child("endpoint")
	if s.Endpoint == "" {
		errs = append(errs, field.Required(endpointPath, "an endpoint localhost:<port> is required"))
	} else if port, err := splitEndpoint(s.Endpoint); err != nil {
		errs = append(errs, field.Invalid(endpointPath, s.Endpoint, err.Error()))
	} else if s.Port != 0 && port != s.Port {
		errs = append(errs, field.Invalid(endpointPath, s.Endpoint, fmt.Sprintf("the port must be spec.port, %d", s.Port)))
	} else if err := portInRange(port); err != nil && s.Port == 0 {
		// With spec.port set, its range is reported there, once.
		errs = append(errs, field.Invalid(endpointPath, s.Endpoint, err.Error()))
	}
	if s.DataPath != "" {
		errs = append(errs, cv.AbsolutePath(s.DataPath, path.Child("dataPath"))...)
	}
	if s.VolumeName != "" {
		if s.DataPath != "" {
			errs = append(errs, field.Forbidden(path.Child("volumeName"), "may not be set together with spec.dataPath"))
		} else {
			errs = append(errs, cv.DNSLabel(s.VolumeName, path.Child("volumeName"))...)
		}
	}
	if r := s.Retention; r != nil && r.KeepVersions < 0 {
		errs = append(errs, field.Invalid(path.Child("retention", "keepVersions"), r.KeepVersions, "must not be negative; 0 keeps every version"))
	}
	return errs
}

// ValidateOCIArtifact checks a new OCIArtifact.
func ValidateOCIArtifact(a *gitops.OCIArtifact) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(a, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateArtifactSpec(&a.Spec, nil, field.NewPath("spec"))...)
}

// ValidateOCIArtifactUpdate checks an update through the main resource: the spec as on create;
// the registry, the name and the repository unchanged (the pushed versions live there); and a
// new tag only with a new version, so that a version is never pushed under a second tag. That
// a pushed version keeps its content is the registry's check (409 Conflict), since it depends
// on what was pushed.
func ValidateOCIArtifactUpdate(a, old *gitops.OCIArtifact) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(a, old, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, validateArtifactSpec(&a.Spec, &old.Spec, spec)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(a.Spec.RegistryRef, old.Spec.RegistryRef, spec.Child("registryRef"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(a.Spec.Name, old.Spec.Name, spec.Child("name"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(a.Spec.Repository, old.Spec.Repository, spec.Child("repository"))...)
	if a.Spec.Tag != old.Spec.Tag && a.Spec.Version == old.Spec.Version {
		errs = append(errs, field.Invalid(spec.Child("tag"), a.Spec.Tag, "may change only together with spec.version"))
	}
	return errs
}

// ValidateOCIArtifactStatusUpdate checks what plinth-controller reports: a URL of the seed's
// pattern in this artifact's repository, a digest, a pushed version that is a version, and one
// entry per target Cluster.
func ValidateOCIArtifactStatusUpdate(a, old *gitops.OCIArtifact) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(a, old, field.NewPath("metadata"))
	s, path := a.Status, field.NewPath("status")
	endpoint := s.RegistryEndpoint
	if endpoint != "" {
		if _, err := parseEndpoint(endpoint); err != nil {
			errs = append(errs, field.Invalid(path.Child("registryEndpoint"), endpoint, err.Error()))
			endpoint = "" // reported once, not again as the URL's host
		}
	}
	if s.URL != "" {
		errs = append(errs, validateArtifactURL(s.URL, endpoint, a.Spec.Repository, path.Child("url"))...)
	}
	if s.Digest != "" && !anchoredDigest.MatchString(s.Digest) {
		errs = append(errs, field.Invalid(path.Child("digest"), s.Digest, "must be a digest <algorithm>:<hex>, for example sha256:<64 hex digits>"))
	}
	if s.PushedVersion != "" && !validVersion(s.PushedVersion) {
		errs = append(errs, field.Invalid(path.Child("pushedVersion"), s.PushedVersion, "must be a semantic version or latest"))
	}
	clusters := sets.New[string]()
	for i, t := range s.Targets {
		p := path.Child("targets").Index(i)
		switch {
		case t.Cluster == "":
			errs = append(errs, field.Required(p.Child("cluster"), ""))
		case clusters.Has(t.Cluster):
			errs = append(errs, field.Duplicate(p.Child("cluster"), t.Cluster))
		}
		clusters.Insert(t.Cluster)
		errs = append(errs, cv.OptionalEnum(t.Engine, p.Child("engine"), engines...)...)
	}
	errs = append(errs, observedGeneration(s.ObservedGeneration, path)...)
	return append(errs, metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))...)
}

// validateArtifactURL checks status.url: the seed's pattern with a tag, on the registry the
// status names and in the spec's repository. The tag is not compared with spec.tag: the status
// describes the last push, which lags a change of version.
func validateArtifactURL(url, endpoint, repository string, path *field.Path) field.ErrorList {
	if err := ValidateOCIURL(url); err != nil {
		return field.ErrorList{field.Invalid(path, url, err.Error())}
	}
	rest := strings.TrimPrefix(url, ociScheme)
	host, repoAndTag, _ := strings.Cut(rest, "/")
	repo, _, tagged := strings.Cut(repoAndTag, ":")
	switch {
	case !tagged:
		return field.ErrorList{field.Invalid(path, url, "must be oci://<status.registryEndpoint>/<spec.repository>:<tag>, with the tag")}
	case endpoint != "" && host != endpoint:
		return field.ErrorList{field.Invalid(path, url, "must be on status.registryEndpoint, "+endpoint)}
	case repo != repository:
		return field.ErrorList{field.Invalid(path, url, "must be in spec.repository, "+repository)}
	}
	return nil
}

// validateArtifactSpec checks an OCIArtifact's spec; old is the stored one on update, nil on
// create.
func validateArtifactSpec(s, old *gitops.OCIArtifactSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	registry := path.Child("registryRef", "name")
	if s.RegistryRef.Name == "" {
		errs = append(errs, field.Required(registry, "the OCIRegistry to push to is required"))
	} else {
		errs = append(errs, cv.DNSSubdomain(s.RegistryRef.Name, registry)...)
	}
	errs = append(errs, repository(s.Name, path.Child("name"))...)
	errs = append(errs, repository(s.Repository, path.Child("repository"))...)
	switch version := path.Child("version"); {
	case s.Version == "":
		errs = append(errs, field.Required(version, "a semantic version such as 1.0.3, or latest, is required"))
	case !validVersion(s.Version):
		errs = append(errs, field.Invalid(version, s.Version, "must be a semantic version such as 1.0.3 or v1.2.0-rc.1, or latest"))
	}
	switch tag := path.Child("tag"); {
	case s.Tag == "":
		errs = append(errs, field.Required(tag, "a tag is required; it defaults to spec.version"))
	case !anchoredTag.MatchString(s.Tag):
		errs = append(errs, field.Invalid(tag, s.Tag, "must be an OCI tag: a letter, digit or '_', then up to 127 letters, digits, '_', '.' or '-'"))
	}
	errs = append(errs, validateContent(s, path)...)
	var oldTargets []gitops.ArtifactTarget
	if old != nil {
		oldTargets = old.Targets
	}
	return append(errs, validateArtifactTargets(s.Targets, oldTargets, path.Child("targets"))...)
}

// repository checks a required OCI repository path.
func repository(value string, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if !validRepository(value) {
		return field.ErrorList{field.Invalid(path, value,
			"must be an OCI repository path: lowercase components of letters and digits, joined by '.', '_', '__' or '-' and separated by '/', at most 255 characters")}
	}
	return nil
}

// validateContent checks that exactly one of manifests and configMapRef is set, and the
// inline manifests as plinth-controller checks a ConfigMap's files before a push.
func validateContent(s *gitops.OCIArtifactSpec, path *field.Path) field.ErrorList {
	manifestsPath := path.Child("manifests")
	switch {
	case len(s.Manifests) > 0 && s.ConfigMapRef != nil:
		return field.ErrorList{field.Forbidden(path.Child("configMapRef"), "may not be set together with spec.manifests; set exactly one of them")}
	case len(s.Manifests) == 0 && s.ConfigMapRef == nil:
		return field.ErrorList{field.Required(manifestsPath, "exactly one of spec.manifests and spec.configMapRef is required")}
	case s.ConfigMapRef != nil:
		name := path.Child("configMapRef", "name")
		if s.ConfigMapRef.Name == "" {
			return field.ErrorList{field.Required(name, "")}
		}
		return cv.DNSSubdomain(s.ConfigMapRef.Name, name)
	}
	return ValidateManifests(s.Manifests, manifestsPath)
}

// ValidateManifests checks inline manifests at path as plinth-controller checks a ConfigMap's
// files before a push (pkg/gitops/manifests): at most manifests.MaxObjects objects, each with
// apiVersion, kind and name, no two alike, no Secrets. An infrastructure pack's raw manifests
// follow the same rules.
func ValidateManifests(raws []common.RawObject, path *field.Path) field.ErrorList {
	if len(raws) > manifests.MaxObjects {
		return field.ErrorList{field.TooMany(path, len(raws), manifests.MaxObjects)}
	}
	var errs field.ErrorList
	// objs[j] is manifest index[j]: those that are not objects are reported here and left out.
	var objs []manifests.Object
	var index []int
	for i, raw := range raws {
		var obj map[string]interface{}
		if !raw.IsObject() || json.Unmarshal(raw.Raw, &obj) != nil {
			errs = append(errs, field.Invalid(path.Index(i), "<value>", "must be a Kubernetes object"))
			continue
		}
		objs = append(objs, manifests.Object{Unstructured: &unstructured.Unstructured{Object: obj}})
		index = append(index, i)
	}
	return append(errs, manifests.ValidateObjects(objs, func(j int) *field.Path {
		if j >= len(index) {
			return path.Index(j)
		}
		return path.Index(index[j])
	})...)
}

// validateArtifactTargets checks the targets; old are the stored ones on update.
func validateArtifactTargets(targets, old []gitops.ArtifactTarget, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	oldPaths := map[string]string{}
	for _, t := range old {
		oldPaths[t.Cluster] = t.Path
	}
	clusters := sets.New[string]()
	for i, t := range targets {
		p := path.Index(i)
		errs = append(errs, clusterName(t.Cluster, p.Child("cluster"))...)
		if t.Cluster != "" && clusters.Has(t.Cluster) {
			errs = append(errs, field.Duplicate(p.Child("cluster"), t.Cluster))
		}
		clusters.Insert(t.Cluster)
		if t.Namespace != "" {
			errs = append(errs, cv.DNSLabel(t.Namespace, p.Child("namespace"))...)
		}
		if t.TargetNamespace != "" {
			errs = append(errs, cv.DNSLabel(t.TargetNamespace, p.Child("targetNamespace"))...)
		}
		if stored, ok := oldPaths[t.Cluster]; !ok || stored != t.Path {
			// A path stored before only the root was allowed stays valid while unchanged, so
			// that the artifact can still be updated and its finalizer released.
			errs = append(errs, artifactPath(t.Path, p.Child("path"))...)
		}
	}
	return errs
}

// clusterName checks a required reference to a Cluster. Whether it exists is admission's
// question.
func clusterName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "a Cluster name is required (kubectl get clusters lists them)")}
	}
	return cv.DNSSubdomain(name, path)
}

// artifactPath checks a target's directory in the artifact: its root, ./ or ., the only
// directory an artifact has (its files are flat: manifests.ValidFileName refuses a '/'), so
// that no path makes Flux fail with "path not found" while the Kubectl engine, which has no
// notion of a path, applies everything. Empty means the default, ./.
func artifactPath(p string, fldPath *field.Path) field.ErrorList {
	if p == "" || p == "./" || p == "." {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, p, "must be ./ (or .), the artifact's root: an artifact's files have no directories")}
}

// ValidateReconciliationRequest checks a new ReconciliationRequest created at now, the
// server's time: a requestedAt the client set must be within MaxRequestedAtSkew of it.
func ValidateReconciliationRequest(r *gitops.ReconciliationRequest, now time.Time) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(r, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateRequestSpec(&r.Spec, field.NewPath("spec"))...)
	if at := r.Spec.RequestedAt; at != nil && !at.IsZero() {
		if skew := at.Sub(now); skew > MaxRequestedAtSkew || skew < -MaxRequestedAtSkew {
			errs = append(errs, field.Invalid(field.NewPath("spec", "requestedAt"), at.UTC().Format(time.RFC3339Nano),
				fmt.Sprintf("must be within %s of the server's time (%s); leave it empty to use the server's time", MaxRequestedAtSkew, now.UTC().Format(time.RFC3339))))
		}
	}
	return errs
}

// ValidateReconciliationRequestUpdate checks an update through the main resource: the spec
// cannot change, since a request is a record of what was asked and when.
func ValidateReconciliationRequestUpdate(r, old *gitops.ReconciliationRequest) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(r, old, field.NewPath("metadata"))
	if !apiequality.Semantic.DeepEqual(r.Spec, old.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "is immutable: a request is a record; create a new ReconciliationRequest instead"))
	}
	return errs
}

// ValidateReconciliationRequestStatusUpdate checks what plinth-controller reports.
func ValidateReconciliationRequestStatusUpdate(r, old *gitops.ReconciliationRequest) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(r, old, field.NewPath("metadata"))
	s, path := r.Status, field.NewPath("status")
	errs = append(errs, cv.OptionalEnum(s.Phase, path.Child("phase"), reconciliationPhases...)...)
	if len(s.Targets) > len(r.Spec.Targets) {
		errs = append(errs, field.TooMany(path.Child("targets"), len(s.Targets), len(r.Spec.Targets)))
	}
	for i, t := range s.Targets {
		p := path.Child("targets").Index(i)
		if t.Cluster == "" {
			errs = append(errs, field.Required(p.Child("cluster"), ""))
		}
		errs = append(errs, cv.Enum(t.Kind, p.Child("kind"), targetKinds...)...)
		if t.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
	}
	errs = append(errs, observedGeneration(s.ObservedGeneration, path)...)
	return append(errs, metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))...)
}

func validateRequestSpec(s *gitops.ReconciliationRequestSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	targetsPath := path.Child("targets")
	switch {
	case len(s.Targets) == 0:
		errs = append(errs, field.Required(targetsPath, "at least one target is required"))
	case len(s.Targets) > MaxReconciliationTargets:
		errs = append(errs, field.TooMany(targetsPath, len(s.Targets), MaxReconciliationTargets))
	}
	type key struct{ cluster, kind, namespace, name string }
	seen := sets.New[key]()
	for i, t := range s.Targets {
		p := targetsPath.Index(i)
		errs = append(errs, clusterName(t.Cluster, p.Child("cluster"))...)
		errs = append(errs, cv.Enum(t.Kind, p.Child("kind"), targetKinds...)...)
		if t.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, cv.DNSSubdomain(t.Name, p.Child("name"))...)
		}
		if t.Namespace != "" {
			if t.Kind == gitops.TargetKindOCIArtifact {
				errs = append(errs, field.Forbidden(p.Child("namespace"), "must be empty for kind OCIArtifact: the artifact is in the request's namespace"))
			} else {
				errs = append(errs, cv.DNSLabel(t.Namespace, p.Child("namespace"))...)
			}
		}
		errs = append(errs, targetRevision(t.Revision, p.Child("revision"))...)
		k := key{t.Cluster, t.Kind, t.Namespace, t.Name}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s %s/%s on %s", t.Kind, t.Namespace, t.Name, t.Cluster)))
		}
		seen.Insert(k)
	}
	errs = append(errs, cv.Enum(s.Mode, path.Child("mode"), reconciliationModes...)...)
	switch timeout := path.Child("timeout"); {
	case s.Timeout == nil:
		errs = append(errs, field.Required(timeout, "a timeout is required; it defaults to 5m"))
	case s.Timeout.Duration <= 0:
		errs = append(errs, field.Invalid(timeout, s.Timeout.Duration.String(), "must be greater than zero"))
	case s.Timeout.Duration > MaxReconciliationTimeout:
		errs = append(errs, field.Invalid(timeout, s.Timeout.Duration.String(), "must be at most 1h"))
	}
	return errs
}

// targetRevision checks a ReconciliationRequest target's optional revision: the value is
// compared with what the target reports (for example 1.1.0@sha256:<digest>), which never
// holds whitespace, so a value with whitespace would keep the request waiting until it times
// out.
func targetRevision(revision string, path *field.Path) field.ErrorList {
	switch {
	case len(revision) > MaxTargetRevisionLength:
		return field.ErrorList{field.TooLong(path, "", MaxTargetRevisionLength)}
	case strings.IndexFunc(revision, unicode.IsSpace) >= 0:
		return field.ErrorList{field.Invalid(path, revision, "must not contain whitespace")}
	}
	return nil
}

func observedGeneration(g int64, path *field.Path) field.ErrorList {
	if g < 0 {
		return field.ErrorList{field.Invalid(path.Child("observedGeneration"), g, "must not be negative")}
	}
	return nil
}
