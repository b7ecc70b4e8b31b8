// Package policy decides, from the ApprovalPolicies in force, what a VM operation in an
// environment needs: whether approval is required, how many distinct approvers, which groups
// may approve, and the per-namespace VM quota. It is pure: the registry lists the policies and
// asks.
package policy

import (
	"slices"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
)

// Requirement is what one operation needs.
type Requirement struct {
	// ApprovalRequired says whether a ticket must be approved before the change takes effect.
	ApprovalRequired bool
	// RequiredApprovals is the number of distinct approvers, at least 1 when approval is required.
	RequiredApprovals int32
	// ApproverGroups, when not empty, restricts approvers to these groups.
	ApproverGroups []string
	// Policies names the policies that decided, empty when the defaults did.
	Policies []string
}

// Default is the requirement when no policy covers an operation: create, modify and delete
// always need one approval; start, stop and restart need one in prod and none in test.
func Default(env governance.Environment, op governance.Operation) Requirement {
	switch op {
	case governance.OperationStart, governance.OperationStop, governance.OperationRestart:
		if env != governance.EnvironmentProd {
			return Requirement{}
		}
	}
	return Requirement{ApprovalRequired: true, RequiredApprovals: 1}
}

// For returns the requirement of op in env. Where several policies cover it, the strictest
// decides: approval is required if any covering policy requires it, and then the requiring
// policy with the most required approvals (ties: the first by name) sets the number and the
// approver groups. Groups are not intersected across policies, which could leave nobody
// eligible.
func For(policies []governance.ApprovalPolicy, env governance.Environment, op governance.Operation) Requirement {
	var covering []governance.ApprovalPolicy
	for _, p := range policies {
		if covers(p, env, op) {
			covering = append(covering, p)
		}
	}
	if len(covering) == 0 {
		return Default(env, op)
	}
	slices.SortFunc(covering, func(a, b governance.ApprovalPolicy) int {
		if a.Spec.RequiredApprovals != b.Spec.RequiredApprovals {
			return int(b.Spec.RequiredApprovals - a.Spec.RequiredApprovals)
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	var r Requirement
	for _, p := range covering {
		r.Policies = append(r.Policies, p.Name)
		if !p.Spec.ApprovalRequired {
			continue
		}
		if !r.ApprovalRequired {
			// The first requiring policy in the order above is the strictest one.
			r.ApprovalRequired = true
			r.RequiredApprovals = max(p.Spec.RequiredApprovals, 1)
			r.ApproverGroups = slices.Clone(p.Spec.ApproverGroups)
		}
	}
	return r
}

// Quota returns the smallest VM quota per namespace among the policies covering env, or nil
// when none sets one.
func Quota(policies []governance.ApprovalPolicy, env governance.Environment) *int32 {
	var quota *int32
	for _, p := range policies {
		if p.Spec.Environment != "" && p.Spec.Environment != env {
			continue
		}
		if q := p.Spec.VMQuotaPerNamespace; q != nil && (quota == nil || *q < *quota) {
			v := *q
			quota = &v
		}
	}
	return quota
}

func covers(p governance.ApprovalPolicy, env governance.Environment, op governance.Operation) bool {
	if p.Spec.Environment != "" && p.Spec.Environment != env {
		return false
	}
	return len(p.Spec.Operations) == 0 || slices.Contains(p.Spec.Operations, op)
}
