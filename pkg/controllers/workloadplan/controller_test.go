package workloadplan

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// reportingRuntime reports a fixed status and counts its calls per plan. It watches
// ManagedVMs, mapping each to the plan its label names.
type reportingRuntime struct {
	status   compute.Status
	informer cache.SharedIndexInformer
	mu       sync.Mutex
	applied  map[string]int
}

func (r *reportingRuntime) Name() string { return "vm" }

func (r *reportingRuntime) Apply(_ context.Context, plan *v1b1.WorkloadPlan, _ map[string]*v1b1.ResourceBinding) (compute.Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied[plan.Namespace+"/"+plan.Name]++
	return r.status, nil
}

func (r *reportingRuntime) calls(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied[key]
}

func (r *reportingRuntime) Informers() []cache.SharedIndexInformer {
	return []cache.SharedIndexInformer{r.informer}
}

func (r *reportingRuntime) PlansFor(obj interface{}) []cache.ObjectName {
	vm, ok := obj.(*gov.ManagedVM)
	if !ok || vm.Labels["plan"] == "" {
		return nil
	}
	return []cache.ObjectName{cache.NewObjectName(vm.Namespace, vm.Labels["plan"])}
}

func plan(class string) *v1b1.WorkloadPlan {
	return &v1b1.WorkloadPlan{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", Generation: 1},
		Spec: v1b1.WorkloadPlanSpec{WorkloadRef: v1b1.PlanWorkloadReference{Name: "shop"}, RuntimeClass: class}}
}

// newController builds the controller over fake clients with one runtime, "vm", and the plan
// in its cache.
func newController(t *testing.T, status compute.Status, p *v1b1.WorkloadPlan) (*Controller, *fake.Clientset, *reportingRuntime, func(<-chan struct{})) {
	t.Helper()
	plinth, kube := fake.NewSimpleClientset(p), kubefake.NewSimpleClientset()
	pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
	rt := &reportingRuntime{status: status, informer: pf.Governance().V1alpha1().ManagedVMs().Informer(), applied: map[string]int{}}
	runtimes := compute.NewRegistry()
	if err := runtimes.Register(compute.Entry{Name: rt.Name(), Runtime: rt}); err != nil {
		t.Fatal(err)
	}
	score, core, apps := pf.Score().V1b1(), kf.Core().V1(), kf.Apps().V1()
	c, err := New(plinth, events.NewFakeRecorder(10), runtimes, score.WorkloadPlans(), score.ResourceBindings(),
		apps.Deployments(), core.Services(), core.Secrets())
	if err != nil {
		t.Fatal(err)
	}
	if err := score.WorkloadPlans().Informer().GetIndexer().Add(p); err != nil {
		t.Fatal(err)
	}
	return c, plinth, rt, func(stop <-chan struct{}) { pf.Start(stop); kf.Start(stop) }
}

// A runtime's report sets the plan's phase: waiting (RuntimeSelecting from a runtime, for
// example for an approval) and rolling out are Planning, looked at again; a plan the runtime
// cannot materialize, a request the platform refused and a class no runtime handles are
// Failed until something changes.
func TestPhaseFollowsTheReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		class  string
		status compute.Status
		phase  v1b1.PlanPhase
		reason string
	}{
		{"waiting for approval", "vm", compute.Status{Reason: v1b1.ReasonRuntimeSelecting, Message: "The virtual machine waits for approval of ticket tkt-1."},
			v1b1.PlanPhasePlanning, v1b1.ReasonRuntimeSelecting},
		{"provisioning", "vm", compute.Status{Reason: v1b1.ReasonRuntimeProvisioning, Message: "The virtual machine is being created."},
			v1b1.PlanPhasePlanning, v1b1.ReasonRuntimeProvisioning},
		{"rejected", "vm", compute.Status{Reason: v1b1.ReasonPermissionDenied, Message: "The virtual machine was rejected in ticket tkt-1."},
			v1b1.PlanPhaseFailed, v1b1.ReasonPermissionDenied},
		{"refused", "vm", compute.Status{Reason: v1b1.ReasonProjectionError, Message: "The workload has no container to run."},
			v1b1.PlanPhaseFailed, v1b1.ReasonProjectionError},
		{"ready", "vm", compute.Status{Ready: true, Reason: v1b1.ReasonSucceeded, Message: "The workload runs in its virtual machine."},
			v1b1.PlanPhaseProjected, v1b1.ReasonSucceeded},
		{"no runtime for the class", "nomad", compute.Status{}, v1b1.PlanPhaseFailed, v1b1.ReasonRuntimeSelecting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, plinth, _, _ := newController(t, tc.status, plan(tc.class))
			if err := c.reconcile(context.Background(), cache.NewObjectName("team-a", "shop")); err != nil {
				t.Fatal(err)
			}
			got, err := plinth.ScoreV1b1().WorkloadPlans("team-a").Get(context.Background(), "shop", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ready := apimeta.FindStatusCondition(got.Status.Conditions, "Ready")
			if got.Status.Phase != tc.phase || ready == nil || ready.Reason != tc.reason {
				t.Errorf("phase %s, Ready %+v; want %s, %s", got.Status.Phase, ready, tc.phase, tc.reason)
			}
		})
	}
}

// A change of an object a runtime watches (compute.PlanNotifier) reconciles the plan it names
// at once, without waiting for the plan's next poll.
func TestNotifierObjectsWakeTheirPlan(t *testing.T) {
	c, plinth, rt, start := newController(t, compute.Status{Reason: v1b1.ReasonPermissionDenied, Message: "Refused."}, plan("vm"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx, 1) }()
	defer func() { cancel(); <-done }()

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The plan's own add event, then its status write: a Failed plan is not polled.
	waitFor("the first reconcile", func() bool { return rt.calls("team-a/shop") >= 1 })
	time.Sleep(200 * time.Millisecond)
	before := rt.calls("team-a/shop")

	vm := &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", Labels: map[string]string{"plan": "shop"}}}
	if _, err := plinth.GovernanceV1alpha1().ManagedVMs("team-a").Create(ctx, vm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the VM's event to reconcile the plan", func() bool { return rt.calls("team-a/shop") > before })
}

// An object that took one of a Failed plan's names (its Deployment, Service or files Secret),
// and that no plan controls, wakes that plan when it changes or goes: the kubernetes runtime
// refused the plan for it. Nothing else is woken by it.
func TestRefusedPlanWokenByTheObjectInTheWay(t *testing.T) {
	failed := plan("kubernetes")
	failed.Status.Phase = v1b1.PlanPhaseFailed
	c, _, _, _ := newController(t, compute.Status{}, failed)
	planning := plan("kubernetes")
	planning.Name = "orders"
	planning.Status.Phase = v1b1.PlanPhasePlanning
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*v1b1.WorkloadPlan{failed, planning} {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	c.plans = listers.NewWorkloadPlanLister(indexer)
	meta := func(name string, controller *metav1.OwnerReference) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: "team-a", Name: name}
		if controller != nil {
			m.OwnerReferences = []metav1.OwnerReference{*controller}
		}
		return m
	}
	planRef := &metav1.OwnerReference{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "WorkloadPlan", Name: "shop", UID: "u", Controller: ptr.To(true)}
	shop := []cache.ObjectName{cache.NewObjectName("team-a", "shop")}
	for name, tc := range map[string]struct {
		suffix string
		obj    interface{}
		want   []cache.ObjectName
	}{
		"someone's Deployment":                  {obj: &appsv1.Deployment{ObjectMeta: meta("shop", nil)}, want: shop},
		"someone's Service":                     {obj: &corev1.Service{ObjectMeta: meta("shop", nil)}, want: shop},
		"someone's files Secret":                {suffix: "-files", obj: &corev1.Secret{ObjectMeta: meta("shop-files", nil)}, want: shop},
		"a deleted one, as a tombstone":         {obj: cache.DeletedFinalStateUnknown{Key: "team-a/shop", Obj: &appsv1.Deployment{ObjectMeta: meta("shop", nil)}}, want: shop},
		"the plan's own":                        {obj: &appsv1.Deployment{ObjectMeta: meta("shop", planRef)}},
		"a Secret not named as files":           {suffix: "-files", obj: &corev1.Secret{ObjectMeta: meta("shop", nil)}},
		"named after no plan":                   {obj: &appsv1.Deployment{ObjectMeta: meta("web", nil)}},
		"named after a plan that is not Failed": {obj: &appsv1.Deployment{ObjectMeta: meta("orders", nil)}},
	} {
		if got := c.refusedPlanOf(tc.suffix)(tc.obj); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: woke %v, want %v", name, got, tc.want)
		}
	}
}
