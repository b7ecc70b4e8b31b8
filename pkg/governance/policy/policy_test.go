package policy

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
)

func pol(name string, env governance.Environment, required bool, approvals int32, groups []string, ops ...governance.Operation) governance.ApprovalPolicy {
	return governance.ApprovalPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       governance.ApprovalPolicySpec{Environment: env, Operations: ops, ApprovalRequired: required, RequiredApprovals: approvals, ApproverGroups: groups},
	}
}

func TestFor(t *testing.T) {
	const (
		test = governance.EnvironmentTest
		prod = governance.EnvironmentProd
	)
	cases := []struct {
		name     string
		policies []governance.ApprovalPolicy
		env      governance.Environment
		op       governance.Operation
		want     Requirement
	}{
		{"default create in test", nil, test, governance.OperationCreate, Requirement{ApprovalRequired: true, RequiredApprovals: 1}},
		{"default delete in prod", nil, prod, governance.OperationDelete, Requirement{ApprovalRequired: true, RequiredApprovals: 1}},
		{"default stop in test needs none", nil, test, governance.OperationStop, Requirement{}},
		{"default restart in prod needs one", nil, prod, governance.OperationRestart, Requirement{ApprovalRequired: true, RequiredApprovals: 1}},
		{"policy for another environment is ignored", []governance.ApprovalPolicy{pol("p", prod, true, 2, nil)}, test, governance.OperationCreate,
			Requirement{ApprovalRequired: true, RequiredApprovals: 1}},
		{"policy for other operations is ignored", []governance.ApprovalPolicy{pol("p", "", true, 3, nil, governance.OperationDelete)}, test, governance.OperationCreate,
			Requirement{ApprovalRequired: true, RequiredApprovals: 1}},
		{"dual approval with groups", []governance.ApprovalPolicy{pol("dual", prod, true, 2, []string{"sre"}, governance.OperationCreate)}, prod, governance.OperationCreate,
			Requirement{ApprovalRequired: true, RequiredApprovals: 2, ApproverGroups: []string{"sre"}, Policies: []string{"dual"}}},
		{"a policy may waive approval", []governance.ApprovalPolicy{pol("free", test, false, 1, nil, governance.OperationModify)}, test, governance.OperationModify,
			Requirement{Policies: []string{"free"}}},
		{"strictest wins", []governance.ApprovalPolicy{pol("a-free", "", false, 1, nil), pol("b-one", "", true, 1, []string{"ops"}), pol("c-three", prod, true, 3, []string{"sre"})},
			prod, governance.OperationDelete,
			Requirement{ApprovalRequired: true, RequiredApprovals: 3, ApproverGroups: []string{"sre"}, Policies: []string{"c-three", "a-free", "b-one"}}},
		{"tie on approvals: first by name", []governance.ApprovalPolicy{pol("z", "", true, 2, []string{"z"}), pol("a", "", true, 2, []string{"a"})},
			test, governance.OperationCreate, Requirement{ApprovalRequired: true, RequiredApprovals: 2, ApproverGroups: []string{"a"}, Policies: []string{"a", "z"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := For(tc.policies, tc.env, tc.op)
			if got.ApprovalRequired != tc.want.ApprovalRequired || got.RequiredApprovals != tc.want.RequiredApprovals ||
				!slices.Equal(got.ApproverGroups, tc.want.ApproverGroups) || !slices.Equal(got.Policies, tc.want.Policies) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestQuota(t *testing.T) {
	five, two := int32(5), int32(2)
	withQuota := func(name string, env governance.Environment, q *int32) governance.ApprovalPolicy {
		p := pol(name, env, true, 1, nil)
		p.Spec.VMQuotaPerNamespace = q
		return p
	}
	if q := Quota(nil, governance.EnvironmentTest); q != nil {
		t.Errorf("no policies: quota %d", *q)
	}
	policies := []governance.ApprovalPolicy{withQuota("all", "", &five), withQuota("prod", governance.EnvironmentProd, &two), withQuota("none", "", nil)}
	if q := Quota(policies, governance.EnvironmentTest); q == nil || *q != 5 {
		t.Errorf("test quota: %v", q)
	}
	if q := Quota(policies, governance.EnvironmentProd); q == nil || *q != 2 {
		t.Errorf("prod quota: %v", q)
	}
}
