package workloadplan

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// withdrawingRuntime is a runtime of class "kube" that records its Withdraw calls and answers
// them with done and err.
type withdrawingRuntime struct {
	done      bool
	err       error
	withdrawn int
}

func (r *withdrawingRuntime) Name() string { return "kube" }

func (r *withdrawingRuntime) Apply(context.Context, *v1b1.WorkloadPlan, map[string]*v1b1.ResourceBinding) (compute.Status, error) {
	return compute.Status{Ready: true, Reason: v1b1.ReasonSucceeded, Message: "The workload is available."}, nil
}

func (r *withdrawingRuntime) Withdraw(context.Context, *v1b1.WorkloadPlan) (bool, error) {
	r.withdrawn++
	return r.done, r.err
}

// switchFixture is the controller with the runtimes "vm" (reportingRuntime) and "kube"
// (withdrawingRuntime) over fake clients.
type switchFixture struct {
	t      *testing.T
	c      *Controller
	plinth *fake.Clientset
	plans  cache.Indexer
	vm     *reportingRuntime
	kube   *withdrawingRuntime
}

func newSwitchFixture(t *testing.T, p *v1b1.WorkloadPlan, kube *withdrawingRuntime) *switchFixture {
	t.Helper()
	plinth, kc := fake.NewSimpleClientset(p), kubefake.NewSimpleClientset()
	pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kc, 0)
	vm := &reportingRuntime{status: compute.Status{Reason: v1b1.ReasonRuntimeSelecting, Message: "The virtual machine waits for approval."},
		informer: pf.Governance().V1alpha1().ManagedVMs().Informer(), applied: map[string]int{}}
	runtimes := compute.NewRegistry()
	for _, e := range []compute.Entry{{Name: "vm", Runtime: vm}, {Name: "kube", Runtime: kube}} {
		if err := runtimes.Register(e); err != nil {
			t.Fatal(err)
		}
	}
	score, core, apps := pf.Score().V1b1(), kf.Core().V1(), kf.Apps().V1()
	c, err := New(plinth, events.NewFakeRecorder(10), runtimes, score.WorkloadPlans(), score.ResourceBindings(),
		apps.Deployments(), core.Services(), core.Secrets())
	if err != nil {
		t.Fatal(err)
	}
	f := &switchFixture{t: t, c: c, plinth: plinth, plans: score.WorkloadPlans().Informer().GetIndexer(), vm: vm, kube: kube}
	if err := f.plans.Add(p); err != nil {
		t.Fatal(err)
	}
	return f
}

// reconcile reconciles the plan and returns it as stored, after putting it in the cache as
// the informer would.
func (f *switchFixture) reconcile() (*v1b1.WorkloadPlan, error) {
	f.t.Helper()
	err := f.c.reconcile(context.Background(), cache.NewObjectName("team-a", "shop"))
	got, getErr := f.plinth.ScoreV1b1().WorkloadPlans("team-a").Get(context.Background(), "shop", metav1.GetOptions{})
	if getErr != nil {
		f.t.Fatal(getErr)
	}
	if err := f.plans.Update(got); err != nil {
		f.t.Fatal(err)
	}
	return got, err
}

// movedPlan is a plan of class class that runtime was materialized by, with metadata in its
// runtimeInfo.
func movedPlan(class, was string, metadata map[string]string) *v1b1.WorkloadPlan {
	p := plan(class)
	p.Status.RuntimeInfo = &v1b1.RuntimeInfo{Controller: was, State: "1/1 available", Metadata: metadata}
	return p
}

// A plan that moves to another runtime class has the runtime that materialized it before
// withdraw what it made, and the new runtime materialize it; the status names the new one.
func TestSwitchWithdrawsThePreviousRuntime(t *testing.T) {
	f := newSwitchFixture(t, movedPlan("vm", "kube", map[string]string{"deployment": "shop"}), &withdrawingRuntime{done: true})
	got, err := f.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if f.kube.withdrawn != 1 || f.vm.calls("team-a/shop") != 1 {
		t.Errorf("withdrawn %d times, applied %d times; want once each", f.kube.withdrawn, f.vm.calls("team-a/shop"))
	}
	if info := got.Status.RuntimeInfo; info == nil || info.Controller != "vm" || info.Metadata[WithdrawingKey] != "" {
		t.Errorf("runtimeInfo %+v; want controller vm and nothing withdrawing", info)
	}
	// Done: the previous runtime is not asked again.
	if _, err := f.reconcile(); err != nil {
		t.Fatal(err)
	}
	if f.kube.withdrawn != 1 {
		t.Errorf("withdrawn %d times after it was done; want 1", f.kube.withdrawn)
	}
}

// A previous runtime that is not done (its VM's deletion waits for a decision) or fails stays
// recorded in the status and is asked again, while the new runtime materializes the plan
// meanwhile; once it is done the record goes.
func TestSwitchRecordsAPreviousRuntimeUntilItIsDone(t *testing.T) {
	kube := &withdrawingRuntime{}
	f := newSwitchFixture(t, movedPlan("vm", "kube", nil), kube)
	got, err := f.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if info := got.Status.RuntimeInfo; info == nil || info.Controller != "vm" || info.Metadata[WithdrawingKey] != "kube" {
		t.Fatalf("runtimeInfo %+v; want controller vm, kube withdrawing", info)
	}
	if f.vm.calls("team-a/shop") != 1 {
		t.Errorf("applied %d times; want the new runtime to materialize the plan meanwhile", f.vm.calls("team-a/shop"))
	}

	kube.err = errors.New("connection refused")
	if got, err = f.reconcile(); err == nil {
		t.Error("a failed withdrawal is not retried")
	}
	if got.Status.RuntimeInfo.Metadata[WithdrawingKey] != "kube" {
		t.Errorf("runtimeInfo %+v after a failed withdrawal; want kube withdrawing", got.Status.RuntimeInfo)
	}

	kube.err, kube.done = nil, true
	if got, err = f.reconcile(); err != nil {
		t.Fatal(err)
	}
	if kube.withdrawn != 3 || got.Status.RuntimeInfo.Metadata[WithdrawingKey] != "" {
		t.Errorf("withdrawn %d times, runtimeInfo %+v; want 3 and nothing withdrawing", kube.withdrawn, got.Status.RuntimeInfo)
	}
}

// A class that materialized the plan before and no runtime handles any more is ignored (and
// logged); the current class is never withdrawn, even when a switch back left it recorded; a
// plan whose new class no runtime handles withdraws nothing and keeps its record.
func TestSwitchBadPrevious(t *testing.T) {
	t.Run("unknown previous class", func(t *testing.T) {
		f := newSwitchFixture(t, movedPlan("vm", "nomad", nil), &withdrawingRuntime{done: true})
		got, err := f.reconcile()
		if err != nil {
			t.Fatal(err)
		}
		if info := got.Status.RuntimeInfo; info.Controller != "vm" || info.Metadata[WithdrawingKey] != "" || f.kube.withdrawn != 0 {
			t.Errorf("runtimeInfo %+v, withdrawn %d; want controller vm, nothing withdrawing", info, f.kube.withdrawn)
		}
	})
	t.Run("switched back while withdrawing", func(t *testing.T) {
		f := newSwitchFixture(t, movedPlan("kube", "vm", map[string]string{WithdrawingKey: "kube"}), &withdrawingRuntime{done: true})
		got, err := f.reconcile()
		if err != nil {
			t.Fatal(err)
		}
		if f.kube.withdrawn != 0 || got.Status.RuntimeInfo.Controller != "kube" || got.Status.RuntimeInfo.Metadata[WithdrawingKey] != "" {
			t.Errorf("withdrawn %d, runtimeInfo %+v; want the current runtime kept", f.kube.withdrawn, got.Status.RuntimeInfo)
		}
	})
	t.Run("no runtime for the new class", func(t *testing.T) {
		f := newSwitchFixture(t, movedPlan("nomad", "kube", nil), &withdrawingRuntime{done: true})
		got, err := f.reconcile()
		if err != nil {
			t.Fatal(err)
		}
		if f.kube.withdrawn != 0 || got.Status.RuntimeInfo.Controller != "kube" {
			t.Errorf("withdrawn %d, runtimeInfo %+v; want the previous runtime left alone", f.kube.withdrawn, got.Status.RuntimeInfo)
		}
	})
}
