package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// hostileNamespace is where the hostile requests aim.
const hostileNamespace = "hostile"

// hostileMemoryBound is how much plinth-apiserver's peak resident memory (VmHWM) may grow over
// the whole hostile run, both paths: every request is at most a few MiB, so a server that reads
// and refuses each once stays far below it, and one that copies a body per error or per
// placeholder (the failure this guards against) exceeds it by orders of magnitude.
const hostileMemoryBound = 256 << 20

// hostileCase is one hostile request: a Workload body that must be refused with one of the
// given status codes, and the field path the refusal must name, when it is a 422.
type hostileCase struct {
	name string
	// object is the Workload's name.
	object string
	body   []byte
	codes  []int
	field  string
}

// TestHostileInput sends oversize and hostile Workloads as the platform admin, through
// kube-apiserver and directly to plinth-apiserver: a body over the 3 MiB request limit, objects
// just under and just over etcd's 1.5 MiB request limit, JSON nested 10,000 deep, a map with
// 100,000 keys and a Score document with 10,000 placeholders. Each is refused with a 4xx
// metav1.Status (a 422 naming the field where the fault is in one), nothing is stored,
// plinth-apiserver's peak memory stays within hostileMemoryBound, and an ordinary Workload is
// created afterwards.
func TestHostileInput(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) { c.NoController = true })
	ctx := context.Background()
	viaKube, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	direct, err := p.PlinthDirectConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(viaKube)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostileNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, pid := p.PIDs()
	before := procMemory(t, pid)
	t.Logf("plinth-apiserver (pid %d) before: VmRSS %d MiB, VmHWM %d MiB", pid, before.rss>>20, before.hwm>>20)

	for _, path := range []struct {
		name string
		cfg  *rest.Config
	}{{"through kube-apiserver", viaKube}, {"direct", direct}} {
		client, err := rest.HTTPClientFor(path.cfg)
		if err != nil {
			t.Fatal(err)
		}
		// The largest body takes a while to refuse on a busy machine; the client's default
		// timeout is for ordinary requests.
		client.Timeout = 2 * time.Minute
		for _, tc := range hostileCases(t) {
			start := time.Now()
			code, status := postWorkload(t, client, path.cfg.Host, tc.body)
			t.Logf("%s, %s (%d KiB): %d %s in %v: %s", path.name, tc.name, len(tc.body)>>10, code, status.Reason,
				time.Since(start).Round(time.Millisecond), truncate(status.Message, 200))
			checkRefusal(t, path.name+", "+tc.name, tc, code, status)
			if got := getWorkload(t, client, path.cfg.Host, tc.object); got != http.StatusNotFound {
				t.Errorf("%s, %s: reading the Workload back gives %d, want 404: nothing may be stored", path.name, tc.name, got)
			}
		}
		after := procMemory(t, pid)
		t.Logf("plinth-apiserver after the requests %s: VmRSS %d MiB, VmHWM %d MiB", path.name, after.rss>>20, after.hwm>>20)
		code, status := postWorkload(t, client, path.cfg.Host, workloadJSON(t, "ordinary", nil))
		if code != http.StatusCreated {
			t.Errorf("%s: an ordinary Workload afterwards: %d %s", path.name, code, status.Message)
		}
		deleteWorkload(t, client, path.cfg.Host, "ordinary")
	}
	if _, _, now := p.PIDs(); now != pid {
		t.Errorf("plinth-apiserver restarted (pid %d, now %d)", pid, now)
	}
	after := procMemory(t, pid)
	t.Logf("plinth-apiserver after: VmRSS %d MiB, VmHWM %d MiB (growth of the peak %d MiB, bound %d MiB)",
		after.rss>>20, after.hwm>>20, (after.hwm-before.hwm)>>20, hostileMemoryBound>>20)
	if after.hwm-before.hwm > hostileMemoryBound {
		t.Errorf("plinth-apiserver's peak memory grew by %d MiB, more than %d MiB", (after.hwm-before.hwm)>>20, hostileMemoryBound>>20)
	}
}

// hostileCases builds the requests. Sizes are of the JSON body.
func hostileCases(t *testing.T) []hostileCase {
	const mib = 1 << 20
	padded := func(name string, size int) []byte {
		// One variable carries the padding: an ordinary-looking Workload, just large.
		base := len(workloadJSON(t, name, map[string]any{"PAD": ""}))
		return workloadJSON(t, name, map[string]any{"PAD": strings.Repeat("x", size-base)})
	}
	nested := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	labels := make(map[string]string, 100000)
	for i := range 100000 {
		labels["k"+strconv.Itoa(i)] = "v"
	}
	manyLabels := workloadJSONWith(t, "many-keys", func(w map[string]any) {
		w["metadata"].(map[string]any)["labels"] = labels
	})
	placeholders := strings.Repeat("${metadata.name}", 10000)
	undeclared := strings.Repeat("${resources.missing.host} ", 10000)
	// Under the placeholder bound, each bad one is an error: padded to 256 KiB, a value quoted
	// in each would make a Status of over 200 MiB.
	padding := strings.Repeat(" ", 256<<10)
	fewUndeclared := strings.Repeat("${resources.missing.host}"+padding[:256<<10/900], 900)
	return []hostileCase{
		{name: "a body over 3 MiB", object: "over-3mib", body: padded("over-3mib", 3*mib+1024), codes: []int{http.StatusRequestEntityTooLarge}},
		{name: "an object just under 1.5 MiB", object: "under-etcd-limit", body: padded("under-etcd-limit", 3*mib/2-4096), codes: []int{http.StatusUnprocessableEntity}, field: "spec"},
		{name: "an object just over 1.5 MiB", object: "over-etcd-limit", body: padded("over-etcd-limit", 3*mib/2+4096), codes: []int{http.StatusUnprocessableEntity}, field: "spec"},
		{name: "JSON nested 10,000 deep", object: "nested", body: workloadJSONWith(t, "nested", func(w map[string]any) {
			w["spec"].(map[string]any)["resources"] = map[string]any{"db": map[string]any{"type": "postgres", "params": json.RawMessage(nested)}}
		}), codes: []int{http.StatusBadRequest, http.StatusUnprocessableEntity}},
		{name: "a map with 100,000 keys", object: "many-keys", body: manyLabels, codes: []int{http.StatusUnprocessableEntity}, field: "metadata.labels"},
		{name: "a Score document with 10,000 placeholders", object: "placeholders", body: inlineWorkloadJSON(t, "placeholders", placeholders),
			codes: []int{http.StatusUnprocessableEntity}, field: "spec.source.inline.containers.main.variables.MANY"},
		{name: "a Score document with 900 bad placeholders in 256 KiB", object: "few-bad-placeholders", body: inlineWorkloadJSON(t, "few-bad-placeholders", fewUndeclared),
			codes: []int{http.StatusUnprocessableEntity}, field: "spec.source.inline.containers.main.variables.MANY"},
		{name: "a Score document with 10,000 bad placeholders", object: "bad-placeholders", body: inlineWorkloadJSON(t, "bad-placeholders", undeclared),
			codes: []int{http.StatusUnprocessableEntity}, field: "spec.source.inline.containers.main.variables.MANY"},
	}
}

// workloadJSON is an ordinary Workload with the given extra variables.
func workloadJSON(t *testing.T, name string, variables map[string]any) []byte {
	return workloadJSONWith(t, name, func(w map[string]any) {
		if variables != nil {
			w["spec"].(map[string]any)["containers"].(map[string]any)["main"].(map[string]any)["variables"] = variables
		}
	})
}

// workloadJSONWith is an ordinary Workload changed by change.
func workloadJSONWith(t *testing.T, name string, change func(map[string]any)) []byte {
	t.Helper()
	w := map[string]any{
		"apiVersion": "score.dev/v1b1", "kind": "Workload",
		"metadata": map[string]any{"name": name, "namespace": hostileNamespace},
		"spec":     map[string]any{"containers": map[string]any{"main": map[string]any{"image": "registry.example.com/app:1"}}},
	}
	change(w)
	data, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// inlineWorkloadJSON is a Workload whose inline Score document has one variable, MANY.
func inlineWorkloadJSON(t *testing.T, name, many string) []byte {
	return workloadJSONWith(t, name, func(w map[string]any) {
		w["spec"] = map[string]any{"source": map[string]any{"inline": map[string]any{
			"apiVersion": "score.dev/v1b1",
			"metadata":   map[string]any{"name": name},
			"containers": map[string]any{"main": map[string]any{"image": "registry.example.com/app:1", "variables": map[string]any{"MANY": many}}},
		}}}
	})
}

func workloadsURL(host string) string {
	return host + "/apis/score.dev/v1b1/namespaces/" + hostileNamespace + "/workloads"
}

// postWorkload creates a Workload from body and returns the status code and, for a failure,
// the metav1.Status the server answered with.
func postWorkload(t *testing.T, client *http.Client, host string, body []byte) (int, *metav1.Status) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, workloadsURL(host), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST of %d bytes: %v", len(body), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatal(err)
	}
	status := &metav1.Status{}
	if resp.StatusCode >= 300 {
		if err := json.Unmarshal(data, status); err != nil || status.Kind != "Status" {
			t.Errorf("a %d answer that is not a metav1.Status (%d bytes): %.300s", resp.StatusCode, len(data), data)
		}
		if len(data) > 1<<20 {
			t.Errorf("a %d answer of %d KiB: a refusal must not echo the request", resp.StatusCode, len(data)>>10)
		}
	}
	return resp.StatusCode, status
}

// checkRefusal checks that the answer is one of the case's codes, as a Status with that code,
// and that a 422 names the case's field.
func checkRefusal(t *testing.T, what string, tc hostileCase, code int, status *metav1.Status) {
	t.Helper()
	ok := false
	for _, c := range tc.codes {
		ok = ok || c == code
	}
	if !ok {
		t.Errorf("%s: %d (%s), want one of %v", what, code, truncate(status.Message, 300), tc.codes)
		return
	}
	if int(status.Code) != code {
		t.Errorf("%s: the Status says %d, the response %d", what, status.Code, code)
	}
	if code != http.StatusUnprocessableEntity || tc.field == "" {
		return
	}
	if status.Details == nil || len(status.Details.Causes) == 0 {
		t.Errorf("%s: a 422 without causes: %s", what, truncate(status.Message, 300))
		return
	}
	for _, c := range status.Details.Causes {
		if !strings.HasPrefix(c.Field, tc.field) {
			t.Errorf("%s: a cause at %q, want %s: %s", what, c.Field, tc.field, truncate(c.Message, 300))
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func getWorkload(t *testing.T, client *http.Client, host, name string) int {
	t.Helper()
	resp, err := client.Get(workloadsURL(host) + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func deleteWorkload(t *testing.T, client *http.Client, host, name string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, workloadsURL(host)+"/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		t.Errorf("deleting Workload %s: %d", name, resp.StatusCode)
	}
}

// procMem is a process's resident memory now and at its peak, in bytes.
type procMem struct{ rss, hwm int64 }

// procMemory reads VmRSS and VmHWM from /proc/<pid>/status.
func procMemory(t *testing.T, pid int) procMem {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var m procMem
	for _, line := range strings.Split(string(data), "\n") {
		var kib int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kib); err == nil {
			m.rss = kib << 10
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kib); err == nil {
			m.hwm = kib << 10
		}
	}
	if m.rss == 0 || m.hwm == 0 {
		t.Fatalf("no VmRSS or VmHWM in /proc/%d/status", pid)
	}
	return m
}
