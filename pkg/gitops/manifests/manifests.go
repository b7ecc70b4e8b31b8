// Package manifests parses and validates the Kubernetes objects an OCIArtifact packages, the
// same way for inline manifests (checked by plinth-apiserver, with field paths) and for the
// files of a ConfigMap (checked by plinth-controller before each push). Validating before the
// push is the seed's rule: a bad object never reaches the registry, so no target ever pulls it.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// MaxObjects is how many objects one artifact may hold. An OCIArtifact is stored in etcd with
// its inline manifests, and Flux's kustomize-controller applies an artifact in one pass.
const MaxObjects = 1000

// Object is one parsed manifest and where it came from.
type Object struct {
	// Object is the manifest.
	*unstructured.Unstructured
	// File is the file the manifest is in, for error messages; empty for inline manifests.
	File string
}

// Key identifies an object within an artifact: kind, namespace and name (the group is part of
// the kind's identity too, so a Deployment of apps and one of extensions would differ).
type Key struct {
	Group, Kind, Namespace, Name string
}

// KeyOf returns the key of an object.
func KeyOf(u *unstructured.Unstructured) Key {
	gvk := u.GroupVersionKind()
	return Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// String is the key as Flux's inventory writes it: <namespace>_<name>_<group>_<kind>.
func (k Key) String() string {
	return k.Namespace + "_" + k.Name + "_" + k.Group + "_" + k.Kind
}

// ValidateObject checks one manifest: apiVersion, kind and metadata.name present and
// well-formed. fldPath points at the manifest.
func ValidateObject(obj map[string]interface{}, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	u := &unstructured.Unstructured{Object: obj}
	apiVersion, _ := obj["apiVersion"].(string)
	switch {
	case apiVersion == "":
		errs = append(errs, field.Required(fldPath.Child("apiVersion"), "Every manifest needs an apiVersion."))
	default:
		if gv, err := schema.ParseGroupVersion(apiVersion); err != nil || gv.Version == "" {
			errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), apiVersion, "The apiVersion must be <version> or <group>/<version>."))
		}
	}
	if kind, _ := obj["kind"].(string); kind == "" {
		errs = append(errs, field.Required(fldPath.Child("kind"), "Every manifest needs a kind."))
	} else if strings.HasSuffix(kind, "List") {
		errs = append(errs, field.Invalid(fldPath.Child("kind"), kind, "List kinds are not applied as objects; list their items as separate manifests."))
	} else if kind == "Secret" && apiVersion == "v1" {
		// An artifact is stored in etcd with its OCIArtifact and served by the registry to
		// anyone who can reach it: a Secret in it would be a credential in plain text.
		errs = append(errs, field.Forbidden(fldPath.Child("kind"), "Secrets are not packaged: the artifact is stored and served in plain text; create the Secret on the target, or package an encrypted form such as a SealedSecret."))
	}
	if _, ok := obj["metadata"]; ok {
		if _, isMap := obj["metadata"].(map[string]interface{}); !isMap {
			return append(errs, field.Invalid(fldPath.Child("metadata"), "", "The metadata must be an object."))
		}
	}
	name := u.GetName()
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("metadata", "name"), "Every manifest needs a metadata.name."))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(fldPath.Child("metadata", "name"), name, msg))
		}
	}
	if ns := u.GetNamespace(); ns != "" {
		for _, msg := range utilvalidation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(fldPath.Child("metadata", "namespace"), ns, msg))
		}
	}
	return errs
}

// ValidateObjects checks each manifest and that no two share a key. at returns the field path
// of the i-th manifest.
func ValidateObjects(objs []Object, at func(i int) *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(objs) > MaxObjects {
		return field.ErrorList{field.TooMany(at(MaxObjects).Root(), len(objs), MaxObjects)}
	}
	seen := map[Key]int{}
	for i, o := range objs {
		p := at(i)
		objErrs := ValidateObject(o.Object, p)
		errs = append(errs, objErrs...)
		if len(objErrs) > 0 {
			continue
		}
		k := KeyOf(o.Unstructured)
		if j, dup := seen[k]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s %s/%s (also manifest %d)", k.Kind, k.Namespace, k.Name, j)))
			continue
		}
		seen[k] = i
	}
	return errs
}

// IsManifestFile reports whether a file name is one the artifact packages and both engines
// apply: .yaml or .yml. JSON is YAML, but Flux's kustomize-controller only picks up .yaml and
// .yml files when it generates a kustomization, so a .json file would reach Kubectl-engine
// clusters and not Flux ones.
func IsManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}

// ValidFileName reports whether a file name can be a file of the artifact: a ConfigMap key that
// is a plain file name, not a path.
func ValidFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\")
}

// ErrNoObjects is returned when the files hold no object at all.
var ErrNoObjects = errors.New("the artifact holds no Kubernetes object")

// FromFiles parses the manifest files (name → content; YAML with any number of documents, or
// JSON) into objects, in file-name order and document order, and validates them. The error
// names the file and document of the first problem.
func FromFiles(files map[string][]byte) ([]Object, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if IsManifestFile(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var objs []Object
	for _, name := range names {
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(files[name]), 4096)
		for doc := 1; ; doc++ {
			var m map[string]interface{}
			if err := decoder.Decode(&m); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("file %s, document %d: %v", name, doc, err)
			}
			if len(m) == 0 {
				continue // an empty document between two ---
			}
			objs = append(objs, Object{Unstructured: &unstructured.Unstructured{Object: m}, File: fmt.Sprintf("%s#%d", name, doc)})
		}
	}
	if len(objs) == 0 {
		return nil, ErrNoObjects
	}
	if errs := ValidateObjects(objs, func(i int) *field.Path {
		if i >= len(objs) {
			return field.NewPath("files")
		}
		return field.NewPath(objs[i].File)
	}); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return objs, nil
}
