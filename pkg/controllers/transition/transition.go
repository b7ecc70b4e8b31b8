// Package transition turns the status changes a controller writes into Kubernetes Events: one
// event per meaningful transition, with the reason the status carries, so `kubectl describe`
// and `kubectl events` tell the same story as the conditions. A reconcile that changes nothing
// records nothing; identical events that do recur are folded into one series by the events
// library (k8s.io/client-go/tools/events).
//
// Whether an event is Normal or Warning is read from the reasons the object's API group
// declares (pkg/apis/common/conditions), not decided here.
package transition

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
)

// Recorder records one controller's events with its API group's reasons.
type Recorder struct {
	events  events.EventRecorder
	reasons conditions.Vocabulary
}

// New returns a Recorder that records through recorder, typing each event by reasons.
func New(recorder events.EventRecorder, reasons conditions.Vocabulary) *Recorder {
	return &Recorder{events: recorder, reasons: reasons}
}

// Reasons is the vocabulary the recorder types its events by.
func (r *Recorder) Reasons() conditions.Vocabulary { return r.reasons }

// Record records one event on obj with the given reason and message (one neutral sentence).
// action says what the controller was doing (for example "Reconcile", "Probe"). A reason the
// group does not declare is still recorded, as a Warning, and reported as a programming error.
func (r *Recorder) Record(obj runtime.Object, reason, action, message string) {
	if !r.reasons.Declared(reason) {
		utilruntime.HandleError(fmt.Errorf("event reason %q is not declared by API group %s", reason, r.reasons.Group()))
	}
	r.events.Eventf(obj, nil, r.reasons.EventType(reason), reason, action, "%s", message)
}

// RecordRelated is Record with a related object (for example the ticket a VM's event is about).
func (r *Recorder) RecordRelated(obj, related runtime.Object, reason, action, message string) {
	if !r.reasons.Declared(reason) {
		utilruntime.HandleError(fmt.Errorf("event reason %q is not declared by API group %s", reason, r.reasons.Group()))
	}
	r.events.Eventf(obj, related, r.reasons.EventType(reason), reason, action, "%s", message)
}

// Rule says which changes of one condition become events.
type Rule struct {
	// Condition is the condition type followed.
	Condition string
	// ReadyReason, when set, is the event's reason when the condition turns True (so a Ready
	// condition whose reason is "Succeeded" shows as "Ready").
	ReadyReason string
	// Action is what the controller was doing, for the event's action field.
	Action string
	// OutcomesOnly records only the condition turning True or a warning reason, for the
	// platform's internal objects (bindings, plans), which tenants do not read and which pass
	// through several progress states on the way: each event is a write to the API server, and
	// a Workload's way to Ready would otherwise cost twice as many.
	OutcomesOnly bool
}

// Conditions records the events rules call for between two versions of obj's conditions.
func (r *Recorder) Conditions(obj runtime.Object, before, after []metav1.Condition, rules ...Rule) {
	for _, rule := range rules {
		r.condition(obj, before, after, rule)
	}
}

// condition records an event when the condition differs between before and after in status or
// reason (its message alone changing is not a transition).
func (r *Recorder) condition(obj runtime.Object, before, after []metav1.Condition, rule Rule) {
	now := meta.FindStatusCondition(after, rule.Condition)
	if now == nil {
		return
	}
	if rule.OutcomesOnly && now.Status != metav1.ConditionTrue && !r.reasons.IsWarning(now.Reason) {
		return
	}
	if was := meta.FindStatusCondition(before, rule.Condition); was != nil && was.Status == now.Status && was.Reason == now.Reason {
		return
	}
	reason := now.Reason
	if now.Status == metav1.ConditionTrue && rule.ReadyReason != "" {
		reason = rule.ReadyReason
	}
	r.Record(obj, reason, rule.Action, now.Message)
}
