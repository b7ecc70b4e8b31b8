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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/admission/plugin/computeprovider"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/authorization"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestCanITellsTheTruth checks that `kubectl auth can-i` (a SelfSubjectAccessReview, answered
// by kube-apiserver's RBAC) tells every demo identity of the local platform what
// plinth-apiserver really does: for every Plinth resource and subresource in discovery, every
// verb the roles of artifacts/deploy use (but use, which admission asks for and no request
// carries), and each tenant namespace, it asks can-i and makes the real request. A 403 is a
// denial; 405, or a verb the API has no request for (list of a subresource, approve on anything
// but approvaltickets/approval), is a verb the server does not honour, so can-i must say no;
// any other answer (success, 404, 409, 422, a refused dry run) means authorization let the
// request through, so can-i must say yes. Writes use dry runs, names that do not exist or
// bodies the server rejects, so nothing changes.
func TestCanITellsTheTruth(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) { c.NoController = true })
	ctx := context.Background()
	adminCfg, err := p.ConfigFor("admin")
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(adminCfg)

	// Every Plinth resource and subresource, from discovery.
	var resources []plinthResource
	plinthGroups := sets.New[string]()
	for _, apiService := range localplatform.APIServices {
		version, group, _ := strings.Cut(apiService, ".")
		gv := schema.GroupVersion{Group: group, Version: version}
		plinthGroups.Insert(group)
		list, err := admin.Discovery().ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		for _, r := range list.APIResources {
			name, sub, _ := strings.Cut(r.Name, "/")
			resources = append(resources, plinthResource{gv: gv, resource: name, subresource: sub, kind: r.Kind, namespaced: r.Namespaced, verbs: r.Verbs})
		}
	}
	discovered := sets.New[string]()
	for _, r := range resources {
		discovered.Insert(r.gv.Group + " " + r.String())
	}

	// The verbs to try: Kubernetes' own, and every verb a role grants on a Plinth group. Every
	// such rule must name a resource that exists, or can-i would answer for something the
	// server does not serve at all.
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
					if v != "*" && v != computeprovider.VerbUse {
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

	// Pending tickets requested by each tenant in their own namespace: approve is decided on a
	// real ticket, after the server has looked it up.
	tickets := map[string]string{}
	var tenantNamespaces []string
	for _, id := range localplatform.Identities {
		// As the local platform decides: an identity with a namespace and no groups edits it.
		if id.Namespace == "" || len(id.Groups) > 0 {
			continue
		}
		user, ns := id.User, id.Namespace
		tenantNamespaces = append(tenantNamespaces, ns)
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		c := clientset.NewForConfigOrDie(cfg).GovernanceV1alpha1()
		if _, err := c.Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s creates a System: %v", user, err)
		}
		if _, err := c.SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "redis"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "shop"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s creates a SystemService: %v", user, err)
		}
		disk := resource.MustParse("20Gi")
		vm, err := c.ManagedVMs(ns).Create(ctx, &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "cache-1"}, Spec: gov.ManagedVMSpec{
			SystemServiceRef: gov.LocalObjectReference{Name: "redis"}, InstanceType: "u1.medium", DiskSize: &disk,
			Image: "quay.io/containerdisks/fedora:40", Reason: "can-i probe"}}, metav1.CreateOptions{})
		if err != nil || vm.Status.PendingApproval == nil {
			t.Fatalf("%s requests a VM: %v %+v", user, err, vm)
		}
		tickets[ns] = vm.Status.PendingApproval.Ticket
	}

	type subject struct {
		name   string
		super  bool // system:masters: RBAC is bypassed, can-i says yes to everything
		http   *http.Client
		host   string
		client kubernetes.Interface
	}
	var subjects []subject
	for _, id := range localplatform.Identities {
		cfg, err := p.ConfigFor(id.User)
		if err != nil {
			t.Fatal(err)
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, subject{name: id.User, super: slices.Contains(id.Groups, "system:masters"), http: hc, host: cfg.Host, client: kubernetes.NewForConfigOrDie(cfg)})
	}

	type check struct {
		subject  int
		res      plinthResource
		verb, ns string
		canI     bool
		outcome  probeOutcome
		err      error
	}
	var checks []*check
	for i := range subjects {
		for _, r := range resources {
			namespaces := []string{""}
			if r.namespaced {
				namespaces = tenantNamespaces
			}
			for _, ns := range namespaces {
				for _, v := range sets.List(verbs) {
					checks = append(checks, &check{subject: i, res: r, verb: v, ns: ns})
				}
			}
		}
	}
	work := make(chan *check)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				s := subjects[c.subject]
				c.canI, c.err = canI(ctx, s.client, c.res, c.verb, c.ns)
				if c.err == nil {
					c.outcome, c.err = probe(ctx, s.http, s.host, c.res, c.verb, c.ns, tickets[c.ns])
				}
			}
		}()
	}
	for _, c := range checks {
		work <- c
	}
	close(work)
	wg.Wait()

	var mismatches []string
	allowed := 0
	for _, c := range checks {
		s := subjects[c.subject]
		where := fmt.Sprintf("%s: %s %s", s.name, c.verb, c.res)
		if c.ns != "" {
			where += " -n " + c.ns
		}
		if c.err != nil {
			t.Errorf("%s: %v", where, c.err)
			continue
		}
		if c.outcome.allowed() {
			allowed++
		}
		if s.super {
			// can-i says yes to system:masters for everything, even what the server does not
			// serve; what can be checked is that the server lets it do everything it serves,
			// except what plinth-apiserver's own authorizer keeps for plinth-controller.
			if !c.canI {
				mismatches = append(mismatches, fmt.Sprintf("%s: can-i says no to system:masters", where))
			}
			if c.outcome.served() && c.outcome.allowed() == runtimeOnly(c.res) {
				mismatches = append(mismatches, fmt.Sprintf("%s: server answered %s", where, c.outcome))
			}
			// Discovery tells tools what a resource takes: a verb it lists must be served.
			if slices.Contains(c.res.verbs, c.verb) && c.outcome.code != 0 && !c.outcome.served() {
				mismatches = append(mismatches, fmt.Sprintf("%s: discovery lists the verb, server answered %s", where, c.outcome))
			}
			continue
		}
		if c.canI != c.outcome.allowed() {
			mismatches = append(mismatches, fmt.Sprintf("%s: can-i says %s, server answered %s", where, yesNo(c.canI), c.outcome))
		}
	}
	sort.Strings(mismatches)
	for _, m := range mismatches {
		t.Error(m)
	}
	t.Logf("%d checks (%d identities, %d resources, verbs %v), %d allowed by the server, %d mismatches",
		len(checks), len(subjects), len(resources), sets.List(verbs), allowed, len(mismatches))
	if allowed == 0 {
		t.Fatal("the server allowed nothing: the probes are broken")
	}

	// kubectl auth can-i is the same question as the SelfSubjectAccessReviews above: ask it for
	// one allowed and one denied request per identity, and for the status of a Workload.
	var sample []*check
	for i := range subjects {
		var yes, no *check
		for _, c := range checks {
			if c.subject != i || c.err != nil || c.ns != tenantNamespaces[0] {
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
		for _, c := range []*check{yes, no} {
			if c != nil {
				sample = append(sample, c)
			}
		}
	}
	var sampleWG sync.WaitGroup
	for _, c := range sample {
		sampleWG.Add(1)
		go func() {
			defer sampleWG.Done()
			user := subjects[c.subject].name
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
	sampleWG.Wait()
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

// runtimeOnly reports whether plinth-apiserver keeps r for plinth-controller alone.
func runtimeOnly(r plinthResource) bool {
	for _, internal := range authorization.InternalAPIs {
		if internal.UsersOnly && internal.Group == r.gv.Group && internal.Resource == r.resource && internal.Subresource == r.subresource {
			return true
		}
	}
	return false
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
}

func (o probeOutcome) served() bool { return o.code != 0 && o.code != http.StatusMethodNotAllowed }

func (o probeOutcome) allowed() bool { return o.served() && o.code != http.StatusForbidden }

func (o probeOutcome) String() string {
	if o.code == 0 {
		return "nothing: the API has no such request"
	}
	return fmt.Sprintf("%d %s", o.code, o.message)
}

// absent is a name no object has: reads, updates and deletes of it pass authorization and
// then find nothing.
const absent = "authz-probe-absent"

// probe makes the real request of verb on r, changing nothing.
func probe(ctx context.Context, hc *http.Client, host string, r plinthResource, verb, ns, ticket string) (probeOutcome, error) {
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
	u := host + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return probeOutcome{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", cmp.Or(contentType, "application/json"))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return probeOutcome{}, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	out := probeOutcome{code: resp.StatusCode}
	if verb == "watch" && resp.StatusCode == http.StatusOK {
		return out, nil // the stream has started; nothing more to read
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var status metav1.Status
	if json.Unmarshal(data, &status) == nil && status.Kind == "Status" {
		out.message = status.Message
	}
	return out, nil
}
