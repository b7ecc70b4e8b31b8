// Package validation checks score.dev objects. Every rule of the seed's "Field Validation
// Summary" is here, with the exact field path of the offending value, so the API answers
// 422 Invalid with causes that point into the object the user wrote.
package validation

import (
	"maps"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cv "github.com/plinth-dev/plinth/pkg/apis/common/validation"
	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

// Workload condition types and reasons: the seed's fixed, runtime-neutral vocabulary.
var (
	WorkloadConditionTypes = []string{
		score.ConditionReady, score.ConditionInputsValid, score.ConditionBindingsReady, score.ConditionRuntimeReady,
	}
	WorkloadConditionReasons = []string{
		score.ReasonSucceeded, score.ReasonSpecInvalid, score.ReasonPolicyViolation,
		score.ReasonBindingPending, score.ReasonBindingFailed, score.ReasonProjectionError,
		score.ReasonRuntimeSelecting, score.ReasonRuntimeProvisioning, score.ReasonRuntimeDegraded,
		score.ReasonQuotaExceeded, score.ReasonPermissionDenied, score.ReasonNetworkUnavailable,
	}
)

var (
	bindingPhases  = []score.BindingPhase{score.BindingPhasePending, score.BindingPhaseBinding, score.BindingPhaseBound, score.BindingPhaseFailed}
	planPhases     = []score.PlanPhase{score.PlanPhasePending, score.PlanPhasePlanning, score.PlanPhaseProjected, score.PlanPhaseFailed}
	ownershipModes = []score.OwnershipMode{score.OwnershipModeController, score.OwnershipModeUser, score.OwnershipModeShared}
	fileModeRE     = regexp.MustCompile(`^0?[0-7]{3}$`)
)

// ValidateWorkload checks a new workload.
func ValidateWorkload(w *score.Workload) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&w.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, validateWorkloadSpecAndScore(w)...)
}

// ValidateWorkloadUpdate checks an update of a workload's metadata and spec.
func ValidateWorkloadUpdate(w, old *score.Workload) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&w.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateWorkloadSpecAndScore(w)...)
}

// validateWorkloadSpecAndScore checks the spec's shape, then — only if that is sound — the Score
// workload it describes: the inline document, its agreement with the spec, and placeholders.
func validateWorkloadSpecAndScore(w *score.Workload) field.ErrorList {
	if errs := validateWorkloadSpec(&w.Spec, field.NewPath("spec")); len(errs) > 0 {
		return errs
	}
	// pkg/score works on the versioned API; the generated conversion needs no scheme.
	versioned := &v1b1.Workload{}
	if err := v1b1.Convert_score_Workload_To_v1b1_Workload(w, versioned, nil); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	_, errs := scorespec.Resolve(versioned)
	return errs
}

// ValidateWorkloadStatusUpdate checks an update of a workload's status.
func ValidateWorkloadStatusUpdate(w, old *score.Workload) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&w.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateWorkloadStatus(&w.Status, field.NewPath("status"))...)
}

func validateWorkloadSpec(spec *score.WorkloadSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Source != nil {
		errs = append(errs, validateSource(spec.Source, fldPath.Child("source"))...)
	} else if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(fldPath.Child("containers"), "at least one container is required when spec.source is not set"))
	}
	if spec.RuntimeClass != "" {
		errs = append(errs, cv.DNSLabel(spec.RuntimeClass, fldPath.Child("runtimeClass"))...)
	}
	for _, name := range sets.List(sets.KeySet(spec.Resources)) {
		errs = append(errs, validateResource(name, spec.Resources[name], fldPath.Child("resources").Key(name))...)
	}
	for _, name := range sets.List(sets.KeySet(spec.Containers)) {
		errs = append(errs, validateContainer(name, spec.Containers[name], fldPath.Child("containers").Key(name))...)
	}
	if spec.Service != nil {
		errs = append(errs, validateServicePorts(spec.Service.Ports, fldPath.Child("service", "ports"))...)
	}
	return errs
}

func validateSource(src *score.WorkloadSource, fldPath *field.Path) field.ErrorList {
	errs := cv.OneOf(fldPath, map[string]bool{"inline": src.Inline != nil, "configMapRef": src.ConfigMapRef != nil})
	if src.Inline != nil {
		if len(src.Inline.Raw) == 0 {
			errs = append(errs, field.Required(fldPath.Child("inline"), "the inline Score document must not be empty"))
		} else {
			errs = append(errs, cv.Object(src.Inline, fldPath.Child("inline"))...)
		}
	}
	if ref := src.ConfigMapRef; ref != nil {
		errs = append(errs, validateConfigMapKeyRef(ref, fldPath.Child("configMapRef"))...)
	}
	return errs
}

func validateConfigMapKeyRef(ref *score.ConfigMapKeyReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else {
		errs = append(errs, cv.DNSSubdomain(ref.Name, fldPath.Child("name"))...)
	}
	if ref.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range utilvalidation.IsConfigMapKey(ref.Key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), ref.Key, msg))
		}
	}
	return errs
}

func validateResource(name string, r score.ResourceSpec, fldPath *field.Path) field.ErrorList {
	errs := keyErrors(name, fldPath)
	if r.Type == "" {
		errs = append(errs, field.Required(fldPath.Child("type"), "every resource needs a type"))
	} else {
		errs = append(errs, cv.QualifiedName(r.Type, fldPath.Child("type"))...)
	}
	if r.Class != "" {
		errs = append(errs, cv.QualifiedName(r.Class, fldPath.Child("class"))...)
	}
	if r.ID != "" {
		errs = append(errs, cv.DNSSubdomain(r.ID, fldPath.Child("id"))...)
	}
	errs = append(errs, cv.Object(r.Params, fldPath.Child("params"))...)
	return append(errs, cv.Object(r.Metadata, fldPath.Child("metadata"))...)
}

// keyErrors checks a map key that names a resource, container or port. The error path is the
// keyed element itself, for example spec.containers[web].
func keyErrors(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(fldPath, name, "the name "+msg))
	}
	return errs
}

func validateContainer(name string, c score.Container, fldPath *field.Path) field.ErrorList {
	errs := keyErrors(name, fldPath)
	errs = append(errs, validateImage(c.Image, fldPath.Child("image"))...)
	for _, key := range sets.List(sets.KeySet(c.Variables)) {
		for _, msg := range utilvalidation.IsEnvVarName(key) {
			errs = append(errs, field.Invalid(fldPath.Child("variables", key), key, "the variable name "+msg))
		}
	}
	// The server copies one map to the other when only one is set (the registry's strategy),
	// so a difference here means the client set both, differently.
	if len(c.Env) > 0 && len(c.Variables) > 0 && !maps.Equal(c.Env, c.Variables) {
		errs = append(errs, field.Invalid(fldPath.Child("env"), "(map)",
			"must equal "+fldPath.Child("variables").String()+" when both are set: env is the seed's name for Score's variables"))
	}
	errs = append(errs, validateFiles(c.Files, fldPath.Child("files"))...)
	errs = append(errs, validateVolumes(c.Volumes, fldPath.Child("volumes"))...)
	errs = append(errs, validateContainerResources(c.Resources, fldPath.Child("resources"))...)
	errs = append(errs, validateProbe(c.LivenessProbe, fldPath.Child("livenessProbe"))...)
	return append(errs, validateProbe(c.ReadinessProbe, fldPath.Child("readinessProbe"))...)
}

func validateImage(image string, fldPath *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(fldPath, "every container needs an image")}
	}
	if strings.TrimSpace(image) != image || strings.ContainsAny(image, " \t\n") {
		return field.ErrorList{field.Invalid(fldPath, image, "must not contain whitespace")}
	}
	return nil
}

func validateFiles(files []score.ContainerFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	targets := sets.New[string]()
	for i, f := range files {
		p := fldPath.Index(i)
		errs = append(errs, cv.AbsolutePath(f.Target, p.Child("target"))...)
		if targets.Has(f.Target) {
			errs = append(errs, field.Duplicate(p.Child("target"), f.Target))
		}
		targets.Insert(f.Target)
		errs = append(errs, cv.OneOf(p, map[string]bool{
			"content": f.Content != nil, "binaryContent": f.BinaryContent != nil, "source": f.Source != nil,
		})...)
		if f.BinaryContent != nil {
			errs = append(errs, cv.Base64(*f.BinaryContent, p.Child("binaryContent"))...)
		}
		if f.Source != nil && *f.Source == "" {
			errs = append(errs, field.Invalid(p.Child("source"), "", "must be a non-empty path"))
		}
		if f.Mode != "" && !fileModeRE.MatchString(f.Mode) {
			errs = append(errs, field.Invalid(p.Child("mode"), f.Mode, "must be an octal file mode such as 0644"))
		}
	}
	return errs
}

func validateVolumes(volumes []score.ContainerVolume, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	targets := sets.New[string]()
	for i, v := range volumes {
		p := fldPath.Index(i)
		errs = append(errs, cv.AbsolutePath(v.Target, p.Child("target"))...)
		if targets.Has(v.Target) {
			errs = append(errs, field.Duplicate(p.Child("target"), v.Target))
		}
		targets.Insert(v.Target)
		if v.Source == "" {
			errs = append(errs, field.Required(p.Child("source"), "a volume needs a source, normally ${resources.NAME}"))
		}
		if strings.HasPrefix(v.Path, "/") || strings.Contains(v.Path, "..") {
			errs = append(errs, field.Invalid(p.Child("path"), v.Path, "must be a relative path inside the volume"))
		}
	}
	return errs
}

func validateContainerResources(r *score.ContainerResources, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	for _, a := range []struct {
		name    string
		amounts *score.ResourceAmounts
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		if a.amounts == nil {
			continue
		}
		errs = append(errs, validateQuantity(a.amounts.CPU, fldPath.Child(a.name, "cpu"))...)
		errs = append(errs, validateQuantity(a.amounts.Memory, fldPath.Child(a.name, "memory"))...)
	}
	return errs
}

func validateQuantity(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return nil
	}
	if q, err := resource.ParseQuantity(value); err != nil || q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, value, "must be a non-negative quantity such as 250m or 128Mi")}
	}
	return nil
}

func validateProbe(p *score.ContainerProbe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := cv.OneOf(fldPath, map[string]bool{"httpGet": p.HTTPGet != nil, "exec": p.Exec != nil})
	if h := p.HTTPGet; h != nil {
		hp := fldPath.Child("httpGet")
		if h.Path == "" {
			errs = append(errs, field.Required(hp.Child("path"), ""))
		} else if !strings.HasPrefix(h.Path, "/") {
			errs = append(errs, field.Invalid(hp.Child("path"), h.Path, "must start with '/'"))
		}
		errs = append(errs, cv.Port(h.Port, hp.Child("port"))...)
		errs = append(errs, cv.OptionalEnum(h.Scheme, hp.Child("scheme"), "HTTP", "HTTPS")...)
		for i, header := range h.HTTPHeaders {
			for _, msg := range utilvalidation.IsHTTPHeaderName(header.Name) {
				errs = append(errs, field.Invalid(hp.Child("httpHeaders").Index(i).Child("name"), header.Name, msg))
			}
		}
	}
	if e := p.Exec; e != nil && len(e.Command) == 0 {
		errs = append(errs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	return errs
}

func validateServicePorts(ports map[string]score.ServicePort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sets.List(sets.KeySet(ports)) {
		port := ports[name]
		p := fldPath.Key(name)
		errs = append(errs, keyErrors(name, p)...)
		errs = append(errs, cv.Port(port.Port, p.Child("port"))...)
		errs = append(errs, cv.OptionalPort(port.TargetPort, p.Child("targetPort"))...)
		errs = append(errs, cv.OptionalEnum(port.Protocol, p.Child("protocol"), "TCP", "UDP")...)
	}
	return errs
}

func validateWorkloadStatus(s *score.WorkloadStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("observedGeneration"), s.ObservedGeneration, "must not be negative"))
	}
	if s.Endpoint != nil {
		errs = append(errs, cv.URI(*s.Endpoint, fldPath.Child("endpoint"))...)
	}
	errs = append(errs, validateConditions(s.Conditions, fldPath.Child("conditions"), WorkloadConditionTypes, WorkloadConditionReasons)...)
	keys := sets.New[string]()
	for i, b := range s.Bindings {
		p := fldPath.Child("bindings").Index(i)
		errs = append(errs, cv.RequiredDNSLabel(b.Key, p.Child("key"))...)
		if keys.Has(b.Key) {
			errs = append(errs, field.Duplicate(p.Child("key"), b.Key))
		}
		keys.Insert(b.Key)
		errs = append(errs, cv.Enum(b.Phase, p.Child("phase"), bindingPhases...)...)
		errs = append(errs, cv.OptionalEnum(b.Reason, p.Child("reason"), WorkloadConditionReasons...)...)
	}
	return errs
}

// validateConditions checks metav1.Conditions; when types or reasons are given, only those are
// allowed.
func validateConditions(conditions []metav1.Condition, fldPath *field.Path, types, reasons []string) field.ErrorList {
	errs := metav1validation.ValidateConditions(conditions, fldPath)
	for i, c := range conditions {
		if len(types) > 0 && c.Type != "" {
			errs = append(errs, cv.OptionalEnum(c.Type, fldPath.Index(i).Child("type"), types...)...)
		}
		if len(reasons) > 0 && c.Reason != "" {
			errs = append(errs, cv.OptionalEnum(c.Reason, fldPath.Index(i).Child("reason"), reasons...)...)
		}
	}
	return errs
}

// ValidatePlatformPolicy checks a new platform policy.
func ValidatePlatformPolicy(p *score.PlatformPolicy) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validatePlatformPolicySpec(&p.Spec, field.NewPath("spec"))...)
}

// ValidatePlatformPolicyUpdate checks an update of a policy's metadata and spec.
func ValidatePlatformPolicyUpdate(p, old *score.PlatformPolicy) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validatePlatformPolicySpec(&p.Spec, field.NewPath("spec"))...)
}

// ValidatePlatformPolicyStatusUpdate checks an update of a policy's status.
func ValidatePlatformPolicyStatusUpdate(p, old *score.PlatformPolicy) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateObservedGeneration(p.Status.ObservedGeneration, field.NewPath("status", "observedGeneration"))...)
	return append(errs, validateConditions(p.Status.Conditions, field.NewPath("status", "conditions"), nil, nil)...)
}

func validatePlatformPolicySpec(spec *score.PlatformPolicySpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	if spec.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("namespaceSelector"))...)
	}
	if d := spec.Defaults; d != nil {
		p := fldPath.Child("defaults")
		if d.RuntimeClass != "" {
			errs = append(errs, cv.DNSLabel(d.RuntimeClass, p.Child("runtimeClass"))...)
		}
		for _, typ := range sets.List(sets.KeySet(d.Resources)) {
			rp := p.Child("resources").Key(typ)
			errs = append(errs, cv.QualifiedName(typ, rp)...)
			if class := d.Resources[typ].Class; class != "" {
				errs = append(errs, cv.QualifiedName(class, rp.Child("class"))...)
			}
			errs = append(errs, cv.Object(d.Resources[typ].Params, rp.Child("params"))...)
		}
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(d.Annotations, p.Child("annotations"))...)
		errs = append(errs, metav1validation.ValidateLabels(d.Labels, p.Child("labels"))...)
	}
	if c := spec.Constraints; c != nil {
		p := fldPath.Child("constraints")
		errs = append(errs, cv.UniqueStrings(c.AllowedRuntimeClasses, p.Child("allowedRuntimeClasses"), cv.DNSLabel)...)
		if rt := c.ResourceTypes; rt != nil {
			errs = append(errs, cv.UniqueStrings(rt.Allowed, p.Child("resourceTypes", "allowed"), cv.QualifiedName)...)
			errs = append(errs, cv.UniqueStrings(rt.Denied, p.Child("resourceTypes", "denied"), cv.QualifiedName)...)
			allowed := sets.New(rt.Allowed...)
			for i, typ := range rt.Denied {
				if allowed.Has(typ) {
					errs = append(errs, field.Invalid(p.Child("resourceTypes", "denied").Index(i), typ, "a resource type cannot be both allowed and denied"))
				}
			}
		}
		if im := c.Images; im != nil {
			errs = append(errs, cv.UniqueStrings(im.AllowedRegistries, p.Child("images", "allowedRegistries"), validateRegistry)...)
			errs = append(errs, cv.UniqueStrings(im.RequiredTags, p.Child("images", "requiredTags"), validateTagPattern)...)
		}
	}
	return errs
}

func validateRegistry(value string, fldPath *field.Path) field.ErrorList {
	if value == "" || strings.Contains(value, "://") || strings.ContainsAny(value, " \t@") {
		return field.ErrorList{field.Invalid(fldPath, value, "must be a registry host with an optional path and no scheme, for example registry.example.com/team")}
	}
	return nil
}

var tagPatternRE = regexp.MustCompile(`^[A-Za-z0-9_.*-]{1,128}$`)

func validateTagPattern(value string, fldPath *field.Path) field.ErrorList {
	if !tagPatternRE.MatchString(value) {
		return field.ErrorList{field.Invalid(fldPath, value, "must be a tag or a tag pattern with '*' wildcards")}
	}
	return nil
}

// ValidateResourceBinding checks a new resource binding.
func ValidateResourceBinding(b *score.ResourceBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateResourceBindingSpec(&b.Spec, field.NewPath("spec"))...)
}

// ValidateResourceBindingUpdate checks an update of a binding; the workload and the resource
// key it binds cannot change.
func ValidateResourceBindingUpdate(b, old *score.ResourceBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateResourceBindingSpec(&b.Spec, field.NewPath("spec"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(b.Spec.WorkloadRef, old.Spec.WorkloadRef, field.NewPath("spec", "workloadRef"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(b.Spec.ResourceKey, old.Spec.ResourceKey, field.NewPath("spec", "resourceKey"))...)
}

// ValidateResourceBindingStatusUpdate checks an update of a binding's status.
func ValidateResourceBindingStatusUpdate(b, old *score.ResourceBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fldPath := field.NewPath("status")
	s := &b.Status
	errs = append(errs, validateObservedGeneration(s.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	errs = append(errs, cv.OptionalEnum(s.Phase, fldPath.Child("phase"), bindingPhases...)...)
	errs = append(errs, validateConditions(s.Conditions, fldPath.Child("conditions"), nil, nil)...)
	if o := s.Outputs; o != nil {
		op := fldPath.Child("outputs")
		if o.Endpoint != "" {
			errs = append(errs, cv.URI(o.Endpoint, op.Child("endpoint"))...)
		}
		if o.Credentials != nil && o.Credentials.SecretRef != nil {
			ref := o.Credentials.SecretRef
			sp := op.Child("credentials", "secretRef")
			if ref.Name == "" {
				errs = append(errs, field.Required(sp.Child("name"), ""))
			} else {
				errs = append(errs, cv.DNSSubdomain(ref.Name, sp.Child("name"))...)
			}
			if ref.Key != "" {
				for _, msg := range utilvalidation.IsConfigMapKey(ref.Key) {
					errs = append(errs, field.Invalid(sp.Child("key"), ref.Key, msg))
				}
			}
		}
		if o.Certificates != nil && o.Certificates.ConfigMapRef != nil {
			errs = append(errs, validateConfigMapKeyRef(o.Certificates.ConfigMapRef, op.Child("certificates", "configMapRef"))...)
		}
	}
	return errs
}

func validateResourceBindingSpec(spec *score.ResourceBindingSpec, fldPath *field.Path) field.ErrorList {
	errs := validateWorkloadRef(spec.WorkloadRef.Name, spec.WorkloadRef.UID, fldPath.Child("workloadRef"))
	errs = append(errs, cv.RequiredDNSLabel(spec.ResourceKey, fldPath.Child("resourceKey"))...)
	if spec.Type == "" {
		errs = append(errs, field.Required(fldPath.Child("type"), ""))
	} else {
		errs = append(errs, cv.QualifiedName(spec.Type, fldPath.Child("type"))...)
	}
	if spec.Class != "" {
		errs = append(errs, cv.QualifiedName(spec.Class, fldPath.Child("class"))...)
	}
	if spec.ID != "" {
		errs = append(errs, cv.DNSSubdomain(spec.ID, fldPath.Child("id"))...)
	}
	if spec.Provisioner != "" {
		errs = append(errs, cv.QualifiedName(spec.Provisioner, fldPath.Child("provisioner"))...)
	}
	return append(errs, cv.Object(spec.Params, fldPath.Child("params"))...)
}

func validateWorkloadRef(name, uid string, fldPath *field.Path) field.ErrorList {
	errs := cv.RequiredDNSLabel(name, fldPath.Child("name"))
	if uid != "" {
		errs = append(errs, cv.UID(uid, fldPath.Child("uid"))...)
	}
	return errs
}

func validateObservedGeneration(g int64, fldPath *field.Path) field.ErrorList {
	if g < 0 {
		return field.ErrorList{field.Invalid(fldPath, g, "must not be negative")}
	}
	return nil
}

// ValidateWorkloadPlan checks a new plan. A plan has its workload's name.
func ValidateWorkloadPlan(p *score.WorkloadPlan) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, validateWorkloadPlanSpec(p, field.NewPath("spec"))...)
}

// ValidateWorkloadPlanUpdate checks an update of a plan; the workload it plans cannot change.
func ValidateWorkloadPlanUpdate(p, old *score.WorkloadPlan) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateWorkloadPlanSpec(p, field.NewPath("spec"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(p.Spec.WorkloadRef.UID, old.Spec.WorkloadRef.UID, field.NewPath("spec", "workloadRef", "uid"))...)
}

// ValidateWorkloadPlanStatusUpdate checks an update of a plan's status.
func ValidateWorkloadPlanStatusUpdate(p, old *score.WorkloadPlan) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fldPath := field.NewPath("status")
	errs = append(errs, validateObservedGeneration(p.Status.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	errs = append(errs, cv.OptionalEnum(p.Status.Phase, fldPath.Child("phase"), planPhases...)...)
	return append(errs, validateConditions(p.Status.Conditions, fldPath.Child("conditions"), nil, nil)...)
}

func validateWorkloadPlanSpec(plan *score.WorkloadPlan, fldPath *field.Path) field.ErrorList {
	spec := &plan.Spec
	refPath := fldPath.Child("workloadRef")
	errs := validateWorkloadRef(spec.WorkloadRef.Name, spec.WorkloadRef.UID, refPath)
	if spec.WorkloadRef.Name != "" && plan.Name != "" && spec.WorkloadRef.Name != plan.Name {
		errs = append(errs, field.Invalid(refPath.Child("name"), spec.WorkloadRef.Name, "must equal metadata.name: a plan has its workload's name"))
	}
	errs = append(errs, validateObservedGeneration(spec.WorkloadRef.Generation, refPath.Child("generation"))...)
	if spec.RuntimeClass == "" {
		errs = append(errs, field.Required(fldPath.Child("runtimeClass"), "a plan names the runtime that materializes it"))
	} else {
		errs = append(errs, cv.DNSLabel(spec.RuntimeClass, fldPath.Child("runtimeClass"))...)
	}
	errs = append(errs, validateProjection(&spec.Projection, fldPath.Child("projection"))...)
	keys := sets.New[string]()
	for i, b := range spec.Bindings {
		p := fldPath.Child("bindings").Index(i)
		errs = append(errs, cv.RequiredDNSLabel(b.Key, p.Child("key"))...)
		if keys.Has(b.Key) {
			errs = append(errs, field.Duplicate(p.Child("key"), b.Key))
		}
		keys.Insert(b.Key)
		if b.Type != "" {
			errs = append(errs, cv.QualifiedName(b.Type, p.Child("type"))...)
		}
		errs = append(errs, cv.UniqueStrings(b.Outputs, p.Child("outputs"), nil)...)
	}
	if m := spec.Metadata; m != nil {
		p := fldPath.Child("metadata")
		errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
		errs = append(errs, cv.OptionalEnum(m.OwnershipMode, p.Child("ownershipMode"), ownershipModes...)...)
	}
	return errs
}

func validateProjection(proj *score.WorkloadProjection, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sets.List(sets.KeySet(proj.Containers)) {
		c := proj.Containers[name]
		p := fldPath.Child("containers").Key(name)
		errs = append(errs, keyErrors(name, p)...)
		errs = append(errs, validateImage(c.Image, p.Child("image"))...)
		envNames := sets.New[string]()
		for i, env := range c.Env {
			ep := p.Child("env").Index(i)
			for _, msg := range utilvalidation.IsEnvVarName(env.Name) {
				errs = append(errs, field.Invalid(ep.Child("name"), env.Name, msg))
			}
			if envNames.Has(env.Name) {
				errs = append(errs, field.Duplicate(ep.Child("name"), env.Name))
			}
			envNames.Insert(env.Name)
			errs = append(errs, cv.OneOf(ep, map[string]bool{"value": env.Value != nil, "from": env.From != nil})...)
			if env.From != nil {
				errs = append(errs, cv.RequiredDNSLabel(env.From.BindingKey, ep.Child("from", "bindingKey"))...)
				if env.From.OutputKey == "" {
					errs = append(errs, field.Required(ep.Child("from", "outputKey"), ""))
				}
			}
		}
		errs = append(errs, validateFiles(c.Files, p.Child("files"))...)
		errs = append(errs, validateVolumes(c.Volumes, p.Child("volumes"))...)
		errs = append(errs, validateContainerResources(c.Resources, p.Child("resources"))...)
		errs = append(errs, validateProbe(c.LivenessProbe, p.Child("livenessProbe"))...)
		errs = append(errs, validateProbe(c.ReadinessProbe, p.Child("readinessProbe"))...)
	}
	if s := proj.Service; s != nil {
		errs = append(errs, validateServicePorts(s.Ports, fldPath.Child("service", "ports"))...)
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(s.Annotations, fldPath.Child("service", "annotations"))...)
	}
	if n := proj.Networking; n != nil {
		for i, rule := range n.Ingress {
			p := fldPath.Child("networking", "ingress").Index(i)
			if rule.Host == "" {
				errs = append(errs, field.Required(p.Child("host"), ""))
			} else {
				errs = append(errs, utilvalidation.IsFullyQualifiedDomainName(p.Child("host"), rule.Host)...)
			}
			if rule.Path != "" && !strings.HasPrefix(rule.Path, "/") {
				errs = append(errs, field.Invalid(p.Child("path"), rule.Path, "must start with '/'"))
			}
			errs = append(errs, cv.Port(rule.Port, p.Child("port"))...)
		}
		for i := range n.Policies {
			errs = append(errs, cv.Object(&n.Policies[i], fldPath.Child("networking", "policies").Index(i))...)
		}
	}
	return errs
}
