package score

import (
	"fmt"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// Workload is the Score workload a Workload object describes: its inline document (if any)
// merged with its own spec sections.
//
// Merge rule: an element (container, resource or port, by name) declared in only one place is
// taken from there. An element declared in both must agree on every field both set; a field set
// on one side only is taken from that side. So the spec sections never silently override the
// document: tooling that reads either sees the same workload.
type Workload struct {
	Containers map[string]v1b1.Container
	Resources  map[string]v1b1.ResourceSpec
	Service    *v1b1.ServiceSpec
	// FromInline marks elements that come only from the inline document, for error paths.
	FromInline sets.Set[string]
}

// Resolve builds the effective Score workload of w and checks it: the inline document against
// the schema, its metadata.name, its agreement with the spec sections, and every placeholder.
// configMapRef sources are resolved by the controller; only their shape is checked here.
func Resolve(w *v1b1.Workload) (*Workload, field.ErrorList) {
	out, errs := Merge(w)
	if len(errs) > 0 {
		return nil, errs
	}
	return out, out.checkPlaceholders(field.NewPath("spec"))
}

// noFileBeside says why a file's source cannot be read, and what to write instead.
const noFileBeside = "a file's source is read next to the Score document, and only a document kept in a ConfigMap has anything next to it: put the file's text in content (or binaryContent), or keep the document and this file as keys of one ConfigMap (spec.source.configMapRef)"

// Merge is Resolve without the placeholder checks, for callers that work on a workload the API
// has already validated.
func Merge(w *v1b1.Workload) (*Workload, field.ErrorList) {
	spec := field.NewPath("spec")
	out := &Workload{
		Containers: copyMap(w.Spec.Containers),
		Resources:  copyMap(w.Spec.Resources),
		Service:    w.Spec.Service,
		FromInline: sets.New[string](),
	}
	var errs field.ErrorList
	// files[].source is a path next to the Score file; a Workload without a ConfigMap source
	// has nothing beside it to read.
	if w.Spec.Source == nil || w.Spec.Source.ConfigMapRef == nil {
		for _, name := range sets.List(sets.KeySet(w.Spec.Containers)) {
			for i, f := range w.Spec.Containers[name].Files {
				if f.Source != nil {
					errs = append(errs, field.Forbidden(spec.Child("containers").Key(name).Child("files").Index(i).Child("source"), noFileBeside))
				}
			}
		}
	}
	if w.Spec.Source != nil && w.Spec.Source.Inline != nil && len(w.Spec.Source.Inline.Raw) > 0 {
		inlinePath := spec.Child("source", "inline")
		doc, docErrs := ParseInline(w.Spec.Source.Inline.Raw, inlinePath)
		if len(docErrs) > 0 {
			return nil, docErrs
		}
		inline, err := FromDocument(doc)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(inlinePath, "<document>", err.Error())}
		}
		for _, name := range sets.List(sets.KeySet(inline.Containers)) {
			for _, f := range inline.Containers[name].Files {
				if f.Source != nil {
					errs = append(errs, field.Forbidden(inlinePath.Child("containers").Key(name).Child("files").Key(f.Target).Child("source"), noFileBeside))
				}
			}
		}
		if inline.Name != w.Name {
			errs = append(errs, field.Invalid(inlinePath.Child("metadata", "name"), inline.Name, fmt.Sprintf("must equal the Workload's name %q", w.Name)))
		}
		errs = append(errs, mergeInto(out.Containers, inline.Containers, spec.Child("containers"), out.FromInline, "containers")...)
		errs = append(errs, mergeInto(out.Resources, inline.Resources, spec.Child("resources"), out.FromInline, "resources")...)
		if inline.Service != nil {
			if out.Service == nil {
				out.Service = inline.Service
				out.FromInline.Insert("service")
			} else {
				merged := &v1b1.ServiceSpec{Ports: copyMap(out.Service.Ports)}
				errs = append(errs, mergeInto(merged.Ports, inline.Service.Ports, spec.Child("service", "ports"), out.FromInline, "ports")...)
				out.Service = merged
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// mergeInto adds the inline elements to the spec's, reporting disagreements at the spec path.
func mergeInto[V any](spec, inline map[string]V, fldPath *field.Path, fromInline sets.Set[string], section string) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sets.List(sets.KeySet(inline)) {
		fromDoc := inline[name]
		fromSpec, both := spec[name]
		if !both {
			spec[name] = fromDoc
			fromInline.Insert(section + "/" + name)
			continue
		}
		merged, conflicts := mergeStruct(fromSpec, fromDoc)
		for _, f := range conflicts {
			errs = append(errs, field.Invalid(fldPath.Key(name).Child(f), reflect.ValueOf(fromSpec).FieldByName(goName(fromSpec, f)).Interface(),
				"must agree with the same field in spec.source.inline"))
		}
		spec[name] = merged
	}
	return errs
}

// mergeStruct takes each field from a, or from b where a leaves it unset; fields set on both
// sides must be equal. It returns the JSON names of the fields that differ.
func mergeStruct[V any](a, b V) (V, []string) {
	out := a
	ov, bv := reflect.ValueOf(&out).Elem(), reflect.ValueOf(b)
	var conflicts []string
	for i := 0; i < ov.NumField(); i++ {
		af, bf := ov.Field(i), bv.Field(i)
		switch {
		case bf.IsZero():
		case af.IsZero():
			af.Set(bf)
		case !apiequality.Semantic.DeepEqual(af.Interface(), bf.Interface()):
			conflicts = append(conflicts, jsonName(ov.Type().Field(i)))
		}
	}
	return out, conflicts
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	if tag == "" {
		return f.Name
	}
	return tag
}

func goName[V any](v V, json string) string {
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		if jsonName(t.Field(i)) == json {
			return t.Field(i).Name
		}
	}
	return ""
}

// Images lists every container image with its field path, in a stable order.
func (w *Workload) Images(spec *field.Path) []Located {
	var out []Located
	for _, name := range sets.List(sets.KeySet(w.Containers)) {
		out = append(out, Located{Value: w.Containers[name].Image, Path: w.path(spec, "containers", name).Child("image")})
	}
	return out
}

// ResourceTypes lists every resource type with its field path, in a stable order.
func (w *Workload) ResourceTypes(spec *field.Path) []Located {
	var out []Located
	for _, name := range sets.List(sets.KeySet(w.Resources)) {
		out = append(out, Located{Value: w.Resources[name].Type, Path: w.path(spec, "resources", name).Child("type")})
	}
	return out
}

// Located is a value and the field path it came from.
type Located struct {
	Value string
	Path  *field.Path
}

// path is where an element is written: in spec, or in the inline document when only there.
func (w *Workload) path(spec *field.Path, section, name string) *field.Path {
	if w.FromInline.Has(section + "/" + name) {
		return spec.Child("source", "inline", section).Child(name)
	}
	return spec.Child(section).Key(name)
}

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
