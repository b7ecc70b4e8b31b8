package workload

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// A Workload's update wakes it when its spec, deletion or labels change or on a resync, not
// when only its status was written.
func TestWorkloadChanged(t *testing.T) {
	base := func() *v1b1.Workload {
		w := newWorkload("hello", "registry.example.com/hello:1.0")
		w.ResourceVersion, w.Labels = "10", map[string]string{"tier": "web"}
		return w
	}
	for _, tc := range []struct {
		name   string
		change func(w *v1b1.Workload)
		want   bool
	}{
		{"status write", func(w *v1b1.Workload) {
			w.Status.Conditions = []metav1.Condition{{Type: v1b1.ConditionReady, Status: metav1.ConditionTrue}}
		}, false},
		{"spec change", func(w *v1b1.Workload) { w.Generation++ }, true},
		{"deletion", func(w *v1b1.Workload) { w.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
		{"label change", func(w *v1b1.Workload) { w.Labels["tier"] = "batch" }, true},
		{"label added", func(w *v1b1.Workload) { w.Labels["team"] = "a" }, true},
	} {
		old, obj := base(), base()
		tc.change(obj)
		obj.ResourceVersion = "11"
		if got := workloadChanged(old, obj); got != tc.want {
			t.Errorf("%s: workloadChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !workloadChanged(base(), base()) {
		t.Error("a resync does not wake the workload")
	}
	if !workloadChanged("not a workload", base()) {
		t.Error("an object that is not a Workload does not count as changed")
	}
}

// A plan's update wakes its Workload when RuntimeReady would say something else of it, when its
// spec, deletion or owners change, or on a resync; not for its first RuntimeProvisioning status
// nor for the runtime's progress details.
func TestPlanChanged(t *testing.T) {
	base := func() *v1b1.WorkloadPlan {
		return &v1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "team-a", Generation: 1, ResourceVersion: "10",
			OwnerReferences: []metav1.OwnerReference{{Kind: "Workload", Name: "hello", UID: "w1"}}}}
	}
	ready := func(status metav1.ConditionStatus, reason, message string) func(p *v1b1.WorkloadPlan) {
		return func(p *v1b1.WorkloadPlan) {
			p.Status.ObservedGeneration = p.Generation
			p.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: message}}
		}
	}
	provisioning := ready(metav1.ConditionFalse, v1b1.ReasonRuntimeProvisioning, "The workload is being materialized.")
	for _, tc := range []struct {
		name        string
		before, now func(p *v1b1.WorkloadPlan)
		want        bool
	}{
		{"first status: provisioning", func(*v1b1.WorkloadPlan) {}, provisioning, false},
		{"progress details", provisioning, func(p *v1b1.WorkloadPlan) {
			provisioning(p)
			p.Status.RuntimeInfo = &v1b1.RuntimeInfo{State: "0/1 available"}
		}, false},
		{"ready", provisioning, ready(metav1.ConditionTrue, v1b1.ReasonSucceeded, "The workload is available."), true},
		{"degraded", provisioning, ready(metav1.ConditionFalse, v1b1.ReasonRuntimeDegraded, "Some instances are unavailable."), true},
		{"spec change", provisioning, func(p *v1b1.WorkloadPlan) { provisioning(p); p.Generation++ }, true},
		{"deletion", provisioning, func(p *v1b1.WorkloadPlan) { provisioning(p); p.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
		{"owner removed", provisioning, func(p *v1b1.WorkloadPlan) { provisioning(p); p.OwnerReferences = nil }, true},
	} {
		old, obj := base(), base()
		tc.before(old)
		tc.now(obj)
		obj.ResourceVersion = "11"
		if got := planChanged(old, obj); got != tc.want {
			t.Errorf("%s: planChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !planChanged(base(), base()) {
		t.Error("a resync does not wake the workload")
	}
	if !planChanged("not a plan", base()) {
		t.Error("an object that is not a plan does not count as changed")
	}
}
