package localplatform

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

var deployDir = filepath.Join("..", "..", "artifacts", "deploy")

// shippedPolicy loads the policy of artifacts/deploy with the reader plinth-apiserver uses.
func shippedPolicy(t *testing.T) *auditinternal.Policy {
	t.Helper()
	data, err := AuditPolicy(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.LoadPolicyFromBytes(data)
	if err != nil {
		t.Fatalf("the shipped audit policy does not load: %v", err)
	}
	return p
}

var (
	alice      = &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	carol      = &user.DefaultInfo{Name: "carol", Groups: []string{"platform:approvers", "system:authenticated"}}
	dana       = &user.DefaultInfo{Name: "dana", Groups: []string{"platform:admins", "system:authenticated"}}
	controller = &user.DefaultInfo{Name: ControllerUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
)

func resourceRequest(u user.Info, verb, group, resource, subresource, namespace, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, APIVersion: "v1alpha1", Resource: resource,
		Subresource: subresource, Namespace: namespace, Name: name, ResourceRequest: true}
}

// The shipped policy maps each kind of request to the level docs/reliability.md promises:
// governance decisions and writes with their bodies, Clusters never with a body whatever the
// verb, Secrets never above Metadata, reads and status reports at Metadata, health and
// discovery not at all.
func TestAuditPolicyLevels(t *testing.T) {
	evaluator := policy.NewPolicyRuleEvaluator(shippedPolicy(t))
	const gov, platform = "governance.plinth.dev", "platform.plinth.dev"
	cases := []struct {
		what  string
		attrs authorizer.Attributes
		want  auditinternal.Level
	}{
		{"carol approves a ticket", resourceRequest(carol, "create", gov, "approvaltickets", "approval", "team-a", "tkt-1"), auditinternal.LevelRequestResponse},
		{"the runtime reports an execution", resourceRequest(controller, "create", gov, "approvaltickets", "execution", "team-a", "tkt-1"), auditinternal.LevelRequestResponse},
		{"dana adopts a VM", resourceRequest(dana, "create", gov, "pendingadoptions", "adopt", "team-a", "found"), auditinternal.LevelRequestResponse},
		{"alice asks for a VM", resourceRequest(alice, "create", gov, "managedvms", "", "team-a", "db"), auditinternal.LevelRequestResponse},
		{"alice changes a VM", resourceRequest(alice, "patch", gov, "managedvms", "", "team-a", "db"), auditinternal.LevelRequestResponse},
		{"alice deletes a VM", resourceRequest(alice, "delete", gov, "managedvms", "", "team-a", "db"), auditinternal.LevelRequestResponse},
		{"the runtime reports a VM's status", resourceRequest(controller, "update", gov, "managedvms", "status", "team-a", "db"), auditinternal.LevelRequestResponse},
		{"dana writes an approval policy", resourceRequest(dana, "update", gov, "approvalpolicies", "", "", "prod"), auditinternal.LevelRequestResponse},
		{"alice reads a ticket", resourceRequest(alice, "get", gov, "approvaltickets", "", "team-a", "tkt-1"), auditinternal.LevelMetadata},
		{"alice watches tickets", resourceRequest(alice, "watch", gov, "approvaltickets", "", "team-a", ""), auditinternal.LevelMetadata},
		{"dana registers a Cluster", resourceRequest(dana, "create", platform, "clusters", "", "", "edge"), auditinternal.LevelMetadata},
		{"dana replaces a Cluster", resourceRequest(dana, "update", platform, "clusters", "", "", "edge"), auditinternal.LevelMetadata},
		{"dana patches a Cluster", resourceRequest(dana, "patch", platform, "clusters", "", "", "edge"), auditinternal.LevelMetadata},
		{"dana deletes a Cluster", resourceRequest(dana, "delete", platform, "clusters", "", "", "edge"), auditinternal.LevelMetadata},
		{"dana lists Clusters", resourceRequest(dana, "list", platform, "clusters", "", "", ""), auditinternal.LevelMetadata},
		{"the controller reads sealed credentials", resourceRequest(controller, "get", platform, "clusters", "credentials", "", "edge"), auditinternal.LevelMetadata},
		{"the controller reports a Cluster's status", resourceRequest(controller, "update", platform, "clusters", "status", "", "edge"), auditinternal.LevelMetadata},
		{"someone writes a Secret", resourceRequest(dana, "create", "", "secrets", "", "team-a", "db"), auditinternal.LevelMetadata},
		{"someone reads a Secret", resourceRequest(dana, "get", "", "secrets", "", "team-a", "db"), auditinternal.LevelMetadata},
		{"alice creates a Workload", resourceRequest(alice, "create", "score.dev", "workloads", "", "team-a", "web"), auditinternal.LevelRequestResponse},
		{"alice deletes her Workloads", resourceRequest(alice, "deletecollection", "score.dev", "workloads", "", "team-a", ""), auditinternal.LevelRequestResponse},
		{"the controller reports a Workload's status", resourceRequest(controller, "update", "score.dev", "workloads", "status", "team-a", "web"), auditinternal.LevelMetadata},
		{"alice lists Workloads", resourceRequest(alice, "list", "score.dev", "workloads", "", "team-a", ""), auditinternal.LevelMetadata},
		{"alice creates a TenantCompute", resourceRequest(alice, "create", "compute.plinth.dev", "tenantcomputes", "", "team-a", "t"), auditinternal.LevelRequestResponse},
		{"dana updates a pack", resourceRequest(dana, "update", "infrastructure.ontai.dev", "infrastructureclusterpacks", "", "", "p"), auditinternal.LevelRequestResponse},
		{"the controller reports a pack instance", resourceRequest(controller, "patch", "infrastructure.ontai.dev", "infrastructurepackinstances", "status", "", "p-local"), auditinternal.LevelMetadata},
		{"dana creates an OCIArtifact", resourceRequest(dana, "create", "gitops.plinth.dev", "ociartifacts", "", "", "a"), auditinternal.LevelRequestResponse},
		{"kube-aggregator probes discovery", authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/apis/score.dev/v1b1"}, auditinternal.LevelNone},
		{"a client reads OpenAPI", authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/openapi/v3/apis/score.dev/v1b1"}, auditinternal.LevelNone},
		{"the kubelet checks readiness", authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "system:anonymous"}, Verb: "get", Path: "/readyz"}, auditinternal.LevelNone},
		{"someone reads metrics", authorizer.AttributesRecord{User: dana, Verb: "get", Path: "/metrics"}, auditinternal.LevelMetadata},
	}
	for _, c := range cases {
		got := evaluator.EvaluatePolicyRule(c.attrs)
		if got.Level != c.want {
			t.Errorf("%s: level %s, want %s", c.what, got.Level, c.want)
		}
	}
}

// Every group plinth-apiserver serves is covered: a write to a resource of any group the
// policy's author did not think of is recorded with its bodies, except Clusters, and nothing
// served falls to the built-in default (None).
func TestAuditPolicyCoversEveryGroup(t *testing.T) {
	evaluator := policy.NewPolicyRuleEvaluator(shippedPolicy(t))
	for _, apiService := range APIServices {
		version, group, _ := strings.Cut(apiService, ".")
		attrs := authorizer.AttributesRecord{User: dana, Verb: "create", APIGroup: group, APIVersion: version, Resource: "newkinds",
			Name: "x", ResourceRequest: true}
		if got := evaluator.EvaluatePolicyRule(attrs).Level; got != auditinternal.LevelRequestResponse {
			t.Errorf("a write to %s is audited at %s, want RequestResponse", group, got)
		}
		attrs.Verb = "get"
		if got := evaluator.EvaluatePolicyRule(attrs).Level; got != auditinternal.LevelMetadata {
			t.Errorf("a read of %s is audited at %s, want Metadata", group, got)
		}
	}
}

// Every rule leaves out RequestReceived and managed fields: the policy's top-level settings
// reach the rules (the reader merges the stages in) and no rule turns them back on.
func TestAuditPolicyOmits(t *testing.T) {
	p := shippedPolicy(t)
	if !slices.Contains(p.OmitStages, auditinternal.StageRequestReceived) || !p.OmitManagedFields {
		t.Errorf("omitStages %v, omitManagedFields %v", p.OmitStages, p.OmitManagedFields)
	}
	evaluator := policy.NewPolicyRuleEvaluator(p)
	for _, attrs := range []authorizer.Attributes{
		resourceRequest(carol, "create", "governance.plinth.dev", "approvaltickets", "approval", "team-a", "tkt-1"),
		resourceRequest(dana, "create", "platform.plinth.dev", "clusters", "", "", "edge"),
	} {
		if got := evaluator.EvaluatePolicyRule(attrs); !slices.Contains(got.OmitStages, auditinternal.StageRequestReceived) || !got.OmitManagedFields {
			t.Errorf("%s %s: a rule overrides the policy's omissions: %+v", attrs.GetVerb(), attrs.GetResource(), got)
		}
	}
}

func writeArtifact(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, AuditPolicyArtifact), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A missing, malformed or misnamed artifact is an error that names the file, not an empty
// policy (which would audit nothing).
func TestAuditPolicyBadArtifacts(t *testing.T) {
	cases := map[string]string{
		"not YAML":      "data: [",
		"not a map":     "apiVersion: v1\nkind: ConfigMap\ndata: [policy.yaml]\n",
		"unknown field": "apiVersion: v1\nkind: ConfigMap\ndatum: {policy.yaml: x}\n",
		"a Secret":      "apiVersion: v1\nkind: Secret\ndata: {policy.yaml: eA==}\n",
		"no policy":     "apiVersion: v1\nkind: ConfigMap\ndata: {other.yaml: x}\n",
		"empty policy":  "apiVersion: v1\nkind: ConfigMap\ndata: {policy.yaml: \"\"}\n",
	}
	for name, content := range cases {
		dir := writeArtifact(t, content)
		if policy, err := AuditPolicy(dir); err == nil {
			t.Errorf("%s: accepted, policy %q", name, policy)
		} else if !strings.Contains(err.Error(), AuditPolicyArtifact) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	if _, err := AuditPolicy(t.TempDir()); !os.IsNotExist(err) {
		t.Errorf("missing artifact: %v", err)
	}
}

// The platform gives plinth-apiserver the artifact's policy, written anew at each start, and
// the log path AuditLogPath names.
func TestAuditArgs(t *testing.T) {
	dir := t.TempDir()
	artifacts := writeArtifact(t, "apiVersion: v1\nkind: ConfigMap\ndata:\n  policy.yaml: |\n    apiVersion: audit.k8s.io/v1\n    kind: Policy\n    rules: [{level: Metadata}]\n")
	if err := os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte("an older policy"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Platform{cfg: Config{Dir: dir, ArtifactsDir: artifacts}}
	args, err := p.auditArgs()
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	for i := 0; i+1 < len(args); i += 2 {
		flags[args[i]] = args[i+1]
	}
	if flags["--audit-log-path"] != filepath.Join(dir, "logs", "plinth-apiserver-audit.log") || flags["--audit-log-path"] != p.AuditLogPath() {
		t.Errorf("log path %q (AuditLogPath %q)", flags["--audit-log-path"], p.AuditLogPath())
	}
	written, err := os.ReadFile(flags["--audit-policy-file"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(written), "kind: Policy") {
		t.Errorf("policy file holds %q", written)
	}
	if _, err := policy.LoadPolicyFromFile(flags["--audit-policy-file"]); err != nil {
		t.Error(err)
	}
	p.cfg.ArtifactsDir = t.TempDir()
	if _, err := p.auditArgs(); err == nil {
		t.Error("started without a policy")
	}
}
