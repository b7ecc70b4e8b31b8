package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/writecount"
)

func TestKubeWritesKeepsWritesOnly(t *testing.T) {
	got := kubeWrites(benchharness.Counts{
		"apps/deployments/ APPLY": 100, "apps/deployments/status PUT": 500, "/pods/ POST": 100, "/pods/ POST 409": 3,
		"apps/deployments/ GET": 900, "apps/deployments/ LIST": 2, "apps/deployments/ WATCH": 4, "apps/deployments/ APPLY dryRun": 50,
		"coordination.k8s.io/leases/ PUT": 30, "/services/ DELETE": 1, "/configmaps/ PATCH": 2, "bad": 1,
	})
	want := benchharness.Counts{"apps/deployments/ APPLY": 100, "apps/deployments/status PUT": 500, "/pods/ POST": 100, "/pods/ POST 409": 3,
		"coordination.k8s.io/leases/ PUT": 30, "/services/ DELETE": 1, "/configmaps/ PATCH": 2}
	if got.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWritesTable(t *testing.T) {
	plinth := writecount.Counts{
		{Resource: "workloads.score.dev", Subresource: "status", Verb: "update", Code: 200}: 400,
		{Resource: "workloads.score.dev", Verb: "create", Code: 201}:                        100,
	}
	kubePlinth := benchharness.Counts{"apps/deployments/ APPLY": 100, "authorization.k8s.io/subjectaccessreviews/ POST": 600, "/events/ POST": 50}
	kubeFloor := benchharness.Counts{"apps/deployments/ APPLY": 100, "/secrets/ APPLY": 1}
	got := writesTable(100, plinth, kubePlinth, kubeFloor)
	want := `| writes per Workload | Plinth run | floor run |
| --- | --- | --- |
| plinth-apiserver workloads.score.dev create 201 | 1.00 | – |
| plinth-apiserver workloads.score.dev/status update 200 | 4.00 | – |
| **plinth-apiserver, all** | **5.00** | – |
| kube-apiserver /events/ POST | 0.50 | 0.00 |
| kube-apiserver /secrets/ APPLY | 0.00 | 0.01 |
| kube-apiserver apps/deployments/ APPLY | 1.00 | 1.00 |
| kube-apiserver authorization.k8s.io/subjectaccessreviews/ POST (not stored) | 6.00 | 0.00 |
| **kube-apiserver, stored** | **1.50** | **1.01** |
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// auditLine is one ResponseComplete event of plinth-apiserver's audit log.
func auditLine(verb, resource, subresource, code string) string {
	return `{"stage":"ResponseComplete","verb":"` + verb + `","user":{"username":"u"},"objectRef":{"apiGroup":"score.dev","resource":"` + resource +
		`","subresource":"` + subresource + `"},"responseStatus":{"code":` + code + `}}` + "\n"
}

func TestAuditWritesReadsTheRotatedFileToo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plinth-apiserver-audit.log")
	write := func(p string, lines ...string) {
		if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "plinth-apiserver-audit-2026-11-24T14-30-00.000.log"), auditLine("create", "workloads", "", "201"), auditLine("update", "workloads", "status", "200"))
	write(path, auditLine("update", "workloads", "status", "200"), auditLine("update", "workloads", "status", "409"))
	write(filepath.Join(dir, "kube-apiserver.log"), "not an audit log\n")
	got, rotated, err := auditWrites(path)
	if err != nil {
		t.Fatal(err)
	}
	want := writecount.Counts{
		{Resource: "workloads.score.dev", Verb: "create", Code: 201}:                        1,
		{Resource: "workloads.score.dev", Subresource: "status", Verb: "update", Code: 200}: 2,
		{Resource: "workloads.score.dev", Subresource: "status", Verb: "update", Code: 409}: 1,
	}
	if rotated != 1 || got.Table(1) != want.Table(1) {
		t.Errorf("rotated %d, counts\n%s\nwant\n%s", rotated, got.Table(1), want.Table(1))
	}

	write(path, "not an audit event\n")
	if _, _, err := auditWrites(path); err == nil {
		t.Error("no error for a log that is no audit log")
	}
}

func TestDeploymentStatusTable(t *testing.T) {
	got := deploymentStatusTable(
		writecount.StatusWrites{Objects: 4, Written: 14, Distinct: 14, Stale: 8, Conflicts: 1,
			Writers: map[string]int{"kube-controller-manager": 14, "plinth-controller": 4}},
		writecount.StatusWrites{Objects: 2, Written: 4, Distinct: 4, Stale: 2,
			Writers: map[string]int{"kube-controller-manager": 4, "bench-workloads": 2}})
	for _, want := range []string{
		"| Deployments with a status update | 4 | 2 |",
		"| writes by bench-workloads, per Deployment | 0.00 | 1.00 |",
		"| writes by kube-controller-manager, per Deployment | 3.50 | 2.00 |",
		"| writes by plinth-controller, per Deployment | 1.00 | 0.00 |",
		"| status updates that succeeded | 3.50 | 2.00 |",
		"| of them a new status (condition times aside) | 3.50 | 2.00 |",
		"| 409, built from a version the same program had updated already | 2.00 | 1.00 |",
		"| 409, otherwise | 0.25 | 0.00 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	// A run without Deployments divides by nothing.
	if empty := deploymentStatusTable(writecount.StatusWrites{}, writecount.StatusWrites{}); !strings.Contains(empty, "| status updates that succeeded | 0.00 | 0.00 |") {
		t.Errorf("empty runs:\n%s", empty)
	}
}

// The policy kube-apiserver is given keeps the request bodies StatusWritesFromAuditLog needs,
// and the flags name the files it was written to.
func TestKubeAuditArgs(t *testing.T) {
	dir := t.TempDir()
	args, log, err := kubeAuditArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "kube-apiserver-audit-policy.yaml")
	if want := []string{"--audit-policy-file", policy, "--audit-log-path", log, "--audit-log-maxsize", "0"}; strings.Join(args, " ") != strings.Join(want, " ") ||
		log != filepath.Join(dir, "kube-apiserver-audit.log") {
		t.Errorf("args %q, log %q", args, log)
	}
	b, err := os.ReadFile(policy)
	if err != nil || !strings.Contains(string(b), "level: Request\n") || !strings.Contains(string(b), `resources: ["deployments", "deployments/status"]`) {
		t.Errorf("policy %q, %v", b, err)
	}
	if _, _, err := kubeAuditArgs(filepath.Join(dir, "missing", "dir")); err == nil {
		t.Error("no error for a directory that does not exist")
	}
}
