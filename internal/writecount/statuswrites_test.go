package writecount

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// statusLine is one Request-level audit event of a Deployment status update that
// kube-controller-manager made from resourceVersion rv.
func statusLine(namespace, name, rv string, code int, status string) string {
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","stage":"ResponseComplete","verb":"update",` +
		`"user":{"username":"admin"},"userAgent":"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc/deployment-controller",` +
		`"objectRef":{"resource":"deployments","namespace":"` + namespace + `","name":"` + name +
		`","apiGroup":"apps","apiVersion":"v1","subresource":"status"},"responseStatus":{"metadata":{},"code":` + strconv.Itoa(code) +
		`},"requestObject":{"kind":"Deployment","metadata":{"name":"` + name + `","uid":"uid-` + name + `","resourceVersion":"` + rv +
		`"},"status":` + status + `}}` + "\n"
}

// by makes line another program's.
func by(program, line string) string {
	return strings.Replace(line, `"kube-controller-manager/v1.37.1`, `"`+program+`/v0.0.0`, 1)
}

const (
	progressing = `{"observedGeneration":1,"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetCreated",` +
		`"lastUpdateTime":"2026-11-24T20:54:46Z","lastTransitionTime":"2026-11-24T20:54:46Z"}]}`
	// The same status, written again a second later: only its timestamps differ.
	progressingAgain = `{"conditions":[{"lastTransitionTime":"2026-11-24T20:54:47Z","lastUpdateTime":"2026-11-24T20:54:47Z",` +
		`"reason":"NewReplicaSetCreated","status":"True","type":"Progressing"}],"observedGeneration":1}`
	available = `{"observedGeneration":1,"replicas":1,"availableReplicas":1,"conditions":[{"type":"Available","status":"True",` +
		`"reason":"MinimumReplicasAvailable","lastUpdateTime":"2026-11-24T20:54:48Z"}]}`
)

func TestStatusWritesFromAuditLog(t *testing.T) {
	apply := strings.Replace(strings.Replace(statusLine("team-a", "web", "", 201, `{}`), `"verb":"update"`, `"verb":"patch"`, 1),
		`"subresource":"status"`, `"subresource":""`, 1)
	content := by("plinth-controller", apply) +
		statusLine("team-a", "web", "10", 200, progressing) +
		// Built from the version the write above was made from: the writer's cache had not
		// seen its own write.
		statusLine("team-a", "web", "10", 409, available) +
		// Built from that version too, but by another program: not its own write it missed.
		by("someone-else", statusLine("team-a", "web", "10", 409, available)) +
		statusLine("team-a", "web", "12", 200, progressingAgain) +
		statusLine("team-a", "web", "13", 200, available) +
		// Refused for a version no successful update was made from: someone else wrote.
		statusLine("team-a", "web", "11", 409, available) +
		// Refused before its body was read (too many requests): no body, not counted.
		`{"stage":"ResponseComplete","verb":"update","userAgent":"kube-controller-manager/v1.37.1","objectRef":{"resource":"deployments",` +
		`"namespace":"team-a","name":"web","apiGroup":"apps","subresource":"status"},"responseStatus":{"code":429}}` + "\n" +
		statusLine("team-a", "api", "20", 200, available) +
		// api deleted and made again: a new object, whose first status is new again.
		strings.Replace(statusLine("team-a", "api", "25", 200, available), `"uid":"uid-api"`, `"uid":"uid-api-2"`, 1) +
		statusLine("floor-team-a", "web", "30", 200, available) +
		// Not counted: another kind, another stage, a read.
		strings.Replace(statusLine("team-a", "web", "14", 200, available), `"resource":"deployments"`, `"resource":"replicasets"`, 1) +
		strings.Replace(statusLine("team-a", "web", "14", 200, available), `"ResponseComplete"`, `"ResponseStarted"`, 1) +
		strings.Replace(statusLine("team-a", "web", "14", 200, available), `"verb":"update"`, `"verb":"get"`, 1) +
		"\n"
	got, err := StatusWritesFromAuditLog(writeLog(t, content), "deployments.apps")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]StatusWrites{
		"team-a": {Objects: 3, Written: 5, Distinct: 4, Stale: 1, Conflicts: 2,
			Writers: map[string]int{"kube-controller-manager": 5, "plinth-controller": 1}},
		"floor-team-a": {Objects: 1, Written: 1, Distinct: 1, Writers: map[string]int{"kube-controller-manager": 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	none, err := StatusWritesFromAuditLog(writeLog(t, content), "statefulsets.apps")
	if err != nil || len(none) != 0 {
		t.Errorf("another resource: %+v, %v; want nothing", none, err)
	}
}

func TestStatusWritesFromAuditLogCoreResource(t *testing.T) {
	line := strings.Replace(strings.Replace(statusLine("team-a", "web", "1", 200, `{"phase":"Running"}`),
		`"resource":"deployments"`, `"resource":"pods"`, 1), `"apiGroup":"apps"`, `"apiGroup":""`, 1)
	got, err := StatusWritesFromAuditLog(writeLog(t, line), "pods")
	if err != nil {
		t.Fatal(err)
	}
	if want := (StatusWrites{Objects: 1, Written: 1, Distinct: 1, Writers: map[string]int{"kube-controller-manager": 1}}); !reflect.DeepEqual(got["team-a"], want) {
		t.Errorf("pods: %+v, want %+v", got["team-a"], want)
	}
}

// Bad input: a log whose policy dropped the request bodies cannot tell what was written, and
// says so rather than counting nothing; a line that is not an event is named.
func TestStatusWritesFromAuditLogBadInput(t *testing.T) {
	metadataOnly := line("ResponseComplete", "admin", "update", "apps", "deployments", "status", 200)
	if _, err := StatusWritesFromAuditLog(writeLog(t, metadataOnly), "deployments.apps"); err == nil ||
		!strings.Contains(err.Error(), "line 1: the update of team-a/web has no request body") {
		t.Errorf("a Metadata-level log: error %v", err)
	}
	good := statusLine("team-a", "web", "1", 200, available)
	if _, err := StatusWritesFromAuditLog(writeLog(t, good+"not an event\n"), "deployments.apps"); err == nil ||
		!strings.Contains(err.Error(), "line 2 is not an audit event") {
		t.Errorf("a line that is not an event: error %v", err)
	}
	// A conflict needs its body as much: which version it was built from is the point.
	conflict := line("ResponseComplete", "admin", "update", "apps", "deployments", "status", 409)
	if _, err := StatusWritesFromAuditLog(writeLog(t, conflict), "deployments.apps"); err == nil ||
		!strings.Contains(err.Error(), "has no request body") {
		t.Errorf("a 409 without its body: error %v", err)
	}
}
