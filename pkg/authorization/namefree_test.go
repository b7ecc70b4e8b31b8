package authorization

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// question is what a fake delegate was asked: the fields a SubjectAccessReview carries.
type question struct {
	user, verb, namespace, group, resource, subresource, name, path string
	resourceRequest                                                 bool
}

func questionOf(attrs authorizer.Attributes) question {
	return question{user: attrs.GetUser().GetName(), verb: attrs.GetVerb(), namespace: attrs.GetNamespace(),
		group: attrs.GetAPIGroup(), resource: attrs.GetResource(), subresource: attrs.GetSubresource(),
		name: attrs.GetName(), path: attrs.GetPath(), resourceRequest: attrs.IsResourceRequest()}
}

// countingAuthorizer answers with decide and records every question, as the delegating
// authorizer's cache would see them: the distinct ones are the SubjectAccessReviews sent.
type countingAuthorizer struct {
	decide func(question) (authorizer.Decision, error)
	asked  []question
}

func (c *countingAuthorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	q := questionOf(attrs)
	c.asked = append(c.asked, q)
	d, err := c.decide(q)
	return d, fmt.Sprintf("decided %v for %q", d, q.name), err
}

func (c *countingAuthorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(c.Authorize(ctx, attrs))
}

func (c *countingAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func (c *countingAuthorizer) distinct() int {
	seen := map[question]bool{}
	for _, q := range c.asked {
		seen[q] = true
	}
	return len(seen)
}

var controller = &user.DefaultInfo{Name: "system:serviceaccount:plinth-system:plinth-controller"}

func updateStatus(name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: controller, Verb: "update", Namespace: "team-a", APIGroup: "score.dev",
		APIVersion: "v1b1", Resource: "workloads", Subresource: "status", Name: name, ResourceRequest: true}
}

func TestNameFreeFirstAllowedWithoutNameAsksOneQuestionForEveryName(t *testing.T) {
	inner := &countingAuthorizer{decide: func(q question) (authorizer.Decision, error) {
		if q.name == "" {
			return authorizer.DecisionAllow, nil
		}
		return authorizer.DecisionDeny, nil
	}}
	a := NewNameFreeFirst(inner)
	for i := 0; i < 50; i++ {
		if d, reason, err := a.Authorize(context.Background(), updateStatus(fmt.Sprintf("web-%d", i))); d != authorizer.DecisionAllow || err != nil {
			t.Fatalf("web-%d: %v (%q, %v), want allowed", i, d, reason, err)
		}
	}
	if n := inner.distinct(); n != 1 {
		t.Errorf("%d distinct questions for 50 names, want 1 (the name-free one): %+v", n, inner.asked)
	}
	want := questionOf(updateStatus(""))
	if inner.asked[0] != want {
		t.Errorf("asked %+v, want the same request without its name %+v", inner.asked[0], want)
	}
}

func TestNameFreeFirstLeavesResourceNamesRulesToTheNamedQuestion(t *testing.T) {
	// RBAC with one rule: resourceNames [web]. Without a name nothing matches.
	inner := &countingAuthorizer{decide: func(q question) (authorizer.Decision, error) {
		if q.name == "web" {
			return authorizer.DecisionAllow, nil
		}
		return authorizer.DecisionDeny, nil
	}}
	a := NewNameFreeFirst(inner)
	if d, reason, err := a.Authorize(context.Background(), updateStatus("web")); d != authorizer.DecisionAllow || err != nil {
		t.Errorf("web: %v (%q, %v), want allowed by its resourceNames rule", d, reason, err)
	}
	d, reason, err := a.Authorize(context.Background(), updateStatus("api"))
	if d != authorizer.DecisionDeny || err != nil {
		t.Errorf("api: %v (%q, %v), want denied", d, reason, err)
	}
	if reason != `decided Deny for "api"` {
		t.Errorf("api: reason %q, want the named question's own", reason)
	}
}

func TestNameFreeFirstAsksTheNamedQuestionAfterNoOpinionOrError(t *testing.T) {
	failure := errors.New("kube-apiserver unreachable")
	for _, tc := range []struct {
		name     string
		nameFree func() (authorizer.Decision, error)
	}{
		{"no opinion", func() (authorizer.Decision, error) { return authorizer.DecisionNoOpinion, nil }},
		{"error", func() (authorizer.Decision, error) { return authorizer.DecisionNoOpinion, failure }},
		{"deny with error", func() (authorizer.Decision, error) { return authorizer.DecisionDeny, failure }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, named := range []authorizer.Decision{authorizer.DecisionAllow, authorizer.DecisionDeny, authorizer.DecisionNoOpinion} {
				inner := &countingAuthorizer{decide: func(q question) (authorizer.Decision, error) {
					if q.name == "" {
						return tc.nameFree()
					}
					return named, nil
				}}
				d, _, err := NewNameFreeFirst(inner).Authorize(context.Background(), updateStatus("web"))
				if d != named || err != nil {
					t.Errorf("named question decides %v: got %v (%v)", named, d, err)
				}
				if len(inner.asked) != 2 || inner.asked[1].name != "web" {
					t.Errorf("asked %+v, want the name-free question, then the named one", inner.asked)
				}
			}
		})
	}
	t.Run("the named question's error is returned", func(t *testing.T) {
		inner := &countingAuthorizer{decide: func(question) (authorizer.Decision, error) { return authorizer.DecisionNoOpinion, failure }}
		if d, _, err := NewNameFreeFirst(inner).Authorize(context.Background(), updateStatus("web")); d != authorizer.DecisionNoOpinion || !errors.Is(err, failure) {
			t.Errorf("got %v (%v), want no opinion with the error", d, err)
		}
	})
}

func TestNameFreeFirstPassesOtherRequestsThrough(t *testing.T) {
	list := updateStatus("")
	list.Verb, list.Subresource = "list", ""
	for _, tc := range []struct {
		name  string
		attrs authorizer.AttributesRecord
	}{
		{"non-resource request", authorizer.AttributesRecord{User: controller, Verb: "get", Path: "/apis/score.dev/v1b1", Name: "ignored"}},
		{"request without a name", list},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &countingAuthorizer{decide: func(question) (authorizer.Decision, error) { return authorizer.DecisionDeny, nil }}
			if d, _, _ := NewNameFreeFirst(inner).Authorize(context.Background(), tc.attrs); d != authorizer.DecisionDeny {
				t.Errorf("got %v, want the delegate's deny", d)
			}
			if len(inner.asked) != 1 || inner.asked[0] != questionOf(tc.attrs) {
				t.Errorf("asked %+v, want only the request itself", inner.asked)
			}
		})
	}
}

func TestNameFreeFirstConditionsAware(t *testing.T) {
	inner := &countingAuthorizer{decide: func(q question) (authorizer.Decision, error) {
		if q.name == "" {
			return authorizer.DecisionAllow, nil
		}
		return authorizer.DecisionDeny, nil
	}}
	a := NewNameFreeFirst(inner)
	if d := a.ConditionsAwareAuthorize(context.Background(), updateStatus("web")); !d.IsAllow() {
		t.Errorf("conditions-aware decision %v, want the same allow as Authorize", d)
	}
	if _, _, err := a.EvaluateConditions(context.Background(), authorizer.ConditionsAwareDecision{}, nil); !errors.Is(err, authorizer.ErrorConditionEvaluationNotSupported) {
		t.Errorf("EvaluateConditions: %v, want fail closed", err)
	}
}
