package compute

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// Status is a runtime's report on a plan, in the workload vocabulary.
type Status struct {
	// Ready is true when the workload runs as planned.
	Ready bool
	// Reason is RuntimeProvisioning, RuntimeDegraded or Succeeded (or another seed reason).
	Reason string
	// Message is one neutral sentence without runtime nouns.
	Message string
	// State and Details are runtime-specific, for WorkloadPlan.status.runtimeInfo.
	State   string
	Details map[string]string
}

// Runtime materializes WorkloadPlans of one runtime class. A runtime turns a plan into running
// things and reports their health; owned objects are removed by garbage collection when the
// plan goes; a plan that moves to another runtime class keeps its UID, so runtimes that make
// objects also implement Withdrawer. Apply is idempotent.
type Runtime interface {
	Name() string
	Apply(ctx context.Context, plan *v1b1.WorkloadPlan, bindings map[string]*v1b1.ResourceBinding) (Status, error)
}

// Withdrawer is implemented by runtimes that make objects for a plan. A Workload's runtime class
// may change; the plan keeps its name and UID, so the garbage collector removes nothing, and the
// runtime that materialized the plan before is asked to Withdraw: to delete what it made for the
// plan (only objects the plan controls and this runtime made: the new runtime may have taken over
// an object of the same name). Withdraw is idempotent and reports done once everything it made is
// gone or its deletion accepted; until then the WorkloadPlan controller calls it again.
type Withdrawer interface {
	Withdraw(ctx context.Context, plan *v1b1.WorkloadPlan) (done bool, err error)
}

// Releaser is implemented by runtimes that keep state per plan in memory; Release is called
// once a plan is gone.
type Releaser interface {
	Release(namespace, name string)
}

// PlanNotifier is implemented by runtimes that read objects of their own from informers (the
// kubevirt runtime's ManagedVMs). The WorkloadPlan controller waits for these informers' caches
// before it reconciles and, when one of their objects changes, wakes the plans PlansFor names:
// a change the runtime waits for (an approval) is seen at once instead of at the next poll.
type PlanNotifier interface {
	Informers() []cache.SharedIndexInformer
	PlansFor(obj interface{}) []cache.ObjectName
}
