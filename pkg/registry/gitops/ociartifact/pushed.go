package ociartifact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/gitops"
)

// refuseChangeOfPushedVersion is the store's BeginUpdate hook. It runs inside the storage's
// guaranteed update, on the object as stored at that moment, so a push recorded concurrently
// is never missed. When the stored status says the spec's version is pushed and the update
// keeps that version (latest excepted, which moves by design) but changes the manifests or the
// ConfigMap they come from, it refuses with 409 Conflict: the registry tag must not silently
// move, and the new content needs a new version.
func refuseChangeOfPushedVersion(_ context.Context, obj, old runtime.Object, _ *metav1.UpdateOptions) (genericregistry.FinishFunc, error) {
	a, ok := obj.(*gitops.OCIArtifact)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("unexpected object type %T", obj))
	}
	stored, ok := old.(*gitops.OCIArtifact)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("unexpected object type %T", old))
	}
	version := stored.Spec.Version
	if version != gitops.LatestVersion && stored.Status.PushedVersion == version && a.Spec.Version == version &&
		!sameContent(&a.Spec, &stored.Spec) {
		return nil, apierrors.NewConflict(gitops.Resource("ociartifacts"), a.Name,
			fmt.Errorf("version %s of %s is pushed and cannot change; set a new spec.version", version, stored.Spec.Name))
	}
	return func(context.Context, bool) {}, nil
}

// sameContent reports whether two specs package the same content: the same ConfigMap, or
// manifests with the same JSON values, whatever their formatting and key order (a client that
// re-encodes the manifests it read changes nothing).
func sameContent(a, b *gitops.OCIArtifactSpec) bool {
	if !apiequality.Semantic.DeepEqual(a.ConfigMapRef, b.ConfigMapRef) || len(a.Manifests) != len(b.Manifests) {
		return false
	}
	for i := range a.Manifests {
		if !sameJSON(a.Manifests[i], b.Manifests[i]) {
			return false
		}
	}
	return true
}

func sameJSON(a, b common.RawObject) bool {
	if bytes.Equal(a.Raw, b.Raw) {
		return true
	}
	va, errA := decode(a)
	vb, errB := decode(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

// decode reads a manifest with numbers kept as written, so that 1 and 1.0000000000000001 differ
// as they would in the pushed file.
func decode(r common.RawObject) (interface{}, error) {
	dec := json.NewDecoder(bytes.NewReader(r.Raw))
	dec.UseNumber()
	var v interface{}
	err := dec.Decode(&v)
	return v, err
}
