package writecount

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// line is one audit event of the log backend's format.
func line(stage, user, verb, group, resource, subresource string, code int) string {
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"` + stage + `","verb":"` + verb +
		`","user":{"username":"` + user + `","groups":["system:authenticated"]},"objectRef":{"resource":"` + resource +
		`","namespace":"team-a","name":"web","apiGroup":"` + group + `","apiVersion":"v1b1","subresource":"` + subresource +
		`"},"responseStatus":{"metadata":{},"code":` + strconv.Itoa(code) + `}}` + "\n"
}

func writeLog(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var log = line("ResponseComplete", "plinth-controller", "update", "score.dev", "workloads", "status", 200) +
	line("ResponseComplete", "plinth-controller", "update", "score.dev", "workloads", "status", 200) +
	line("ResponseComplete", "plinth-controller", "update", "score.dev", "workloads", "status", 409) +
	// ResponseStarted of a request counted at its ResponseComplete: not counted twice.
	line("ResponseStarted", "plinth-controller", "update", "score.dev", "workloads", "status", 200) +
	line("ResponseComplete", "plinth-controller", "create", "score.dev", "workloadplans", "", 201) +
	// Reads are not writes.
	line("ResponseComplete", "plinth-controller", "get", "score.dev", "workloads", "", 200) +
	line("ResponseComplete", "plinth-controller", "watch", "score.dev", "workloads", "", 200) +
	// Another user's write.
	line("ResponseComplete", "alice", "create", "score.dev", "workloads", "", 201) +
	// A core resource, and an empty line.
	line("ResponseComplete", "plinth-controller", "delete", "", "secrets", "", 200) + "\n" +
	// A write with no object (a non-resource URL) has nothing to be counted by.
	`{"stage":"ResponseComplete","verb":"create","user":{"username":"plinth-controller"},"responseStatus":{"code":200}}` + "\n"

func TestFromAuditLog(t *testing.T) {
	path := writeLog(t, log)
	got, err := FromAuditLog(path, "plinth-controller")
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{
		{Resource: "workloads.score.dev", Subresource: "status", Verb: "update", Code: 200}: 2,
		{Resource: "workloads.score.dev", Subresource: "status", Verb: "update", Code: 409}: 1,
		{Resource: "workloadplans.score.dev", Verb: "create", Code: 201}:                    1,
		{Resource: "secrets", Verb: "delete", Code: 200}:                                    1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plinth-controller's writes:\n%s want\n%s", got.Table(1), want.Table(1))
	}

	all, err := FromAuditLog(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if all.Total() != 6 || all[Key{Resource: "workloads.score.dev", Verb: "create", Code: 201}] != 1 {
		t.Errorf("everyone's writes:\n%s", all.Table(1))
	}
}

func TestFromAuditLogHalfWrittenLastLine(t *testing.T) {
	complete := line("ResponseComplete", "plinth-controller", "update", "score.dev", "workloads", "status", 200)
	// The server is writing the second event: its line has no line break yet.
	path := writeLog(t, complete+complete[:len(complete)/2])
	got, err := FromAuditLog(path, "plinth-controller")
	if err != nil {
		t.Fatalf("a half written last line: %v", err)
	}
	if got.Total() != 1 {
		t.Errorf("counted %d writes, want the 1 complete one", got.Total())
	}
}

func TestFromAuditLogMalformedLine(t *testing.T) {
	complete := line("ResponseComplete", "plinth-controller", "update", "score.dev", "workloads", "status", 200)
	for name, content := range map[string]string{
		"not JSON":                  complete + "this is not an event\n" + complete,
		"a cut-off event":           complete + complete[:len(complete)/2] + "\n" + complete,
		"a field of the wrong type": complete + `{"stage":["ResponseComplete"]}` + "\n",
		"a code as a string":        complete + strings.Replace(complete, `"code":200`, `"code":"200"`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := FromAuditLog(writeLog(t, content), "")
			if err == nil || !strings.Contains(err.Error(), "line 2 ") {
				t.Errorf("error %v, want one naming line 2", err)
			}
		})
	}
}

func TestFromAuditLogMissingFile(t *testing.T) {
	if _, err := FromAuditLog(filepath.Join(t.TempDir(), "none.log"), ""); err == nil {
		t.Error("no error for a missing log")
	}
}

func TestSubWhereTable(t *testing.T) {
	status := Key{Resource: "workloads.score.dev", Subresource: "status", Verb: "update", Code: 200}
	plan := Key{Resource: "workloadplans.score.dev", Verb: "create", Code: 201}
	ingress := Key{Resource: "ingresses.networking.k8s.io", Verb: "patch", Code: 200}
	before := Counts{status: 2, plan: 1}
	after := Counts{status: 10, plan: 1, ingress: 3}
	diff := after.Sub(before)
	if want := (Counts{status: 8, ingress: 3}); !reflect.DeepEqual(diff, want) {
		t.Errorf("Sub = %v, want %v", diff, want)
	}
	// A key gone from the later reading (a rotated log) shows as negative rather than vanishing.
	if got := (Counts{}).Sub(Counts{plan: 2}); got[plan] != -2 {
		t.Errorf("Sub of a vanished key = %v", got)
	}
	score := diff.Where(func(k Key) bool { return k.Group() == "score.dev" })
	if score.Total() != 8 || len(score) != 1 {
		t.Errorf("score.dev writes = %v", score)
	}
	if g := (Key{Resource: "secrets"}).Group(); g != "" {
		t.Errorf("core group = %q", g)
	}
	want := "ingresses.networking.k8s.io patch 200: 0.75\nworkloads.score.dev/status update 200: 2.00\n"
	if got := diff.Table(4); got != want {
		t.Errorf("Table(4) =\n%s want\n%s", got, want)
	}
	if got := diff.Table(0); !strings.Contains(got, "workloads.score.dev/status update 200: 8.00") {
		t.Errorf("Table(0) =\n%s", got)
	}
}
