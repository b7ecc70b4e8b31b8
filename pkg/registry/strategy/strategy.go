// Package strategy implements the create/update/status strategies every Plinth kind with a spec
// and a status shares: status is server-owned on the main resource, spec is read-only on the
// status subresource, and metadata.generation counts spec changes only. A kind supplies its
// validation through a Definition; the mechanics live here once.
package strategy

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// Object is an API object with ObjectMeta and Spec and Status fields.
type Object interface {
	runtime.Object
	metav1.Object
}

// Definition is what a kind tells the generic strategies.
type Definition[T Object] struct {
	// NamespaceScoped is true for namespaced kinds.
	NamespaceScoped bool
	// APIVersions are the group/versions served, for the reset-field sets of server-side apply.
	APIVersions []string
	// Validate checks a new object.
	Validate func(obj T) field.ErrorList
	// ValidateUpdate checks an update through the main resource.
	ValidateUpdate func(obj, old T) field.ErrorList
	// ValidateStatusUpdate checks an update through the status subresource.
	ValidateStatusUpdate func(obj, old T) field.ErrorList
	// PrepareForCreate, when set, runs after the generic preparation (status cleared,
	// generation 1): it fills server-owned fields, for example from the request's user.
	PrepareForCreate func(ctx context.Context, obj T)
	// PrepareForUpdate, when set, runs after the generic preparation of a main-resource
	// update (status kept, generation bumped on spec changes).
	PrepareForUpdate func(ctx context.Context, obj, old T)
	// RetainOnUpdate, when set, runs first on a main-resource update: it copies write-only
	// fields the client left empty (it never saw them) from the stored object, so that the
	// generation counts only real spec changes.
	RetainOnUpdate func(obj, old T)
	// RecordRequester, when true, has the main resource record in the annotation
	// common.AnnotationRequestedBy the authenticated user who created the object or last
	// changed its spec (a write that bumps the generation), replacing whatever the client
	// wrote; any other write keeps the recorded value. Requests a platform identity makes for
	// the object name that user as the one who caused them.
	RecordRequester bool
	// WarningsOnCreate and WarningsOnUpdate return optional warnings for the client.
	WarningsOnCreate func(obj T) []string
	WarningsOnUpdate func(obj, old T) []string
}

// Strategy is the strategy of the main resource.
type Strategy[T Object] struct {
	runtime.ObjectTyper
	names.NameGenerator
	def Definition[T]
}

// New returns the main-resource strategy of a kind.
func New[T Object](typer runtime.ObjectTyper, def Definition[T]) Strategy[T] {
	return Strategy[T]{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, def: def}
}

var _ rest.RESTCreateUpdateStrategy = Strategy[Object]{}
var _ rest.ResetFieldsStrategy = Strategy[Object]{}

// NamespaceScoped tells the store whether objects live in namespaces.
func (s Strategy[T]) NamespaceScoped() bool { return s.def.NamespaceScoped }

// GetResetFields lists the fields server-side apply must not take from a main-resource request.
func (s Strategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(s.def.APIVersions, fieldpath.MakePathOrDie("status"))
}

// PrepareForCreate drops any status the client sent and starts the generation at 1.
func (s Strategy[T]) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	if field := statusField(obj); field.IsValid() {
		field.Set(reflect.Zero(field.Type()))
	}
	obj.(metav1.Object).SetGeneration(1)
	if s.def.PrepareForCreate != nil {
		s.def.PrepareForCreate(ctx, obj.(T))
	}
	if s.def.RecordRequester {
		recordRequester(ctx, obj.(metav1.Object), nil)
	}
}

// PrepareForUpdate keeps the stored status and bumps the generation when the spec changed.
func (s Strategy[T]) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	if s.def.RetainOnUpdate != nil {
		s.def.RetainOnUpdate(obj.(T), old.(T))
	}
	if field := statusField(obj); field.IsValid() {
		field.Set(statusField(old))
	}
	newMeta, oldMeta := obj.(metav1.Object), old.(metav1.Object)
	newMeta.SetGeneration(oldMeta.GetGeneration())
	if !apiequality.Semantic.DeepEqual(specField(obj).Interface(), specField(old).Interface()) {
		newMeta.SetGeneration(oldMeta.GetGeneration() + 1)
	}
	if s.def.PrepareForUpdate != nil {
		s.def.PrepareForUpdate(ctx, obj.(T), old.(T))
	}
	if s.def.RecordRequester {
		recordRequester(ctx, newMeta, oldMeta)
	}
}

// recordRequester sets common.AnnotationRequestedBy to the request's user on a create (old is
// nil) and on an update that changed the spec; on any other update it keeps the stored value,
// whatever the client sent. The value comes from the request's authentication only, so a
// client cannot name someone else.
func recordRequester(ctx context.Context, obj, old metav1.Object) {
	value, keep := "", old != nil && obj.GetGeneration() == old.GetGeneration()
	if keep {
		value, keep = old.GetAnnotations()[common.AnnotationRequestedBy]
	} else if u, ok := genericapirequest.UserFrom(ctx); ok {
		value, keep = u.GetName(), u.GetName() != ""
	}
	annotations := obj.GetAnnotations()
	if !keep {
		if _, ok := annotations[common.AnnotationRequestedBy]; ok {
			annotations = maps.Clone(annotations)
			delete(annotations, common.AnnotationRequestedBy)
			obj.SetAnnotations(annotations)
		}
		return
	}
	if annotations[common.AnnotationRequestedBy] == value {
		return
	}
	annotations = maps.Clone(annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[common.AnnotationRequestedBy] = value
	obj.SetAnnotations(annotations)
}

// Validate checks a new object, and that it is within MaxObjectBytes.
func (s Strategy[T]) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return append(validateSize(obj), s.def.Validate(obj.(T))...)
}

// WarningsOnCreate returns the kind's warnings for a new object.
func (s Strategy[T]) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	if s.def.WarningsOnCreate == nil {
		return nil
	}
	return s.def.WarningsOnCreate(obj.(T))
}

// Canonicalize does nothing: the kinds have no alternative spellings to normalise.
func (s Strategy[T]) Canonicalize(obj runtime.Object) {}

// AllowCreateOnUpdate is false: objects are created with POST (or server-side apply).
func (s Strategy[T]) AllowCreateOnUpdate(ctx context.Context) bool { return false }

// AllowUnconditionalUpdate is true, as for built-in kinds: an update without a
// resourceVersion overwrites; with one, a stale version is a conflict.
func (s Strategy[T]) AllowUnconditionalUpdate(ctx context.Context) bool { return true }

// ValidateUpdate checks an update, and that the object stays within MaxObjectBytes (or, if it
// was over already, does not grow).
func (s Strategy[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return append(validateSizeUpdate(obj, old), s.def.ValidateUpdate(obj.(T), old.(T))...)
}

// WarningsOnUpdate returns the kind's warnings for an update.
func (s Strategy[T]) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	if s.def.WarningsOnUpdate == nil {
		return nil
	}
	return s.def.WarningsOnUpdate(obj.(T), old.(T))
}

// StatusStrategy is the strategy of the status subresource.
type StatusStrategy[T Object] struct {
	Strategy[T]
}

// NewStatus returns the status-subresource strategy of a kind.
func NewStatus[T Object](typer runtime.ObjectTyper, def Definition[T]) StatusStrategy[T] {
	return StatusStrategy[T]{New(typer, def)}
}

// GetResetFields lists the fields server-side apply must not take from a status request.
func (s StatusStrategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(s.def.APIVersions, fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
}

// PrepareForUpdate keeps the stored spec and metadata: a status update changes status only.
func (s StatusStrategy[T]) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	specField(obj).Set(specField(old))
	metav1.ResetObjectMetaForStatus(obj.(metav1.Object), old.(metav1.Object))
}

// ValidateUpdate checks a status update, and that the object stays within MaxObjectBytes (or,
// if it was over already, does not grow).
func (s StatusStrategy[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return append(validateSizeUpdate(obj, old), s.def.ValidateStatusUpdate(obj.(T), old.(T))...)
}

// WarningsOnUpdate returns no warnings for status updates.
func (s StatusStrategy[T]) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}

func resetFields(versions []string, paths ...fieldpath.Path) map[fieldpath.APIVersion]*fieldpath.Set {
	out := make(map[fieldpath.APIVersion]*fieldpath.Set, len(versions))
	for _, v := range versions {
		out[fieldpath.APIVersion(v)] = fieldpath.NewSet(paths...)
	}
	return out
}

func specField(obj runtime.Object) reflect.Value {
	f := reflect.ValueOf(obj).Elem().FieldByName("Spec")
	if !f.IsValid() {
		// Every kind that uses these strategies has a spec; a kind without one is a
		// programming error caught by tests.
		panic(fmt.Sprintf("%T has no Spec field", obj))
	}
	return f
}

// statusField reaches the Status field, or the zero Value for kinds without status: immutable
// records such as audit logs have a spec only.
func statusField(obj runtime.Object) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName("Status")
}
