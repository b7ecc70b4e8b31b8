package authorization

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// The identities of the tests: the platform's as plinth-apiserver's defaults name them, a
// tenant, an approver and a platform administrator (the controller is namefree_test.go's).
var (
	platform = Identities{
		Users:          []string{"system:serviceaccount:plinth-system:plinth-controller"},
		Groups:         []string{"system:masters", "platform:admins"},
		ApproverGroups: []string{"platform:approvers"},
	}
	alice = &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated", "tenants"}}
	carol = &user.DefaultInfo{Name: "carol", Groups: []string{"system:authenticated", "platform:approvers"}}
	dana  = &user.DefaultInfo{Name: "dana", Groups: []string{"system:authenticated", "platform:admins"}}
)

func TestInternalAPIAuthorizer(t *testing.T) {
	a := NewInternalAPIAuthorizer(InternalAPIs, platform)
	request := func(u user.Info, group, resource, sub string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "get", Namespace: "team-a", APIGroup: group, APIVersion: "v1b1",
			Resource: resource, Subresource: sub, Name: "web", ResourceRequest: true}
	}
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		{"tenant on workloads: RBAC decides", request(alice, "score.dev", "workloads", ""), authorizer.DecisionNoOpinion},
		{"tenant on resourcebindings", request(alice, "score.dev", "resourcebindings", ""), authorizer.DecisionDeny},
		{"tenant on workloadplans status", request(alice, "score.dev", "workloadplans", "status"), authorizer.DecisionDeny},
		{"tenant on platformpolicies", request(alice, "score.dev", "platformpolicies", ""), authorizer.DecisionDeny},
		{"tenant on provisioners", request(alice, "score.dev", "provisioners", ""), authorizer.DecisionDeny},
		{"platform admin on provisioners: RBAC decides", request(dana, "score.dev", "provisioners", ""), authorizer.DecisionNoOpinion},
		{"controller on provisioners: RBAC decides", request(controller, "score.dev", "provisioners", ""), authorizer.DecisionNoOpinion},
		{"tenant asking for every resource", request(alice, "score.dev", "*", ""), authorizer.DecisionDeny},
		{"tenant asking for every group", request(alice, "*", "resourcebindings", ""), authorizer.DecisionDeny},
		{"anonymous on resourcebindings", request(nil, "score.dev", "resourcebindings", ""), authorizer.DecisionDeny},
		{"platform admin: RBAC decides", request(dana, "score.dev", "resourcebindings", ""), authorizer.DecisionNoOpinion},
		{"controller user: RBAC decides", request(controller, "score.dev", "workloadplans", ""), authorizer.DecisionNoOpinion},
		{"tenant on target clusters", request(alice, "platform.plinth.dev", "clusters", ""), authorizer.DecisionDeny},
		{"tenant on sealed cluster credentials", request(alice, "platform.plinth.dev", "clusters", "credentials"), authorizer.DecisionDeny},
		{"controller on cluster credentials: RBAC decides", request(controller, "platform.plinth.dev", "clusters", "credentials"), authorizer.DecisionNoOpinion},
		{"platform admin on cluster credentials", request(dana, "platform.plinth.dev", "clusters", "credentials"), authorizer.DecisionDeny},
		{"platform admin reports a ticket's execution", request(dana, "governance.plinth.dev", "approvaltickets", "execution"), authorizer.DecisionDeny},
		{"platform admin on clusters: RBAC decides", request(dana, "platform.plinth.dev", "clusters", ""), authorizer.DecisionNoOpinion},
		{"tenant reports a ticket's execution", request(alice, "governance.plinth.dev", "approvaltickets", "execution"), authorizer.DecisionDeny},
		{"tenant decides a ticket: RBAC decides", request(alice, "governance.plinth.dev", "approvaltickets", "approval"), authorizer.DecisionNoOpinion},
		{"controller reports a ticket's execution: RBAC decides", request(controller, "governance.plinth.dev", "approvaltickets", "execution"), authorizer.DecisionNoOpinion},
		{"tenant on OCI registries", request(alice, "gitops.plinth.dev", "ociregistries", ""), authorizer.DecisionDeny},
		{"tenant on OCI artifacts", request(alice, "gitops.plinth.dev", "ociartifacts", ""), authorizer.DecisionDeny},
		{"tenant on an OCI artifact's status", request(alice, "gitops.plinth.dev", "ociartifacts", "status"), authorizer.DecisionDeny},
		{"tenant on reconciliation requests", request(alice, "gitops.plinth.dev", "reconciliationrequests", ""), authorizer.DecisionDeny},
		{"platform admin on OCI artifacts: RBAC decides", request(dana, "gitops.plinth.dev", "ociartifacts", ""), authorizer.DecisionNoOpinion},
		{"controller on reconciliation requests: RBAC decides", request(controller, "gitops.plinth.dev", "reconciliationrequests", "status"), authorizer.DecisionNoOpinion},
		{"tenant on cluster packs", request(alice, "infrastructure.ontai.dev", "infrastructureclusterpacks", ""), authorizer.DecisionDeny},
		{"tenant on a cluster pack's status", request(alice, "infrastructure.ontai.dev", "infrastructureclusterpacks", "status"), authorizer.DecisionDeny},
		{"tenant on pack instances", request(alice, "infrastructure.ontai.dev", "infrastructurepackinstances", ""), authorizer.DecisionDeny},
		{"tenant on every infrastructure resource", request(alice, "infrastructure.ontai.dev", "*", ""), authorizer.DecisionDeny},
		{"platform admin on cluster packs: RBAC decides", request(dana, "infrastructure.ontai.dev", "infrastructureclusterpacks", ""), authorizer.DecisionNoOpinion},
		{"platform admin on pack instances: RBAC decides", request(dana, "infrastructure.ontai.dev", "infrastructurepackinstances", ""), authorizer.DecisionNoOpinion},
		{"controller on pack instances' status: RBAC decides", request(controller, "infrastructure.ontai.dev", "infrastructurepackinstances", "status"), authorizer.DecisionNoOpinion},
		{"same resource name, other group", request(alice, "example.com", "resourcebindings", ""), authorizer.DecisionNoOpinion},
		{"non-resource request", authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/apis/score.dev/v1b1"}, authorizer.DecisionNoOpinion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectDecision(t, a, tc.attrs, tc.want)
		})
	}
}

// TestRuntimeOnlyGovernanceEndpoints checks the governance endpoints a tenant must never use,
// whatever RBAC grants (a Role with every verb on every resource in the namespace, say): the
// writes of a ManagedVM's and a SystemService's status (the VM's cluster, its approved revision,
// instance numbers) are the runtime's; deciding a ticket (the verb approve) and adoption
// candidates are for approvers and platform identities. What a tenant legitimately does next to
// them — read the statuses, cancel a ticket, manage the VM itself — is left to RBAC.
func TestRuntimeOnlyGovernanceEndpoints(t *testing.T) {
	a := NewInternalAPIAuthorizer(InternalAPIs, platform)
	const gov = "governance.plinth.dev"
	request := func(u user.Info, verb, resource, sub string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: "team-a", APIGroup: gov, APIVersion: "v1alpha1",
			Resource: resource, Subresource: sub, Name: "cache-1", ResourceRequest: true}
	}
	deny, rbac := authorizer.DecisionDeny, authorizer.DecisionNoOpinion
	cases := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		// A VM's status decides where it is created: the runtime's alone.
		{"tenant updates a VM's status", request(alice, "update", "managedvms", "status"), deny},
		{"tenant patches a VM's status", request(alice, "patch", "managedvms", "status"), deny},
		{"tenant asks for every verb on a VM's status", request(alice, "*", "managedvms", "status"), deny},
		{"tenant asks for every subresource of VMs", request(alice, "patch", "managedvms", "*"), deny},
		{"approver patches a VM's status", request(carol, "patch", "managedvms", "status"), deny},
		{"platform admin updates a VM's status", request(dana, "update", "managedvms", "status"), deny},
		{"controller updates a VM's status: RBAC decides", request(controller, "update", "managedvms", "status"), rbac},
		{"tenant reads a VM's status: RBAC decides", request(alice, "get", "managedvms", "status"), rbac},
		{"tenant updates a VM: RBAC decides (the approval flow)", request(alice, "update", "managedvms", ""), rbac},
		// A service's status hands out instance numbers.
		{"tenant updates a service's status", request(alice, "update", "systemservices", "status"), deny},
		{"tenant patches a service's status", request(alice, "patch", "systemservices", "status"), deny},
		{"platform admin patches a service's status", request(dana, "patch", "systemservices", "status"), deny},
		{"controller patches a service's status: RBAC decides", request(controller, "patch", "systemservices", "status"), rbac},
		{"tenant reads a service's status: RBAC decides", request(alice, "get", "systemservices", "status"), rbac},
		{"tenant updates a service: RBAC decides", request(alice, "update", "systemservices", ""), rbac},
		{"tenant updates a System's status: RBAC decides", request(alice, "update", "systems", "status"), rbac},
		// Deciding a ticket.
		{"tenant approves", request(alice, "approve", "approvaltickets", "approval"), deny},
		{"tenant asks for every verb on approvals", request(alice, "*", "approvaltickets", "approval"), deny},
		{"tenant asks for every subresource of tickets", request(alice, "approve", "approvaltickets", "*"), deny},
		{"tenant cancels (create on the approval): RBAC decides", request(alice, "create", "approvaltickets", "approval"), rbac},
		{"approver approves: RBAC decides", request(carol, "approve", "approvaltickets", "approval"), rbac},
		{"platform admin approves: RBAC decides", request(dana, "approve", "approvaltickets", "approval"), rbac},
		{"controller approves: RBAC decides", request(controller, "approve", "approvaltickets", "approval"), rbac},
		// Adoption.
		{"tenant adopts", request(alice, "create", "pendingadoptions", "adopt"), deny},
		{"tenant asks for every verb on adoption", request(alice, "*", "pendingadoptions", "adopt"), deny},
		{"tenant makes up a candidate", request(alice, "create", "pendingadoptions", ""), deny},
		{"tenant reads candidates", request(alice, "list", "pendingadoptions", ""), deny},
		{"tenant writes a candidate's status", request(alice, "update", "pendingadoptions", "status"), deny},
		{"approver adopts: RBAC decides", request(carol, "create", "pendingadoptions", "adopt"), rbac},
		{"platform admin adopts: RBAC decides", request(dana, "create", "pendingadoptions", "adopt"), rbac},
		{"controller makes a candidate: RBAC decides", request(controller, "create", "pendingadoptions", ""), rbac},
		{"anonymous adopts", request(nil, "create", "pendingadoptions", "adopt"), deny},
		// Wildcards reach all of them.
		{"tenant asks for everything in the group", request(alice, "*", "*", "*"), deny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectDecision(t, a, tc.attrs, tc.want)
		})
	}
}

// TestApproverGroupsAreTheirOwn checks that the approver groups pass only the approvers' rules:
// not the platform's internal kinds, and not without being named.
func TestApproverGroupsAreTheirOwn(t *testing.T) {
	named := NewInternalAPIAuthorizer(InternalAPIs, platform)
	for _, attrs := range []authorizer.AttributesRecord{
		{User: carol, Verb: "get", Namespace: "team-a", APIGroup: "score.dev", Resource: "resourcebindings", ResourceRequest: true},
		{User: carol, Verb: "get", APIGroup: "platform.plinth.dev", Resource: "clusters", ResourceRequest: true},
		{User: carol, Verb: "create", Namespace: "team-a", APIGroup: "governance.plinth.dev", Resource: "approvaltickets", Subresource: "execution", ResourceRequest: true},
	} {
		expectDecision(t, named, attrs, authorizer.DecisionDeny)
	}
	unnamed := NewInternalAPIAuthorizer(InternalAPIs, Identities{Users: platform.Users, Groups: platform.Groups})
	expectDecision(t, unnamed, authorizer.AttributesRecord{User: carol, Verb: "approve", Namespace: "team-a",
		APIGroup: "governance.plinth.dev", Resource: "approvaltickets", Subresource: "approval", ResourceRequest: true}, authorizer.DecisionDeny)
	expectDecision(t, unnamed, authorizer.AttributesRecord{User: dana, Verb: "approve", Namespace: "team-a",
		APIGroup: "governance.plinth.dev", Resource: "approvaltickets", Subresource: "approval", ResourceRequest: true}, authorizer.DecisionNoOpinion)
}

// expectDecision checks a's decision on attrs, and that a denial says only the fixed text.
func expectDecision(t *testing.T, a *InternalAPIAuthorizer, attrs authorizer.AttributesRecord, want authorizer.Decision) {
	t.Helper()
	decision, reason, err := a.Authorize(context.Background(), attrs)
	if err != nil || decision != want {
		t.Fatalf("%s %s/%s as %v: decision = %v (%q, %v), want %v", attrs.Verb, attrs.Resource, attrs.Subresource, attrs.User, decision, reason, err, want)
	}
	if decision == authorizer.DecisionDeny && reason != DeniedReason {
		t.Errorf("reason %q reveals more than the fixed text", reason)
	}
}
