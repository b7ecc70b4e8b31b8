package integration

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/admission/plugin/tenantcompute"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/authorization"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// This file holds what TestAuthorizationMatrix (authz_matrix_test.go) asks of the servers: the
// Plinth resources from discovery, the verbs the shipped roles use, the real request behind
// each (resource, verb, namespace) and the SelfSubjectAccessReview `kubectl auth can-i` makes,
// and the check that the two agree.

// discoverPlinthResources lists every resource and subresource of every Plinth group, as
// discovery (through kube-apiserver) serves them.
func discoverPlinthResources(t *testing.T, admin kubernetes.Interface) (resources []plinthResource, groups sets.Set[string]) {
	t.Helper()
	groups = sets.New[string]()
	for _, apiService := range localplatform.APIServices {
		version, group, _ := strings.Cut(apiService, ".")
		gv := schema.GroupVersion{Group: group, Version: version}
		groups.Insert(group)
		list, err := admin.Discovery().ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		for _, r := range list.APIResources {
			name, sub, _ := strings.Cut(r.Name, "/")
			resources = append(resources, plinthResource{gv: gv, resource: name, subresource: sub, kind: r.Kind, namespaced: r.Namespaced, verbs: r.Verbs})
		}
	}
	return resources, groups
}

// authzVerbs are the verbs to try: Kubernetes' own, and every verb a role grants on a Plinth
// group. Every such rule must name a resource the server serves, or can-i would answer for
// something that does not exist: a rule that does not is an error.
func authzVerbs(ctx context.Context, t *testing.T, admin kubernetes.Interface, resources []plinthResource, plinthGroups sets.Set[string]) sets.Set[string] {
	t.Helper()
	discovered := sets.New[string]()
	for _, r := range resources {
		discovered.Insert(r.gv.Group + " " + r.String())
	}
	verbs := sets.New("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
	roles, err := admin.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsRoles, err := admin.RbacV1().Roles("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type namedRules struct {
		name  string
		rules []rbacv1.PolicyRule
	}
	var allRules []namedRules
	for _, r := range roles.Items {
		allRules = append(allRules, namedRules{"ClusterRole " + r.Name, r.Rules})
	}
	for _, r := range nsRoles.Items {
		allRules = append(allRules, namedRules{"Role " + r.Namespace + "/" + r.Name, r.Rules})
	}
	for _, role := range allRules {
		for _, rule := range role.rules {
			for _, group := range rule.APIGroups {
				if !plinthGroups.Has(group) {
					continue
				}
				for _, v := range rule.Verbs {
					// use (on clusters) is no REST verb: no request carries it, so the probe
					// would find nothing and call every yes of can-i a lie. ComputeProvider
					// admission asks for it when a TenantCompute is placed on a Cluster;
					// TestTenantCompute checks that it is honoured.
					if v != "*" && v != tenantcompute.VerbUse {
						verbs.Insert(v)
					}
				}
				for _, res := range rule.Resources {
					if !strings.Contains(res, "*") && !discovered.Has(group+" "+res) {
						t.Errorf("%s grants %v on %s in %s, which the server does not serve", role.name, rule.Verbs, res, group)
					}
				}
			}
		}
	}
	return verbs
}

// authzSubject is one caller of the matrix: a demo identity through kube-apiserver, a caller
// without credentials, or a caller talking straight to plinth-apiserver.
type authzSubject struct {
	// name is the subject's column in the matrix.
	name string
	http *http.Client
	host string
	// header is sent with every request (forged front-proxy headers).
	header http.Header
	// user is the demo identity whose kubeconfig the subject uses through kube-apiserver, and
	// client asks can-i as that identity; both are empty for subjects can-i cannot speak for:
	// anonymous callers and callers that bypass kube-apiserver.
	user   string
	client kubernetes.Interface
	// super is system:masters: RBAC is bypassed, can-i says yes to everything.
	super bool
	// wildcard is a tenant whom RBAC grants everything in its namespace: can-i says yes to
	// what plinth-apiserver's internal-API authorizer refuses it.
	wildcard bool
}

// authzCheck is one request of the matrix and what came of it.
type authzCheck struct {
	subject  *authzSubject
	res      plinthResource
	verb, ns string
	canI     bool
	outcome  probeOutcome
	err      error
}

func (c *authzCheck) String() string {
	where := fmt.Sprintf("%s: %s %s", c.subject.name, c.verb, c.res)
	if c.ns != "" {
		where += " -n " + c.ns
	}
	return where
}

// checkCanITellsTheTruth checks that `kubectl auth can-i` (a SelfSubjectAccessReview, answered
// by kube-apiserver's RBAC) tells every demo identity what plinth-apiserver really does, for
// every check made through kube-apiserver with credentials. A 403 is a denial; 405, or a verb
// the API has no request for (list of a subresource, approve on anything but
// approvaltickets/approval), is a verb the server does not honour, so can-i must say no; any
// other answer (success, 404, 409, 422, a refused dry run) means authorization let the request
// through, so can-i must say yes.
func checkCanITellsTheTruth(t *testing.T, p *localplatform.Platform, checks []*authzCheck, sampleNamespace string) {
	var mismatches []string
	for _, c := range checks {
		if c.subject.client == nil || c.err != nil {
			continue
		}
		where := c.String()
		if c.subject.super {
			// can-i says yes to system:masters for everything, even what the server does not
			// serve; what can be checked is that the server lets it do everything it serves,
			// except what plinth-apiserver's own authorizer keeps for plinth-controller.
			if !c.canI {
				mismatches = append(mismatches, fmt.Sprintf("%s: can-i says no to system:masters", where))
			}
			if c.outcome.served() && c.outcome.allowed() == internalDenies(c) {
				mismatches = append(mismatches, fmt.Sprintf("%s: server answered %s", where, c.outcome))
			}
			// Discovery tells tools what a resource takes: a verb it lists must be served.
			if slices.Contains(c.res.verbs, c.verb) && c.outcome.code != 0 && !c.outcome.served() {
				mismatches = append(mismatches, fmt.Sprintf("%s: discovery lists the verb, server answered %s", where, c.outcome))
			}
			continue
		}
		if c.subject.wildcard {
			// The known limits of can-i (docs/security.md): to a tenant RBAC grants everything,
			// it says yes to what plinth-apiserver's own authorizer refuses, which the server
			// must refuse whatever RBAC says, and to verbs the server does not serve.
			if internalDenies(c) {
				if c.outcome.allowed() {
					mismatches = append(mismatches, fmt.Sprintf("%s: a wildcard tenant was allowed what the internal-API authorizer refuses: %s", where, c.outcome))
				}
				continue
			}
			if !c.outcome.served() {
				continue
			}
		}
		if c.canI != c.outcome.allowed() {
			mismatches = append(mismatches, fmt.Sprintf("%s: can-i says %s, server answered %s", where, yesNo(c.canI), c.outcome))
		}
	}
	sort.Strings(mismatches)
	for _, m := range mismatches {
		t.Error(m)
	}

	// kubectl auth can-i is the same question as the SelfSubjectAccessReviews above: ask it for
	// one allowed and one denied request per identity, and for the status of a Workload.
	var sample []*authzCheck
	seen := map[*authzSubject]bool{}
	for _, c := range checks {
		s := c.subject
		if s.client == nil || seen[s] {
			continue
		}
		seen[s] = true
		var yes, no *authzCheck
		for _, c := range checks {
			if c.subject != s || c.err != nil || c.ns != sampleNamespace {
				continue
			}
			if c.res.String() == "workloads/status" && (c.verb == "get" || c.verb == "list") {
				sample = append(sample, c)
			}
			if c.outcome.served() && c.canI && yes == nil {
				yes = c
			}
			if c.outcome.served() && !c.canI && no == nil {
				no = c
			}
		}
		for _, c := range []*authzCheck{yes, no} {
			if c != nil {
				sample = append(sample, c)
			}
		}
	}
	var wg sync.WaitGroup
	for _, c := range sample {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := c.subject.user
			args := []string{"--kubeconfig", p.Kubeconfig(user), "auth", "can-i", c.verb, c.res.resource + "." + c.res.gv.Group, "-n", c.ns}
			if c.res.subresource != "" {
				args = append(args, "--subresource", c.res.subresource)
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(filepath.Join(framework.BinDir(), "kubectl"), args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run() // exit status 1 means no
			if got := strings.TrimSpace(stdout.String()); got != yesNo(c.canI) {
				t.Errorf("%s: kubectl %s = %q (%s), SelfSubjectAccessReview says %s", user, strings.Join(args[2:], " "), got, strings.TrimSpace(stderr.String()), yesNo(c.canI))
			}
		}()
	}
	wg.Wait()
}

type plinthResource struct {
	gv                    schema.GroupVersion
	resource, subresource string
	kind                  string
	namespaced            bool
	// verbs are the verbs discovery lists for it (kubectl api-resources -o wide).
	verbs []string
}

func (r plinthResource) String() string {
	if r.subresource == "" {
		return r.resource
	}
	return r.resource + "/" + r.subresource
}

// internalAPI is plinth-apiserver's internal-API authorizer as the local platform configures
// it: plinth-apiserver's default platform users and groups and the demo approvers' group.
var internalAPI = authorization.NewInternalAPIAuthorizer(authorization.InternalAPIs, authorization.Identities{
	Users:          []string{localplatform.ControllerUser},
	Groups:         []string{"system:masters", "platform:admins"},
	ApproverGroups: []string{localplatform.ApproverGroup},
})

// internalDenies reports whether plinth-apiserver's internal-API authorizer refuses c's
// request to its subject, whatever RBAC says (for system:masters: what is the controller's
// alone). The approve probe asks for the verb approve on the ticket after its create.
func internalDenies(c *authzCheck) bool {
	i := slices.IndexFunc(localplatform.Identities, func(id localplatform.Identity) bool { return id.User == c.subject.user })
	if i < 0 {
		return false
	}
	id := localplatform.Identities[i]
	decision, _, _ := internalAPI.Authorize(context.Background(), authorizer.AttributesRecord{
		User: &user.DefaultInfo{Name: id.User, Groups: append([]string{user.AllAuthenticated}, id.Groups...)},
		Verb: c.verb, Namespace: c.ns, APIGroup: c.res.gv.Group, APIVersion: c.res.gv.Version,
		Resource: c.res.resource, Subresource: c.res.subresource, Name: absent, ResourceRequest: true,
	})
	return decision == authorizer.DecisionDeny
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// canI asks kube-apiserver what `kubectl auth can-i` asks it.
func canI(ctx context.Context, c kubernetes.Interface, r plinthResource, verb, ns string) (bool, error) {
	review, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: r.gv.Group, Resource: r.resource, Subresource: r.subresource,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// probeOutcome is the server's answer to a real request; code 0 means the verb has no request
// on that resource at all.
type probeOutcome struct {
	code    int
	message string
	// body is the response (up to 1 MiB; nothing of a watch that started), for the search
	// for credentials.
	body []byte
}

func (o probeOutcome) served() bool { return o.code != 0 && o.code != http.StatusMethodNotAllowed }

func (o probeOutcome) allowed() bool {
	return o.served() && o.code != http.StatusForbidden && o.code != http.StatusUnauthorized
}

func (o probeOutcome) String() string {
	if o.code == 0 {
		return "nothing: the API has no such request"
	}
	return fmt.Sprintf("%d %s", o.code, o.message)
}

// absent is a name no object has: reads, updates and deletes of it pass authorization and
// then find nothing.
const absent = "authz-probe-absent"

// probe makes the real request of verb on r as s, changing nothing. ns is empty for a
// cluster-scoped resource, or for a list or watch across all namespaces. Writes use dry runs,
// names that do not exist or bodies the server rejects.
func probe(ctx context.Context, s *authzSubject, r plinthResource, verb, ns, ticket string) (probeOutcome, error) {
	base := "/apis/" + r.gv.Group + "/" + r.gv.Version
	if ns != "" {
		base += "/namespaces/" + ns
	}
	base += "/" + r.resource
	object := func(name string, extra map[string]any) []byte {
		obj := map[string]any{"apiVersion": r.gv.String(), "kind": r.kind}
		if name != "" {
			obj["metadata"] = map[string]any{"name": name}
		}
		for k, v := range extra {
			obj[k] = v
		}
		data, _ := json.Marshal(obj)
		return data
	}
	dryRun := url.Values{"dryRun": {"All"}}
	var method, path, contentType string
	var query url.Values
	var body []byte
	if r.subresource == "" {
		switch verb {
		case "get":
			method, path = http.MethodGet, base+"/"+absent
		case "list":
			method, path, query = http.MethodGet, base, url.Values{"limit": {"1"}}
		case "watch":
			method, path, query = http.MethodGet, base, url.Values{"watch": {"true"}, "timeoutSeconds": {"1"}}
		case "create":
			// An invalid name: validation refuses it even where dry run is not honoured.
			method, path, query, body = http.MethodPost, base, dryRun, object("Authz_Probe", nil)
		case "update":
			method, path, query, body = http.MethodPut, base+"/"+absent, dryRun, object(absent, nil)
		case "patch":
			method, path, query, body, contentType = http.MethodPatch, base+"/"+absent, dryRun, []byte("{}"), "application/merge-patch+json"
		case "delete":
			method, path, query = http.MethodDelete, base+"/"+absent, dryRun
		case "deletecollection":
			method, path, query = http.MethodDelete, base, url.Values{"dryRun": {"All"}, "labelSelector": {"plinth.dev/authz-probe=none"}}
		default:
			return probeOutcome{}, nil
		}
	} else {
		sub := base + "/" + absent + "/" + r.subresource
		switch verb {
		case "get":
			method, path = http.MethodGet, sub
		case "create":
			// An empty body: where the subresource takes requests, it refuses this one.
			method, path, query, body = http.MethodPost, sub, dryRun, object("", nil)
		case "update":
			method, path, query, body = http.MethodPut, sub, dryRun, object(absent, nil)
		case "patch":
			method, path, query, body, contentType = http.MethodPatch, sub, dryRun, []byte("{}"), "application/merge-patch+json"
		case "delete":
			method, path, query = http.MethodDelete, sub, dryRun
		case "approve":
			if r.gv.Group != gov.GroupName || r.String() != "approvaltickets/approval" || ticket == "" {
				return probeOutcome{}, nil
			}
			// plinth-apiserver asks for approve once it has found the ticket; the approval
			// then fails on a cluster that does not exist, so the ticket stays pending.
			method, path, body = http.MethodPost, base+"/"+ticket+"/approval",
				object("", map[string]any{"decision": string(gov.DecisionApprove), "cluster": absent})
		default:
			// list, watch and deletecollection have no request on a subresource.
			return probeOutcome{}, nil
		}
	}
	u := s.host + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return probeOutcome{}, err
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", cmp.Or(contentType, "application/json"))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return probeOutcome{}, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	out := probeOutcome{code: resp.StatusCode}
	if verb == "watch" && resp.StatusCode == http.StatusOK {
		return out, nil // the stream has started; nothing more to read
	}
	out.body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var status metav1.Status
	if json.Unmarshal(out.body, &status) == nil && status.Kind == "Status" {
		out.message = status.Message
	}
	return out, nil
}
