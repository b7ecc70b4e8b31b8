package render

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	// MaxObjects is the most objects one render may produce.
	MaxObjects = 2000
	// MaxBytes is the most bytes of JSON one render's objects may take together.
	MaxBytes = 8 << 20
)

// clusterScoped are the built-in kinds that have no namespace. A rendered object of any other
// kind without a namespace gets the release namespace, unless a CustomResourceDefinition in the
// same render declares its kind cluster-scoped: the renderer has no discovery of the target
// cluster, and a namespace on a cluster-scoped object is dropped by the API server anyway.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Kind: "ComponentStatus"}:  true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                               true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:               true,
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:                      true,
}

// decodeYAML decodes a stream of YAML (or JSON) documents into objects, skipping empty
// documents and expanding lists (kind List and the like) into their items, as kubectl and Helm do.
func decodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		decoded, err := decodeJSON(js)
		if err != nil {
			return nil, err
		}
		objs = append(objs, decoded...)
	}
}

// decodeJSON decodes one JSON value: null (no object), an object, or a list object whose items
// are returned instead. Whole numbers become int64, as the API machinery reads them.
func decodeJSON(data []byte) ([]*unstructured.Unstructured, error) {
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a document is not an object")
	}
	u := &unstructured.Unstructured{Object: m}
	if !u.IsList() {
		return []*unstructured.Unstructured{u}, nil
	}
	var items []*unstructured.Unstructured
	err := u.EachListItem(func(o runtime.Object) error {
		item, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("a list item is not an object")
		}
		items = append(items, item)
		return nil
	})
	return items, err
}

// describe names an object for messages: Kind namespace/name, or Kind name.
func describe(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return u.GetKind() + " " + ns + "/" + u.GetName()
	}
	return u.GetKind() + " " + u.GetName()
}

// checkObject says what an object lacks to be applied: an apiVersion, a kind and a name.
func checkObject(u *unstructured.Unstructured) string {
	switch {
	case u.GetAPIVersion() == "":
		return "an object has no apiVersion"
	case u.GetKind() == "":
		return "an object has no kind"
	case u.GetName() == "":
		return "a " + u.GetKind() + " has no metadata.name"
	}
	if _, err := schema.ParseGroupVersion(u.GetAPIVersion()); err != nil {
		return fmt.Sprintf("%s has an invalid apiVersion %q", describe(u), u.GetAPIVersion())
	}
	return ""
}

// finish completes a render: it checks every object, sets the namespace of namespaced objects
// that have none, refuses duplicates and renders over the limits, and computes the digest.
func finish(objs []*unstructured.Unstructured, namespace string, res *Result) error {
	if len(objs) > MaxObjects {
		return &Error{Message: fmt.Sprintf("the pack renders %d objects, more than %d", len(objs), MaxObjects)}
	}
	scopes := make(map[schema.GroupKind]bool, len(clusterScoped))
	for gk := range clusterScoped {
		scopes[gk] = true
	}
	for _, u := range objs {
		if msg := checkObject(u); msg != "" {
			return &Error{Message: msg}
		}
		recordCRDScope(u, scopes)
	}
	type key struct {
		gk              schema.GroupKind
		namespace, name string
	}
	seen := make(map[key]bool, len(objs))
	encoded := make([][]byte, len(objs))
	size := 0
	for i, u := range objs {
		gk := u.GroupVersionKind().GroupKind()
		if u.GetNamespace() == "" && !scopes[gk] {
			u.SetNamespace(namespace)
		}
		k := key{gk, u.GetNamespace(), u.GetName()}
		if seen[k] {
			return &Error{Message: describe(u) + " is rendered twice"}
		}
		seen[k] = true
		b, err := json.Marshal(u.Object)
		if err != nil {
			return &Error{Message: fmt.Sprintf("%s cannot be encoded: %v", describe(u), err)}
		}
		size += len(b)
		if size > MaxBytes {
			return &Error{Message: fmt.Sprintf("the pack renders more than %d MiB of objects", MaxBytes>>20)}
		}
		encoded[i] = b
	}
	res.Objects = objs
	res.Digest = digest(encoded)
	return nil
}

// recordCRDScope records in scopes whether the kind a CustomResourceDefinition defines is
// cluster-scoped; other objects are ignored.
func recordCRDScope(u *unstructured.Unstructured, scopes map[schema.GroupKind]bool) {
	if u.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
		return
	}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
	if kind != "" {
		scopes[schema.GroupKind{Group: group, Kind: kind}] = strings.EqualFold(scope, "Cluster")
	}
}

// digest is sha256:<hex> over the objects' JSON as one JSON array. Encoding a map sorts its
// keys, so the same objects in the same order always give the same digest.
func digest(encoded [][]byte) string {
	h := sha256.New()
	h.Write([]byte("["))
	for i, b := range encoded {
		if i > 0 {
			h.Write([]byte(","))
		}
		h.Write(b)
	}
	h.Write([]byte("]"))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
