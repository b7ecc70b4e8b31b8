// Package validation checks compute.plinth.dev objects: every rule of the seed's "Validation
// Rules", the shapes the providers rely on, immutable fields and status values. Checks that
// need other objects (a Ready ComputeProvider for spec.providerType, providerConfig against its
// schema, quotas) run in admission; the uniqueness of spec.tenantID across the cluster is
// enforced by the registry.
package validation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	objectmetavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/spec"

	cv "github.com/plinth-dev/plinth/pkg/apis/common/validation"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
)

const (
	// MaxTenantIDLength is the longest tenant ID: the kubernetes provider runs a tenant in the
	// namespace tenant-<tenantID>, which must stay a 63-character DNS label.
	MaxTenantIDLength = 63 - len("tenant-")
	// MinCPU is the least CPU, in millicores, a tenant or a container may ask for.
	MinCPU = 128
	// MinMemory is the least memory, in megabytes, a tenant or a container may ask for.
	MinMemory = 128
	// MinIntervalSeconds is the shortest interval between health checks.
	MinIntervalSeconds = 5
	// MinTimeoutSeconds is the shortest timeout of one health check.
	MinTimeoutSeconds = 1

	maxControllerLength = 250
	maxDescription      = 4096
)

// seedNamePattern is the seed's pattern of tenant IDs and container names.
var seedNamePattern = regexp.MustCompile(`^[a-z0-9-]+$`)

var (
	protocols    = []string{compute.ProtocolTCP, compute.ProtocolUDP}
	healthChecks = []string{compute.HealthCheckHTTP, compute.HealthCheckTCP, compute.HealthCheckExec}
	phases       = []compute.TenantComputePhase{compute.PhaseRequested, compute.PhaseProvisioning, compute.PhaseReady,
		compute.PhaseUpdating, compute.PhaseDeleting, compute.PhaseFailed, compute.PhaseStopped, compute.PhaseArchived}
	states = []compute.ComputeState{compute.ComputeStateRunning, compute.ComputeStateStopped, compute.ComputeStateStarting,
		compute.ComputeStateStopping, compute.ComputeStateFailed, compute.ComputeStateUnknown}
	healths           = []compute.HealthStatus{compute.HealthStatusHealthy, compute.HealthStatusUnhealthy, compute.HealthStatusUnknown}
	provisionStatuses = []compute.ProvisionStatus{compute.ProvisionStatusSuccess, compute.ProvisionStatusInProgress, compute.ProvisionStatusFailed}
	updateStatuses    = []compute.UpdateStatus{compute.UpdateStatusSuccess, compute.UpdateStatusNoChanges,
		compute.UpdateStatusInProgress, compute.UpdateStatusFailed}
)

// ValidateTenantCompute checks a new TenantCompute.
func ValidateTenantCompute(tc *compute.TenantCompute) field.ErrorList {
	errs := objectmetavalidation.ValidateObjectMetaAccessor(tc, true, objectmetavalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, validateSpec(&tc.Spec, field.NewPath("spec"))...)
}

// ValidateTenantComputeUpdate checks an update through the main resource: the spec as on
// create, and spec.tenantID and spec.providerType unchanged.
func ValidateTenantComputeUpdate(tc, old *compute.TenantCompute) field.ErrorList {
	errs := objectmetavalidation.ValidateObjectMetaAccessorUpdate(tc, old, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, validateSpec(&tc.Spec, spec)...)
	if tc.Spec.TenantID != old.Spec.TenantID {
		errs = append(errs, field.Invalid(spec.Child("tenantID"), tc.Spec.TenantID,
			"may not be changed: the tenant ID names the tenant's compute at its provider; create a new TenantCompute instead"))
	}
	if tc.Spec.ProviderType != old.Spec.ProviderType {
		errs = append(errs, field.Invalid(spec.Child("providerType"), tc.Spec.ProviderType,
			"may not be changed: the compute lives at its provider; create a new TenantCompute for another provider"))
	}
	return errs
}

// ValidateTenantComputeStatusUpdate checks what plinth-controller reports.
func ValidateTenantComputeStatusUpdate(tc, old *compute.TenantCompute) field.ErrorList {
	errs := objectmetavalidation.ValidateObjectMetaAccessorUpdate(tc, old, field.NewPath("metadata"))
	s, path := tc.Status, field.NewPath("status")
	errs = append(errs, cv.OptionalEnum(s.Phase, path.Child("phase"), phases...)...)
	errs = append(errs, cv.OptionalEnum(s.State, path.Child("state"), states...)...)
	errs = append(errs, cv.OptionalEnum(s.Health, path.Child("health"), healths...)...)
	names := sets.New[string]()
	for i, c := range s.Containers {
		p := path.Child("containers").Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if c.RestartCount < 0 {
			errs = append(errs, field.Invalid(p.Child("restartCount"), c.RestartCount, "must not be negative"))
		}
	}
	if r := s.ProvisionResult; r != nil {
		p := path.Child("provisionResult")
		errs = append(errs, cv.Enum(r.Status, p.Child("status"), provisionStatuses...)...)
		for i, e := range r.Endpoints {
			errs = append(errs, cv.OptionalPort(e.Port, p.Child("endpoints").Index(i).Child("port"))...)
		}
	}
	if r := s.UpdateResult; r != nil {
		errs = append(errs, cv.Enum(r.Status, path.Child("updateResult", "status"), updateStatuses...)...)
	}
	if s.Retries < 0 {
		errs = append(errs, field.Invalid(path.Child("retries"), s.Retries, "must not be negative"))
	}
	if s.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(path.Child("observedGeneration"), s.ObservedGeneration, "must not be negative"))
	}
	return append(errs, metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))...)
}

func validateSpec(s *compute.TenantComputeSpec, path *field.Path) field.ErrorList {
	errs := validateTenantID(s.TenantID, path.Child("tenantID"))
	errs = append(errs, validateProviderType(s.ProviderType, path.Child("providerType"))...)
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "at least one container is required"))
	}
	names := sets.New[string]()
	for i, c := range s.Containers {
		p := path.Child("containers").Index(i)
		if c.Name != "" && names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		errs = append(errs, validateContainer(&c, p)...)
	}
	errs = append(errs, validateResources(&s.Resources, path.Child("resources"))...)
	errs = append(errs, validateNetworking(&s.Networking, path.Child("networking"))...)
	errs = append(errs, validateSecrets(s.Secrets, path.Child("secrets"))...)
	errs = append(errs, metav1validation.ValidateLabels(s.Labels, path.Child("labels"))...)
	return append(errs, cv.Object(s.ProviderConfig, path.Child("providerConfig"))...)
}

// validateTenantID checks the seed's rule (non-empty, ^[a-z0-9-]+$) and what the kubernetes
// provider needs of the ID: it names the namespace tenant-<tenantID> and is a label value, so
// it is at most 56 characters and starts and ends with a letter or digit.
func validateTenantID(id string, path *field.Path) field.ErrorList {
	switch {
	case id == "":
		return field.ErrorList{field.Required(path, "a tenant ID is required")}
	case !seedNamePattern.MatchString(id):
		return field.ErrorList{field.Invalid(path, id, "must match ^[a-z0-9-]+$ (lowercase letters, digits and '-')")}
	case len(id) > MaxTenantIDLength:
		return field.ErrorList{field.TooLong(path, id, MaxTenantIDLength)}
	case strings.HasPrefix(id, "-") || strings.HasSuffix(id, "-"):
		return field.ErrorList{field.Invalid(path, id, "must start and end with a letter or digit: it names the namespace tenant-<tenantID>")}
	}
	return nil
}

// validateProviderType checks that the provider type is given and could name a
// ComputeProvider (whose names are DNS labels). Whether one exists and is Ready is admission's
// question.
func validateProviderType(t string, path *field.Path) field.ErrorList {
	if t == "" {
		return field.ErrorList{field.Required(path, "a provider type is required (kubectl get computeproviders lists them)")}
	}
	return cv.DNSLabel(t, path)
}

func validateContainer(c *compute.ContainerSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch name := path.Child("name"); {
	case c.Name == "":
		errs = append(errs, field.Required(name, "every container needs a name"))
	case !seedNamePattern.MatchString(c.Name):
		errs = append(errs, field.Invalid(name, c.Name, "must match ^[a-z0-9-]+$ (lowercase letters, digits and '-')"))
	default:
		// Providers use it as a Kubernetes container name: also a DNS label.
		errs = append(errs, cv.DNSLabel(c.Name, name)...)
	}
	errs = append(errs, validateImage(c.Image, path.Child("image"))...)
	for _, k := range sets.List(sets.KeySet(c.Env)) {
		errs = append(errs, envVarName(k, path.Child("env").Key(k))...)
	}
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	if c.HealthCheck != nil {
		errs = append(errs, validateHealthCheck(c.HealthCheck, path.Child("healthCheck"))...)
	}
	if c.Resources != nil {
		errs = append(errs, validateResources(c.Resources, path.Child("resources"))...)
	}
	return errs
}

func validatePorts(ports []compute.PortMapping, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range ports {
		pp := path.Index(i)
		errs = append(errs, cv.Port(p.ContainerPort, pp.Child("containerPort"))...)
		errs = append(errs, cv.OptionalPort(p.HostPort, pp.Child("hostPort"))...)
		errs = append(errs, cv.Enum(p.Protocol, pp.Child("protocol"), protocols...)...)
		if p.Name == "" {
			continue
		}
		// Providers name the container's and the Service's port with it.
		for _, msg := range utilvalidation.IsValidPortName(p.Name) {
			errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
		}
		if names.Has(p.Name) {
			errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
		}
		names.Insert(p.Name)
	}
	return errs
}

func validateHealthCheck(h *compute.HealthCheckConfig, path *field.Path) field.ErrorList {
	errs := cv.Enum(h.Type, path.Child("type"), healthChecks...)
	switch h.Type {
	case compute.HealthCheckHTTP:
		switch p := path.Child("httpPath"); {
		case h.HTTPPath == "":
			errs = append(errs, field.Required(p, "an http check needs the path it requests"))
		case !strings.HasPrefix(h.HTTPPath, "/") || strings.ContainsAny(h.HTTPPath, " \t\r\n"):
			errs = append(errs, field.Invalid(p, h.HTTPPath, "must be an absolute path starting with '/', without whitespace"))
		}
		errs = append(errs, cv.Port(h.Port, path.Child("port"))...)
	case compute.HealthCheckTCP:
		errs = append(errs, cv.Port(h.Port, path.Child("port"))...)
	case compute.HealthCheckExec:
		if len(h.Command) == 0 {
			errs = append(errs, field.Required(path.Child("command"), "an exec check needs the command it runs"))
		}
	}
	if h.IntervalSeconds < MinIntervalSeconds {
		errs = append(errs, field.Invalid(path.Child("intervalSeconds"), h.IntervalSeconds, fmt.Sprintf("must be at least %d", MinIntervalSeconds)))
	}
	switch p := path.Child("timeoutSeconds"); {
	case h.TimeoutSeconds < MinTimeoutSeconds:
		errs = append(errs, field.Invalid(p, h.TimeoutSeconds, fmt.Sprintf("must be at least %d", MinTimeoutSeconds)))
	case h.TimeoutSeconds >= h.IntervalSeconds:
		errs = append(errs, field.Invalid(p, h.TimeoutSeconds, "must be less than intervalSeconds"))
	}
	if h.HealthyThreshold < 0 {
		errs = append(errs, field.Invalid(path.Child("healthyThreshold"), h.HealthyThreshold, "must not be negative"))
	}
	if h.UnhealthyThreshold < 0 {
		errs = append(errs, field.Invalid(path.Child("unhealthyThreshold"), h.UnhealthyThreshold, "must not be negative"))
	}
	return errs
}

func validateResources(r *compute.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.CPU < MinCPU {
		errs = append(errs, field.Invalid(path.Child("cpu"), r.CPU, fmt.Sprintf("must be at least %d millicores", MinCPU)))
	}
	if r.Memory < MinMemory {
		errs = append(errs, field.Invalid(path.Child("memory"), r.Memory, fmt.Sprintf("must be at least %d megabytes", MinMemory)))
	}
	if r.Storage < 0 {
		errs = append(errs, field.Invalid(path.Child("storage"), r.Storage, "must not be negative"))
	}
	return errs
}

func validateNetworking(n *compute.NetworkConfig, path *field.Path) field.ErrorList {
	if n.DNS == nil {
		return nil
	}
	var errs field.ErrorList
	p := path.Child("dns")
	if n.DNS.Hostname != "" {
		errs = append(errs, cv.DNSLabel(n.DNS.Hostname, p.Child("hostname"))...)
	}
	if n.DNS.Domain != "" {
		errs = append(errs, cv.DNSSubdomain(n.DNS.Domain, p.Child("domain"))...)
	}
	if len(errs) == 0 && n.DNS.Hostname != "" && n.DNS.Domain != "" {
		// The provider serves the tenant at hostname.domain.
		if host := n.DNS.Hostname + "." + n.DNS.Domain; len(utilvalidation.IsDNS1123Subdomain(host)) > 0 {
			errs = append(errs, field.Invalid(p, host, "hostname.domain must be a valid DNS name of at most 253 characters"))
		}
	}
	return errs
}

func validateSecrets(secrets []compute.SecretReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names, envVars := sets.New[string](), sets.New[string]()
	for i, s := range secrets {
		p := path.Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if names.Has(s.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		names.Insert(s.Name)
		if s.Source == "" {
			errs = append(errs, field.Required(p.Child("source"), "where the secret is stored, for example kubernetes-secret"))
		}
		if s.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		if s.EnvVar == "" {
			continue
		}
		errs = append(errs, envVarName(s.EnvVar, p.Child("envVar"))...)
		if envVars.Has(s.EnvVar) {
			errs = append(errs, field.Duplicate(p.Child("envVar"), s.EnvVar))
		}
		envVars.Insert(s.EnvVar)
	}
	return errs
}

// envVarName checks an environment variable name: a C identifier, which every provider's
// runtime (and every shell) accepts.
func envVarName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsCIdentifier(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// ValidateComputeProvider checks a new ComputeProvider registration.
func ValidateComputeProvider(p *compute.ComputeProvider) field.ErrorList {
	errs := objectmetavalidation.ValidateObjectMetaAccessor(p, false, objectmetavalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, validateProviderSpec(&p.Spec, field.NewPath("spec"))...)
}

// ValidateComputeProviderUpdate checks an update: the controller that registered the provider
// keeps it.
func ValidateComputeProviderUpdate(p, old *compute.ComputeProvider) field.ErrorList {
	errs := objectmetavalidation.ValidateObjectMetaAccessorUpdate(p, old, field.NewPath("metadata"))
	path := field.NewPath("spec")
	errs = append(errs, validateProviderSpec(&p.Spec, path)...)
	if p.Spec.Controller != old.Spec.Controller {
		errs = append(errs, field.Forbidden(path.Child("controller"),
			fmt.Sprintf("the provider is registered by %s; another controller cannot take it over", old.Spec.Controller)))
	}
	return errs
}

func validateProviderSpec(s *compute.ComputeProviderSpec, path *field.Path) field.ErrorList {
	p := path.Child("controller")
	errs := utilvalidation.IsDomainPrefixedPath(p, s.Controller)
	if len(s.Controller) > maxControllerLength {
		errs = append(errs, field.TooLong(p, s.Controller, maxControllerLength))
	}
	if len(s.Description) > maxDescription {
		errs = append(errs, field.TooLong(path.Child("description"), "", maxDescription))
	}
	return errs
}

// ValidateComputeProviderStatusUpdate checks what a provider publishes: a JSON Schema that
// admission can compile, defaults that are an object, and known health-check types.
func ValidateComputeProviderStatusUpdate(p, old *compute.ComputeProvider) field.ErrorList {
	errs := objectmetavalidation.ValidateObjectMetaAccessorUpdate(p, old, field.NewPath("metadata"))
	s, path := p.Status, field.NewPath("status")
	if s.ConfigSchema != nil && len(s.ConfigSchema.Raw) > 0 {
		errs = append(errs, validateSchema(s.ConfigSchema.Raw, path.Child("configSchema"))...)
	}
	errs = append(errs, cv.Object(s.ConfigDefaults, path.Child("configDefaults"))...)
	errs = append(errs, cv.UniqueStrings(s.SupportedSecretSources, path.Child("supportedSecretSources"), func(v string, p *field.Path) field.ErrorList {
		if v == "" {
			return field.ErrorList{field.Required(p, "")}
		}
		return nil
	})...)
	errs = append(errs, cv.UniqueStrings(s.SupportedHealthChecks, path.Child("supportedHealthChecks"), func(v string, p *field.Path) field.ErrorList {
		return cv.Enum(v, p, healthChecks...)
	})...)
	if s.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(path.Child("observedGeneration"), s.ObservedGeneration, "must not be negative"))
	}
	return append(errs, metav1validation.ValidateConditions(s.Conditions, path.Child("conditions"))...)
}

// validateSchema checks that raw is a JSON object that reads as an OpenAPI (JSON Schema)
// schema, which admission compiles to validate providerConfig.
func validateSchema(raw []byte, path *field.Path) field.ErrorList {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return field.ErrorList{field.Invalid(path, "<value>", "must be a JSON object")}
	}
	var schema spec.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		return field.ErrorList{field.Invalid(path, "<value>", "must be a JSON Schema: "+err.Error())}
	}
	return nil
}

// ValidateTenantIDClaim checks a claim the registry writes: named after a valid tenant ID and
// naming its holder.
func ValidateTenantIDClaim(c *compute.TenantIDClaim) field.ErrorList {
	errs := objectmetavalidation.ValidateObjectMetaAccessor(c, false, func(string, bool) []string { return nil }, field.NewPath("metadata"))
	errs = append(errs, validateTenantID(c.Name, field.NewPath("metadata", "name"))...)
	for _, f := range []struct{ name, value string }{
		{"holderNamespace", c.HolderNamespace}, {"holderName", c.HolderName}, {"holderUID", c.HolderUID},
	} {
		if f.value == "" {
			errs = append(errs, field.Required(field.NewPath(f.name), ""))
		}
	}
	return errs
}

// ValidateTenantIDClaimUpdate refuses any change of a claim: a claim is taken over by
// deleting it and creating a new one, so that etcd's create-if-absent decides every race.
func ValidateTenantIDClaimUpdate(c, old *compute.TenantIDClaim) field.ErrorList {
	errs := objectmetavalidation.ValidateObjectMetaAccessorUpdate(c, old, field.NewPath("metadata"))
	if c.HolderNamespace != old.HolderNamespace || c.HolderName != old.HolderName || c.HolderUID != old.HolderUID {
		errs = append(errs, field.Forbidden(field.NewPath("holderUID"), "a claim's holder may not be changed"))
	}
	return errs
}
