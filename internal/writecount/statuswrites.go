package writecount

import (
	"encoding/json"
	"fmt"
	"strings"
)

// StatusWrites are the status updates of one resource in one namespace, read from an audit log
// that keeps request bodies (level Request or RequestResponse): how many a writer made, how
// many of them said something new, and why the refused ones were refused.
type StatusWrites struct {
	// Objects is how many objects (by UID) had a status update.
	Objects int
	// Written is the status updates that succeeded.
	Written int
	// Distinct is how many of them wrote a status different from the object's previous
	// successful write, condition timestamps aside: a writer that only writes what changed has
	// Distinct equal to Written.
	Distinct int
	// Stale is the 409s whose request carried a resourceVersion from which the same program
	// had already updated the same object successfully: it built the request from a cache that
	// had not yet seen its own write.
	Stale int
	// Conflicts is every other 409.
	Conflicts int
	// Writers counts every successful write the log holds for these objects (create, update,
	// patch and delete, of the object or its status) by the program that made it: the first
	// word of its user agent ("kube-controller-manager").
	Writers map[string]int
}

// statusEvent is the part of an audit event a status history needs.
type statusEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject *struct {
		Metadata struct {
			UID             string `json:"uid"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Status json.RawMessage `json:"status"`
	} `json:"requestObject"`
}

// history is what is remembered of one object while its updates are read in the log's order.
type history struct {
	// written are the resourceVersions successful updates were made from, with the program
	// that made each.
	written map[string]string
	// last is the previous successful status, condition timestamps removed.
	last string
}

// StatusWritesFromAuditLog reads the writes of resource ("deployments.apps",
// "workloads.score.dev", or a core resource's bare name) from the audit log at path, and
// counts its status updates by namespace. A status update that succeeded or conflicted must
// carry its request body: the log's policy must keep requests for the resource's status. The
// log's order is taken as each object's order of updates, which holds for a writer that updates
// one object at a time.
func StatusWritesFromAuditLog(path, resource string) (map[string]StatusWrites, error) {
	out := map[string]StatusWrites{}
	objects := map[[3]string]*history{}
	err := eachEvent(path, func(e *statusEvent) error {
		ref := e.ObjectRef
		if e.Stage != "ResponseComplete" || !writeVerbs[e.Verb] || ref == nil || e.ResponseStatus == nil {
			return nil
		}
		if name := ref.Resource + strings.TrimSuffix("."+ref.APIGroup, "."); name != resource {
			return nil
		}
		code := e.ResponseStatus.Code
		counts := out[ref.Namespace]
		writer, _, _ := strings.Cut(e.UserAgent, "/")
		if code >= 200 && code < 300 {
			if counts.Writers == nil {
				counts.Writers = map[string]int{}
			}
			counts.Writers[writer]++
			out[ref.Namespace] = counts
		}
		if e.Verb != "update" || ref.Subresource != "status" || (code != 409 && (code < 200 || code >= 300)) {
			return nil
		}
		if e.RequestObject == nil {
			return fmt.Errorf("the update of %s/%s has no request body; the audit policy must keep requests", ref.Namespace, ref.Name)
		}
		// By UID too: an object deleted and made again under its name starts a new history.
		key := [3]string{ref.Namespace, ref.Name, e.RequestObject.Metadata.UID}
		h := objects[key]
		if h == nil {
			h = &history{written: map[string]string{}}
			objects[key] = h
			counts.Objects++
		}
		rv := e.RequestObject.Metadata.ResourceVersion
		switch by, seen := h.written[rv]; {
		case code != 409:
			counts.Written++
			if status := withoutTimestamps(e.RequestObject.Status); status != h.last {
				counts.Distinct++
				h.last = status
			}
			h.written[rv] = writer
		case seen && by == writer:
			counts.Stale++
		default:
			counts.Conflicts++
		}
		out[ref.Namespace] = counts
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// withoutTimestamps is a status in a canonical form without its conditions' last*Time fields,
// which a writer refreshes on every write whatever else changed. The status is valid JSON (the
// event it came in was decoded); should it not be, it is compared as it is.
func withoutTimestamps(status json.RawMessage) string {
	var v any
	if len(status) == 0 || json.Unmarshal(status, &v) != nil {
		return string(status)
	}
	if m, ok := v.(map[string]any); ok {
		if conditions, ok := m["conditions"].([]any); ok {
			for _, c := range conditions {
				if c, ok := c.(map[string]any); ok {
					for k := range c {
						if strings.HasPrefix(k, "last") && strings.HasSuffix(k, "Time") {
							delete(c, k)
						}
					}
				}
			}
		}
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys: one form per status; v came from JSON
	return string(b)
}
