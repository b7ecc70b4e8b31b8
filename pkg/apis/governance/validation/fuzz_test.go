package validation_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/internal/apifuzz"
	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/install"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
)

// governanceGroup is every governance.plinth.dev kind and subresource body with the validations
// its registry runs.
var governanceGroup = apifuzz.Group{
	Install: install.Install,
	Version: v1alpha1.SchemeGroupVersion,
	Kinds: []apifuzz.Kind{
		apifuzz.KindOf("System", func() *governance.System { return &governance.System{} },
			validation.ValidateSystem, validation.ValidateSystemUpdate, validation.ValidateSystemStatusUpdate),
		apifuzz.KindOf("SystemService", func() *governance.SystemService { return &governance.SystemService{} },
			validation.ValidateSystemService, validation.ValidateSystemServiceUpdate, validation.ValidateSystemServiceStatusUpdate),
		apifuzz.KindOf("ManagedVM", func() *governance.ManagedVM { return &governance.ManagedVM{} },
			validation.ValidateManagedVM, validation.ValidateManagedVMUpdate, validation.ValidateManagedVMStatusUpdate),
		apifuzz.KindOf("ApprovalPolicy", func() *governance.ApprovalPolicy { return &governance.ApprovalPolicy{} },
			validation.ValidateApprovalPolicy, validation.ValidateApprovalPolicyUpdate, validation.ValidateApprovalPolicyStatusUpdate),
		apifuzz.KindOf("PendingAdoption", func() *governance.PendingAdoption { return &governance.PendingAdoption{} },
			validation.ValidatePendingAdoption, validation.ValidatePendingAdoptionUpdate, validation.ValidatePendingAdoptionStatusUpdate),
		apifuzz.KindOf("DomainEvent", func() *governance.DomainEvent { return &governance.DomainEvent{} },
			func(e *governance.DomainEvent) field.ErrorList { return validation.ValidateRecordMeta(e) },
			func(e, old *governance.DomainEvent) field.ErrorList {
				return validation.ValidateImmutableRecord(e.Spec, old.Spec)
			},
			validation.ValidateDomainEventStatusUpdate),
		apifuzz.KindOf("ApprovalTicket", func() *governance.ApprovalTicket { return &governance.ApprovalTicket{} },
			func(t *governance.ApprovalTicket) field.ErrorList { return validation.ValidateRecordMeta(t) },
			func(t, old *governance.ApprovalTicket) field.ErrorList {
				return validation.ValidateImmutableRecord(t.Spec, old.Spec)
			}, nil),
		apifuzz.KindOf("AuditLog", func() *governance.AuditLog { return &governance.AuditLog{} },
			func(a *governance.AuditLog) field.ErrorList { return validation.ValidateRecordMeta(a) },
			validation.ValidateImmutableRecord[*governance.AuditLog], nil),
		apifuzz.KindOf("VMRevision", func() *governance.VMRevision { return &governance.VMRevision{} },
			func(r *governance.VMRevision) field.ErrorList { return validation.ValidateRecordMeta(r) },
			validation.ValidateImmutableRecord[*governance.VMRevision], nil),
		apifuzz.KindOf("TicketDecision", func() *governance.TicketDecision { return &governance.TicketDecision{} },
			validation.ValidateTicketDecision, nil, nil),
		apifuzz.KindOf("TicketExecution", func() *governance.TicketExecution { return &governance.TicketExecution{} },
			validation.ValidateTicketExecution, nil, nil),
		apifuzz.KindOf("AdoptionRequest", func() *governance.AdoptionRequest { return &governance.AdoptionRequest{} },
			validation.ValidateAdoptionRequest, nil, nil),
	},
}

// FuzzGovernanceObjects decodes arbitrary bodies as governance.plinth.dev objects and
// subresource bodies and validates what decodes: no panic, and every refusal a 422 whose causes
// name a field.
func FuzzGovernanceObjects(f *testing.F) {
	governanceGroup.Seed(f, apifuzz.Examples(f)...)
	f.Fuzz(governanceGroup.Check)
}
