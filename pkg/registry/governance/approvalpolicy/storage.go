// Package approvalpolicy is the REST storage of governance.plinth.dev ApprovalPolicies.
package approvalpolicy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/governance/validation"
	"github.com/plinth-dev/plinth/pkg/registry/store"
	"github.com/plinth-dev/plinth/pkg/registry/strategy"
	"github.com/plinth-dev/plinth/pkg/registry/table"
)

// Definition is the ApprovalPolicy's validation.
var Definition = strategy.Definition[*governance.ApprovalPolicy]{
	NamespaceScoped:      false,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	Validate:             validation.ValidateApprovalPolicy,
	ValidateUpdate:       validation.ValidateApprovalPolicyUpdate,
	ValidateStatusUpdate: validation.ValidateApprovalPolicyStatusUpdate,
}

// NewREST returns the approvalpolicies resource and its status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(scheme, optsGetter, store.Options[*governance.ApprovalPolicy]{
		Resource:    governance.Resource("approvalpolicies"),
		Singular:    "approvalpolicy",
		NewFunc:     func() *governance.ApprovalPolicy { return &governance.ApprovalPolicy{} },
		NewListFunc: func() runtime.Object { return &governance.ApprovalPolicyList{} },
		Definition:  Definition,
		Table:       Table,
		ShortNames:  []string{"ap"},
		Categories:  []string{"governance"},
	})
}

// Table prints ENVIRONMENT, OPERATIONS, REQUIRED, APPROVERS and QUOTA.
var Table = table.New([]table.Column{
	{Name: "Environment", Type: "string", Description: "The environment covered; <all> for both."},
	{Name: "Operations", Type: "string", Description: "The operations covered; <all> for all."},
	{Name: "Required", Type: "string", Description: "Approvals required, or no."},
	{Name: "Approvers", Type: "string", Description: "The groups that may approve."},
	{Name: "Quota", Type: "string", Description: "VMs allowed per namespace.", Wide: true},
}, func(p *governance.ApprovalPolicy) []interface{} {
	env := string(p.Spec.Environment)
	if env == "" {
		env = "<all>"
	}
	ops := make([]string, 0, len(p.Spec.Operations))
	for _, op := range p.Spec.Operations {
		ops = append(ops, string(op))
	}
	opsCell := strings.Join(ops, ",")
	if opsCell == "" {
		opsCell = "<all>"
	}
	required := "no"
	if p.Spec.ApprovalRequired {
		required = fmt.Sprint(p.Spec.RequiredApprovals)
	}
	quota := "<none>"
	if q := p.Spec.VMQuotaPerNamespace; q != nil {
		quota = fmt.Sprint(*q)
	}
	return []interface{}{env, opsCell, required, table.OrNone(strings.Join(p.Spec.ApproverGroups, ",")), quota}
})
