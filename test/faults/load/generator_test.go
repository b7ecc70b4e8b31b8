package load

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	"github.com/plinth-dev/plinth/pkg/oci/artifact/artifacttest"
)

func TestImageSeqReadsOnlyTheGeneratorsImages(t *testing.T) {
	if seq, ok := ImageSeq(Image(42)); !ok || seq != 42 {
		t.Errorf("ImageSeq(Image(42)) = %d, %v", seq, ok)
	}
	for _, image := range []string{"registry.example.com/other:r1", ImageRepository + ":1", ImageRepository + ":r", ImageRepository + ":r-1", ImageRepository + ":r0", ""} {
		if seq, ok := ImageSeq(image); ok {
			t.Errorf("ImageSeq(%q) = %d, want none", image, seq)
		}
	}
}

// failNext makes the next n requests of verb on resource fail with err.
func failNext(c *fake.Clientset, verb, resource string, n int, err error) {
	c.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if n == 0 {
			return false, nil, nil
		}
		n--
		return true, nil, err
	})
}

func TestWorkloadsCreateThenPatchWithGrowingContent(t *testing.T) {
	c := fake.NewSimpleClientset()
	rec := &Recorder{}
	w := newWorkloads(Config{Tenant: c, Namespace: "ns", Workloads: 1, Recorder: rec})
	ctx := context.Background()
	w.write(ctx, 0) // create, seq 1
	failNext(c, "patch", "workloads", 1, apierrors.NewServiceUnavailable("down"))
	w.write(ctx, 0) // fails: seq 2 may or may not have landed
	w.write(ctx, 0) // patch, seq 3
	writes, failures := rec.Writes(), rec.Failures()
	if len(writes) != 2 || writes[0].Verb != VerbCreate || writes[0].Seq != 1 || writes[1].Verb != VerbUpdate || writes[1].Seq != 3 {
		t.Fatalf("writes %+v", writes)
	}
	if len(failures) != 1 || failures[0].Verb != VerbUpdate || failures[0].Name != WorkloadName(0) || failures[0].At.IsZero() || failures[0].Code != 503 {
		t.Fatalf("failures %+v", failures)
	}
	got, err := c.ScoreV1b1().Workloads("ns").Get(ctx, WorkloadName(0), metav1.GetOptions{})
	if err != nil || got.Spec.Containers["main"].Image != Image(3) {
		t.Errorf("workload %+v %v, want image %s", got, err, Image(3))
	}
}

func TestWorkloadsTakeAnExistingObjectAsCreated(t *testing.T) {
	c := fake.NewSimpleClientset()
	rec := &Recorder{}
	w := newWorkloads(Config{Tenant: c, Namespace: "ns", Workloads: 1, Recorder: rec})
	// The first create's answer is lost, but the create landed.
	c.PrependReactor("create", "workloads", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "workloads"}, WorkloadName(0))
	})
	w.write(context.Background(), 0)
	if !w.created[0] || len(rec.Writes()) != 0 || len(rec.Failures()) != 0 {
		t.Errorf("created %v, writes %v, failures %v", w.created[0], rec.Writes(), rec.Failures())
	}
}

func TestVMsRequestThenApproveThroughTheTicket(t *testing.T) {
	c := fake.NewSimpleClientset()
	rec := &Recorder{}
	v := &vms{cfg: Config{Tenant: c, Approver: c, Namespace: "ns", VMs: 1, Services: 1, Cluster: "local", Recorder: rec}}
	ctx := context.Background()
	v.request(ctx)
	if v.requested != 1 || len(v.pending) != 1 {
		t.Fatalf("requested %d, pending %v", v.requested, v.pending)
	}
	// The request is not processed yet: approve waits.
	v.approve(ctx)
	if len(v.pending) != 1 || len(rec.Writes()) != 1 {
		t.Fatalf("approved a request without a ticket: pending %v, writes %v", v.pending, rec.Writes())
	}
	vm, _ := c.GovernanceV1alpha1().ManagedVMs("ns").Get(ctx, VMName(0), metav1.GetOptions{})
	vm.Status.PendingApproval = &gov.PendingApproval{Ticket: "t-1"}
	if _, err := c.GovernanceV1alpha1().ManagedVMs("ns").UpdateStatus(ctx, vm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var decided string
	c.PrependReactor("create", "approvaltickets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "approval" {
			return false, nil, nil
		}
		decided = a.(k8stesting.CreateAction).GetObject().(*gov.TicketDecision).Cluster
		return true, &gov.ApprovalTicket{ObjectMeta: metav1.ObjectMeta{Name: "t-1", ResourceVersion: "77"}}, nil
	})
	failNext(c, "create", "approvaltickets", 1, errors.New("connection refused"))
	v.approve(ctx) // fails
	v.approve(ctx)
	writes := rec.Writes()
	if decided != "local" || len(v.pending) != 0 || len(writes) != 2 || writes[1].Verb != VerbApprove || writes[1].Seq != 2 || writes[1].ResourceVersion != "77" {
		t.Errorf("decided on %q, pending %v, writes %+v", decided, v.pending, writes)
	}
	if f := rec.Failures(); len(f) != 1 || f[0].Verb != VerbApprove || f[0].Code != 0 {
		t.Errorf("failures %+v", f)
	}
}

func TestVMsTakeALandedApprovalAsDone(t *testing.T) {
	c := fake.NewSimpleClientset(&gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: VMName(0)}, Status: gov.ManagedVMStatus{ApprovedRevision: 1}})
	rec := &Recorder{}
	v := &vms{cfg: Config{Tenant: c, Approver: c, Namespace: "ns", VMs: 1, Services: 1, Recorder: rec}}
	v.request(context.Background()) // AlreadyExists: an earlier request landed
	v.approve(context.Background())
	if v.requested != 1 || len(v.pending) != 0 || len(rec.Writes()) != 0 || len(rec.Failures()) != 0 {
		t.Errorf("requested %d, pending %v, writes %v, failures %v", v.requested, v.pending, rec.Writes(), rec.Failures())
	}
}

func TestTagsPushAndRecordEachOutcome(t *testing.T) {
	reg := artifacttest.Start(t)
	rec := &Recorder{}
	p := &tags{cfg: Config{RegistryEndpoint: reg.Endpoint, Repository: "faults/load", RequestTimeout: 5 * time.Second, Recorder: rec}}
	ctx := context.Background()
	p.push(ctx)
	reg.Stop()
	p.push(ctx)
	writes, failures := rec.Writes(), rec.Failures()
	if len(writes) != 1 || writes[0].Name != TagName(1) || writes[0].Namespace != "faults/load" || writes[0].Verb != VerbPush || !strings.HasPrefix(writes[0].ResourceVersion, "sha256:") {
		t.Errorf("writes %+v", writes)
	}
	if len(failures) != 1 || failures[0].Name != TagName(2) {
		t.Errorf("failures %+v", failures)
	}
}

func TestVMsRunRequestsAtMostPerRunAndDrainApprovesTheRest(t *testing.T) {
	c := fake.NewSimpleClientset()
	// The server opens a ticket for every request, as plinth-apiserver does.
	c.PrependReactor("create", "managedvms", func(a k8stesting.Action) (bool, runtime.Object, error) {
		vm := a.(k8stesting.CreateAction).GetObject().(*gov.ManagedVM)
		vm.Status.PendingApproval = &gov.PendingApproval{Ticket: "t-" + vm.Name}
		return false, nil, nil
	})
	c.PrependReactor("create", "approvaltickets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, &gov.ApprovalTicket{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"}}, nil
	})
	rec := &Recorder{}
	g := New(Config{Tenant: c, Approver: c, Namespace: "ns", VMs: 5, Services: 2, VMsPerRun: 2, Interval: time.Millisecond, VMInterval: time.Millisecond, Recorder: rec})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	g.Run(ctx)
	if g.vms.requested != 2 {
		t.Fatalf("one run requested %d VMs, want 2", g.vms.requested)
	}
	// Left pending on purpose: the next run requests two more and Drain approves what is left.
	g.vms.pending = append(g.vms.pending, 0)
	if err := g.Drain(context.Background()); err != nil || len(g.vms.pending) != 0 {
		t.Errorf("Drain: %v, pending %v", err, g.vms.pending)
	}
	stuck := New(Config{Tenant: c, Approver: c, Namespace: "ns", VMs: 1, Services: 1, VMInterval: time.Millisecond, Recorder: rec})
	stuck.vms.pending = []int{9} // a request the server never saw
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := stuck.Drain(ctx); err == nil {
		t.Error("Drain of a request that never gets a ticket succeeded")
	}
}

func TestComputesCreateThenReplaceTheContainers(t *testing.T) {
	c := fake.NewSimpleClientset()
	rec := &Recorder{}
	o := newComputes(Config{Tenant: c, Namespace: "ns", TenantComputes: 2, Recorder: rec})
	ctx := context.Background()
	o.write(ctx, 1)
	o.write(ctx, 1)
	tc, err := c.ComputeV1alpha1().TenantComputes("ns").Get(ctx, ComputeName(1), metav1.GetOptions{})
	if err != nil || tc.Spec.TenantID != TenantID(1) || len(tc.Spec.Containers) != 1 || tc.Spec.Containers[0].Image != Image(2) {
		t.Fatalf("tenant compute %+v %v", tc, err)
	}
	if w := rec.Writes(); len(w) != 2 || w[0].Kind != KindTenantCompute || w[1].Verb != VerbUpdate || w[1].Seq != 2 {
		t.Errorf("writes %+v", w)
	}
}

func TestPacksMoveToTheNextVersionWithTheirConfigMap(t *testing.T) {
	c := fake.NewSimpleClientset()
	rec := &Recorder{}
	o := newPacks(Config{Admin: c, Packs: 1, PackNamespace: "plinth-system", PackTargetNamespace: "faults", Cluster: "local", Recorder: rec})
	ctx := context.Background()
	o.write(ctx, 0)
	o.write(ctx, 0)
	pack, err := c.InfrastructureV1alpha1().InfrastructureClusterPacks("plinth-system").Get(ctx, PackName(0), metav1.GetOptions{})
	if err != nil || pack.Spec.Version != PackVersion(2) || len(pack.Spec.TargetClusters) != 1 || pack.Spec.TargetClusters[0] != "local" ||
		pack.Spec.TargetNamespace != "faults" || len(pack.Spec.Manifests) != 1 || !strings.Contains(string(pack.Spec.Manifests[0].Raw), `"data":{"seq":"2"}`) {
		t.Fatalf("pack %+v %v", pack, err)
	}
	if w := rec.Writes(); len(w) != 2 || w[0].Kind != KindPack || w[0].Namespace != "plinth-system" || w[1].Seq != 2 {
		t.Errorf("writes %+v", w)
	}
}

func TestPackSeqReadsOnlyTheGeneratorsVersions(t *testing.T) {
	if seq, ok := PackSeq(PackVersion(7)); !ok || seq != 7 {
		t.Errorf("PackSeq(PackVersion(7)) = %d, %v", seq, ok)
	}
	for _, v := range []string{"v1.1.3", "v1.0.", "v1.0.x", "v1.0.0", "1.0.3", ""} {
		if seq, ok := PackSeq(v); ok {
			t.Errorf("PackSeq(%q) = %d, want none", v, seq)
		}
	}
}
