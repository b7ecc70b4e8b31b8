package workloadplan

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// A plan is reconciled again when its spec changes or its Deployment moves in a way the
// runtime reads, not when its status is written (this controller's own writes) nor on
// kube-controller-manager's other Deployment status writes.
func TestWakesOnlyOnWhatTheRuntimeReads(t *testing.T) {
	p := plan("vm")
	p.UID = "p1"
	plinth, kube := fake.NewSimpleClientset(p), kubefake.NewSimpleClientset()
	pf, kf := informers.NewSharedInformerFactory(plinth, 0), kubeinformers.NewSharedInformerFactory(kube, 0)
	// Refused: a Failed plan is not polled, so every reconcile below is an event's.
	rt := &reportingRuntime{status: compute.Status{Reason: v1b1.ReasonPermissionDenied, Message: "Refused."},
		informer: pf.Governance().V1alpha1().ManagedVMs().Informer(), applied: map[string]int{}}
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pf.Start(ctx.Done())
	kf.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx, 1) }()
	defer func() { cancel(); <-done }()

	const key = "team-a/shop"
	// settled waits until no reconcile has come for a while and returns the count.
	settled := func() int {
		t.Helper()
		n := rt.calls(key)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			time.Sleep(300 * time.Millisecond)
			if m := rt.calls(key); m == n && n > 0 {
				return n
			} else {
				n = m
			}
		}
		t.Fatal("reconciles did not settle")
		return 0
	}
	step := func(what string, wantMore bool, change func() error) {
		t.Helper()
		before := settled()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		after := settled()
		if wantMore && after == before {
			t.Errorf("%s did not reconcile the plan", what)
		}
		if !wantMore && after != before {
			t.Errorf("%s reconciled the plan %d more times", what, after-before)
		}
	}
	// The fake clients keep resourceVersions as given; each write below moves it, as a server's
	// would, so that no update looks like a resync.
	rv := 0
	next := func() string { rv++; return fmt.Sprint(rv) }
	plans := plinth.ScoreV1b1().WorkloadPlans("team-a")
	deployments := kube.AppsV1().Deployments("team-a")

	step("a status write", false, func() error {
		got, err := plans.Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.ResourceVersion = next()
		got.Status.RuntimeInfo = &v1b1.RuntimeInfo{Controller: "vm", State: "other"}
		_, err = plans.UpdateStatus(ctx, got, metav1.UpdateOptions{})
		return err
	})
	step("a spec change", true, func() error {
		got, err := plans.Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.ResourceVersion = next()
		got.Generation++
		got.Spec.Metadata = &v1b1.PlanMetadata{Labels: map[string]string{"tier": "web"}}
		_, err = plans.Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", Generation: 1,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "WorkloadPlan", Name: "shop", UID: "p1"}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
	}
	step("the Deployment's creation", true, func() error {
		var err error
		d, err = deployments.Create(ctx, d, metav1.CreateOptions{})
		return err
	})
	status := func(change func(*appsv1.DeploymentStatus)) func() error {
		return func() error {
			d.ResourceVersion = next()
			change(&d.Status)
			var err error
			d, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		}
	}
	step("readyReplicas and a condition", false, status(func(s *appsv1.DeploymentStatus) {
		s.ReadyReplicas, s.Replicas = 1, 1
		s.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: "True"}}
	}))
	step("availableReplicas", true, status(func(s *appsv1.DeploymentStatus) { s.AvailableReplicas = 1 }))
}
