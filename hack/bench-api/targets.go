package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// target is one way of storing Workloads: a CRD on kube-apiserver, Plinth through the
// aggregator, Plinth directly, raw etcd, or ConfigMaps of the same size (the built-in anchor).
type target interface {
	name() string
	create(ctx context.Context, i int) error
	get(ctx context.Context, i int) error
	// getAs gets an object in another encoding; a non-empty note means it is not offered.
	getAs(ctx context.Context, i int, encoding string) (note string, err error)
	updateStatus(ctx context.Context, i, pass int) error
	// list lists every object in the given encoding and returns the response's size; a
	// non-empty note means the encoding is not offered.
	list(ctx context.Context, encoding string) (size int, note string, err error)
	// watchUpdates opens a watch, updates the status of n objects with workers clients and
	// returns once the watch has delivered all n events.
	watchUpdates(ctx context.Context, n, workers, pass int) (Result, error)
	cleanup(ctx context.Context) error
	// pid is the serving process, whose memory is reported.
	pid() int
}

func objectName(i int) string { return fmt.Sprintf("w-%05d", i) }

// workload is the object every target stores: one container with variables, a resource and a
// service port, as a typical Score workload has.
func workload(apiVersion, namespace string, i int) []byte {
	obj := map[string]interface{}{
		"apiVersion": apiVersion, "kind": "Workload",
		"metadata": map[string]interface{}{"name": objectName(i), "namespace": namespace, "labels": map[string]string{"app": "bench", "team": "a"}},
		"spec": map[string]interface{}{
			"runtimeClass": "kubernetes",
			"containers": map[string]interface{}{"main": map[string]interface{}{
				"image":     "registry.example.com/bench:1.0",
				"variables": map[string]string{"DB_HOST": "${resources.db.host}", "LOG_LEVEL": "info"},
			}},
			"resources": map[string]interface{}{"db": map[string]interface{}{"type": "postgres", "class": "small"}},
			"service":   map[string]interface{}{"ports": map[string]interface{}{"web": map[string]interface{}{"port": 80, "targetPort": 8080}}},
		},
	}
	data, _ := json.Marshal(obj)
	return data
}

// status is the status every update writes; pass makes each update a change.
func status(pass int) map[string]interface{} {
	return map[string]interface{}{
		"observedGeneration": 1,
		"conditions": []interface{}{map[string]interface{}{
			"type": "Ready", "status": "False", "reason": "RuntimeProvisioning", "observedGeneration": 1,
			"message": fmt.Sprintf("The workload is being materialized (pass %d).", pass), "lastTransitionTime": "2026-11-22T00:00:00Z",
		}},
	}
}

// httpTarget speaks the Kubernetes REST API with plain HTTP requests, the same way for the CRD
// and for Plinth, so client costs are equal.
type httpTarget struct {
	label      string
	client     *http.Client
	host       string
	apiVersion string
	namespace  string
	collection string
	serverPID  func() int
	// contentType is the encoding of request bodies and of the answers to creates, gets and
	// updates: JSON, except for ConfigMaps.
	contentType string

	mu      sync.Mutex
	objects map[int][]byte // the latest object of each index, for updates that need its resourceVersion
}

func newHTTPTarget(label string, client *http.Client, host, group, namespace string, pid func() int) *httpTarget {
	return &httpTarget{label: label, client: client, host: host, apiVersion: group + "/v1b1", namespace: namespace,
		collection: host + "/apis/" + group + "/v1b1/namespaces/" + namespace + "/workloads", serverPID: pid, objects: map[int][]byte{},
		contentType: "application/json"}
}

func (t *httpTarget) name() string { return t.label }
func (t *httpTarget) pid() int     { return t.serverPID() }

func (t *httpTarget) do(ctx context.Context, method, url, accept string, body []byte, want int) ([]byte, http.Header, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", t.contentType)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != want {
		return data, resp.Header, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, truncate(string(data), 300))
	}
	return data, resp.Header, nil
}

func (t *httpTarget) remember(i int, obj []byte) {
	t.mu.Lock()
	t.objects[i] = obj
	t.mu.Unlock()
}

func (t *httpTarget) create(ctx context.Context, i int) error {
	obj, _, err := t.do(ctx, http.MethodPost, t.collection, "application/json", workload(t.apiVersion, t.namespace, i), http.StatusCreated)
	if err == nil {
		t.remember(i, obj)
	}
	return err
}

func (t *httpTarget) get(ctx context.Context, i int) error {
	_, _, err := t.do(ctx, http.MethodGet, t.collection+"/"+objectName(i), "application/json", nil, http.StatusOK)
	return err
}

func (t *httpTarget) getAs(ctx context.Context, i int, encoding string) (string, error) {
	_, header, err := t.do(ctx, http.MethodGet, t.collection+"/"+objectName(i), encoding, nil, http.StatusOK)
	return notOffered(encoding, header, err)
}

// notOffered turns a 406, or an answer in another encoding than the one asked for, into a note.
func notOffered(encoding string, header http.Header, err error) (string, error) {
	if err != nil {
		if strings.Contains(err.Error(), ": 406 ") {
			return "not offered (406)", nil
		}
		return "", err
	}
	if got := header.Get("Content-Type"); !strings.HasPrefix(got, encoding) {
		return "not offered (answered " + strings.Split(got, ";")[0] + ")", nil
	}
	return "", nil
}

func (t *httpTarget) updateStatus(ctx context.Context, i, pass int) error {
	t.mu.Lock()
	current := t.objects[i]
	t.mu.Unlock()
	var obj map[string]interface{}
	if err := json.Unmarshal(current, &obj); err != nil {
		return err
	}
	obj["status"] = status(pass)
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	updated, _, err := t.do(ctx, http.MethodPut, t.collection+"/"+objectName(i)+"/status", "application/json", body, http.StatusOK)
	if err == nil {
		t.remember(i, updated)
	}
	return err
}

func (t *httpTarget) list(ctx context.Context, encoding string) (int, string, error) {
	data, header, err := t.do(ctx, http.MethodGet, t.collection, encoding, nil, http.StatusOK)
	if note, err := notOffered(encoding, header, err); note != "" || err != nil {
		return 0, note, err
	}
	return len(data), "", nil
}

func (t *httpTarget) watchUpdates(ctx context.Context, n, workers, pass int) (Result, error) {
	listed, _, err := t.do(ctx, http.MethodGet, t.collection+"?limit=1", "application/json", nil, http.StatusOK)
	if err != nil {
		return Result{}, err
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(listed, &list); err != nil {
		return Result{}, err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(watchCtx, http.MethodGet, t.collection+"?watch=1&resourceVersion="+list.Metadata.ResourceVersion, nil)
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Result{}, fmt.Errorf("watch: %d", resp.StatusCode)
	}
	decoder := json.NewDecoder(resp.Body)
	next := func() (string, error) {
		for {
			var event struct {
				Type   string `json:"type"`
				Object struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
					// Reason and Message are set when the event is an ERROR Status.
					Reason  string `json:"reason"`
					Message string `json:"message"`
				} `json:"object"`
			}
			if err := decoder.Decode(&event); err != nil {
				return "", err
			}
			if event.Type == "ERROR" {
				return "", fmt.Errorf("an error event: %s: %s", event.Object.Reason, event.Object.Message)
			}
			if event.Type == "MODIFIED" {
				return event.Object.Metadata.Name, nil
			}
		}
	}
	return watchWhileUpdating(ctx, n, workers, next, func(i int) error { return t.updateStatus(ctx, i, pass) })
}

// watchWhileUpdating updates n objects with workers clients while next returns the names of
// the objects the open watch reports modified, and returns once it has reported all n: the
// throughput, and the latency from sending an update to receiving its event.
func watchWhileUpdating(ctx context.Context, n, workers int, next func() (string, error), update func(i int) error) (Result, error) {
	var sent sync.Map // name → time the update was sent
	received := make(chan error, 1)
	lat := &latencies{}
	go func() {
		for count := 0; count < n; count++ {
			name, err := next()
			if err != nil {
				received <- fmt.Errorf("watch ended after %d of %d events: %w", count, n, err)
				return
			}
			if at, ok := sent.Load(name); ok {
				lat.add(time.Since(at.(time.Time)))
			}
		}
		received <- nil
	}()
	start := time.Now()
	if _, err := parallel(n, workers, &latencies{}, func(i int) error {
		sent.Store(objectName(i), time.Now())
		return update(i)
	}); err != nil {
		return Result{}, err
	}
	select {
	case err := <-received:
		if err != nil {
			return Result{}, err
		}
	case <-time.After(2 * time.Minute):
		return Result{}, fmt.Errorf("watch delivered fewer than %d events in 2 minutes", n)
	}
	return lat.result(n, time.Since(start)), nil
}

func (t *httpTarget) cleanup(ctx context.Context) error {
	_, _, err := t.do(ctx, http.MethodDelete, t.collection, "application/json", nil, http.StatusOK)
	t.mu.Lock()
	t.objects = map[int][]byte{}
	t.mu.Unlock()
	if err != nil {
		return err
	}
	// deletecollection returns when the objects are gone from storage.
	return nil
}

// etcdTarget does what kube-apiserver's storage layer does, without the server: a create is a
// transaction that puts the key only if it does not exist, a get a linearizable read, an update
// a compare-and-swap on the key's revision, a list a range read, a watch a prefix watch.
type etcdTarget struct {
	client *clientv3.Client
	prefix string
	value  []byte
	etcd   func() int

	mu   sync.Mutex
	revs map[int]int64
}

func (t *etcdTarget) name() string { return "etcd" }
func (t *etcdTarget) pid() int     { return t.etcd() }
func (t *etcdTarget) key(i int) string {
	return t.prefix + objectName(i)
}

func (t *etcdTarget) create(ctx context.Context, i int) error {
	key := t.key(i)
	resp, err := t.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).Then(clientv3.OpPut(key, string(t.value))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%s exists", key)
	}
	t.mu.Lock()
	t.revs[i] = resp.Header.Revision
	t.mu.Unlock()
	return nil
}

func (t *etcdTarget) get(ctx context.Context, i int) error {
	resp, err := t.client.Get(ctx, t.key(i))
	if err == nil && len(resp.Kvs) != 1 {
		err = fmt.Errorf("%s not found", t.key(i))
	}
	return err
}

func (t *etcdTarget) getAs(context.Context, int, string) (string, error) {
	return "not applicable (etcd stores bytes)", nil
}

func (t *etcdTarget) updateStatus(ctx context.Context, i, pass int) error {
	key := t.key(i)
	t.mu.Lock()
	rev := t.revs[i]
	t.mu.Unlock()
	resp, err := t.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(clientv3.OpPut(key, string(t.value))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%s was modified", key)
	}
	t.mu.Lock()
	t.revs[i] = resp.Header.Revision
	t.mu.Unlock()
	return nil
}

func (t *etcdTarget) list(ctx context.Context, encoding string) (int, string, error) {
	if encoding != "application/json" {
		return 0, "not applicable (etcd stores bytes)", nil
	}
	resp, err := t.client.Get(ctx, t.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, "", err
	}
	size := 0
	for _, kv := range resp.Kvs {
		size += len(kv.Value)
	}
	return size, "", nil
}

func (t *etcdTarget) watchUpdates(ctx context.Context, n, workers, pass int) (Result, error) {
	// Watch from the current revision on, so no update made before the watch is established
	// is missed (as the HTTP watch starts from the list's resourceVersion).
	now, err := t.client.Get(ctx, t.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return Result{}, err
	}
	watchCtx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	events := t.client.Watch(watchCtx, t.prefix, clientv3.WithPrefix(), clientv3.WithRev(now.Header.Revision+1))
	var sent sync.Map
	lat := &latencies{}
	received := make(chan error, 1)
	go func() {
		count := 0
		for resp := range events {
			if err := resp.Err(); err != nil {
				received <- err
				return
			}
			for _, ev := range resp.Events {
				if at, ok := sent.Load(string(ev.Kv.Key)); ok {
					lat.add(time.Since(at.(time.Time)))
				}
				count++
			}
			if count >= n {
				received <- nil
				return
			}
		}
		received <- fmt.Errorf("watch ended after %d of %d events", count, n)
	}()
	start := time.Now()
	if _, err := parallel(n, workers, &latencies{}, func(i int) error {
		sent.Store(t.key(i), time.Now())
		return t.updateStatus(ctx, i, pass)
	}); err != nil {
		return Result{}, err
	}
	select {
	case err := <-received:
		if err != nil {
			return Result{}, err
		}
	case <-time.After(2 * time.Minute):
		return Result{}, fmt.Errorf("watch delivered fewer than %d events in 2 minutes", n)
	}
	return lat.result(n, time.Since(start)), nil
}

func (t *etcdTarget) cleanup(ctx context.Context) error {
	_, err := t.client.Delete(ctx, t.prefix, clientv3.WithPrefix())
	t.mu.Lock()
	t.revs = map[int]int64{}
	t.mu.Unlock()
	return err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
