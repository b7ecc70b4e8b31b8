package integration

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/localplatform"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

var updateAuthzMatrix = flag.Bool("update-authz-matrix", false,
	"rewrite "+authzMatrixFile+" with the outcomes TestAuthorizationMatrix observes (review the diff before committing it)")

// authzMatrixFile is the expected authorization matrix, reviewed by hand.
const authzMatrixFile = "testdata/authz-matrix.txt"

// TestAuthorizationMatrix makes, on one local platform, every request of the authorization
// matrix: every resource and subresource of every Plinth group (from discovery) × every verb
// the API or a shipped role knows × team-a, team-b and all namespaces (or the cluster, for
// cluster-scoped kinds) × every demo identity through kube-apiserver (a tenant of each
// namespace, a tenant RBAC grants everything in team-a, the approver, the platform admin, the
// cluster admin, plinth-controller and an anonymous caller) and three callers straight to plinth-apiserver (alice's certificate, no
// credentials, and alice's certificate with front-proxy headers claiming system:masters). The
// outcomes (allow, deny, unserved, unauth) form a table compared with testdata/authz-matrix.txt,
// so any change of who may do what is a visible diff. It then checks that `kubectl auth can-i`
// tells the truth about the same requests, that a tenant cannot impersonate, that forged
// front-proxy headers are believed from the front proxy only, and that no response, log, event
// or audit record carries a kubeconfig's credentials, a generated password or a provisioner's
// state.
func TestAuthorizationMatrix(t *testing.T) {
	start := time.Now()
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	adminCfg, err := p.ConfigFor("admin")
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(adminCfg)
	platformUp := time.Since(start)

	// What the probes must not find: a Cluster's kubeconfig, a workload whose provisioners
	// generate passwords and keep them in their state.
	canaries := registerCredentials(ctx, t, p)

	resources, plinthGroups := discoverPlinthResources(t, admin)
	verbs := authzVerbs(ctx, t, admin, resources, plinthGroups)

	// Pending tickets requested by each tenant in their own namespace: approve is decided on a
	// real ticket, after the server has looked it up.
	tenants := map[string]string{} // namespace → tenant
	tickets := map[string]string{} // namespace → ticket
	for _, id := range localplatform.Identities {
		// As the local platform decides: an identity with a namespace and no groups edits it
		// (the wildcard tenant shares one with an editor).
		if !id.Tenant() || id.Wildcard {
			continue
		}
		tenants[id.Namespace] = id.User
		tickets[id.Namespace] = requestVM(ctx, t, p, id.User, id.Namespace)
	}
	namespaces := sets.List(sets.KeySet(tenants))
	if len(namespaces) != 2 {
		t.Fatalf("tenant namespaces %v: the matrix expects a tenant of each of two namespaces", namespaces)
	}

	subjects := matrixSubjects(t, p)
	var checks []*authzCheck
	for _, s := range subjects {
		for _, r := range resources {
			scopes := []string{""}
			if r.namespaced {
				scopes = append(slices.Clone(namespaces), "")
			}
			for _, ns := range scopes {
				for _, v := range sets.List(verbs) {
					if r.namespaced && ns == "" && (r.subresource != "" || (v != "list" && v != "watch")) {
						continue // across namespaces, only lists and watches are requests
					}
					checks = append(checks, &authzCheck{subject: s, res: r, verb: v, ns: ns})
				}
			}
		}
	}
	probeStart := time.Now()
	work := make(chan *authzCheck)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				if c.subject.client != nil {
					if c.canI, c.err = canI(ctx, c.subject.client, c.res, c.verb, c.ns); c.err != nil {
						continue
					}
				}
				c.outcome, c.err = probe(ctx, c.subject, c.res, c.verb, c.ns, tickets[c.ns])
			}
		}()
	}
	for _, c := range checks {
		work <- c
	}
	close(work)
	wg.Wait()
	probeTime := time.Since(probeStart)
	allowed := 0
	for _, c := range checks {
		if c.err != nil {
			t.Errorf("%s: %v", c, c.err)
		}
		if c.outcome.allowed() {
			allowed++
		}
	}
	if allowed == 0 {
		t.Fatal("the server allowed nothing: the probes are broken")
	}

	t.Run("the matrix is the reviewed one", func(t *testing.T) {
		table, rows := renderAuthzMatrix(t, subjects, checks, tenants)
		t.Logf("matrix: %d rows (%d resources and subresources, verbs %v) × %d callers = %d cells",
			rows, len(resources), sets.List(verbs), len(subjects), rows*len(subjects))
		compareAuthzMatrix(t, table)
	})
	t.Run("kubectl auth can-i tells the truth", func(t *testing.T) {
		checkCanITellsTheTruth(t, p, checks, namespaces[0])
	})
	t.Run("a tenant cannot impersonate", func(t *testing.T) {
		checkImpersonation(t, p, subjects)
	})
	t.Run("front-proxy headers are believed from the front proxy only", func(t *testing.T) {
		checkForgedFrontProxyHeaders(t, p)
	})
	t.Run("no response, log, event or audit record carries a credential", func(t *testing.T) {
		checkNoCredentialLeaks(ctx, t, p, canaries, subjects, checks)
	})
	t.Logf("%d requests in %s (platform up in %s, whole test %s)", len(checks), probeTime.Round(time.Second),
		platformUp.Round(time.Second), time.Since(start).Round(time.Second))
}

// requestVM has a tenant request a VM in their namespace and returns its pending ticket.
func requestVM(ctx context.Context, t *testing.T, p *localplatform.Platform, user, ns string) string {
	t.Helper()
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
		Image: "quay.io/containerdisks/fedora:40", Reason: "authorization matrix probe"}}, metav1.CreateOptions{})
	if err != nil || vm.Status.PendingApproval == nil {
		t.Fatalf("%s requests a VM: %v %+v", user, err, vm)
	}
	return vm.Status.PendingApproval.Ticket
}

// matrixSubjects are the callers of the matrix, by column: the demo identities through
// kube-apiserver (all but Flux's, which is system:masters like admin), an anonymous caller, and
// callers straight to plinth-apiserver.
func matrixSubjects(t *testing.T, p *localplatform.Platform) []*authzSubject {
	t.Helper()
	var subjects []*authzSubject
	add := func(name string, cfg *rest.Config, header http.Header, user string, super, wildcard bool) *authzSubject {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := &authzSubject{name: name, http: hc, host: cfg.Host, header: header, user: user, super: super, wildcard: wildcard}
		if user != "" {
			s.client = kubernetes.NewForConfigOrDie(cfg)
		}
		subjects = append(subjects, s)
		return s
	}
	// The order: tenants (the wildcard one last), approver, platform admin, cluster
	// admin, the controller.
	for _, user := range []string{"alice", "bob", "eve", "carol", "dana", "admin", localplatform.ControllerUser} {
		i := slices.IndexFunc(localplatform.Identities, func(id localplatform.Identity) bool { return id.User == user })
		if i < 0 {
			t.Fatalf("no demo identity %s", user)
		}
		id := localplatform.Identities[i]
		cfg, err := p.ConfigFor(id.User)
		if err != nil {
			t.Fatal(err)
		}
		name := id.User
		if id.User == localplatform.ControllerUser {
			name = "controller"
		}
		add(name, cfg, nil, id.User, slices.Contains(id.Groups, "system:masters"), id.Wildcard)
	}
	adminCfg, err := p.ConfigFor("admin")
	if err != nil {
		t.Fatal(err)
	}
	add("anonymous", rest.AnonymousClientConfig(adminCfg), nil, "", false, false)
	direct := plinthDirectConfig(t, p, "alice")
	add("d:alice", direct, nil, "", false, false)
	add("d:anon", rest.AnonymousClientConfig(direct), nil, "", false, false)
	add("d:forged", direct, http.Header{"X-Remote-User": {"admin"}, "X-Remote-Group": {"system:masters"}}, "", false, false)
	return subjects
}

// plinthDirectConfig is user's REST config aimed at plinth-apiserver itself, which accepts the
// cluster's client certificates through delegated authentication.
func plinthDirectConfig(t *testing.T, p *localplatform.Platform, user string) *rest.Config {
	t.Helper()
	cfg, err := p.ConfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(p.PKIDir(), "plinth-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = p.PlinthURL()
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = caPEM, ""
	return cfg
}

// outcomeClass is a request's outcome as the matrix writes it.
func outcomeClass(o probeOutcome) string {
	switch {
	case o.code == http.StatusUnauthorized:
		return "unauth"
	case o.code == http.StatusForbidden:
		return "deny"
	case o.code == http.StatusMethodNotAllowed:
		return "unserved"
	case o.code == http.StatusTooManyRequests || o.code >= 500:
		return "error"
	default:
		// Success, 404, 409, 422, a refused dry run: authorization let it through.
		return "allow"
	}
}

// The matrix's order of verbs and namespaces; other verbs (from roles) sort after these.
var (
	matrixVerbOrder = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "approve"}
	allNamespaces   = "*"
	clusterScope    = "-"
)

const authzMatrixHeader = `# The authorization matrix of plinth-apiserver, generated by TestAuthorizationMatrix
# (test/integration/authz_matrix_test.go) from real requests on the local platform. A change to it is
# a change of who may do what: review the diff by hand, then rewrite it with
#   go test -count=1 ./test/integration/ -run TestAuthorizationMatrix -update-authz-matrix
#
# Rows: every resource and subresource of every Plinth group in discovery × every verb the API or a
# shipped role knows that has a request there (approve: approvaltickets/approval only; lists and
# watches only on whole resources) × namespace team-a, team-b, * (all namespaces: lists and
# watches) or - (cluster-scoped). Requests change nothing: dry runs, absent names, invalid bodies.
# Callers, through kube-apiserver: alice (tenant of team-a), bob (tenant of team-b), eve (tenant
# of team-a whom a Role grants every verb on every resource there), carol (platform:approvers),
# dana (platform:admins), admin (system:masters), controller (plinth-controller's service
# account), anonymous (no credentials). Straight to plinth-apiserver:
# d:alice (alice's client certificate), d:anon (no credentials), d:forged (alice's certificate
# with X-Remote-User: admin and X-Remote-Group: system:masters).
# Outcomes: allow (authorized; the request reached its handler, whatever it answered), deny (403),
# unserved (405: the resource has no such request), unauth (401).
`

// renderAuthzMatrix writes the checks as the matrix's stable, sorted text and returns it with
// its number of rows. A request that failed, or a server error, fails the test.
func renderAuthzMatrix(t *testing.T, subjects []*authzSubject, checks []*authzCheck, tenants map[string]string) (string, int) {
	t.Helper()
	column := map[*authzSubject]int{}
	for i, s := range subjects {
		column[s] = i
	}
	type row struct {
		res   plinthResource
		ns    string
		verb  string
		cells []string
	}
	rows := map[string]*row{}
	for _, c := range checks {
		if c.err == nil && c.outcome.code == 0 {
			continue // no such request: not a row
		}
		ns := c.ns
		if ns == "" {
			ns = clusterScope
			if c.res.namespaced {
				ns = allNamespaces
			}
		}
		key := strings.Join([]string{c.res.gv.Group, c.res.String(), ns, c.verb}, " ")
		r := rows[key]
		if r == nil {
			r = &row{res: c.res, ns: ns, verb: c.verb, cells: make([]string, len(subjects))}
			rows[key] = r
		}
		class := "error"
		if c.err == nil {
			class = outcomeClass(c.outcome)
		}
		if class == "error" {
			t.Errorf("%s: %s %v", c, c.outcome, c.err)
		}
		r.cells[column[c.subject]] = class
	}
	sorted := make([]*row, 0, len(rows))
	for _, r := range rows {
		sorted = append(sorted, r)
	}
	rank := func(order []string, s string) int {
		if i := slices.Index(order, s); i >= 0 {
			return i
		}
		return len(order)
	}
	nsOrder := append(sets.List(sets.KeySet(tenants)), allNamespaces, clusterScope)
	slices.SortFunc(sorted, func(a, b *row) int {
		return cmp.Or(
			cmp.Compare(a.res.gv.Group, b.res.gv.Group),
			cmp.Compare(a.res.resource, b.res.resource),
			cmp.Compare(a.res.subresource, b.res.subresource),
			cmp.Compare(rank(nsOrder, a.ns), rank(nsOrder, b.ns)),
			cmp.Compare(rank(matrixVerbOrder, a.verb), rank(matrixVerbOrder, b.verb)),
			cmp.Compare(a.verb, b.verb))
	})
	var out strings.Builder
	out.WriteString(authzMatrixHeader)
	line := func(group, res, ns, verb string, cells []string) {
		l := fmt.Sprintf("%-25s %-35s %-7s %-17s", group, res, ns, verb)
		for _, c := range cells {
			l += fmt.Sprintf(" %-10s", cmp.Or(c, "?"))
		}
		out.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	names := make([]string, len(subjects))
	for i, s := range subjects {
		names[i] = s.name
	}
	out.WriteString("#")
	line("group", "resource", "ns", "verb", names)
	for _, r := range sorted {
		line(r.res.gv.Group, r.res.String(), r.ns, r.verb, r.cells)
	}
	return out.String(), len(sorted)
}

// compareAuthzMatrix compares the matrix with the reviewed one, or rewrites that with
// -update-authz-matrix.
func compareAuthzMatrix(t *testing.T, got string) {
	t.Helper()
	if *updateAuthzMatrix {
		if err := os.MkdirAll(filepath.Dir(authzMatrixFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(authzMatrixFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: review its diff before committing it", authzMatrixFile)
		return
	}
	want, err := os.ReadFile(authzMatrixFile)
	if err != nil {
		t.Fatalf("%v: run the test with -update-authz-matrix to write it, then review it", err)
	}
	if string(want) == got {
		return
	}
	t.Errorf("the authorization matrix is not %s (- expected, + observed):\n%s\n"+
		"If the change is intended, review it and rewrite the file: go test -count=1 ./test/integration/ -run TestAuthorizationMatrix -update-authz-matrix",
		authzMatrixFile, matrixDiff(string(want), got))
}

// matrixDiff shows the lines of want and got that differ, row by row: a row is keyed by its
// first four fields (group, resource, namespace, verb), so a changed cell shows as the row's
// two versions one above the other.
func matrixDiff(want, got string) string {
	key := func(line string) string {
		if strings.HasPrefix(line, "#") {
			return line // comments only match themselves
		}
		f := strings.Fields(line)
		return strings.Join(f[:min(4, len(f))], " ")
	}
	index := func(text string) (map[string]string, []string) {
		lines := map[string]string{}
		var order []string
		for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			k := key(l)
			lines[k] = l
			order = append(order, k)
		}
		return lines, order
	}
	wantLines, wantOrder := index(want)
	gotLines, gotOrder := index(got)
	var diff strings.Builder
	for _, k := range gotOrder {
		w, ok := wantLines[k]
		switch {
		case !ok:
			fmt.Fprintf(&diff, "+ %s\n", gotLines[k])
		case w != gotLines[k]:
			fmt.Fprintf(&diff, "- %s\n+ %s\n", w, gotLines[k])
		}
	}
	for _, k := range wantOrder {
		if _, ok := gotLines[k]; !ok {
			fmt.Fprintf(&diff, "- %s\n", wantLines[k])
		}
	}
	return diff.String()
}

// request makes a GET as s with extra headers (JSON unless they say otherwise) and returns the
// status and body.
func request(t *testing.T, s *authzSubject, path string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s GET %s: %v", s.name, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body)
}

// checkImpersonation: alice, through kube-apiserver and straight to plinth-apiserver, cannot
// become bob or join system:masters by asking; the admin can (so the headers do reach the
// servers and are honoured where authorized).
func checkImpersonation(t *testing.T, p *localplatform.Platform, subjects []*authzSubject) {
	find := func(name string) *authzSubject {
		for _, s := range subjects {
			if s.name == name {
				return s
			}
		}
		t.Fatalf("no subject %s", name)
		return nil
	}
	adminDirect := &authzSubject{name: "d:admin"}
	cfg := plinthDirectConfig(t, p, "admin")
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	adminDirect.http, adminDirect.host = hc, cfg.Host
	const (
		bobsWorkloads  = "/apis/score.dev/v1b1/namespaces/team-b/workloads"
		alicesBindings = "/apis/score.dev/v1b1/namespaces/team-a/resourcebindings"
		clusters       = "/apis/platform.plinth.dev/v1alpha1/clusters"
	)
	for _, via := range []struct{ alice, admin *authzSubject }{{find("alice"), find("admin")}, {find("d:alice"), adminDirect}} {
		for _, a := range []struct {
			path   string
			header http.Header
		}{
			{bobsWorkloads, http.Header{"Impersonate-User": {"bob"}}},
			{alicesBindings, http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"system:masters"}}},
			{clusters, http.Header{"Impersonate-User": {"admin"}, "Impersonate-Group": {"system:masters"}}},
			{clusters, http.Header{"Impersonate-User": {"dana"}, "Impersonate-Group": {"platform:admins"}}},
			{clusters, http.Header{"Impersonate-User": {localplatform.ControllerUser}}},
		} {
			code, body := request(t, via.alice, a.path, a.header)
			if code != http.StatusForbidden || !strings.Contains(body, "cannot impersonate") {
				t.Errorf("%s impersonating %v on %s: %d %.300s", via.alice.name, a.header, a.path, code, body)
			}
		}
		// The admin may impersonate: as bob it reads bob's workloads, as alice it may not.
		if code, body := request(t, via.admin, bobsWorkloads, http.Header{"Impersonate-User": {"bob"}}); code != http.StatusOK {
			t.Errorf("%s impersonating bob: %d %.300s", via.admin.name, code, body)
		}
		if code, body := request(t, via.admin, bobsWorkloads, http.Header{"Impersonate-User": {"alice"}}); code != http.StatusForbidden || !strings.Contains(body, `User \"alice\"`) {
			t.Errorf("%s impersonating alice on bob's workloads: %d %.300s", via.admin.name, code, body)
		}
	}
	// Front-proxy headers sent to kube-apiserver are not passed on as the user.
	code, body := request(t, find("alice"), alicesBindings, http.Header{"X-Remote-User": {"dana"}, "X-Remote-Group": {"platform:admins"}})
	if code != http.StatusForbidden || !strings.Contains(body, `User \"alice\"`) {
		t.Errorf("alice with X-Remote-User: dana through kube-apiserver: %d %.300s", code, body)
	}
}

// TestMatrixDiff checks the diff a changed matrix fails with: a changed cell shows its row's
// two versions, an added or removed row one line, a changed comment both.
func TestMatrixDiff(t *testing.T) {
	want := "# callers a b\nscore.dev workloads team-a get allow deny\nscore.dev workloads team-a list allow deny\nscore.dev plans - get deny deny\n"
	got := "# callers a b c\nscore.dev workloads team-a get allow allow\nscore.dev workloads team-a list allow deny\nscore.dev policies - get deny deny\n"
	diff := matrixDiff(want, got)
	for _, line := range []string{
		"+ # callers a b c", "- # callers a b",
		"- score.dev workloads team-a get allow deny\n+ score.dev workloads team-a get allow allow",
		"+ score.dev policies - get deny deny", "- score.dev plans - get deny deny",
	} {
		if !strings.Contains(diff, line) {
			t.Errorf("diff lacks %q:\n%s", line, diff)
		}
	}
	if strings.Contains(diff, "list") {
		t.Errorf("diff shows an unchanged row:\n%s", diff)
	}
	if d := matrixDiff(want, want); d != "" {
		t.Errorf("diff of equal matrices: %q", d)
	}
}
