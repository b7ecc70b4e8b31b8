// Package validation checks governance.plinth.dev objects: shapes, enums, name lengths (the
// parts of a VM's instance name) and immutable fields. Checks that need other objects (a
// System that must exist, a pending ticket) live in the registry's approval flow.
package validation

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
)

// MaxNamePart is the longest namespace, system or service name: each is one part of a VM's
// instance name {namespace}-{system}-{service}-{NN}, which stays within 50 characters.
const MaxNamePart = 15

const (
	maxDocumentation = 4096
	maxReason        = 1024
	maxComment       = 1024
	maxApprovals     = 10
	maxCPU           = 256
	maxFeatures      = 32
)

var (
	environments  = sets.New(governance.EnvironmentTest, governance.EnvironmentProd)
	runStrategies = sets.New(governance.RunStrategyAlways, governance.RunStrategyHalted, governance.RunStrategyManual,
		governance.RunStrategyRerunOnFailure, governance.RunStrategyOnce)
	operations = sets.New(governance.OperationCreate, governance.OperationModify, governance.OperationDelete,
		governance.OperationStart, governance.OperationStop, governance.OperationRestart)
	decisions = sets.New(governance.DecisionApprove, governance.DecisionReject, governance.DecisionCancel)
)

// ValidateNamePart checks a namespace, system or service name: a DNS label of at most 15
// characters.
func ValidateNamePart(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(name) > MaxNamePart {
		errs = append(errs, field.TooLong(path, name, MaxNamePart))
	}
	return errs
}

func validateShortNamed(meta metav1.Object, namespaced bool) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(meta, namespaced, func(string, bool) []string { return nil }, field.NewPath("metadata"))
	errs = append(errs, ValidateNamePart(meta.GetName(), field.NewPath("metadata", "name"))...)
	if namespaced {
		errs = append(errs, ValidateNamePart(meta.GetNamespace(), field.NewPath("metadata", "namespace"))...)
	}
	return errs
}

// ValidateSystem checks a new System.
func ValidateSystem(s *governance.System) field.ErrorList {
	errs := validateShortNamed(s, true)
	spec := field.NewPath("spec")
	errs = append(errs, validateLength(s.Spec.Documentation, maxDocumentation, spec.Child("documentation"))...)
	if !environments.Has(s.Spec.Environment) {
		errs = append(errs, field.NotSupported(spec.Child("environment"), s.Spec.Environment, sets.List(environments)))
	}
	return errs
}

// ValidateSystemUpdate checks an update of a System: environment and createdBy are immutable.
func ValidateSystemUpdate(s, old *governance.System) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(s, old, field.NewPath("metadata"))
	errs = append(errs, ValidateSystem(s)...)
	spec := field.NewPath("spec")
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Spec.Environment, old.Spec.Environment, spec.Child("environment"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Spec.CreatedBy, old.Spec.CreatedBy, spec.Child("createdBy"))...)
	return errs
}

// ValidateSystemStatusUpdate checks a status update of a System.
func ValidateSystemStatusUpdate(s, old *governance.System) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(s, old, field.NewPath("metadata"))
	return append(errs, metav1validation.ValidateConditions(s.Status.Conditions, field.NewPath("status", "conditions"))...)
}

// ValidateSystemService checks a new SystemService.
func ValidateSystemService(s *governance.SystemService) field.ErrorList {
	errs := validateShortNamed(s, true)
	spec := field.NewPath("spec")
	errs = append(errs, ValidateNamePart(s.Spec.SystemRef.Name, spec.Child("systemRef", "name"))...)
	errs = append(errs, validateLength(s.Spec.Documentation, maxDocumentation, spec.Child("documentation"))...)
	return errs
}

// ValidateSystemServiceUpdate checks an update of a SystemService: systemRef and createdBy are
// immutable.
func ValidateSystemServiceUpdate(s, old *governance.SystemService) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(s, old, field.NewPath("metadata"))
	errs = append(errs, ValidateSystemService(s)...)
	spec := field.NewPath("spec")
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Spec.SystemRef, old.Spec.SystemRef, spec.Child("systemRef"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Spec.CreatedBy, old.Spec.CreatedBy, spec.Child("createdBy"))...)
	return errs
}

// ValidateSystemServiceStatusUpdate checks a status update: the instance counter never goes
// back, so a number is never handed out twice.
func ValidateSystemServiceStatusUpdate(s, old *governance.SystemService) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(s, old, field.NewPath("metadata"))
	if s.Status.NextInstanceIndex < old.Status.NextInstanceIndex {
		errs = append(errs, field.Invalid(field.NewPath("status", "nextInstanceIndex"), s.Status.NextInstanceIndex,
			fmt.Sprintf("may not decrease below %d: instance numbers are never reused", old.Status.NextInstanceIndex)))
	}
	return errs
}

// ValidateManagedVM checks a new ManagedVM.
func ValidateManagedVM(vm *governance.ManagedVM) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(vm, true, apimachineryvalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, ValidateNamePart(vm.Namespace, meta.Child("namespace"))...)
	errs = append(errs, ValidateManagedVMSpec(&vm.Spec, field.NewPath("spec"))...)
	return errs
}

// ValidateManagedVMSpec checks a VM's requested shape; approvers' modified specs are checked
// the same way.
func ValidateManagedVMSpec(spec *governance.ManagedVMSpec, path *field.Path) field.ErrorList {
	errs := ValidateNamePart(spec.SystemServiceRef.Name, path.Child("systemServiceRef", "name"))
	switch {
	case spec.InstanceType == "" && spec.Resources == nil:
		errs = append(errs, field.Required(path.Child("instanceType"), "either instanceType or resources is required"))
	case spec.InstanceType != "" && spec.Resources != nil:
		errs = append(errs, field.Forbidden(path.Child("resources"), "may not be set together with instanceType"))
	case spec.InstanceType != "":
		for _, msg := range utilvalidation.IsDNS1123Subdomain(spec.InstanceType) {
			errs = append(errs, field.Invalid(path.Child("instanceType"), spec.InstanceType, msg))
		}
	default:
		res := path.Child("resources")
		if spec.Resources.CPU < 1 || spec.Resources.CPU > maxCPU {
			errs = append(errs, field.Invalid(res.Child("cpu"), spec.Resources.CPU, fmt.Sprintf("must be between 1 and %d", maxCPU)))
		}
		if spec.Resources.Memory.Sign() <= 0 {
			errs = append(errs, field.Invalid(res.Child("memory"), spec.Resources.Memory.String(), "must be greater than zero"))
		}
	}
	if spec.DiskSize != nil && spec.DiskSize.Sign() <= 0 {
		errs = append(errs, field.Invalid(path.Child("diskSize"), spec.DiskSize.String(), "must be greater than zero"))
	}
	switch {
	case spec.Image == "" && spec.Template == "":
		errs = append(errs, field.Required(path.Child("image"), "either image or template is required"))
	case spec.Image != "" && spec.Template != "":
		errs = append(errs, field.Forbidden(path.Child("template"), "may not be set together with image"))
	case spec.Image != "":
		if strings.ContainsAny(spec.Image, " \t\n") || len(spec.Image) > 512 {
			errs = append(errs, field.Invalid(path.Child("image"), spec.Image, "must be an image reference without spaces, at most 512 characters"))
		}
	default:
		for _, msg := range utilvalidation.IsDNS1123Subdomain(spec.Template) {
			errs = append(errs, field.Invalid(path.Child("template"), spec.Template, msg))
		}
	}
	if !runStrategies.Has(spec.RunStrategy) {
		errs = append(errs, field.NotSupported(path.Child("runStrategy"), spec.RunStrategy, sets.List(runStrategies)))
	}
	if spec.RestartedAt != "" {
		if _, err := time.Parse(time.RFC3339, spec.RestartedAt); err != nil {
			errs = append(errs, field.Invalid(path.Child("restartedAt"), spec.RestartedAt, "must be a time in RFC 3339 format"))
		}
	}
	errs = append(errs, validateLength(spec.Reason, maxReason, path.Child("reason"))...)
	errs = append(errs, validateCloudInit(spec.CloudInit, path.Child("cloudInit"))...)
	return append(errs, validateFeatures(spec.RequiredFeatures, path.Child("requiredFeatures"))...)
}

// validateCloudInit checks a VM's user data: text, within what a cluster accepts inline.
func validateCloudInit(userData string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !utf8.ValidString(userData) {
		errs = append(errs, field.Invalid(path, "", "must be UTF-8 text"))
	}
	return append(errs, validateLength(userData, v1alpha1.MaxCloudInit, path)...)
}

// featureGate is the shape of a KubeVirt feature gate name, for example LiveMigration.
var featureGate = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,62}$`)

func validateFeatures(features []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(features) > maxFeatures {
		errs = append(errs, field.TooMany(path, len(features), maxFeatures))
	}
	seen := sets.New[string]()
	for i, f := range features {
		switch {
		case !featureGate.MatchString(f):
			errs = append(errs, field.Invalid(path.Index(i), f, "must be a KubeVirt feature gate name: letters and digits, starting with a letter"))
		case seen.Has(f):
			errs = append(errs, field.Duplicate(path.Index(i), f))
		}
		seen.Insert(f)
	}
	return errs
}

// ValidateManagedVMUpdate checks an update of a ManagedVM: the service it belongs to is
// immutable.
func ValidateManagedVMUpdate(vm, old *governance.ManagedVM) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(vm, old, field.NewPath("metadata"))
	errs = append(errs, ValidateManagedVMSpec(&vm.Spec, field.NewPath("spec"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(vm.Spec.SystemServiceRef, old.Spec.SystemServiceRef,
		field.NewPath("spec", "systemServiceRef"))...)
	return errs
}

// ValidateManagedVMStatusUpdate checks a status update: the instance number, once given, never
// changes.
func ValidateManagedVMStatusUpdate(vm, old *governance.ManagedVM) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(vm, old, field.NewPath("metadata"))
	status := field.NewPath("status")
	if old.Status.Instance != 0 {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(vm.Status.Instance, old.Status.Instance, status.Child("instance"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(vm.Status.InstanceName, old.Status.InstanceName, status.Child("instanceName"))...)
	}
	if vm.Status.ApprovedRevision < old.Status.ApprovedRevision {
		errs = append(errs, field.Invalid(status.Child("approvedRevision"), vm.Status.ApprovedRevision, "may not decrease"))
	}
	return append(errs, metav1validation.ValidateConditions(vm.Status.Conditions, status.Child("conditions"))...)
}

// ValidateApprovalPolicy checks a policy.
func ValidateApprovalPolicy(p *governance.ApprovalPolicy) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(p, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	if p.Spec.Environment != "" && !environments.Has(p.Spec.Environment) {
		errs = append(errs, field.NotSupported(spec.Child("environment"), p.Spec.Environment, sets.List(environments)))
	}
	seen := sets.New[governance.Operation]()
	for i, op := range p.Spec.Operations {
		path := spec.Child("operations").Index(i)
		if !operations.Has(op) {
			errs = append(errs, field.NotSupported(path, op, sets.List(operations)))
		} else if seen.Has(op) {
			errs = append(errs, field.Duplicate(path, op))
		}
		seen.Insert(op)
	}
	for i, g := range p.Spec.ApproverGroups {
		if strings.TrimSpace(g) == "" {
			errs = append(errs, field.Required(spec.Child("approverGroups").Index(i), "a group name is required"))
		}
	}
	if p.Spec.RequiredApprovals < 1 || p.Spec.RequiredApprovals > maxApprovals {
		errs = append(errs, field.Invalid(spec.Child("requiredApprovals"), p.Spec.RequiredApprovals, fmt.Sprintf("must be between 1 and %d", maxApprovals)))
	}
	if q := p.Spec.VMQuotaPerNamespace; q != nil && *q < 0 {
		errs = append(errs, field.Invalid(spec.Child("vmQuotaPerNamespace"), *q, "must not be negative"))
	}
	return errs
}

// ValidateApprovalPolicyUpdate checks an update of a policy.
func ValidateApprovalPolicyUpdate(p, old *governance.ApprovalPolicy) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(p, old, field.NewPath("metadata"))
	return append(errs, ValidateApprovalPolicy(p)...)
}

// ValidateApprovalPolicyStatusUpdate checks a status update of a policy.
func ValidateApprovalPolicyStatusUpdate(p, old *governance.ApprovalPolicy) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(p, old, field.NewPath("metadata"))
	return append(errs, metav1validation.ValidateConditions(p.Status.Conditions, field.NewPath("status", "conditions"))...)
}

// ValidateTicketDecision checks the body of an approval request.
func ValidateTicketDecision(d *governance.TicketDecision) field.ErrorList {
	var errs field.ErrorList
	if !decisions.Has(d.Decision) {
		errs = append(errs, field.NotSupported(field.NewPath("decision"), d.Decision, sets.List(decisions)))
	}
	errs = append(errs, validateLength(d.Comment, maxComment, field.NewPath("comment"))...)
	if d.Cluster != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(d.Cluster) {
			errs = append(errs, field.Invalid(field.NewPath("cluster"), d.Cluster, msg))
		}
	}
	if d.StorageClass != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(d.StorageClass) {
			errs = append(errs, field.Invalid(field.NewPath("storageClass"), d.StorageClass, msg))
		}
	}
	if d.Decision != governance.DecisionApprove {
		for name, set := range map[string]bool{"cluster": d.Cluster != "", "storageClass": d.StorageClass != "", "modifiedSpec": d.ModifiedSpec != nil} {
			if set {
				errs = append(errs, field.Forbidden(field.NewPath(name), "may only be given with decision Approve"))
			}
		}
	}
	if d.ModifiedSpec != nil {
		errs = append(errs, ValidateManagedVMSpec(d.ModifiedSpec, field.NewPath("modifiedSpec"))...)
	}
	return errs
}

// ValidateImmutableRecord refuses any update of an immutable record (audit log, revision).
func ValidateImmutableRecord[T any](obj, old T) field.ErrorList {
	if apiequality.Semantic.DeepEqual(obj, old) {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec"), "records are immutable")}
}

// ValidateRecordMeta checks the metadata of a record the platform writes.
func ValidateRecordMeta(meta metav1.Object) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaAccessor(meta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

// ValidateDomainEventStatusUpdate checks an archive: the payload stays as written and an
// archive mark, once set, stays.
func ValidateDomainEventStatusUpdate(e, old *governance.DomainEvent) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(e, old, field.NewPath("metadata"))
	if old.Status.ArchivedAt != nil && (e.Status.ArchivedAt == nil || !e.Status.ArchivedAt.Equal(old.Status.ArchivedAt)) {
		errs = append(errs, field.Invalid(field.NewPath("status", "archivedAt"), e.Status.ArchivedAt, "may not change once set"))
	}
	return errs
}

// ValidatePendingAdoption checks an adoption candidate.
func ValidatePendingAdoption(p *governance.PendingAdoption) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(p, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	if p.Spec.Cluster == "" {
		errs = append(errs, field.Required(spec.Child("cluster"), "the cluster is required"))
	}
	if p.Spec.VMName == "" {
		errs = append(errs, field.Required(spec.Child("vmName"), "the VM's name is required"))
	}
	errs = append(errs, ValidateNamePart(p.Spec.SystemServiceRef.Name, spec.Child("systemServiceRef", "name"))...)
	if p.Spec.Instance < 1 {
		errs = append(errs, field.Invalid(spec.Child("instance"), p.Spec.Instance, "must be at least 1"))
	}
	if p.Spec.VMSpec.SystemServiceRef != p.Spec.SystemServiceRef {
		errs = append(errs, field.Invalid(spec.Child("vmSpec", "systemServiceRef", "name"), p.Spec.VMSpec.SystemServiceRef.Name, "must be spec.systemServiceRef"))
	}
	return errs
}

// ValidatePendingAdoptionUpdate checks an update of an adoption candidate.
func ValidatePendingAdoptionUpdate(p, old *governance.PendingAdoption) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(p, old, field.NewPath("metadata"))
	errs = append(errs, ValidatePendingAdoption(p)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(p.Spec, old.Spec, field.NewPath("spec"))...)
}

// ValidatePendingAdoptionStatusUpdate checks a status update of an adoption candidate.
func ValidatePendingAdoptionStatusUpdate(p, old *governance.PendingAdoption) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(p, old, field.NewPath("metadata"))
	return append(errs, metav1validation.ValidateConditions(p.Status.Conditions, field.NewPath("status", "conditions"))...)
}

func validateLength(value string, max int, path *field.Path) field.ErrorList {
	if len(value) > max {
		return field.ErrorList{field.TooLong(path, "", max)}
	}
	return nil
}

// ValidateTicketExecution checks a runtime's report on an executed ticket.
func ValidateTicketExecution(e *governance.TicketExecution) field.ErrorList {
	var errs field.ErrorList
	if e.State != governance.TicketSuccess && e.State != governance.TicketFailed {
		errs = append(errs, field.NotSupported(field.NewPath("state"), e.State, []governance.TicketState{governance.TicketSuccess, governance.TicketFailed}))
	}
	return append(errs, validateLength(e.Message, maxReason, field.NewPath("message"))...)
}

// ValidateAdoptionRequest checks an adoption.
func ValidateAdoptionRequest(r *governance.AdoptionRequest) field.ErrorList {
	var errs field.ErrorList
	if r.VMName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(r.VMName, false) {
			errs = append(errs, field.Invalid(field.NewPath("vmName"), r.VMName, msg))
		}
	}
	return append(errs, validateLength(r.Reason, maxReason, field.NewPath("reason"))...)
}
