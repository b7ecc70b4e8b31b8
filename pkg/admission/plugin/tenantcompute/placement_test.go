package tenantcompute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

// rbac is an authorizer that lets dana use every Cluster and bob use edge, records what it is
// asked, and fails for the Cluster "broken".
type rbac struct{ asked []authorizer.Attributes }

func (r *rbac) authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.asked = append(r.asked, a)
	switch {
	case a.GetName() == "broken":
		return authorizer.DecisionNoOpinion, "", errors.New("the SubjectAccessReview timed out")
	case a.GetUser().GetName() == "dana", a.GetUser().GetName() == "bob" && a.GetName() == "edge":
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func onCluster(cfg string) func(*compute.TenantCompute) {
	return func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = config(cfg) }
}

func TestPlacement(t *testing.T) {
	const denied = `tenantcomputes.compute.plinth.dev "shop" is forbidden: spec.providerConfig.cluster: ` +
		`User alice may not place compute on Cluster prod: the verb use on clusters.platform.plinth.dev is required.`
	cases := []struct {
		name string
		user string
		// providers default to a Ready kubernetes provider with its schema.
		providers   []*computev1alpha1.ComputeProvider
		old, tenant *compute.TenantCompute
		// asks is the Cluster the authorizer must be asked about, "" for none.
		asks string
		// want is the refusal: "forbidden", "invalid", "twice", "internal" or "" for none.
		want string
		// field is the path a forbidden refusal names; spec.providerConfig.cluster when empty.
		field string
	}{
		{name: "create without a cluster", user: "alice", tenant: tenant(nil)},
		{name: "create with an empty cluster", user: "alice", tenant: tenant(onCluster(`{"cluster": "", "replicas": 2}`))},
		{name: "create on a cluster alice may not use", user: "alice", tenant: tenant(onCluster(`{"cluster": "prod"}`)), asks: "prod", want: "forbidden"},
		{name: "create on a cluster dana may use", user: "dana", tenant: tenant(onCluster(`{"cluster": "prod"}`)), asks: "prod"},
		{name: "only the named cluster is granted", user: "bob", tenant: tenant(onCluster(`{"cluster": "prod"}`)), asks: "prod", want: "forbidden"},
		{name: "create on the granted cluster", user: "bob", tenant: tenant(onCluster(`{"cluster": "edge"}`)), asks: "edge"},
		{name: "a provider without a schema is no way around it", user: "alice",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", true, nil)},
			tenant:    tenant(onCluster(`{"cluster": "prod"}`)), asks: "prod", want: "forbidden"},
		{name: "a provider that is not Ready is no way around it", user: "alice",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", false, nil)},
			tenant:    tenant(onCluster(`{"cluster": "prod"}`)), asks: "prod", want: "forbidden"},
		// A provider without a strict schema decodes its config with encoding/json, which
		// matches "Cluster" (or "CLUSTER", or "cluſter" with a long s) to its cluster field.
		{name: "a cluster key in another case is checked", user: "alice",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", true, nil)},
			tenant:    tenant(onCluster(`{"Cluster": "prod"}`)), asks: "prod", want: "forbidden", field: "spec.providerConfig.Cluster"},
		{name: "a cluster key in upper case is checked", user: "alice",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", true, nil)},
			tenant:    tenant(onCluster(`{"CLUSTER": "prod"}`)), asks: "prod", want: "forbidden", field: "spec.providerConfig.CLUSTER"},
		{name: "a cluster key with a folding letter is checked", user: "alice",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", true, nil)},
			tenant:    tenant(onCluster(`{"clu\u017fter": "prod"}`)), asks: "prod", want: "forbidden", field: "spec.providerConfig.cluſter"},
		{name: "a cluster key in another case is allowed with use", user: "bob",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", true, nil)},
			tenant:    tenant(onCluster(`{"Cluster": "edge"}`)), asks: "edge"},
		{name: "the cluster under two spellings", user: "dana",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", true, nil)},
			tenant:    tenant(onCluster(`{"cluster": "edge", "Cluster": "prod"}`)), want: "twice"},
		{name: "a null cluster beside another spelling", user: "alice",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", true, nil)},
			tenant:    tenant(onCluster(`{"cluster": null, "Cluster": "prod"}`)), want: "twice"},
		{name: "update respelling the same cluster", user: "alice",
			providers: []*computev1alpha1.ComputeProvider{provider("kubernetes", true, nil)},
			old:       tenant(onCluster(`{"cluster": "prod"}`)), tenant: tenant(onCluster(`{"Cluster": "prod"}`))},
		{name: "a cluster that is not a string", user: "dana", tenant: tenant(onCluster(`{"cluster": {"name": "prod"}}`)), want: "invalid"},
		{name: "update keeping the cluster", user: "alice",
			old: tenant(onCluster(`{"cluster": "prod"}`)),
			tenant: tenant(func(tc *compute.TenantCompute) {
				onCluster(`{ "replicas": 1, "cluster": "prod" }`)(tc)
				tc.Spec.Suspended = true
			})},
		{name: "update moving to another cluster", user: "alice",
			old: tenant(onCluster(`{"cluster": "edge"}`)), tenant: tenant(onCluster(`{"cluster": "prod"}`)), asks: "prod", want: "forbidden"},
		{name: "update naming a cluster", user: "alice",
			old: tenant(nil), tenant: tenant(onCluster(`{"cluster": "prod"}`)), asks: "prod", want: "forbidden"},
		{name: "update leaving a cluster for the default", user: "alice",
			old: tenant(onCluster(`{"cluster": "prod"}`)), tenant: tenant(nil)},
		{name: "the authorizer fails", user: "dana", tenant: tenant(onCluster(`{"cluster": "broken"}`)), asks: "broken", want: "internal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			providers := c.providers
			if providers == nil {
				providers = []*computev1alpha1.ComputeProvider{provider("kubernetes", true, withSchema(kubernetesSchema))}
			}
			p, _ := newPlugin(t, providers...)
			r := &rbac{}
			p.SetAuthorizer(authorizer.AuthorizerFunc(r.authorize))
			var a admission.Attributes
			if c.old == nil {
				a = attrsAs(c.user, c.tenant, nil, admission.Create, "")
			} else {
				a = attrsAs(c.user, c.tenant, c.old, admission.Update, "")
			}
			err := p.Validate(context.Background(), a, nil)

			switch {
			case c.asks == "" && len(r.asked) > 0:
				t.Errorf("asked %+v, want no question", r.asked)
			case c.asks != "":
				if len(r.asked) != 1 {
					t.Fatalf("asked %+v, want one question", r.asked)
				}
				q := r.asked[0]
				got := fmt.Sprintf("%s %s %s/%s %s %q %q %v", q.GetUser().GetName(), q.GetVerb(), q.GetAPIGroup(), q.GetAPIVersion(),
					q.GetResource(), q.GetNamespace(), q.GetName(), q.IsResourceRequest())
				if want := fmt.Sprintf(`%s use platform.plinth.dev/* clusters "" %q true`, c.user, c.asks); got != want {
					t.Errorf("asked %s, want %s", got, want)
				}
			}
			switch c.want {
			case "":
				if err != nil {
					t.Errorf("refused: %v", err)
				}
			case "forbidden":
				if !apierrors.IsForbidden(err) {
					t.Fatalf("%v, want 403 Forbidden", err)
				}
				status := err.(apierrors.APIStatus).Status()
				field := c.field
				if field == "" {
					field = "spec.providerConfig.cluster"
				}
				if want := strings.Replace(denied, "spec.providerConfig.cluster", field, 1); c.user == "alice" && status.Message != want {
					t.Errorf("message %q, want %q", status.Message, want)
				}
				if causes := status.Details.Causes; len(causes) != 1 || causes[0].Field != field || causes[0].Type != metav1.CauseTypeForbidden {
					t.Errorf("causes %+v", causes)
				}
			case "twice":
				expectCauses(t, causes(t, err), []string{`spec.providerConfig: Invalid value: "Cluster, cluster": ` +
					`names the cluster under more than one spelling of "cluster"; give it once, as "cluster"`})
			case "invalid":
				expectCauses(t, causes(t, err), []string{`spec.providerConfig.cluster: Invalid value: {"name":"prod"}: must be the name of a Cluster`})
			case "internal":
				if !apierrors.IsInternalError(err) {
					t.Errorf("%v, want 500 Internal error", err)
				}
			}
		})
	}
}

func TestClusterOf(t *testing.T) {
	for raw, want := range map[string]string{
		"":                                "",
		`{}`:                              "",
		`{"cluster": "edge"}`:             "edge",
		`{"replicas": 2, "cluster": "x"}`: "x",
		`{"Cluster": "edge"}`:             "edge",
		`{"cLuStEr": "edge"}`:             "edge",
		`{"clusters": "edge"}`:            "",
		`{"nested": {"cluster": "edge"}}`: "",
		`["cluster", "edge"]`:             "",
		`"edge"`:                          "",
	} {
		var cfg *common.RawObject
		if raw != "" {
			cfg = config(raw)
		}
		got, _, err := clusterOf(cfg)
		if err != nil || got != want {
			t.Errorf("clusterOf(%s) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{`{"cluster": 3}`, `{"cluster": ["edge"]}`, `{"cluster": true}`} {
		if _, _, err := clusterOf(config(raw)); err == nil || err.Field != "spec.providerConfig.cluster" {
			t.Errorf("clusterOf(%s): %v, want an invalid spec.providerConfig.cluster", raw, err)
		}
	}
}

func TestSameConfig(t *testing.T) {
	cases := []struct {
		a, b string
		same bool
	}{
		{``, ``, true},
		{``, `{}`, true},
		{`{"replicas": 2, "cluster": "edge"}`, "{ \"cluster\" : \"edge\",\n \"replicas\": 2 }", true},
		{`{"replicas": 20}`, `{"replicas": 20.0}`, true},
		{`{"replicas": 20}`, `{"replicas": 2e1}`, true},
		{`{"a": [1, {"b": 0.5}]}`, `{"a": [1.0, {"b": 5e-1}]}`, true},
		{`{"replicas": 20}`, `{"replicas": 21}`, false},
		{`{"replicas": 20}`, `{"replicas": "20"}`, false},
		{`{"replicas": 9007199254740993}`, `{"replicas": 9007199254740992}`, false},
		{`{"a": [1, 2]}`, `{"a": [2, 1]}`, false},
		{`{}`, `{"cluster": null}`, false},
		{`{"x": `, `{"x": `, false},
	}
	for _, c := range cases {
		var a, b *common.RawObject
		if c.a != "" {
			a = config(c.a)
		}
		if c.b != "" {
			b = config(c.b)
		}
		if got := sameConfig(a, b); got != c.same {
			t.Errorf("sameConfig(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
