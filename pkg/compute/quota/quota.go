// Package quota measures what TenantComputes use of a namespace's ResourceQuotas, as a
// k8s.io/apiserver quota evaluator: plinth-apiserver's ResourceQuota admission plugin charges
// creates and updates with it, and plinth-controller's computequota controller recomputes
// status.used with it, so both count the same way.
//
// A TenantCompute uses three quota resources:
//   - count/tenantcomputes.compute.plinth.dev: 1 per object (the generic object count);
//   - compute.plinth.dev/cpu: spec.resources.cpu, in millicores;
//   - compute.plinth.dev/memory: spec.resources.memory, in megabytes.
//
// The quantities are plain integers in the API's own units, not Kubernetes CPU and memory
// quantities: "compute.plinth.dev/cpu: 1000" in a quota allows 1000 millicores (one CPU, for
// example four tenants of 250), and "compute.plinth.dev/memory: 2048" allows 2048 MB.
// Kubernetes validates names with a domain like these as integer resources, so "1.5" or
// "500m" are refused when the quota is written, and prints them in canonical form: 1000 is
// shown as 1k (a thousand millicores), 2048 as 2048.
//
// An archived tenant (spec.archived) has no compute left, so it uses no cpu or memory, as a
// terminated Pod uses none of its namespace's requests.cpu; it still counts as an object.
// Clearing spec.archived is then charged like a create. A suspended tenant keeps its cpu and
// memory: it is stopped, not given up, and resuming it must not fail on quota.
package quota

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

// GroupResource is what the evaluator measures: TenantComputes.
var GroupResource = computev1alpha1.Resource("tenantcomputes")

// The quota resources a TenantCompute uses.
const (
	// ResourceCPU is the sum of spec.resources.cpu, in millicores.
	ResourceCPU corev1.ResourceName = "compute.plinth.dev/cpu"
	// ResourceMemory is the sum of spec.resources.memory, in megabytes.
	ResourceMemory corev1.ResourceName = "compute.plinth.dev/memory"
)

// ResourceCount is the number of TenantComputes: count/tenantcomputes.compute.plinth.dev.
var ResourceCount = generic.ObjectCountQuotaResourceNameFor(GroupResource)

// ResourceNames are every quota resource a TenantCompute uses.
var ResourceNames = []corev1.ResourceName{ResourceCount, ResourceCPU, ResourceMemory}

// IsComputeResource says whether name is one of ResourceNames.
func IsComputeResource(name corev1.ResourceName) bool {
	return quota.Contains(ResourceNames, name)
}

// computeUsage is the cpu and memory a TenantCompute uses: none once it is archived.
func computeUsage(cpu, memory int32, archived bool) corev1.ResourceList {
	if archived {
		cpu, memory = 0, 0
	}
	return corev1.ResourceList{
		ResourceCPU:    *resource.NewQuantity(int64(cpu), resource.DecimalSI),
		ResourceMemory: *resource.NewQuantity(int64(memory), resource.DecimalSI),
	}
}

// Used recomputes, from the TenantComputes list returns for rq's namespace, the usage of the
// compute resources rq limits (those of ResourceNames in its spec.hard), with the evaluator
// admission charges with. The result has exactly those resources.
func Used(rq *corev1.ResourceQuota, list generic.ListFuncByNamespace) (corev1.ResourceList, error) {
	registry := generic.NewRegistry([]quota.Evaluator{NewEvaluator(list)})
	return quota.CalculateUsage(rq.Namespace, rq.Spec.Scopes, rq.Spec.Hard, registry, rq.Spec.ScopeSelector)
}

// evaluator is the generic object count evaluator of TenantComputes, which gives it
// Constraints, GroupResource and its (absent) scopes, plus cpu and memory. The quota registry
// holds one evaluator per resource, so the count cannot be a second evaluator.
type evaluator struct {
	quota.Evaluator
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = evaluator{}

// NewEvaluator returns the TenantCompute evaluator. list lists a namespace's TenantComputes
// for UsageStats; admission never lists (it charges each request against status.used) and
// passes nil.
func NewEvaluator(list generic.ListFuncByNamespace) quota.Evaluator {
	return evaluator{Evaluator: generic.NewObjectCountEvaluator(GroupResource, list, ""), list: list}
}

// NewConfiguration is the quota configuration of plinth-apiserver's ResourceQuota admission
// plugin: the TenantCompute evaluator. Any other namespaced Plinth resource gets the plugin's
// generic object count (count/<resource>.<group>), as custom resources do in kube-apiserver.
func NewConfiguration() quota.Configuration {
	return generic.NewConfiguration([]quota.Evaluator{NewEvaluator(nil)}, nil)
}

// Handles creates and updates of the object itself: an update can change cpu, memory or
// archived. Status writes change none of them.
func (e evaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	return a.GetSubresource() == "" && (op == admission.Create || op == admission.Update)
}

// Matches is true for a quota that limits any of ResourceNames (and has no scopes, which a
// TenantCompute never matches).
func (e evaluator) Matches(rq *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(rq, item, e.MatchingResources, generic.MatchesNoScopeFunc)
}

// MatchingResources is the part of input among ResourceNames.
func (e evaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	return quota.Intersection(input, ResourceNames)
}

// Usage is what item, a TenantCompute of the internal API (admission) or of v1alpha1
// (controllers), uses.
func (e evaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	count, err := e.Evaluator.Usage(item)
	if err != nil {
		return nil, err
	}
	var used corev1.ResourceList
	switch tc := item.(type) {
	case *compute.TenantCompute:
		used = computeUsage(tc.Spec.Resources.CPU, tc.Spec.Resources.Memory, tc.Spec.Archived)
	case *computev1alpha1.TenantCompute:
		used = computeUsage(tc.Spec.Resources.CPU, tc.Spec.Resources.Memory, tc.Spec.Archived)
	default:
		return nil, fmt.Errorf("quota: %T is not a TenantCompute", item)
	}
	return quota.Add(used, count), nil
}

// UsageStats sums the usage of a namespace's TenantComputes.
func (e evaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	if e.list == nil {
		return quota.UsageStats{}, fmt.Errorf("quota: the %s evaluator was built without a lister", GroupResource)
	}
	return generic.CalculateUsageStats(options, e.list, generic.MatchesNoScopeFunc, e.Usage)
}
