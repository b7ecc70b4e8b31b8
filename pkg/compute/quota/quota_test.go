package quota

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authentication/user"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

func internalTenant(name string, cpu, memory int32) *compute.TenantCompute {
	return &compute.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
		Spec:       compute.TenantComputeSpec{TenantID: name, Resources: compute.ResourceRequirements{CPU: cpu, Memory: memory}},
	}
}

func versionedTenant(name string, cpu, memory int32) *computev1alpha1.TenantCompute {
	return &computev1alpha1.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
		Spec:       computev1alpha1.TenantComputeSpec{TenantID: name, Resources: computev1alpha1.ResourceRequirements{CPU: cpu, Memory: memory}},
	}
}

func list(items ...*computev1alpha1.TenantCompute) func(string) ([]runtime.Object, error) {
	return func(namespace string) ([]runtime.Object, error) {
		var out []runtime.Object
		for _, tc := range items {
			if tc.Namespace == namespace {
				out = append(out, tc)
			}
		}
		return out, nil
	}
}

func resources(pairs ...interface{}) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i].(corev1.ResourceName)] = *resource.NewQuantity(int64(pairs[i+1].(int)), resource.DecimalSI)
	}
	return out
}

func TestResourceNames(t *testing.T) {
	if ResourceCount != "count/tenantcomputes.compute.plinth.dev" {
		t.Errorf("count resource %q", ResourceCount)
	}
	for _, name := range ResourceNames {
		if !IsComputeResource(name) {
			t.Errorf("%s is not a compute resource", name)
		}
	}
	if IsComputeResource(corev1.ResourceCPU) || IsComputeResource("count/pods") {
		t.Error("core resources are not compute resources")
	}
}

func TestUsage(t *testing.T) {
	e := NewEvaluator(nil)
	archived := versionedTenant("old", 500, 256)
	archived.Spec.Archived = true
	suspended := internalTenant("paused", 300, 128)
	suspended.Spec.Suspended = true
	for _, tc := range []struct {
		name string
		item runtime.Object
		want corev1.ResourceList
	}{
		{"internal", internalTenant("shop", 250, 512), resources(ResourceCount, 1, ResourceCPU, 250, ResourceMemory, 512)},
		{"versioned", versionedTenant("shop", 1000, 128), resources(ResourceCount, 1, ResourceCPU, 1000, ResourceMemory, 128)},
		{"archived uses no compute", archived, resources(ResourceCount, 1, ResourceCPU, 0, ResourceMemory, 0)},
		{"suspended keeps its compute", suspended, resources(ResourceCount, 1, ResourceCPU, 300, ResourceMemory, 128)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Usage(tc.item)
			if err != nil {
				t.Fatal(err)
			}
			if !quotav1.Equals(got, tc.want) {
				t.Errorf("usage %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := e.Usage(&corev1.Pod{}); err == nil {
		t.Error("a Pod was measured as a TenantCompute")
	}
}

func TestHandles(t *testing.T) {
	e := NewEvaluator(nil)
	tc := internalTenant("shop", 250, 256)
	for _, c := range []struct {
		op          admission.Operation
		subresource string
		want        bool
	}{
		{admission.Create, "", true},
		{admission.Update, "", true},
		{admission.Update, "status", false},
		{admission.Delete, "", false},
		{admission.Connect, "", false},
	} {
		a := admission.NewAttributesRecord(tc, nil, compute.Kind("TenantCompute").WithVersion(""), tc.Namespace, tc.Name,
			compute.Resource("tenantcomputes").WithVersion(""), c.subresource, c.op, nil, false, &user.DefaultInfo{Name: "alice"})
		if got := e.Handles(a); got != c.want {
			t.Errorf("%s %q: handles = %v, want %v", c.op, c.subresource, got, c.want)
		}
	}
}

func TestMatches(t *testing.T) {
	e := NewEvaluator(nil)
	tc := versionedTenant("shop", 250, 256)
	quota := func(hard corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}, Status: corev1.ResourceQuotaStatus{Hard: hard}}
	}
	for _, c := range []struct {
		name string
		rq   *corev1.ResourceQuota
		want bool
	}{
		{"count", quota(resources(ResourceCount, 3)), true},
		{"cpu", quota(resources(ResourceCPU, 1000)), true},
		{"memory among others", quota(resources(ResourceMemory, 1024, corev1.ResourcePods, 3)), true},
		{"pods only", quota(resources(corev1.ResourcePods, 3, corev1.ResourceCPU, 2)), false},
		{"scoped", quota(resources(ResourceCPU, 1000), corev1.ResourceQuotaScopeBestEffort), false},
	} {
		got, err := e.Matches(c.rq, tc)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestUsed(t *testing.T) {
	archived := versionedTenant("old", 4000, 4096)
	archived.Spec.Archived = true
	other := versionedTenant("elsewhere", 9000, 9000)
	other.Namespace = "team-b"
	tenants := list(versionedTenant("shop", 250, 512), versionedTenant("blog", 500, 128), archived, other)
	rq := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "team-a"},
		Spec:       corev1.ResourceQuotaSpec{Hard: resources(ResourceCount, 10, ResourceCPU, 1000, corev1.ResourcePods, 5)},
	}
	got, err := Used(rq, tenants)
	if err != nil {
		t.Fatal(err)
	}
	// Only the compute resources the quota limits: no memory, no pods.
	if want := resources(ResourceCount, 3, ResourceCPU, 750); !quotav1.Equals(got, want) {
		t.Errorf("used %v, want %v", got, want)
	}

	rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}
	got, err = Used(rq, tenants)
	if err != nil {
		t.Fatal(err)
	}
	if want := resources(ResourceCount, 0, ResourceCPU, 0); !quotav1.Equals(got, want) {
		t.Errorf("scoped quota: used %v, want nothing counted (%v)", got, want)
	}

	if _, err := NewEvaluator(nil).UsageStats(quotav1.UsageStatsOptions{Namespace: "team-a", Resources: ResourceNames}); err == nil {
		t.Error("UsageStats without a lister did not fail")
	}
}

// The ResourceQuota admission plugin's own check, with this package's evaluator: a quota of
// 1000 cpu is 1000 millicores, updates are charged their difference, and the refusal is the
// one kube-apiserver gives for Pods.
func TestCheckRequest(t *testing.T) {
	e := NewEvaluator(nil)
	hard := resources(ResourceCount, 5, ResourceCPU, 1000, ResourceMemory, 2048)
	rq := corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "team-a", ResourceVersion: "1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: resources(ResourceCount, 0, ResourceCPU, 0, ResourceMemory, 0)},
	}
	quotas := []corev1.ResourceQuota{rq}
	attrs := func(tc, old *compute.TenantCompute, op admission.Operation) admission.Attributes {
		var oldObj runtime.Object
		if old != nil {
			oldObj = old
		}
		return admission.NewAttributesRecord(tc, oldObj, compute.Kind("TenantCompute").WithVersion(""), tc.Namespace, tc.Name,
			compute.Resource("tenantcomputes").WithVersion(""), "", op, nil, false, &user.DefaultInfo{Name: "alice"})
	}
	for i, name := range []string{"a", "b", "c", "d"} {
		out, err := resourcequota.CheckRequest(quotas, attrs(internalTenant(name, 250, 256), nil, admission.Create), e, nil)
		if err != nil {
			t.Fatalf("tenant %d of 250 millicores refused under 1000: %v", i+1, err)
		}
		quotas = out
	}
	if want := resources(ResourceCount, 4, ResourceCPU, 1000, ResourceMemory, 1024); !quotav1.Equals(quotas[0].Status.Used, want) {
		t.Fatalf("charged %v, want %v", quotas[0].Status.Used, want)
	}
	_, err := resourcequota.CheckRequest(quotas, attrs(internalTenant("e", 128, 128), nil, admission.Create), e, nil)
	// Kubernetes prints integer quantities in canonical form: 1000 is 1k.
	want := "exceeded quota: compute, requested: compute.plinth.dev/cpu=128, used: compute.plinth.dev/cpu=1k, limited: compute.plinth.dev/cpu=1k"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("fifth tenant: %v, want %q", err, want)
	}

	// An update is charged what it adds; archiving frees nothing at admission (the controller
	// recomputes) but is never refused.
	old := internalTenant("d", 250, 256)
	old.ResourceVersion = "7"
	grown := internalTenant("d", 250, 1280)
	out, err := resourcequota.CheckRequest(quotas, attrs(grown, old, admission.Update), e, nil)
	if err != nil {
		t.Fatalf("memory within quota refused: %v", err)
	}
	if want := resources(ResourceCount, 4, ResourceCPU, 1000, ResourceMemory, 2048); !quotav1.Equals(out[0].Status.Used, want) {
		t.Errorf("update charged %v, want %v", out[0].Status.Used, want)
	}
	more := internalTenant("d", 500, 256)
	if _, err := resourcequota.CheckRequest(quotas, attrs(more, old, admission.Update), e, nil); err == nil || !strings.Contains(err.Error(), "requested: compute.plinth.dev/cpu=250") {
		t.Errorf("update adding 250 millicores over the quota: %v", err)
	}
	archived := internalTenant("d", 250, 256)
	archived.Spec.Archived = true
	if _, err := resourcequota.CheckRequest(quotas, attrs(archived, old, admission.Update), e, nil); err != nil {
		t.Errorf("archiving refused: %v", err)
	}
}
