package authorization

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// NameFreeFirst decorates the delegated (SubjectAccessReview) authorizer: a resource request
// that names an object is first asked without the name, and allowed if that is allowed;
// otherwise the named request is asked unchanged.
//
// Why: the delegating authorizer caches kube-apiserver's answers by the whole request, the
// object's name included, so every Workload, plan and binding plinth-controller touches was a
// cache miss and a SubjectAccessReview of its own (4.7–5.5 per Workload in issue 21's floor
// run). The name-free question is one cache entry per user, verb, resource, subresource and
// namespace, whatever the number of objects.
//
// Why it is sound for RBAC: a rule matches a request without a name only if the rule lists
// no resourceNames, and such a rule matches every name; so when the name-free request is
// allowed, the named one is allowed too. When it is not (Denied, NoOpinion or an error), the
// named request decides exactly as before, so rules restricted by resourceNames and denials
// still work. Kubernetes' Node authorizer agrees: every allow it gives a request without a
// name holds for every name (create, status updates and evictions it leaves to the
// NodeRestriction admission plugin), and what it subdivides by name are core, storage,
// coordination and resource objects, which plinth-apiserver does not serve.
//
// Caveats, both about kube-apiserver's configuration, not Plinth's: a webhook authorizer
// there that allows a request without a name but denies some names (or answers no opinion
// for them, leaving them to a later authorizer that denies) is bypassed for those names; and
// an RBAC rule whose resourceNames lists the empty string matches the name-free request, so
// with it the rule grants its verbs on every name. Neither occurs in Kubernetes' own
// authorizers or default roles.
//
// Admission plugins are not given this decorator: they keep the delegated authorizer itself
// (see pkg/cmd/apiserver/options.go), so their questions are answered as before.
type NameFreeFirst struct {
	delegate authorizer.Authorizer
}

var _ authorizer.Authorizer = &NameFreeFirst{}

// NewNameFreeFirst decorates delegate, which must be the delegated (SubjectAccessReview)
// authorizer or another whose decisions follow RBAC's resourceNames semantics.
func NewNameFreeFirst(delegate authorizer.Authorizer) *NameFreeFirst {
	return &NameFreeFirst{delegate: delegate}
}

// Authorize implements authorizer.Authorizer. Non-resource requests and requests without a
// name (create, list, watch, deletecollection) go to the delegate unchanged.
func (a *NameFreeFirst) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() || attrs.GetName() == "" {
		return a.delegate.Authorize(ctx, attrs)
	}
	// An error with an allow is still an allow (the authorization filter ignores it); an
	// error otherwise only means the named question must be asked.
	if decision, reason, err := a.delegate.Authorize(ctx, nameFree{attrs}); decision == authorizer.DecisionAllow {
		return decision, reason, err
	}
	return a.delegate.Authorize(ctx, attrs)
}

// ConditionsAwareAuthorize gives the same decision as Authorize: the delegated (webhook)
// authorizer is not conditions-aware either.
func (a *NameFreeFirst) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed: there are no conditions to evaluate.
func (a *NameFreeFirst) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// nameFree is a request's attributes without the object's name; everything else, selectors
// included, is the request's own.
type nameFree struct {
	authorizer.Attributes
}

// GetName implements authorizer.Attributes.
func (nameFree) GetName() string { return "" }
