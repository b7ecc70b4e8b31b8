// Package writecount counts the writes plinth-apiserver's audit log records, by resource,
// subresource, verb and response code: how many writes a controller makes per object is read
// from the log, with no change to the controller (test/integration's TestWritesPerWorkload
// asserts on it).
package writecount

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Key is what a write is counted by.
type Key struct {
	// Resource is qualified with its API group ("workloads.score.dev"); a core resource is
	// its bare name ("secrets").
	Resource string
	// Subresource is "status", "approval" and the like, or empty for the object itself.
	Subresource string
	// Verb is the audit log's verb: create, update, patch, delete or deletecollection.
	Verb string
	// Code is the response's HTTP status code (200, 201, 409, ...).
	Code int
}

// String is "workloads.score.dev/status update 200".
func (k Key) String() string {
	resource := k.Resource
	if k.Subresource != "" {
		resource += "/" + k.Subresource
	}
	return fmt.Sprintf("%s %s %d", resource, k.Verb, k.Code)
}

// Group is the API group of the key's resource, empty for the core group.
func (k Key) Group() string {
	_, group, _ := strings.Cut(k.Resource, ".")
	return group
}

// Counts are writes per key.
type Counts map[Key]int

// writeVerbs are the audit verbs that change something; get, list and watch do not.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// event is the part of an audit.k8s.io/v1 Event a count needs. Decoding only these fields
// keeps a log of large RequestResponse bodies cheap to read.
type event struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// FromAuditLog counts the writes in the audit log at path (the log backend's format: one JSON
// event per line) made by user, or by anyone when user is empty. user is the authenticated name
// the log records: plinth-controller is localplatform.ControllerUser on the local platform. Only ResponseComplete events
// count, so that a request is counted once whatever stages the policy keeps, and only those with
// an object reference and a response code.
//
// The log is read while the server writes it: a last line without its line break is a half
// written event and is left out (it is counted by the next reading). Any other line that is not
// a JSON event is an error naming its line. The counts are those of the current file only: the
// log backend rotates it at --audit-log-maxsize, and counts read across a rotation are short.
func FromAuditLog(path, user string) (Counts, error) {
	counts := Counts{}
	err := eachEvent(path, func(e *event) error {
		if e.Stage != "ResponseComplete" || !writeVerbs[e.Verb] || e.ObjectRef == nil || e.ResponseStatus == nil {
			return nil
		}
		if user != "" && e.User.Username != user {
			return nil
		}
		resource := e.ObjectRef.Resource
		if e.ObjectRef.APIGroup != "" {
			resource += "." + e.ObjectRef.APIGroup
		}
		counts[Key{Resource: resource, Subresource: e.ObjectRef.Subresource, Verb: e.Verb, Code: e.ResponseStatus.Code}]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// eachEvent decodes the events of the audit log at path into T, one line at a time, and hands
// each to fn; an error of fn, or a line that is not an event, names the file and the line. A
// last line without its line break is a half written event and is left out.
func eachEvent[T any](path string, fn func(*T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// A Reader rather than a Scanner: a RequestResponse event of a large object is longer
	// than any fixed line limit would be.
	in := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		line, err := in.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// No line break: empty, or an event the server has not finished writing.
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		var e T
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("%s: line %d is not an audit event: %w", path, n, err)
		}
		if err := fn(&e); err != nil {
			return fmt.Errorf("%s: line %d: %w", path, n, err)
		}
	}
}

// Sub is c minus before, key by key, leaving out keys whose difference is zero: the writes
// between two readings of the same log.
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range before {
		if _, ok := c[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// Where is the counts of the keys keep accepts.
func (c Counts) Where(keep func(Key) bool) Counts {
	out := Counts{}
	for k, v := range c {
		if keep(k) {
			out[k] = v
		}
	}
	return out
}

// Total is the sum of all counts.
func (c Counts) Total() int {
	total := 0
	for _, v := range c {
		total += v
	}
	return total
}

// Table lists the counts one a line, sorted by key, each divided by perObject with two
// decimals: "workloads.score.dev/status update 200: 4.00" is four status updates per object
// when perObject is the number of objects written. A perObject below 1 is taken as 1 (the
// plain counts).
func (c Counts) Table(perObject int) string {
	if perObject < 1 {
		perObject = 1
	}
	keys := make([]Key, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		if a.Subresource != b.Subresource {
			return a.Subresource < b.Subresource
		}
		if a.Verb != b.Verb {
			return a.Verb < b.Verb
		}
		return a.Code < b.Code
	})
	var out strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&out, "%s: %.2f\n", k, float64(c[k])/float64(perObject))
	}
	return out.String()
}
