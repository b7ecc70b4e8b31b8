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
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"

	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	computequota "github.com/plinth-dev/plinth/pkg/compute/quota"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
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
	c, err := NewController(kube, kf.Core().V1().ResourceQuotas(), pf.Compute().V1alpha1().TenantComputes(), Options{})
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

// written is the status of the last quota written, or nil. Every write must name the
// controller's field manager.
func (f *fixture) written(t *testing.T) *corev1.ResourceQuotaStatus {
	t.Helper()
	var status *corev1.ResourceQuotaStatus
	for _, action := range f.kube.Actions() {
		if u, ok := action.(clienttesting.UpdateActionImpl); ok && u.GetSubresource() == "status" {
			status = &u.GetObject().(*corev1.ResourceQuota).Status
			if fm := u.GetUpdateOptions().FieldManager; fm != FieldManager {
				t.Errorf("a status write by field manager %q, want %q", fm, FieldManager)
			}
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
			got := f.written(t)
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

// For the charge delay after a charge, a recount keeps what status.used says where it is more
// than the count: the charge may be for a tenant the cache has not seen yet.
func TestChargeIsHeld(t *testing.T) {
	shop := tenant("team-a", "shop", 250, 256)
	key := cache.NewObjectName("team-a", "compute")
	for name, c := range map[string]struct {
		quota *corev1.ResourceQuota
		// held and after are the status.used written while the charge is held and after the
		// delay; nil means nothing is written.
		held, after corev1.ResourceList
	}{
		"a charge beyond the count": {
			quota: quota("team-a", "compute", resources(cpu, 1000, memory, 1024),
				corev1.ResourceQuotaStatus{Hard: resources(cpu, 1000, memory, 1024), Used: resources(cpu, 750, memory, 256)}),
			after: resources(cpu, 250, memory, 256),
		},
		"a count beyond the charge, per resource": {
			quota: quota("team-a", "compute", resources(cpu, 1000, memory, 1024),
				corev1.ResourceQuotaStatus{Hard: resources(cpu, 1000, memory, 1024), Used: resources(cpu, 750, memory, 0)}),
			held:  resources(cpu, 750, memory, 256),
			after: resources(cpu, 250, memory, 256),
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, []*corev1.ResourceQuota{c.quota}, shop)
			clk := clocktesting.NewFakePassiveClock(time.Now())
			f.c.clock = clk
			f.c.observeCharge(quota("team-a", "compute", nil, corev1.ResourceQuotaStatus{}), c.quota)
			for _, step := range []struct {
				advance time.Duration
				want    corev1.ResourceList
			}{{DefaultChargeDelay - time.Millisecond, c.held}, {time.Millisecond, c.after}} {
				clk.SetTime(clk.Now().Add(step.advance))
				f.kube.ClearActions()
				if err := f.c.reconcile(context.Background(), key); err != nil {
					t.Fatal(err)
				}
				switch got := f.written(t); {
				case step.want == nil && got != nil:
					t.Errorf("wrote %v while the charge is held, want it kept", got.Used)
				case step.want != nil && (got == nil || !quotav1.Equals(got.Used, step.want)):
					t.Errorf("wrote %v, want used %v", got, step.want)
				}
			}
		})
	}

	// The controller's own write is not a charge; an update after it is.
	f := newFixture(t, nil)
	base := quota("team-a", "compute", resources(cpu, 1000), corev1.ResourceQuotaStatus{})
	own := quota("team-a", "compute", resources(cpu, 1000), corev1.ResourceQuotaStatus{Used: resources(cpu, 250)})
	own.ResourceVersion = "2"
	f.c.written.Record(key, base, own)
	f.c.observeCharge(base, own)
	if _, held := f.c.heldUntil(key); held {
		t.Error("the controller's own write was held as a charge")
	}
	charged := own.DeepCopy()
	charged.ResourceVersion = "3"
	charged.Status.Used = resources(cpu, 500)
	f.c.observeCharge(own, charged)
	if _, held := f.c.heldUntil(key); !held {
		t.Error("a charge was not held")
	}
	// A deleted quota is forgotten.
	f.c.written.Record(key, charged, charged)
	if err := f.c.reconcile(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if _, held := f.c.heldUntil(key); held || f.c.written.Len() != 0 {
		t.Error("a deleted quota is still remembered")
	}
}

func TestQuotasOfNamespace(t *testing.T) {
	f := newFixture(t, []*corev1.ResourceQuota{
		quota("team-a", "cpu", resources(cpu, 1000), corev1.ResourceQuotaStatus{}),
		quota("team-a", "count", resources(count, 3, corev1.ResourcePods, 3), corev1.ResourceQuotaStatus{}),
		quota("team-a", "pods", resources(corev1.ResourcePods, 3), corev1.ResourceQuotaStatus{}),
		quota("team-b", "cpu", resources(cpu, 1000), corev1.ResourceQuotaStatus{}),
	})
	var got []string
	for _, key := range f.c.quotasOfNamespace(tenant("team-a", "shop", 250, 256)) {
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
		t.Error("a status charge woke the quota at once")
	}
	if !computeUsedChanged(rq, charged) {
		t.Error("a status charge did not wake the quota after the charge delay")
	}
	podsCharged := rq.DeepCopy()
	podsCharged.Status.Used = resources(corev1.ResourcePods, 2)
	if computeUsedChanged(rq, podsCharged) || computeUsedChanged(rq, raised) {
		t.Error("a change of other resources' usage, or of spec.hard, counted as a compute charge")
	}
	if !hardChanged(rq, raised) {
		t.Error("a spec.hard change did not wake the quota")
	}
}

// running is the controller run end to end against fake clusters.
type running struct {
	c      *Controller
	ctx    context.Context
	kube   *kubefake.Clientset
	plinth *fake.Clientset
}

func run(t *testing.T, opts Options, rq *corev1.ResourceQuota) *running {
	t.Helper()
	kube := kubefake.NewClientset(rq)
	// Writes from a stale copy conflict, as with an API server: the fake cluster would otherwise
	// let the controller's status write, which stores the whole object there, undo a change of
	// spec.hard made meanwhile.
	looptest.ResourceVersions(&kube.Fake, kube.Tracker(), corev1.SchemeGroupVersion.WithResource("resourcequotas"))
	plinth := fake.NewSimpleClientset()
	kf, pf := kubeinformers.NewSharedInformerFactory(kube, 0), informers.NewSharedInformerFactory(plinth, 0)
	c, err := NewController(kube, kf.Core().V1().ResourceQuotas(), pf.Compute().V1alpha1().TenantComputes(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	kf.Start(ctx.Done())
	pf.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 1) }()
	t.Cleanup(func() { cancel(); <-done })
	return &running{c: c, ctx: ctx, kube: kube, plinth: plinth}
}

// used is the status.used of quota team-a/compute.
func (r *running) used(t *testing.T) corev1.ResourceList {
	t.Helper()
	got, err := r.kube.CoreV1().ResourceQuotas("team-a").Get(r.ctx, "compute", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Used
}

// expect waits until quota team-a/compute's status.used is want.
func (r *running) expect(t *testing.T, want corev1.ResourceList) {
	t.Helper()
	err := wait.PollUntilContextCancel(r.ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := r.kube.CoreV1().ResourceQuotas("team-a").Get(ctx, "compute", metav1.GetOptions{})
		return err == nil && quotav1.Equals(got.Status.Used, want), nil
	})
	if err != nil {
		t.Fatalf("status.used %v, want %v", r.used(t), want)
	}
}

// charge does what the admission plugin does for a create it admits: it adds the tenant's
// usage to status.used, before the create is stored (or refused).
func (r *running) charge(t *testing.T, cpuMillis int64) {
	t.Helper()
	// Admission charges from the quota it read, and reads again on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rq, err := r.kube.CoreV1().ResourceQuotas("team-a").Get(r.ctx, "compute", metav1.GetOptions{})
		if err != nil {
			return err
		}
		used := rq.Status.Used[cpu]
		used.Add(*resource.NewQuantity(cpuMillis, resource.DecimalSI))
		rq.Status.Used[cpu] = used
		_, err = r.kube.CoreV1().ResourceQuotas("team-a").UpdateStatus(r.ctx, rq, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// Run end to end: TenantComputes created, resized and deleted through the API are reflected
// in the quota's status.used.
func TestReplenishment(t *testing.T) {
	r := run(t, Options{}, quota("team-a", "compute", resources(count, 5, cpu, 2000, memory, 4096), corev1.ResourceQuotaStatus{}))
	r.expect(t, resources(count, 0, cpu, 0, memory, 0))

	tenants := r.plinth.ComputeV1alpha1().TenantComputes("team-a")
	for _, tc := range []*computev1alpha1.TenantCompute{tenant("team-a", "shop", 250, 512), tenant("team-a", "blog", 500, 256)} {
		if _, err := tenants.Create(r.ctx, tc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r.expect(t, resources(count, 2, cpu, 750, memory, 768))

	blog := tenant("team-a", "blog", 1000, 256)
	if _, err := tenants.Update(r.ctx, blog, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.expect(t, resources(count, 2, cpu, 1250, memory, 768))

	if err := tenants.Delete(r.ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.expect(t, resources(count, 1, cpu, 1000, memory, 256))
}

// held waits until the controller holds a charge of quota team-a/compute.
func (r *running) held(t *testing.T) {
	t.Helper()
	if err := wait.PollUntilContextCancel(r.ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		_, held := r.c.heldUntil(cache.NewObjectName("team-a", "compute"))
		return held, nil
	}); err != nil {
		t.Fatal("the charge was not seen")
	}
}

// recount has quota team-a/compute recounted now, by raising its cpu limit in spec.hard, and
// returns the status.used of the recount: the one written with that limit in status.hard.
func (r *running) recount(t *testing.T, cpuLimit int) corev1.ResourceList {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rq, err := r.kube.CoreV1().ResourceQuotas("team-a").Get(r.ctx, "compute", metav1.GetOptions{})
		if err != nil {
			return err
		}
		rq.Spec.Hard = resources(cpu, cpuLimit)
		_, err = r.kube.CoreV1().ResourceQuotas("team-a").Update(r.ctx, rq, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var (
		got *corev1.ResourceQuota
		err error
	)
	if err := wait.PollUntilContextCancel(r.ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err = r.kube.CoreV1().ResourceQuotas("team-a").Get(ctx, "compute", metav1.GetOptions{})
		return err == nil && quotav1.Equals(quotav1.Mask(got.Status.Hard, []corev1.ResourceName{cpu}), resources(cpu, cpuLimit)), nil
	}); err != nil {
		t.Fatalf("the raised limit was not recounted: status %+v", got.Status)
	}
	return got.Status.Used
}

// A charge for a create that was refused after admission (a duplicate tenant ID) is given back
// once the charge delay has passed, but not before: the tenant of a charge that is being stored
// may not be in the cache yet. The delay is measured on the controller's clock, which only the
// test moves, so what a recount before and after it writes does not depend on how fast the
// machine is.
func TestRefusedChargeIsGivenBack(t *testing.T) {
	const delay = 200 * time.Millisecond
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := run(t, Options{ChargeDelay: delay, ResyncPeriod: time.Hour, Clock: clk}, quota("team-a", "compute", resources(cpu, 2000), corev1.ResourceQuotaStatus{}))
	r.expect(t, resources(cpu, 0))

	r.charge(t, 500)
	r.held(t)
	if got := r.recount(t, 3000); !quotav1.Equals(got, resources(cpu, 500)) {
		t.Fatalf("status.used %v from a recount before the charge delay passed, want the charge kept", got)
	}
	clk.SetTime(clk.Now().Add(delay))
	r.expect(t, resources(cpu, 0))

	// A charge whose tenant is stored meanwhile is counted, not given back.
	r.charge(t, 250)
	if _, err := r.plinth.ComputeV1alpha1().TenantComputes("team-a").Create(r.ctx, tenant("team-a", "shop", 250, 128), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(r.ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		_, err := r.c.tenants.TenantComputes("team-a").Get("shop")
		return err == nil, nil
	}); err != nil {
		t.Fatal("the tenant did not reach the cache")
	}
	clk.SetTime(clk.Now().Add(delay))
	if got := r.recount(t, 4000); !quotav1.Equals(got, resources(cpu, 250)) {
		t.Errorf("status.used %v from a recount after the charge delay, want the stored tenant counted", got)
	}
}

// Every quota is recounted once per resync period, also with nothing to wake it: here a charge
// whose delay has passed (by the clock the controller holds charges with) but whose own recount
// is an hour away.
func TestPeriodicRecount(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := run(t, Options{ChargeDelay: time.Hour, ResyncPeriod: 200 * time.Millisecond, Clock: clk},
		quota("team-a", "compute", resources(cpu, 2000), corev1.ResourceQuotaStatus{}))
	r.expect(t, resources(cpu, 0))
	r.charge(t, 500)
	r.held(t)
	// The clock moves an hour every 50ms rather than once: the controller's own status write
	// can reach its informer before it has noted the write's resourceVersion, and is then taken
	// for a charge (held for a charge delay more: 2s in production, but an hour of a clock that
	// never moves again here).
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		for r.ctx.Err() == nil {
			if got, err := r.kube.CoreV1().ResourceQuotas("team-a").Get(r.ctx, "compute", metav1.GetOptions{}); err == nil && quotav1.Equals(got.Status.Used, resources(cpu, 0)) {
				return
			}
			clk.SetTime(clk.Now().Add(time.Hour))
			time.Sleep(50 * time.Millisecond)
		}
	}()
	r.expect(t, resources(cpu, 0))
	<-moved
}

func TestOptions(t *testing.T) {
	kf := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	pf := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	newController := func(opts Options) (*Controller, error) {
		return NewController(kubefake.NewClientset(), kf.Core().V1().ResourceQuotas(), pf.Compute().V1alpha1().TenantComputes(), opts)
	}
	c, err := newController(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.resync != DefaultResyncPeriod || c.chargeDelay != DefaultChargeDelay {
		t.Errorf("defaults: resync %s, charge delay %s", c.resync, c.chargeDelay)
	}
	for _, opts := range []Options{{ResyncPeriod: -time.Second}, {ChargeDelay: -time.Second}} {
		if _, err := newController(opts); err == nil {
			t.Errorf("%+v was accepted", opts)
		}
	}
}
