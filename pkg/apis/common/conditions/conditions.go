// Package conditions holds what every Plinth API group's conditions share: the vocabulary a
// group declares beside its types (its condition types' reasons, and which of them need the
// owner's attention), and the one setter every controller uses to change a condition.
//
// A group declares its vocabulary once, in its versioned package's conditions.go:
//
//	var Reasons = conditions.Declare(GroupName,
//		conditions.Normal(ReasonSucceeded, ReasonPending),
//		conditions.Warning(ReasonSpecInvalid),
//	)
//
// Controllers then write only declared reasons — the status writer refuses any other — and an
// Event's type (Normal or Warning) is read from the same declaration, so a reason cannot be a
// warning in one place and progress in another.
package conditions

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group of reasons with one severity, as passed to Declare.
type Group struct {
	warning bool
	reasons []string
}

// Normal lists reasons that report progress or success.
func Normal(reasons ...string) Group { return Group{reasons: reasons} }

// Warning lists reasons that need the owner's attention.
func Warning(reasons ...string) Group { return Group{warning: true, reasons: reasons} }

// Vocabulary is every reason one API group's conditions and Events may carry. The zero value
// declares nothing.
type Vocabulary struct {
	group string
	// warning maps every declared reason to whether it needs the owner's attention.
	warning map[string]bool
}

// Declare builds an API group's vocabulary. A reason listed twice is a programming error and
// panics at package initialisation, where every test sees it.
func Declare(group string, groups ...Group) Vocabulary {
	v := Vocabulary{group: group, warning: map[string]bool{}}
	for _, g := range groups {
		for _, r := range g.reasons {
			if _, dup := v.warning[r]; dup {
				panic(fmt.Sprintf("conditions: %s declares reason %q twice", group, r))
			}
			v.warning[r] = g.warning
		}
	}
	return v
}

// Group is the API group the vocabulary belongs to.
func (v Vocabulary) Group() string { return v.group }

// Declared says whether reason belongs to the vocabulary.
func (v Vocabulary) Declared(reason string) bool {
	_, ok := v.warning[reason]
	return ok
}

// IsWarning says whether reason needs the owner's attention. An undeclared reason counts as a
// warning: whatever wrote it is wrong and someone should look.
func (v Vocabulary) IsWarning(reason string) bool {
	warning, ok := v.warning[reason]
	return !ok || warning
}

// EventType is the Kubernetes Event type of reason: Warning or Normal.
func (v Vocabulary) EventType(reason string) string {
	if v.IsWarning(reason) {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// Reasons lists the declared reasons, sorted.
func (v Vocabulary) Reasons() []string {
	out := make([]string, 0, len(v.warning))
	for r := range v.warning {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// Check returns an error naming the first condition whose reason the group does not declare.
func (v Vocabulary) Check(conds []metav1.Condition) error {
	for _, c := range conds {
		if !v.Declared(c.Reason) {
			return fmt.Errorf("condition %s carries reason %q, which API group %s does not declare", c.Type, c.Reason, v.group)
		}
	}
	return nil
}

// Set sets the condition condType in conds, stamped with the generation it was observed at.
// LastTransitionTime changes only when the status does (meta.SetStatusCondition's rule), so
// a new reason or message alone is not a transition. It reports whether anything changed.
func Set(conds *[]metav1.Condition, generation int64, condType string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
}

// SetAt is Set with the transition time given, for controllers that take their clock as a
// dependency (tests step it).
func SetAt(conds *[]metav1.Condition, generation int64, now metav1.Time, condType string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
		LastTransitionTime: now,
	})
}

// Status turns a boolean into a condition status.
func Status(ok bool) metav1.ConditionStatus {
	if ok {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}
