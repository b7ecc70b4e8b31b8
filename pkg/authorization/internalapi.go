// Package authorization holds plinth-apiserver's own authorizer, which runs before the
// delegated (RBAC) authorizer.
package authorization

import (
	"context"

	"k8s.io/apimachinery/pkg/util/sets"
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
	// UsersOnly admits only the platform users (the controller's service account), not the
	// platform groups: for what only the runtime may do.
	UsersOnly bool
}

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

// InternalAPIAuthorizer denies every verb on internal resources (and their subresources) to
// anyone outside the platform's users and groups, and has no opinion otherwise: platform
// identities still need RBAC to be allowed.
type InternalAPIAuthorizer struct {
	resources sets.Set[Resource]
	users     sets.Set[string]
	groups    sets.Set[string]
}

var _ authorizer.Authorizer = &InternalAPIAuthorizer{}

// NewInternalAPIAuthorizer guards resources for the given platform users and groups.
func NewInternalAPIAuthorizer(resources []Resource, platformUsers, platformGroups []string) *InternalAPIAuthorizer {
	return &InternalAPIAuthorizer{
		resources: sets.New(resources...),
		users:     sets.New(platformUsers...),
		groups:    sets.New(platformGroups...),
	}
}

// Authorize implements authorizer.Authorizer.
func (a *InternalAPIAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	guarded, usersOnly := a.guards(attrs)
	if !guarded {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if u := attrs.GetUser(); u != nil && (a.users.Has(u.GetName()) || (!usersOnly && a.groups.HasAny(u.GetGroups()...))) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionDeny, DeniedReason, nil
}

// guards reports whether the request targets an internal resource, and whether any matching
// rule admits the platform users only. A wildcard group, resource or subresource (as in a
// SubjectAccessReview for "*") is guarded too.
func (a *InternalAPIAuthorizer) guards(attrs authorizer.Attributes) (guarded, usersOnly bool) {
	group, resource, sub := attrs.GetAPIGroup(), attrs.GetResource(), attrs.GetSubresource()
	for r := range a.resources {
		if (group == r.Group || group == "*") && (resource == r.Resource || resource == "*") &&
			(r.Subresource == "" || sub == r.Subresource || sub == "*") {
			guarded = true
			usersOnly = usersOnly || r.UsersOnly
		}
	}
	return guarded, usersOnly
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
