package resourcebinding

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop/looptest"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// A binding is reconciled at every resync, not only when its generation moves: not everything
// its provisioner makes is watched (a database's Secret and Service, a template's objects), so
// the resync is what repairs them, and a status someone else wrote is written back. Here
// someone marks a binding of an unknown type Bound; after the next resync (100 ms here) the
// controller has put Pending back.
func TestABindingStatusEditedBySomeoneElseIsWrittenBack(t *testing.T) {
	b := binding("")
	b.Spec.Type, b.Generation, b.ResourceVersion = "no-such-type", 1, "1"
	plinth, kube := fake.NewSimpleClientset(b), kubefake.NewSimpleClientset()
	looptest.ResourceVersions(&plinth.Fake, plinth.Tracker(), v1b1.SchemeGroupVersion.WithResource("resourcebindings"))
	pf, kf := informers.NewSharedInformerFactory(plinth, 100*time.Millisecond), kubeinformers.NewSharedInformerFactory(kube, 0)
	bindings, core, apps := pf.Score().V1b1().ResourceBindings(), kf.Core().V1(), kf.Apps().V1()
	c, err := NewController(plinth, kube, dynamicfake.NewSimpleDynamicClient(scheme.Scheme), meta.NewDefaultRESTMapper(nil),
		events.NewFakeRecorder(100), bindings, pf.Score().V1b1().Provisioners(), pf.Score().V1b1().Workloads(), core.Secrets(),
		core.Services(), apps.StatefulSets(), apps.Deployments(), kf.Networking().V1().Ingresses(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pf.Start(ctx.Done())
	kf.Start(ctx.Done())
	go func() { _ = c.Run(ctx, 1) }()

	phase := func() v1b1.BindingPhase {
		got, err := plinth.ScoreV1b1().ResourceBindings("team-a").Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Phase
	}
	waitFor := func(step string, want v1b1.BindingPhase) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return phase() == want, nil
		}); err != nil {
			t.Fatalf("%s: phase %q, want %q", step, phase(), want)
		}
	}
	waitFor("first reconcile", v1b1.BindingPhasePending)

	edited, err := plinth.ScoreV1b1().ResourceBindings("team-a").Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edited.Status.Phase = v1b1.BindingPhaseBound
	if _, err := plinth.ScoreV1b1().ResourceBindings("team-a").UpdateStatus(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("after someone else wrote Bound", v1b1.BindingPhasePending)
}
