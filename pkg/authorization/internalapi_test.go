package authorization

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestInternalAPIAuthorizer(t *testing.T) {
	a := NewInternalAPIAuthorizer(InternalAPIs,
		[]string{"system:serviceaccount:plinth-system:plinth-controller"},
		[]string{"system:masters", "platform:admins"})
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated", "tenants"}}
	dana := &user.DefaultInfo{Name: "dana", Groups: []string{"system:authenticated", "platform:admins"}}
	controller := &user.DefaultInfo{Name: "system:serviceaccount:plinth-system:plinth-controller", Groups: []string{"system:serviceaccounts"}}
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
			decision, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil || decision != tc.want {
				t.Fatalf("decision = %v (%q, %v), want %v", decision, reason, err, tc.want)
			}
			if decision == authorizer.DecisionDeny && reason != DeniedReason {
				t.Errorf("reason %q reveals more than the fixed text", reason)
			}
		})
	}
}
