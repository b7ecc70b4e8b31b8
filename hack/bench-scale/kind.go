package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// kind is one way of serving Workloads, asked of kube-apiserver with plain HTTP requests:
// Plinth's score.dev Workloads (proxied to plinth-apiserver) or the bench CRD's.
type kind struct {
	label  string
	group  string
	client *http.Client
	host   string
	// seq makes every watched update a change, and tells its event from others.
	seq atomic.Int64
}

// resource is the kind's name for kubectl, qualified so that the two never mix.
func (k *kind) resource() string { return "workloads." + k.group }

// collection is the URL of the Workloads of a namespace, or of all namespaces when ns is empty.
func (k *kind) collection(ns string) string {
	if ns == "" {
		return k.host + "/apis/" + k.group + "/v1b1/workloads"
	}
	return k.host + "/apis/" + k.group + "/v1b1/namespaces/" + ns + "/workloads"
}

// do sends a request and reads the whole answer; a status other than want is an error.
func (k *kind) do(ctx context.Context, method, target, contentType string, body []byte, want int) ([]byte, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", method, target, resp.StatusCode, truncate(string(data), 300))
	}
	return data, nil
}

// create creates one Workload.
func (k *kind) create(ctx context.Context, ns, name string) error {
	body, err := workload(k.group, ns, name)
	if err != nil {
		return err
	}
	_, err = k.do(ctx, http.MethodPost, k.collection(ns), "application/json", body, http.StatusCreated)
	return err
}

// workload is the object both kinds store: one container with variables, a resource and a
// service port, as a typical Score workload has; the CRD's differs only in its group.
func workload(group, ns, name string) ([]byte, error) {
	w := v1b1.Workload{
		TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1b1", Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "bench", "team": "a"}},
		Spec: v1b1.WorkloadSpec{
			RuntimeClass: "kubernetes",
			Containers: map[string]v1b1.Container{"main": {
				Image:     "registry.example.com/bench:1.0",
				Variables: map[string]string{"DB_HOST": "${resources.db.host}", "LOG_LEVEL": "info"},
			}},
			Resources: map[string]v1b1.ResourceSpec{"db": {Type: "postgres", Class: "small"}},
			Service:   &v1b1.ServiceSpec{Ports: map[string]v1b1.ServicePort{"web": {Port: 80, TargetPort: 8080}}},
		},
	}
	return json.Marshal(w)
}

// listFull lists a scope in one JSON response, timed until its last byte; it returns the
// response's size and resourceVersion. Counting the items, which the client need not do to
// have the list, is not timed.
func (k *kind) listFull(ctx context.Context, ns string, want int) (size int, rv string, d time.Duration, err error) {
	start := time.Now()
	data, err := k.do(ctx, http.MethodGet, k.collection(ns), "", nil, http.StatusOK)
	d = time.Since(start)
	if err != nil {
		return 0, "", 0, err
	}
	page, err := parseList(data)
	if err != nil {
		return 0, "", 0, err
	}
	if page.items != want || page.cont != "" {
		return 0, "", 0, fmt.Errorf("listed %d objects (continue %q), want %d in one response", page.items, page.cont, want)
	}
	return len(data), page.rv, d, nil
}

// listPaged lists a scope in pages of limit objects, following continue tokens as kubectl and
// client-go's pager do, and times the whole, decoding included.
func (k *kind) listPaged(ctx context.Context, ns string, limit, want int) (time.Duration, error) {
	start := time.Now()
	total, cont := 0, ""
	for {
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if cont != "" {
			q.Set("continue", cont)
		}
		data, err := k.do(ctx, http.MethodGet, k.collection(ns)+"?"+q.Encode(), "", nil, http.StatusOK)
		if err != nil {
			return 0, err
		}
		page, err := parseList(data)
		if err != nil {
			return 0, err
		}
		total += page.items
		if cont = page.cont; cont == "" {
			break
		}
	}
	d := time.Since(start)
	if total != want {
		return 0, fmt.Errorf("listed %d objects in pages, want %d", total, want)
	}
	return d, nil
}

// watchUpdate opens a watch of the scope from rv and, once it is open, updates object name in
// namespace updated; it returns how long the watch took to open (its response's headers) and
// how long after the update was sent its event arrived.
func (k *kind) watchUpdate(ctx context.Context, ns, rv, updated, name string, rep int) (open, event time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	events, err := k.watch(ctx, ns, rv)
	if err != nil {
		return 0, 0, err
	}
	defer events.Close()
	open = time.Since(start)
	tag := fmt.Sprintf("%d-%d", rep, k.seq.Add(1))
	received := make(chan error, 1)
	var at time.Time
	go func() {
		dec := json.NewDecoder(events)
		for {
			ev, err := nextEvent(dec)
			if err != nil {
				received <- err
				return
			}
			if ev.Type == "MODIFIED" && ev.Object.Metadata.Name == name && ev.Object.Metadata.Annotations[seqAnnotation] == tag {
				at = time.Now()
				received <- nil
				return
			}
		}
	}()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, seqAnnotation, tag)
	sent := time.Now()
	if _, err := k.do(ctx, http.MethodPatch, k.collection(updated)+"/"+name, "application/merge-patch+json", patch, http.StatusOK); err != nil {
		return 0, 0, err
	}
	if err := <-received; err != nil {
		return 0, 0, fmt.Errorf("waiting for the update's event: %w", err)
	}
	return open, at.Sub(sent), nil
}

// seqAnnotation carries the tag of a watched update.
const seqAnnotation = "bench.plinth.dev/seq"

// watchInitial opens a watch of the scope without a resourceVersion, which begins with an
// ADDED event for every object there is, and times it until the want-th.
func (k *kind) watchInitial(ctx context.Context, ns string, want int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	events, err := k.watch(ctx, ns, "")
	if err != nil {
		return 0, err
	}
	defer events.Close()
	n, err := countAdded(json.NewDecoder(events), want)
	if err != nil {
		return 0, fmt.Errorf("after %d of %d ADDED events: %w", n, want, err)
	}
	return time.Since(start), nil
}

// watch opens a JSON watch of the scope from rv (empty: from now, with the initial events)
// and returns its event stream.
func (k *kind) watch(ctx context.Context, ns, rv string) (io.ReadCloser, error) {
	q := url.Values{"watch": {"1"}}
	if rv != "" {
		q.Set("resourceVersion", rv)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.collection(ns)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("watch %s: %d %s", req.URL, resp.StatusCode, truncate(string(data), 300))
	}
	return resp.Body, nil
}

// deleteAll deletes a namespace's objects of the kind; deletecollection answers once they are
// gone from storage.
func (k *kind) deleteAll(ctx context.Context, ns string) error {
	_, err := k.do(ctx, http.MethodDelete, k.collection(ns), "", nil, http.StatusOK)
	return err
}

// listPage is what a list response says about itself.
type listPage struct {
	items    int
	rv, cont string
}

// parseList reads a JSON list response: how many items, its resourceVersion and its continue
// token. Anything but a list (a Status, say) is an error.
func parseList(data []byte) (listPage, error) {
	var list struct {
		Kind     string `json:"kind"`
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
			Continue        string `json:"continue"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return listPage{}, fmt.Errorf("a list response: %w", err)
	}
	if len(list.Kind) < len("List") || list.Kind[len(list.Kind)-len("List"):] != "List" {
		return listPage{}, fmt.Errorf("a list response is of kind %q", list.Kind)
	}
	if list.Metadata.ResourceVersion == "" {
		return listPage{}, errors.New("a list response has no resourceVersion")
	}
	return listPage{items: len(list.Items), rv: list.Metadata.ResourceVersion, cont: list.Metadata.Continue}, nil
}

// watchEvent is the part of a JSON watch event the benchmark reads.
type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		// Reason and Message are set when the event is an ERROR Status.
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"object"`
}

// nextEvent reads one event of a JSON watch stream; an ERROR event is an error.
func nextEvent(dec *json.Decoder) (watchEvent, error) {
	var ev watchEvent
	if err := dec.Decode(&ev); err != nil {
		if errors.Is(err, io.EOF) {
			return ev, errors.New("the watch ended")
		}
		return ev, err
	}
	if ev.Type == "ERROR" {
		return ev, fmt.Errorf("the watch sent an error: %s: %s", ev.Object.Reason, ev.Object.Message)
	}
	return ev, nil
}

// countAdded reads events until want ADDED ones have come, and returns how many did; an event
// of another type before them is an error, since nothing changes while the initial events
// are read.
func countAdded(dec *json.Decoder, want int) (int, error) {
	n := 0
	for n < want {
		ev, err := nextEvent(dec)
		if err != nil {
			return n, err
		}
		if ev.Type != "ADDED" {
			return n, fmt.Errorf("a %s event among the initial ones", ev.Type)
		}
		n++
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
