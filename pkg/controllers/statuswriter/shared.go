package statuswriter

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// Part is one controller's part of a status several controllers write, for ApplyPart.
type Part[T Object, AC any] struct {
	// Of is the apply configuration of the part: the object's name and the status fields
	// this controller owns, as obj has them (zero values left out).
	Of func(obj T) AC
	// Apply server-side applies a part (the generated clientset's ApplyStatus).
	Apply func(ctx context.Context, part AC, opts metav1.ApplyOptions) (T, error)
	// Update writes the whole status (the generated clientset's UpdateStatus).
	Update func(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	// Put copies the part from one object into another, which it returns.
	Put func(into, from T) T
}

// ApplyPart is a Writer's Apply for a status shared between controllers: it applies only this
// controller's part, so a field of it the controller no longer sets goes away and the other
// controllers' fields are left as they are, whatever the cache says of them.
//
// Server-side apply removes a field only once no field manager owns it. Controllers that wrote
// the whole status with Update before (plinth-controller's field manager) still own each field
// they wrote until its value changes, so a field they wrote and this controller stops setting
// would stay. When the stored part is not the applied one, ApplyPart updates the stored status
// with the part put back as applied: an update's removals leave every manager, and the status
// is this controller's part as computed. That write carries the stored resourceVersion and
// happens at most once per field such an earlier version wrote.
func ApplyPart[T Object, AC any](p Part[T, AC]) func(ctx context.Context, obj T, opts metav1.ApplyOptions) (T, error) {
	return func(ctx context.Context, obj T, opts metav1.ApplyOptions) (T, error) {
		stored, err := p.Apply(ctx, p.Of(obj), opts)
		if err != nil {
			return stored, err
		}
		same, err := samePart(p.Of(stored), p.Of(obj))
		if err != nil || same {
			return stored, err
		}
		return p.Update(ctx, p.Put(stored.DeepCopyObject().(T), obj), metav1.UpdateOptions{FieldManager: opts.FieldManager})
	}
}

// samePart compares two parts as they are sent: times in seconds, zero values left out.
func samePart[AC any](a, b AC) (bool, error) {
	aj, err := json.Marshal(a)
	if err != nil {
		return false, fmt.Errorf("encoding a status part: %w", err)
	}
	bj, err := json.Marshal(b)
	if err != nil {
		return false, fmt.Errorf("encoding a status part: %w", err)
	}
	return string(aj) == string(bj), nil
}

// ApplyConditions are the apply configurations of the conditions of the given types in conds,
// in that order, for a Part's Of.
func ApplyConditions(conds []metav1.Condition, types ...string) []*metav1ac.ConditionApplyConfiguration {
	var out []*metav1ac.ConditionApplyConfiguration
	for _, t := range types {
		c := meta.FindStatusCondition(conds, t)
		if c == nil {
			continue
		}
		out = append(out, metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
			WithMessage(c.Message).WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime))
	}
	return out
}

// PutConditions makes the conditions of the given types in into what they are in from, for a
// Part's Put: copied as they are, or removed where from has none.
func PutConditions(into *[]metav1.Condition, from []metav1.Condition, types ...string) {
	for _, t := range types {
		meta.RemoveStatusCondition(into, t)
		if c := meta.FindStatusCondition(from, t); c != nil {
			*into = append(*into, *c.DeepCopy())
		}
	}
}
