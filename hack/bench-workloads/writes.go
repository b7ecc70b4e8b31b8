package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/writecount"
)

// kubeWriteVerbs are the verbs of kube-apiserver's apiserver_request_total that write.
var kubeWriteVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// notStored are resources whose creates are questions, not writes: plinth-apiserver's
// delegated authentication and authorization ask kube-apiserver with them.
var notStored = map[string]bool{"authorization.k8s.io/subjectaccessreviews/": true, "authentication.k8s.io/tokenreviews/": true}

// kubeWrites keeps the writes of kube-apiserver's request counts (benchharness.APIRequests
// keys: "group/resource/subresource VERB [dryRun] [code]"); dry runs write nothing and are left
// out.
func kubeWrites(requests benchharness.Counts) benchharness.Counts {
	out := benchharness.Counts{}
	for key, n := range requests {
		fields := strings.Fields(key)
		if len(fields) < 2 || !kubeWriteVerbs[fields[1]] || strings.Contains(key, " dryRun") {
			continue
		}
		out[key] += n
	}
	return out
}

// stored is the sum of the writes that change stored objects: all but notStored.
func stored(writes benchharness.Counts) float64 {
	total := 0.0
	for key, n := range writes {
		if resource, _, _ := strings.Cut(key, " "); !notStored[resource] {
			total += n
		}
	}
	return total
}

// auditWrites counts the writes in plinth-apiserver's audit log at path and in its rotated
// files beside it, so that a reading taken across a rotation is not short (the local platform
// keeps one rotated file; two rotations within one run would lose writes, which rotated says).
func auditWrites(path string) (_ writecount.Counts, rotated int, _ error) {
	ext := filepath.Ext(path)
	backups, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, 0, err
	}
	total := writecount.Counts{}
	for _, p := range append(backups, path) {
		c, err := writecount.FromAuditLog(p, "")
		if err != nil {
			return nil, 0, err
		}
		for k, v := range c {
			total[k] += v
		}
	}
	return total, len(backups), nil
}

// writesTable is the markdown table of writes per Workload: plinth-apiserver's in the Plinth
// run (the floor makes none there), then kube-apiserver's in each run by resource and verb,
// and the totals of stored writes.
func writesTable(n int, plinth writecount.Counts, kubePlinth, kubeFloor benchharness.Counts) string {
	per := func(v float64) string { return fmt.Sprintf("%.2f", v/float64(n)) }
	var b strings.Builder
	b.WriteString("| writes per Workload | Plinth run | floor run |\n| --- | --- | --- |\n")
	keys := make([]writecount.Key, 0, len(plinth))
	for k := range plinth {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		fmt.Fprintf(&b, "| plinth-apiserver %s | %s | – |\n", k, per(float64(plinth[k])))
	}
	fmt.Fprintf(&b, "| **plinth-apiserver, all** | **%s** | – |\n", per(float64(plinth.Total())))
	seen := map[string]bool{}
	var kube []string
	for _, c := range []benchharness.Counts{kubePlinth, kubeFloor} {
		for key := range c {
			if !seen[key] {
				seen[key] = true
				kube = append(kube, key)
			}
		}
	}
	sort.Strings(kube)
	for _, key := range kube {
		label := key
		if resource, _, _ := strings.Cut(key, " "); notStored[resource] {
			label += " (not stored)"
		}
		fmt.Fprintf(&b, "| kube-apiserver %s | %s | %s |\n", label, per(kubePlinth[key]), per(kubeFloor[key]))
	}
	fmt.Fprintf(&b, "| **kube-apiserver, stored** | **%s** | **%s** |\n", per(stored(kubePlinth)), per(stored(kubeFloor)))
	return b.String()
}

// deploymentAuditPolicy keeps the request bodies of every write to a Deployment in
// kube-apiserver's audit log, and nothing else: with --diagnose, the log tells who wrote the
// Deployments, how many of kube-controller-manager's status updates said something new and why
// the refused ones were refused.
const deploymentAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: apps
    resources: ["deployments", "deployments/status"]
- level: None
`

// kubeAuditArgs writes deploymentAuditPolicy into dir and returns the kube-apiserver flags that
// log by it to <dir>/kube-apiserver-audit.log, never rotated (a rotated file's events would be
// missing from the counts).
func kubeAuditArgs(dir string) (args []string, log string, err error) {
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, "", err
	}
	policy := filepath.Join(dir, "kube-apiserver-audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(deploymentAuditPolicy), 0o644); err != nil {
		return nil, "", err
	}
	log = filepath.Join(dir, "kube-apiserver-audit.log")
	return []string{"--audit-policy-file", policy, "--audit-log-path", log, "--audit-log-maxsize", "0"}, log, nil
}

// deploymentStatusTable compares the writes to the Deployments of both runs, per Deployment.
func deploymentStatusTable(plinth, floor writecount.StatusWrites) string {
	var b strings.Builder
	b.WriteString("| Deployment writes (kube-apiserver's audit log) | Plinth run | floor run |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| Deployments with a status update | %d | %d |\n", plinth.Objects, floor.Objects)
	per := func(v int, w writecount.StatusWrites) string {
		return fmt.Sprintf("%.2f", float64(v)/float64(max(w.Objects, 1)))
	}
	writers := map[string]int{} // the programs of either run: each gets a row
	maps.Copy(writers, plinth.Writers)
	maps.Copy(writers, floor.Writers)
	for _, name := range slices.Sorted(maps.Keys(writers)) {
		fmt.Fprintf(&b, "| writes by %s, per Deployment | %s | %s |\n", name, per(plinth.Writers[name], plinth), per(floor.Writers[name], floor))
	}
	for _, row := range []struct {
		label string
		value func(writecount.StatusWrites) int
	}{
		{"status updates that succeeded", func(w writecount.StatusWrites) int { return w.Written }},
		{"of them a new status (condition times aside)", func(w writecount.StatusWrites) int { return w.Distinct }},
		{"409, built from a version the same program had updated already", func(w writecount.StatusWrites) int { return w.Stale }},
		{"409, otherwise", func(w writecount.StatusWrites) int { return w.Conflicts }},
	} {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.label, per(row.value(plinth), plinth), per(row.value(floor), floor))
	}
	return b.String()
}
