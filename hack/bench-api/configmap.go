package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// configMapTarget is the best a built-in kind does on the same kube-apiserver: ConfigMaps as
// large as a Workload (as JSON), written and read in protobuf, the encoding built-in clients
// use. Creates send bodies encoded before the rounds; gets and lists read the answer without
// decoding it; an "update status" is a PUT of the whole object (ConfigMaps have no status);
// the watch is client-go's, in protobuf.
type configMapTarget struct {
	*httpTarget
	watcher kubernetes.Interface
	padding string
	// bodies are the create requests, encoded once.
	bodies map[int][]byte
}

// protobufCodec encodes and decodes core/v1 objects in protobuf.
var protobufCodec = func() runtime.Codec {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		panic("client-go's scheme has no protobuf serializer")
	}
	return scheme.Codecs.CodecForVersions(info.Serializer, info.Serializer, corev1.SchemeGroupVersion, corev1.SchemeGroupVersion)
}()

// newConfigMapTarget serves ConfigMaps in namespace through client, whose objects' JSON is
// objectBytes long; admin opens the watch.
func newConfigMapTarget(ctx context.Context, client *http.Client, host string, admin *rest.Config, pid func() int, objectBytes int) (*configMapTarget, error) {
	cfg := rest.CopyConfig(admin)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
	watcher, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	t := &configMapTarget{
		httpTarget: &httpTarget{label: "ConfigMap", client: client, host: host, apiVersion: "v1", namespace: namespace,
			collection: host + "/api/v1/namespaces/" + namespace + "/configmaps", serverPID: pid, objects: map[int][]byte{},
			contentType: runtime.ContentTypeProtobuf},
		watcher: watcher, bodies: map[int][]byte{},
	}
	// The padding makes the JSON of a created ConfigMap as long as a Workload's: one is created
	// without it, read back as JSON, and the difference is added to its data.
	body, err := t.encode(0)
	if err != nil {
		return nil, err
	}
	if _, _, err := t.do(ctx, http.MethodPost, t.collection, runtime.ContentTypeProtobuf, body, http.StatusCreated); err != nil {
		return nil, err
	}
	asJSON, _, err := t.do(ctx, http.MethodGet, t.collection+"/"+objectName(0), "application/json", nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if err := t.httpTarget.cleanup(ctx); err != nil {
		return nil, err
	}
	if missing := objectBytes - len(asJSON); missing > 0 {
		t.padding = strings.Repeat("x", missing)
	}
	return t, nil
}

// configMap is object i: the Workload's labels and one data key that carries the size.
func (t *configMapTarget) configMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: objectName(i), Namespace: t.namespace, Labels: map[string]string{"app": "bench", "team": "a"}},
		Data:       map[string]string{"payload": t.padding},
	}
}

func (t *configMapTarget) encode(i int) ([]byte, error) {
	var buf bytes.Buffer
	err := protobufCodec.Encode(t.configMap(i), &buf)
	return buf.Bytes(), err
}

// prepare encodes the create bodies of objects 0..n-1 that are not encoded yet, outside the
// timed operations.
func (t *configMapTarget) prepare(n int) error {
	for i := 0; i < n; i++ {
		if _, ok := t.bodies[i]; ok {
			continue
		}
		body, err := t.encode(i)
		if err != nil {
			return err
		}
		t.bodies[i] = body
	}
	return nil
}

func (t *configMapTarget) create(ctx context.Context, i int) error {
	t.mu.Lock()
	body := t.bodies[i]
	t.mu.Unlock()
	if body == nil {
		return fmt.Errorf("%s: no create body prepared", objectName(i))
	}
	obj, _, err := t.do(ctx, http.MethodPost, t.collection, runtime.ContentTypeProtobuf, body, http.StatusCreated)
	if err == nil {
		t.remember(i, obj)
	}
	return err
}

func (t *configMapTarget) get(ctx context.Context, i int) error {
	_, _, err := t.do(ctx, http.MethodGet, t.collection+"/"+objectName(i), runtime.ContentTypeProtobuf, nil, http.StatusOK)
	return err
}

// updateStatus writes what a Workload's status update writes, as a data key.
func (t *configMapTarget) updateStatus(ctx context.Context, i, pass int) error {
	t.mu.Lock()
	current := t.objects[i]
	t.mu.Unlock()
	obj, _, err := protobufCodec.Decode(current, nil, &corev1.ConfigMap{})
	if err != nil {
		return err
	}
	cm := obj.(*corev1.ConfigMap)
	cm.Data["status"] = fmt.Sprintf("The workload is being materialized (pass %d).", pass)
	var body bytes.Buffer
	if err := protobufCodec.Encode(cm, &body); err != nil {
		return err
	}
	updated, _, err := t.do(ctx, http.MethodPut, t.collection+"/"+objectName(i), runtime.ContentTypeProtobuf, body.Bytes(), http.StatusOK)
	if err == nil {
		t.remember(i, updated)
	}
	return err
}

func (t *configMapTarget) watchUpdates(ctx context.Context, n, workers, pass int) (Result, error) {
	configMaps := t.watcher.CoreV1().ConfigMaps(t.namespace)
	listed, err := configMaps.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return Result{}, err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := configMaps.Watch(watchCtx, metav1.ListOptions{ResourceVersion: listed.ResourceVersion})
	if err != nil {
		return Result{}, err
	}
	defer w.Stop()
	next := func() (string, error) {
		for event := range w.ResultChan() {
			switch event.Type {
			case watch.Error:
				return "", fmt.Errorf("an error event: %v", event.Object)
			case watch.Modified:
				if cm, ok := event.Object.(*corev1.ConfigMap); ok {
					return cm.Name, nil
				}
			}
		}
		return "", fmt.Errorf("the watch closed")
	}
	return watchWhileUpdating(ctx, n, workers, next, func(i int) error { return t.updateStatus(ctx, i, pass) })
}
