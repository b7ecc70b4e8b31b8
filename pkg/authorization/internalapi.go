// Package authorization holds plinth-apiserver's own authorizer, which runs before the
// delegated (RBAC) authorizer.
package authorization

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// DeniedReason is the whole explanation a denied request gets. It is the same for every
// resource, verb and object, so a denial reveals nothing about what exists.
const DeniedReason = "this API is reserved for platform operators"

// Resource is an API group and a resource in it, or one subresource of it.
type Resource struct {
	Group    string
	Resource string
	// Subresource, when set, guards only that subresource.
	Subresource string
	// Verbs, when set, guards only these verbs (and requests for every verb, "*"); otherwise
	// every verb is guarded.
	Verbs []string
	// UsersOnly admits only the platform users (the controller's service account), not the
	// platform groups: for what only the runtime may do.
	UsersOnly bool
	// Approvers admits the approver groups besides the platform users and groups: for what
	// approvers do.
	Approvers bool
}

// statusWrites are the writes a status subresource serves (it serves get besides): the guard
// of a status only the runtime writes, which anyone RBAC lets read the object may read.
var statusWrites = []string{"update", "patch"}

// InternalAPIs are the platform-only resources of every Plinth group: tenants never reach them,
// whatever RBAC grants.
var InternalAPIs = []Resource{
	{Group: "score.dev", Resource: "platformpolicies"},
	// Provisioners' templates run with plinth-controller's credentials: platform
	// administrators only.
	{Group: "score.dev", Resource: "provisioners"},
	{Group: "score.dev", Resource: "resourcebindings"},
	{Group: "score.dev", Resource: "workloadplans"},
	// Target clusters, with their status and sealed credentials, are for platform
	// administrators and plinth-controller only.
	{Group: "platform.plinth.dev", Resource: "clusters"},
	// The sealed kubeconfigs are read, and executed tickets reported, by the runtime only —
	// not by platform administrators, whatever RBAC grants them.
	{Group: "platform.plinth.dev", Resource: "clusters", Subresource: "credentials", UsersOnly: true},
	{Group: "governance.plinth.dev", Resource: "approvaltickets", Subresource: "execution", UsersOnly: true},
	// A ManagedVM's status says where its VM runs (status.cluster) and which revision was
	// approved; a SystemService's hands out instance numbers. The approval flow writes them on
	// its own stores and the runtime reports VMs' phases: through the API, only the runtime
	// writes them. Everyone RBAC lets read the objects may read them.
	{Group: "governance.plinth.dev", Resource: "managedvms", Subresource: "status", Verbs: statusWrites, UsersOnly: true},
	{Group: "governance.plinth.dev", Resource: "systemservices", Subresource: "status", Verbs: statusWrites, UsersOnly: true},
	// Deciding a ticket (the verb plinth-apiserver asks for before an approval or a
	// rejection) is for approvers, whatever RBAC grants a tenant; cancelling, a create on
	// approvaltickets/approval, stays the requester's.
	{Group: "governance.plinth.dev", Resource: "approvaltickets", Subresource: "approval", Verbs: []string{"approve"}, Approvers: true},
	// Adoption candidates are found by the runtime and adopted (pendingadoptions/adopt: a
	// ManagedVM created, approved, on the candidate's cluster) by governance administrators:
	// never seen, made up or adopted by a tenant.
	{Group: "governance.plinth.dev", Resource: "pendingadoptions", Approvers: true},
	// GitOps delivery runs registries on the platform's machines and applies artifacts to any
	// registered Cluster with plinth-controller's credentials: platform administrators only.
	{Group: "gitops.plinth.dev", Resource: "ociregistries"},
	{Group: "gitops.plinth.dev", Resource: "ociartifacts"},
	{Group: "gitops.plinth.dev", Resource: "reconciliationrequests"},
	// Packs are delivered to any registered Cluster with plinth-controller's credentials, and
	// their instances record what runs on every cluster: platform administrators only.
	{Group: "infrastructure.ontai.dev", Resource: "infrastructureclusterpacks"},
	{Group: "infrastructure.ontai.dev", Resource: "infrastructurepackinstances"},
}

// Identities are who may pass the internal-API authorizer (RBAC still decides for them).
type Identities struct {
	// Users are the platform users (plinth-controller's service account): they pass every
	// rule, UsersOnly ones included.
	Users []string
	// Groups are the platform groups (platform administrators, system:masters): they pass
	// every rule but the UsersOnly ones.
	Groups []string
	// ApproverGroups pass the rules for approvers only.
	ApproverGroups []string
}

// InternalAPIAuthorizer denies every verb on internal resources (and their subresources) to
// anyone outside the platform's users and groups, and has no opinion otherwise: platform
// identities still need RBAC to be allowed.
type InternalAPIAuthorizer struct {
	resources []Resource
	users     sets.Set[string]
	groups    sets.Set[string]
	approvers sets.Set[string]
}

var _ authorizer.Authorizer = &InternalAPIAuthorizer{}

// NewInternalAPIAuthorizer guards resources for the given identities.
func NewInternalAPIAuthorizer(resources []Resource, ids Identities) *InternalAPIAuthorizer {
	return &InternalAPIAuthorizer{
		resources: slices.Clone(resources),
		users:     sets.New(ids.Users...),
		groups:    sets.New(ids.Groups...),
		approvers: sets.New(ids.ApproverGroups...),
	}
}

// Authorize implements authorizer.Authorizer: a request is denied unless the user passes every
// rule that guards it.
func (a *InternalAPIAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	u := attrs.GetUser()
	for _, r := range a.resources {
		if r.guards(attrs) && !a.admits(r, u) {
			return authorizer.DecisionDeny, DeniedReason, nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// guards reports whether the request targets r. A wildcard group, resource, subresource or
// verb (as in a SubjectAccessReview for "*") is guarded too.
func (r Resource) guards(attrs authorizer.Attributes) bool {
	group, resource, sub, verb := attrs.GetAPIGroup(), attrs.GetResource(), attrs.GetSubresource(), attrs.GetVerb()
	return (group == r.Group || group == "*") && (resource == r.Resource || resource == "*") &&
		(r.Subresource == "" || sub == r.Subresource || sub == "*") &&
		(len(r.Verbs) == 0 || verb == "*" || slices.Contains(r.Verbs, verb))
}

// admits reports whether u passes rule r.
func (a *InternalAPIAuthorizer) admits(r Resource, u user.Info) bool {
	switch {
	case u == nil:
		return false
	case a.users.Has(u.GetName()):
		return true
	case r.UsersOnly:
		return false
	case a.groups.HasAny(u.GetGroups()...):
		return true
	}
	return r.Approvers && a.approvers.HasAny(u.GetGroups()...)
}

// ConditionsAwareAuthorize gives the same decision as Authorize: this authorizer never
// returns conditions.
func (a *InternalAPIAuthorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed: there are no conditions to evaluate.
func (a *InternalAPIAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
