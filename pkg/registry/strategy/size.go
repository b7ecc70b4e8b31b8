package strategy

import (
	"encoding/json"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxObjectBytes bounds the JSON size of a Plinth object, managed fields left out. etcd refuses
// requests over 1.5 MiB; an object allowed up to that edge would be stored and then fail its
// next write as managed fields, status and the controller's annotations grow, and the refusal
// from etcd names no field. A bound well below it, the size of a ConfigMap's data limit, leaves
// that room and lets the API say which part is too large.
const MaxObjectBytes = 1 << 20

// validateSize refuses an object whose JSON (managed fields left out) is over MaxObjectBytes,
// at its largest part: spec, status, or the largest field of metadata (labels, annotations…).
func validateSize(obj runtime.Object) field.ErrorList {
	m, isMeta := obj.(metav1.Object)
	// Managed fields only make the object larger: they are measured (to be left out) only when
	// the whole is over the bound, so that the common case marshals once.
	total := jsonSize(obj)
	if total <= MaxObjectBytes {
		return nil
	}
	if isMeta {
		total -= jsonSize(m.GetManagedFields())
	}
	if total <= MaxObjectBytes {
		return nil
	}
	// Spec and status are measured only now; metadata is the rest (with apiVersion and kind, a
	// few bytes). The paths are the API's: the internal types of some groups have no json tags,
	// so the Go field's name would be "Spec".
	largest, size, metadata := "metadata", 0, total
	v := reflect.ValueOf(obj).Elem()
	for _, part := range []struct{ goName, path string }{{"Spec", "spec"}, {"Status", "status"}} {
		if f := v.FieldByName(part.goName); f.IsValid() {
			n := jsonSize(f.Interface())
			metadata -= n
			if n > size {
				largest, size = part.path, n
			}
		}
	}
	path := field.NewPath(largest)
	if metadata >= size {
		path = field.NewPath("metadata")
		if isMeta {
			path = largestMetadataField(m)
		}
	}
	return field.ErrorList{field.TooLong(path, field.OmitValueType{}, MaxObjectBytes)}
}

// validateSizeUpdate is validateSize for an update, which may keep or shrink an object that is
// already over MaxObjectBytes: one stored before the bound existed, or grown by a status write
// while an earlier bound was larger, must still be able to lose its finalizers, take a smaller
// status or be cut down, or it could never be deleted or repaired. Growing it stays refused.
func validateSizeUpdate(obj, old runtime.Object) field.ErrorList {
	errs := validateSize(obj)
	if len(errs) == 0 || objectSize(old) < objectSize(obj) {
		return errs
	}
	return nil
}

// objectSize is the JSON size of obj with its managed fields left out, as validateSize counts.
func objectSize(obj runtime.Object) int {
	total := jsonSize(obj)
	if m, ok := obj.(metav1.Object); ok {
		total -= jsonSize(m.GetManagedFields())
	}
	return total
}

// largestMetadataField is the path of the largest of labels, annotations, finalizers and
// owner references, where a large metadata has its bulk.
func largestMetadataField(m metav1.Object) *field.Path {
	name, size := "labels", jsonSize(m.GetLabels())
	for _, c := range []struct {
		name string
		v    any
	}{{"annotations", m.GetAnnotations()}, {"finalizers", m.GetFinalizers()}, {"ownerReferences", m.GetOwnerReferences()}} {
		if n := jsonSize(c.v); n > size {
			name, size = c.name, n
		}
	}
	return field.NewPath("metadata", name)
}

// jsonSize is the length of v's JSON; a value that does not encode is the validation's to
// refuse, not the size's, and counts as empty.
func jsonSize(v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}
