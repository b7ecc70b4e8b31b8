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
	// Objects is how many objects had a status update.
	Objects int
	// Written is the status updates that succeeded.
	Written int
	// Distinct is how many of them wrote a status different from the object's previous
	// successful write, condition timestamps aside: a writer that only writes what changed has
	// Distinct equal to Written.
	Distinct int
	// Stale is the 409s whose request carried a resourceVersion the same object's earlier
	// successful update was already made from: the writer built it from a cache that had not
	// yet seen that write.
	Stale int
	// Conflicts is every other 409.
	Conflicts int
}

// statusEvent is the part of an audit event a status history needs.
type statusEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
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
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Status json.RawMessage `json:"status"`
	} `json:"requestObject"`
}

// history is what is remembered of one object while its updates are read in the log's order.
type history struct {
	// written are the resourceVersions successful updates were made from.
	written map[string]bool
	// last is the previous successful status, condition timestamps removed.
	last string
}

// StatusWritesFromAuditLog reads the status updates (verb update, subresource status) of
// resource ("deployments.apps", "workloads.score.dev", or a core resource's bare name) from the
// audit log at path, by namespace. Events without a request body are an error: the log's policy
// must keep requests for the resource's status. The log's order is taken as each object's order
// of updates, which holds for a writer that updates one object at a time.
func StatusWritesFromAuditLog(path, resource string) (map[string]StatusWrites, error) {
	out := map[string]StatusWrites{}
	objects := map[[2]string]*history{}
	err := eachEvent(path, func(e *statusEvent) error {
		ref := e.ObjectRef
		if e.Stage != "ResponseComplete" || e.Verb != "update" || ref == nil || ref.Subresource != "status" || e.ResponseStatus == nil {
			return nil
		}
		if name := ref.Resource + strings.TrimSuffix("."+ref.APIGroup, "."); name != resource {
			return nil
		}
		if e.RequestObject == nil {
			return fmt.Errorf("the update of %s/%s has no request body; the audit policy must keep requests", ref.Namespace, ref.Name)
		}
		key := [2]string{ref.Namespace, ref.Name}
		h := objects[key]
		counts := out[ref.Namespace]
		if h == nil {
			h = &history{written: map[string]bool{}}
			objects[key] = h
			counts.Objects++
		}
		rv := e.RequestObject.Metadata.ResourceVersion
		switch code := e.ResponseStatus.Code; {
		case code >= 200 && code < 300:
			counts.Written++
			status, err := withoutTimestamps(e.RequestObject.Status)
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			if status != h.last {
				counts.Distinct++
			}
			h.last, h.written[rv] = status, true
		case code == 409 && h.written[rv]:
			counts.Stale++
		case code == 409:
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
// which a writer refreshes on every write whatever else changed.
func withoutTimestamps(status json.RawMessage) (string, error) {
	if len(status) == 0 {
		return "", nil
	}
	var v any
	if err := json.Unmarshal(status, &v); err != nil {
		return "", err
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
	b, err := json.Marshal(v) // maps marshal with sorted keys: one form per status
	return string(b), err
}
