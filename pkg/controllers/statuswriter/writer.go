// Package statuswriter holds the one way a Plinth controller writes an object's status:
// only when the status really changed, under the controller's field manager, with only the
// reasons the object's API group declares, followed by the Events its condition transitions
// call for, and remembered until the controller's cache has caught up with the write.
//
// An object whose status one controller alone writes is written with Update (the whole status
// subresource). An object whose status several controllers share (a Cluster: reachability
// from one, Flux from another) is written with Apply: each controller server-side applies only
// the fields it owns, so neither overwrites the other and neither needs a 409 to find out.
package statuswriter

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
)

// Object is what a status writer writes: a typed API object.
type Object interface {
	runtime.Object
	metav1.Object
}

// Writer writes one kind's status for one controller. Set FieldManager, Reasons, Conditions
// and exactly one of Update and Apply; Events, Rules and Written are optional.
type Writer[T Object] struct {
	// FieldManager names the controller in the object's managedFields.
	FieldManager string
	// Reasons is the vocabulary of the object's API group; a status carrying any other reason
	// is not written.
	Reasons conditions.Vocabulary
	// Conditions reads an object's conditions.
	Conditions func(T) []metav1.Condition
	// Update writes the whole status subresource, for the sole writer of an object's status.
	Update func(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	// Apply server-side applies only the fields of obj's status this controller owns, for an
	// object whose status several controllers write.
	Apply func(ctx context.Context, obj T, opts metav1.ApplyOptions) (T, error)
	// Events records the transitions Rules select (nil records none).
	Events *transition.Recorder
	// Rules say which condition changes become Events.
	Rules []transition.Rule
	// Written, when set, remembers each write until the controller's informer shows it; read
	// the object through Written.Fresher to reconcile from it.
	Written *loop.Written[T]
}

// Write writes after's status when it differs from before's. after is before with the status
// the reconcile computed (the controller changes nothing else); the comparison is semantic, so
// a reconcile that computes the same status costs no request and records no Event. It returns
// the object the server stored, or before when nothing changed, and whether it wrote.
func (w *Writer[T]) Write(ctx context.Context, before, after T) (T, bool, error) {
	if equality.Semantic.DeepEqual(before, after) {
		return before, false, nil
	}
	if err := w.Reasons.Check(w.Conditions(after)); err != nil {
		return before, false, fmt.Errorf("%s: %w", w.FieldManager, err)
	}
	var (
		stored T
		err    error
	)
	switch {
	case w.Update != nil && w.Apply == nil:
		stored, err = w.Update(ctx, after, metav1.UpdateOptions{FieldManager: w.FieldManager})
	case w.Apply != nil && w.Update == nil:
		stored, err = w.Apply(ctx, after, metav1.ApplyOptions{FieldManager: w.FieldManager, Force: true})
	default:
		return before, false, errors.New(w.FieldManager + ": a status writer needs exactly one of Update and Apply")
	}
	if err != nil {
		return before, false, err
	}
	if w.Written != nil {
		w.Written.Record(cache.MetaObjectToName(before), before, stored)
	}
	if w.Events != nil {
		w.Events.Conditions(stored, w.Conditions(before), w.Conditions(stored), w.Rules...)
	}
	return stored, true, nil
}
