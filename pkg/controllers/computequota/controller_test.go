package computequota

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	computequota "github.com/plinth-dev/plinth/pkg/compute/quota"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

var (
	count  = computequota.ResourceCount
	cpu    = computequota.ResourceCPU
	memory = computequota.ResourceMemory
)

func resources(pairs ...interface{}) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i].(corev1.ResourceName)] = *resource.NewQuantity(int64(pairs[i+1].(int)), resource.DecimalSI)
	}
	return out
}

func quota(namespace, name string, hard corev1.ResourceList, status corev1.ResourceQuotaStatus) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: "1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		Status:     status,
	}
}

func tenant(namespace, name string, cpu, memory int32) *computev1alpha1.TenantCompute {
	return &computev1alpha1.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       computev1alpha1.TenantComputeSpec{TenantID: name, Resources: computev1alpha1.ResourceRequirements{CPU: cpu, Memory: memory}},
	}
}

// fixture is a controller whose caches are filled by hand and whose kube client holds the
// same quotas.
type fixture struct {
	c       *Controller
	kube    *kubefake.Clientset
	tenants cache.Indexer
}

func newFixture(t *testing.T, quotas []*corev1.ResourceQuota, tenants ...*computev1alpha1.TenantCompute) *fixture {
	t.Helper()
	var objects []runtime.Object
	for _, rq := range quotas {
		objects = append(objects, rq)
	}
	kube := kubefake.NewClientset(objects...)
	kf := kubeinformers.NewSharedInformerFactory(kube, 0)
	pf := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	c, err := NewController(kube, kf.Core().V1().ResourceQuotas(), pf.Compute().V1alpha1().TenantComputes())
	if err != nil {
		t.Fatal(err)
	}
	for _, rq := range quotas {
		if err := kf.Core().V1().ResourceQuotas().Informer().GetIndexer().Add(rq); err != nil {
			t.Fatal(err)
		}
	}
	indexer := pf.Compute().V1alpha1().TenantComputes().Informer().GetIndexer()
	for _, tc := range tenants {
		if err := indexer.Add(tc); err != nil {
			t.Fatal(err)
		}
	}
	kube.ClearActions()
	return &fixture{c: c, kube: kube, tenants: indexer}
}

// written is the status of the last quota written, or nil.
func (f *fixture) written() *corev1.ResourceQuotaStatus {
	var status *corev1.ResourceQuotaStatus
	for _, action := range f.kube.Actions() {
		if u, ok := action.(clienttesting.UpdateAction); ok && u.GetSubresource() == "status" {
			status = &u.GetObject().(*corev1.ResourceQuota).Status
		}
	}
	return status
}

func TestReconcile(t *testing.T) {
	archived := tenant("team-a", "old", 2000, 2000)
	archived.Spec.Archived = true
	tenants := []*computev1alpha1.TenantCompute{
		tenant("team-a", "shop", 250, 512), tenant("team-a", "blog", 500, 128), archived, tenant("team-b", "other", 4000, 4000),
	}
	for _, tc := range []struct {
		name  string
		quota *corev1.ResourceQuota
		// want is the status written; nil means nothing is written.
		want *corev1.ResourceQuotaStatus
	}{
		{
			name: "first count, other resources left alone",
			quota: quota("team-a", "compute", resources(count, 5, cpu, 1000, corev1.ResourcePods, 10),
				corev1.ResourceQuotaStatus{Hard: resources(corev1.ResourcePods, 10), Used: resources(corev1.ResourcePods, 3)}),
			want: &corev1.ResourceQuotaStatus{
				Hard: resources(count, 5, cpu, 1000, corev1.ResourcePods, 10),
				Used: resources(count, 3, cpu, 750, corev1.ResourcePods, 3),
			},
		},
		{
			name: "a stale charge is given back",
			quota: quota("team-a", "compute", resources(cpu, 1000, memory, 2048),
				corev1.ResourceQuotaStatus{Hard: resources(cpu, 1000, memory, 2048), Used: resources(cpu, 1000, memory, 1024)}),
			want: &corev1.ResourceQuotaStatus{Hard: resources(cpu, 1000, memory, 2048), Used: resources(cpu, 750, memory, 640)},
		},
		{
			name: "current already",
			quota: quota("team-a", "compute", resources(memory, 2048),
				corev1.ResourceQuotaStatus{Hard: resources(memory, 2048), Used: resources(memory, 640)}),
		},
		{
			name: "a limit raised in spec reaches status",
			quota: quota("team-a", "compute", resources(memory, 4096),
				corev1.ResourceQuotaStatus{Hard: resources(memory, 2048), Used: resources(memory, 640)}),
			want: &corev1.ResourceQuotaStatus{Hard: resources(memory, 4096), Used: resources(memory, 640)},
		},
		{
			name: "a compute limit removed from spec leaves status",
			quota: quota("team-a", "compute", resources(corev1.ResourcePods, 10),
				corev1.ResourceQuotaStatus{Hard: resources(cpu, 1000, corev1.ResourcePods, 10), Used: resources(cpu, 750, corev1.ResourcePods, 2)}),
			want: &corev1.ResourceQuotaStatus{Hard: resources(corev1.ResourcePods, 10), Used: resources(corev1.ResourcePods, 2)},
		},
		{
			name:  "no compute resources",
			quota: quota("team-a", "pods", resources(corev1.ResourcePods, 10), corev1.ResourceQuotaStatus{}),
		},
		{
			name:  "empty namespace counts zero",
			quota: quota("team-c", "compute", resources(count, 2, cpu, 1000), corev1.ResourceQuotaStatus{}),
			want:  &corev1.ResourceQuotaStatus{Hard: resources(count, 2, cpu, 1000), Used: resources(count, 0, cpu, 0)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, []*corev1.ResourceQuota{tc.quota}, tenants...)
			if err := f.c.reconcile(context.Background(), cache.NewObjectName(tc.quota.Namespace, tc.quota.Name)); err != nil {
				t.Fatal(err)
			}
			got := f.written()
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("wrote %+v, want no write", got)
			case tc.want != nil && got == nil:
				t.Fatalf("wrote nothing, want %+v", tc.want)
			case tc.want != nil && (!quotav1.Equals(got.Hard, tc.want.Hard) || !quotav1.Equals(got.Used, tc.want.Used)):
				t.Errorf("wrote hard %v used %v, want hard %v used %v", got.Hard, got.Used, tc.want.Hard, tc.want.Used)
			}
		})
	}
}

func TestMissingQuota(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.c.reconcile(context.Background(), cache.NewObjectName("team-a", "gone")); err != nil {
		t.Errorf("a deleted quota: %v", err)
	}
}

// A write that fails (a conflict with an admission charge) is an error, so the key is retried.
func TestWriteFailureIsRetried(t *testing.T) {
	rq := quota("team-a", "compute", resources(cpu, 1000), corev1.ResourceQuotaStatus{})
	f := newFixture(t, []*corev1.ResourceQuota{rq}, tenant("team-a", "shop", 250, 256))
	f.kube.PrependReactor("update", "resourcequotas", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(corev1.Resource("resourcequotas"), "compute", errors.New("changed meanwhile"))
	})
	if err := f.c.reconcile(context.Background(), cache.NewObjectName("team-a", "compute")); err == nil {
		t.Error("a refused write was not reported")
	}
}

func TestQuotasOfTenant(t *testing.T) {
	f := newFixture(t, []*corev1.ResourceQuota{
		quota("team-a", "cpu", resources(cpu, 1000), corev1.ResourceQuotaStatus{}),
		quota("team-a", "count", resources(count, 3, corev1.ResourcePods, 3), corev1.ResourceQuotaStatus{}),
		quota("team-a", "pods", resources(corev1.ResourcePods, 3), corev1.ResourceQuotaStatus{}),
		quota("team-b", "cpu", resources(cpu, 1000), corev1.ResourceQuotaStatus{}),
	})
	var got []string
	for _, key := range f.c.quotasOfTenant(tenant("team-a", "shop", 250, 256)) {
		got = append(got, key.String())
	}
	slices.Sort(got)
	if want := []string{"team-a/count", "team-a/cpu"}; !slices.Equal(got, want) {
		t.Errorf("quotas %v, want %v", got, want)
	}
}

func TestWakeFilters(t *testing.T) {
	shop := tenant("team-a", "shop", 250, 256)
	relabelled := shop.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "gold"}
	relabelled.Status.Phase = computev1alpha1.PhaseReady
	grown := shop.DeepCopy()
	grown.Spec.Resources.Memory = 512
	archived := shop.DeepCopy()
	archived.Spec.Archived = true
	for name, c := range map[string]struct {
		old, new *computev1alpha1.TenantCompute
		want     bool
	}{
		"labels and status": {shop, relabelled, false},
		"memory":            {shop, grown, true},
		"archived":          {shop, archived, true},
	} {
		if got := usageChanged(c.old, c.new); got != c.want {
			t.Errorf("tenant %s: wakes = %v, want %v", name, got, c.want)
		}
	}

	rq := quota("team-a", "compute", resources(cpu, 1000), corev1.ResourceQuotaStatus{})
	charged := rq.DeepCopy()
	charged.Status.Used = resources(cpu, 250)
	raised := rq.DeepCopy()
	raised.Spec.Hard = resources(cpu, 2000)
	if hardChanged(rq, charged) {
		t.Error("a status charge woke the quota")
	}
	if !hardChanged(rq, raised) {
		t.Error("a spec.hard change did not wake the quota")
	}
}

// Run end to end: TenantComputes created, resized and deleted through the API are reflected
// in the quota's status.used.
func TestReplenishment(t *testing.T) {
	rq := quota("team-a", "compute", resources(count, 5, cpu, 2000, memory, 4096), corev1.ResourceQuotaStatus{})
	kube := kubefake.NewClientset(rq)
	plinth := fake.NewSimpleClientset()
	kf, pf := kubeinformers.NewSharedInformerFactory(kube, 0), informers.NewSharedInformerFactory(plinth, 0)
	c, err := NewController(kube, kf.Core().V1().ResourceQuotas(), pf.Compute().V1alpha1().TenantComputes())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kf.Start(ctx.Done())
	pf.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 1) }()
	defer func() { cancel(); <-done }()

	expect := func(want corev1.ResourceList) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err := kube.CoreV1().ResourceQuotas("team-a").Get(ctx, "compute", metav1.GetOptions{})
			return err == nil && quotav1.Equals(got.Status.Used, want), nil
		})
		if err != nil {
			got, _ := kube.CoreV1().ResourceQuotas("team-a").Get(ctx, "compute", metav1.GetOptions{})
			t.Fatalf("status.used %v, want %v", got.Status.Used, want)
		}
	}
	expect(resources(count, 0, cpu, 0, memory, 0))

	tenants := plinth.ComputeV1alpha1().TenantComputes("team-a")
	for _, tc := range []*computev1alpha1.TenantCompute{tenant("team-a", "shop", 250, 512), tenant("team-a", "blog", 500, 256)} {
		if _, err := tenants.Create(ctx, tc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expect(resources(count, 2, cpu, 750, memory, 768))

	blog := tenant("team-a", "blog", 1000, 256)
	if _, err := tenants.Update(ctx, blog, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(resources(count, 2, cpu, 1250, memory, 768))

	if err := tenants.Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(resources(count, 1, cpu, 1000, memory, 256))
}
