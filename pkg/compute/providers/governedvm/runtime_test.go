package governedvm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	"github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

// runtimeFixture is the runtime over fake clientsets, whose caches the test fills (sync)
// instead of informers, so that what the runtime sees is exactly what the test put there.
type runtimeFixture struct {
	t                          *testing.T
	rt                         *Runtime
	client                     *fake.Clientset
	kube                       *kubefake.Clientset
	vms, services, kubeService cache.Indexer
}

func newRuntimeFixture(t *testing.T, objects ...runtime.Object) *runtimeFixture {
	var plinthObjects, kubeObjects []runtime.Object
	for _, obj := range objects {
		if _, ok := obj.(*corev1.Service); ok {
			kubeObjects = append(kubeObjects, obj)
		} else {
			plinthObjects = append(plinthObjects, obj)
		}
	}
	client, kube := fake.NewSimpleClientset(plinthObjects...), kubefake.NewSimpleClientset(kubeObjects...)
	govInformers := externalversions.NewSharedInformerFactory(client, 0).Governance().V1alpha1()
	kubeServices := kubeinformers.NewSharedInformerFactory(kube, 0).Core().V1().Services()
	rt := NewRuntime(client, kube, govInformers.ManagedVMs(), govInformers.SystemServices(), kubeServices.Lister())
	rt.now = func() time.Time { return time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC) }
	f := &runtimeFixture{t: t, rt: rt, client: client, kube: kube, vms: govInformers.ManagedVMs().Informer().GetIndexer(),
		services: govInformers.SystemServices().Informer().GetIndexer(), kubeService: kubeServices.Informer().GetIndexer()}
	f.sync()
	return f
}

// sync copies the stored objects into the caches, as the informers would.
func (f *runtimeFixture) sync() {
	f.t.Helper()
	ctx := context.Background()
	vms, err := f.client.GovernanceV1alpha1().ManagedVMs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	services, err := f.client.GovernanceV1alpha1().SystemServices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	kubeServices, err := f.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var vmObjs, svcObjs, kubeObjs []interface{}
	for i := range vms.Items {
		vmObjs = append(vmObjs, &vms.Items[i])
	}
	for i := range services.Items {
		svcObjs = append(svcObjs, &services.Items[i])
	}
	for i := range kubeServices.Items {
		kubeObjs = append(kubeObjs, &kubeServices.Items[i])
	}
	for _, c := range []struct {
		indexer cache.Indexer
		objs    []interface{}
	}{{f.vms, vmObjs}, {f.services, svcObjs}, {f.kubeService, kubeObjs}} {
		if err := c.indexer.Replace(c.objs, ""); err != nil {
			f.t.Fatal(err)
		}
	}
	f.client.ClearActions()
	f.kube.ClearActions()
}

// apply runs the runtime on plan and syncs the caches afterwards.
func (f *runtimeFixture) apply(plan *v1b1.WorkloadPlan, bindings map[string]*v1b1.ResourceBinding) compute.Status {
	f.t.Helper()
	st, err := f.rt.Apply(context.Background(), plan, bindings)
	if err != nil {
		f.t.Fatalf("Apply: %v", err)
	}
	return st
}

// writes lists the write actions of both clients since the last call.
func (f *runtimeFixture) writes() []string {
	var out []string
	for _, a := range append(f.client.Actions(), f.kube.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	f.client.ClearActions()
	f.kube.ClearActions()
	return out
}

func (f *runtimeFixture) vm() *gov.ManagedVM {
	f.t.Helper()
	vm, err := f.client.GovernanceV1alpha1().ManagedVMs("team-a").Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return vm
}

// govern stands in for the approval flow and the VM runtime: it writes the VM's status (and
// the UID the API server would have given it).
func (f *runtimeFixture) govern(change func(vm *gov.ManagedVM)) {
	f.t.Helper()
	vm := f.vm()
	if vm.UID == "" {
		vm.UID = "vm-uid"
	}
	change(vm)
	if _, err := f.client.GovernanceV1alpha1().ManagedVMs("team-a").Update(context.Background(), vm, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.sync()
}

// workloadPlan is a plan of two containers: web with a plain resource output, a file and a
// port; worker with a command, arguments and an exec liveness probe.
func workloadPlan() *v1b1.WorkloadPlan {
	return &v1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", UID: "plan-uid", Generation: 1},
		Spec: v1b1.WorkloadPlanSpec{
			WorkloadRef:  v1b1.PlanWorkloadReference{Name: "shop", UID: "workload-uid", Generation: 3},
			RuntimeClass: Name,
			Projection: v1b1.WorkloadProjection{
				Containers: map[string]v1b1.ContainerProjection{
					"web": {Image: "nginx:1.27",
						Env: []v1b1.EnvProjection{
							{Name: "DB_HOST", From: &v1b1.BindingOutputSource{BindingKey: "db", OutputKey: "host"}},
							{Name: "MODE", Value: ptr.To("prod $$(literal)")},
						},
						Files:     []v1b1.ContainerFile{{Target: "/etc/shop.conf", Content: ptr.To("color: blue\n"), Mode: "0644"}},
						Resources: &v1b1.ContainerResources{Limits: &v1b1.ResourceAmounts{CPU: "1500m", Memory: "512Mi"}},
					},
					"worker": {Image: "ghcr.io/acme/worker:2", Command: []string{"/worker"}, Args: []string{"--queue", "orders"},
						LivenessProbe: &v1b1.ContainerProbe{Exec: &v1b1.ExecProbe{Command: []string{"/worker", "check"}}},
						Resources:     &v1b1.ContainerResources{Requests: &v1b1.ResourceAmounts{CPU: "250m", Memory: "1Gi"}},
					},
				},
				Service: &v1b1.ServiceProjection{Ports: map[string]v1b1.ServicePort{"web": {Port: 80, TargetPort: 8080}}},
			},
			Metadata: &v1b1.PlanMetadata{Labels: map[string]string{v1b1.WorkloadLabel: "shop", "kubevirt-shepherd.io/system": "forged"}},
		},
	}
}

// shopBindings are the plan's bindings: db has a plain host and a Secret of credentials.
func shopBindings() map[string]*v1b1.ResourceBinding {
	return map[string]*v1b1.ResourceBinding{"db": {Status: v1b1.ResourceBindingStatus{Outputs: &v1b1.BindingOutputs{
		Metadata:    map[string]string{"host": "shop-db.team-a.svc"},
		Credentials: &v1b1.CredentialsReference{SecretRef: &v1b1.SecretKeyReference{Name: "shop-db"}},
	}}}}
}

const shopCloudInit = `#cloud-config
# Workload team-a/shop, runtime class kubevirt.
write_files:
- {"content":"color: blue\n","path":"/etc/plinth/files/web/0","permissions":"0644"}
packages:
- podman
runcmd:
- ["systemctl","enable","podman-restart.service"]
- ["podman","run","-d","--name","web","--restart=always","--network=host","-e","DB_HOST=shop-db.team-a.svc","-e","MODE=prod $(literal)","-v","/etc/plinth/files/web/0:/etc/shop.conf:ro,Z","docker.io/library/nginx:1.27"]
- ["podman","run","-d","--name","worker","--restart=always","--network=host","--health-cmd","[\"/worker\",\"check\"]","--health-on-failure=restart","--entrypoint","[\"/worker\"]","ghcr.io/acme/worker:2","--queue","orders"]
`

func TestRuntimeAsksForAGovernedVMAndFollowsIt(t *testing.T) {
	f := newRuntimeFixture(t)
	plan := workloadPlan()

	st := f.apply(plan, shopBindings())
	if got, want := f.writes(), []string{"create systems", "create systemservices", "create managedvms"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	vm := f.vm()
	if !metav1.IsControlledBy(vm, plan) {
		t.Errorf("the VM is not controlled by the plan: %+v", vm.OwnerReferences)
	}
	if vm.Labels[LabelProvider] != Name || vm.Labels[v1b1.WorkloadLabel] != "shop" || vm.Labels["kubevirt-shepherd.io/system"] != "" {
		t.Errorf("VM labels %v: the runtime's, without governance's own", vm.Labels)
	}
	s := vm.Spec
	if s.SystemServiceRef.Name != "shop" || s.Image != DefaultImage || s.RunStrategy != gov.RunStrategyAlways || s.InstanceType != "" {
		t.Errorf("VM spec %+v", s)
	}
	// 1500m + 250m → 2 vCPUs; 512Mi + 1Gi + 1Gi for the guest.
	if s.Resources == nil || s.Resources.CPU != 2 || s.Resources.Memory.Cmp(resource.MustParse("2560Mi")) != 0 {
		t.Errorf("VM size %+v", s.Resources)
	}
	if s.CloudInit != shopCloudInit {
		t.Errorf("cloud-init:\n%s\nwant:\n%s", s.CloudInit, shopCloudInit)
	}
	if want := "Workload team-a/shop (Score, runtime class kubevirt): containers web (nginx:1.27), worker (ghcr.io/acme/worker:2)."; s.Reason != want {
		t.Errorf("reason %q", s.Reason)
	}
	svc, err := f.client.GovernanceV1alpha1().SystemServices("team-a").Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil || svc.Spec.SystemRef.Name != WorkloadSystem || svc.Labels[v1b1.WorkloadLabel] != "shop" {
		t.Errorf("SystemService %+v, %v", svc, err)
	}
	if st.Reason != v1b1.ReasonRuntimeSelecting || st.Ready {
		t.Errorf("status after the request %+v", st)
	}

	f.sync()
	f.govern(pending(gov.OperationCreate, "tkt-1"))
	st = f.apply(plan, shopBindings())
	if st.Reason != v1b1.ReasonRuntimeSelecting || st.Message != "The virtual machine waits for approval of ticket tkt-1." || st.Details["ticket"] != "tkt-1" {
		t.Errorf("waiting status %+v", st)
	}
	// The VM owns its service from now on, so that the service goes when the VM does.
	if got := f.writes(); fmt.Sprint(got) != "[update systemservices]" {
		t.Errorf("writes while waiting %v, want the service's owner only", got)
	}
	f.sync()
	if st = f.apply(plan, shopBindings()); len(f.writes()) != 0 || st.Reason != v1b1.ReasonRuntimeSelecting {
		t.Errorf("a second look while waiting wrote or changed: %+v", st)
	}
	svc, _ = f.client.GovernanceV1alpha1().SystemServices("team-a").Get(context.Background(), "shop", metav1.GetOptions{})
	if len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].UID != "vm-uid" || svc.OwnerReferences[0].Kind != "ManagedVM" {
		t.Errorf("service owners %+v", svc.OwnerReferences)
	}

	f.govern(approved(gov.VMPhaseCreating, false))
	if st = f.apply(plan, shopBindings()); st.Reason != v1b1.ReasonRuntimeProvisioning || st.Ready {
		t.Errorf("creating status %+v", st)
	}
	f.sync()
	f.govern(approved(gov.VMPhaseRunning, true))
	st = f.apply(plan, shopBindings())
	if !st.Ready || st.Reason != v1b1.ReasonSucceeded || st.State != "RUNNING" || st.Details["cluster"] != "local" {
		t.Errorf("running status %+v", st)
	}
	endpoint, err := f.kube.CoreV1().Services("team-a").Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the endpoint's Service: %v", err)
	}
	if endpoint.Spec.Selector[instanceLabel] != "team-a-tenant-compute-shop-01" || len(endpoint.Spec.Ports) != 1 ||
		endpoint.Spec.Ports[0].Port != 80 || endpoint.Spec.Ports[0].TargetPort.IntValue() != 8080 || !metav1.IsControlledBy(endpoint, plan) {
		t.Errorf("endpoint Service %+v", endpoint)
	}
	f.sync()
	if st = f.apply(plan, shopBindings()); len(f.writes()) != 0 || !st.Ready {
		t.Errorf("a running VM's plan applied again wrote something: %+v", st)
	}
}

func TestRuntimeStatusFollowsThePhase(t *testing.T) {
	plan := workloadPlan()
	for _, tc := range []struct {
		name    string
		change  func(*gov.ManagedVM)
		reason  string
		message string
	}{
		{"running, not ready", approved(gov.VMPhaseRunning, false), v1b1.ReasonRuntimeProvisioning, "The virtual machine is starting."},
		{"stopped", approved(gov.VMPhaseStopped, false), v1b1.ReasonRuntimeDegraded, "The virtual machine is stopped."},
		{"stopping", approved(gov.VMPhaseStopping, false), v1b1.ReasonRuntimeDegraded, "The virtual machine is stopped."},
		{"failed", approved(gov.VMPhaseFailed, false), v1b1.ReasonRuntimeDegraded, "The virtual machine has failed."},
		{"deleting", approved(gov.VMPhaseDeleting, false), v1b1.ReasonRuntimeProvisioning, "The virtual machine is being deleted."},
		{"a stop waits", func(vm *gov.ManagedVM) {
			approved(gov.VMPhaseRunning, true)(vm)
			pending(gov.OperationStop, "tkt-9")(vm)
		},
			v1b1.ReasonRuntimeSelecting, "The stop of the virtual machine waits for approval of ticket tkt-9."},
		{"its deletion waits", func(vm *gov.ManagedVM) {
			approved(gov.VMPhaseRunning, true)(vm)
			pending(gov.OperationDelete, "tkt-8")(vm)
			vm.DeletionTimestamp = ptr.To(metav1.Now())
		}, v1b1.ReasonRuntimeSelecting, "The deletion of the virtual machine waits for approval of ticket tkt-8."},
		{"being deleted", func(vm *gov.ManagedVM) {
			approved(gov.VMPhaseRunning, true)(vm)
			vm.DeletionTimestamp = ptr.To(metav1.Now())
		},
			v1b1.ReasonRuntimeProvisioning, "The virtual machine is being deleted; it is asked for again once it is gone."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRuntimeFixture(t)
			f.apply(plan, shopBindings())
			f.sync()
			f.govern(tc.change)
			st := f.apply(plan, shopBindings())
			if st.Ready || st.Reason != tc.reason || st.Message != tc.message {
				t.Errorf("status %+v, want %s %q", st, tc.reason, tc.message)
			}
			// The service's owner and the endpoint, nothing about the VM; no endpoint for a VM
			// that is being deleted.
			deleting := f.vm().DeletionTimestamp != nil
			for _, w := range f.writes() {
				if w != "update systemservices" && (w != "create services" || deleting) {
					t.Errorf("wrote %s", w)
				}
			}
		})
	}
}

func TestRuntimeRejection(t *testing.T) {
	f := newRuntimeFixture(t)
	plan := workloadPlan()
	f.apply(plan, shopBindings())
	f.sync()
	f.govern(pending(gov.OperationCreate, "tkt-1"))
	f.govern(rejectedBy(reasonRejected))
	st := f.apply(plan, shopBindings())
	if st.Reason != v1b1.ReasonPermissionDenied || st.Message != "The virtual machine was rejected in ticket tkt-1." || st.Ready {
		t.Errorf("rejected status %+v", st)
	}
	if got := f.writes(); len(got) > 1 {
		t.Errorf("a rejected request was asked for again: %v", got)
	}

	// A new generation of the workload asks again: a never approved VM is replaced.
	f.sync()
	again := workloadPlan()
	again.Spec.WorkloadRef.Generation = 4
	st = f.apply(again, shopBindings())
	if got := f.writes(); fmt.Sprint(got) != "[delete managedvms create managedvms]" {
		t.Errorf("asking again wrote %v", got)
	}
	if st.Reason != v1b1.ReasonRuntimeSelecting || f.vm().Annotations[AnnotationRequestedGeneration] != "4" {
		t.Errorf("status %+v annotations %v", st, f.vm().Annotations)
	}
}

func TestRuntimeAsksForChangesOfAnApprovedVM(t *testing.T) {
	f := newRuntimeFixture(t)
	plan := workloadPlan()
	f.apply(plan, shopBindings())
	f.sync()
	f.govern(approved(gov.VMPhaseRunning, true))
	f.apply(plan, shopBindings())
	f.sync()

	changed := workloadPlan()
	changed.Spec.WorkloadRef.Generation = 4
	web := changed.Spec.Projection.Containers["web"]
	web.Image = "nginx:1.28"
	changed.Spec.Projection.Containers["web"] = web
	f.apply(changed, shopBindings())
	if got := f.writes(); fmt.Sprint(got) != "[update managedvms]" {
		t.Fatalf("the change wrote %v", got)
	}
	vm := f.vm()
	if !strings.Contains(vm.Spec.CloudInit, "docker.io/library/nginx:1.28") || vm.Spec.RestartedAt != "2026-11-24T09:30:00Z" {
		t.Errorf("the modify request: cloud-init %q, restartedAt %q (a new instance applies cloud-init)", vm.Spec.CloudInit, vm.Spec.RestartedAt)
	}

	f.govern(pending(gov.OperationModify, "tkt-2"))
	st := f.apply(changed, shopBindings())
	if st.Reason != v1b1.ReasonRuntimeSelecting || st.Message != "The change of the virtual machine waits for approval of ticket tkt-2." {
		t.Errorf("status while the change waits %+v", st)
	}
	// Another change while one waits is asked for once that one is decided.
	third := workloadPlan()
	third.Spec.WorkloadRef.Generation = 5
	f.apply(third, shopBindings())
	if got := f.writes(); len(got) != 0 {
		t.Errorf("a change was asked for while another waits: %v", got)
	}

	f.govern(rejectedBy(reasonRejected))
	f.govern(func(vm *gov.ManagedVM) { vm.Spec = workloadVMSpec(t, plan) }) // the flow puts the approved spec back
	st = f.apply(changed, shopBindings())
	if st.Reason != v1b1.ReasonPermissionDenied || st.Message != "The change of the virtual machine was rejected in ticket tkt-2; it runs as approved before." {
		t.Errorf("status after a rejected change %+v", st)
	}
}

// workloadVMSpec is the VM spec the runtime asks for plan.
func workloadVMSpec(t *testing.T, plan *v1b1.WorkloadPlan) gov.ManagedVMSpec {
	t.Helper()
	w, err := wantVM(plan, shopBindings())
	if err != nil {
		t.Fatal(err)
	}
	return w.spec
}

func TestRuntimeRefusesWhatAVMCannotRun(t *testing.T) {
	long := strings.Repeat("x", 400)
	for _, tc := range []struct {
		name     string
		change   func(p *v1b1.WorkloadPlan)
		bindings map[string]*v1b1.ResourceBinding
		message  string
	}{
		{name: "a secret output in a variable",
			change: func(p *v1b1.WorkloadPlan) {
				setEnv(p, "web", v1b1.EnvProjection{Name: "DB_PASSWORD", From: &v1b1.BindingOutputSource{BindingKey: "db", OutputKey: "password"}})
			},
			message: "Container web uses a secret output of resource db, which a virtual machine cannot receive without showing it to its approvers."},
		{name: "a secret output in a file",
			change: func(p *v1b1.WorkloadPlan) {
				c := p.Spec.Projection.Containers["web"]
				c.Files = []v1b1.ContainerFile{{Target: "/etc/db.conf", Content: ptr.To("password: ${resources.db.password}")}}
				p.Spec.Projection.Containers["web"] = c
			},
			message: "File /etc/db.conf of container web uses a secret output, which a virtual machine cannot receive without showing it to its approvers."},
		{name: "a missing output",
			change:   func(p *v1b1.WorkloadPlan) {},
			bindings: map[string]*v1b1.ResourceBinding{},
			message:  "A resource output the workload uses is missing."},
		{name: "a namespace too long for a VM name",
			change:  func(p *v1b1.WorkloadPlan) { p.Namespace = "a-very-long-team-name" },
			message: "The namespace's name cannot be part of a virtual machine's name: it must be at most 15 characters."},
		{name: "no container",
			change:  func(p *v1b1.WorkloadPlan) { p.Spec.Projection.Containers = nil },
			message: "The workload has no container to run."},
		{name: "a readiness probe",
			change: func(p *v1b1.WorkloadPlan) {
				c := p.Spec.Projection.Containers["worker"]
				c.ReadinessProbe = &v1b1.ContainerProbe{Exec: &v1b1.ExecProbe{Command: []string{"true"}}}
				p.Spec.Projection.Containers["worker"] = c
			},
			message: "Container worker has a readiness probe, which a virtual machine does not run; the workload is ready when its virtual machine runs."},
		{name: "an HTTP liveness probe",
			change: func(p *v1b1.WorkloadPlan) {
				c := p.Spec.Projection.Containers["worker"]
				c.LivenessProbe = &v1b1.ContainerProbe{HTTPGet: &v1b1.HTTPGetProbe{Path: "/healthz", Port: 8080}}
				p.Spec.Projection.Containers["worker"] = c
			},
			message: "Container worker has an HTTP liveness probe; a virtual machine runs exec probes only."},
		{name: "a volume sub path",
			change: func(p *v1b1.WorkloadPlan) {
				c := p.Spec.Projection.Containers["web"]
				c.Volumes = []v1b1.ContainerVolume{{Target: "/data", Source: "shop-data", Path: "sub"}}
				p.Spec.Projection.Containers["web"] = c
			},
			message: "Container web mounts a path inside a volume, which a virtual machine does not support."},
		{name: "a file from a source path",
			change: func(p *v1b1.WorkloadPlan) {
				c := p.Spec.Projection.Containers["web"]
				c.Files = []v1b1.ContainerFile{{Target: "/etc/x", Source: ptr.To("./x")}}
				p.Spec.Projection.Containers["web"] = c
			},
			message: "File /etc/x of container web names a source path, which a cluster cannot read; inline it as content."},
		{name: "a file mode that is not octal",
			change: func(p *v1b1.WorkloadPlan) {
				c := p.Spec.Projection.Containers["web"]
				c.Files[0].Mode = "rw-r--r--"
				p.Spec.Projection.Containers["web"] = c
			},
			message: `File /etc/shop.conf of container web has mode "rw-r--r--", which is not an octal file mode.`},
		{name: "an amount that is not a quantity",
			change: func(p *v1b1.WorkloadPlan) {
				c := p.Spec.Projection.Containers["web"]
				c.Resources = &v1b1.ContainerResources{Requests: &v1b1.ResourceAmounts{Memory: "lots"}}
				p.Spec.Projection.Containers["web"] = c
			},
			message: "A resource amount of the workload is not a quantity."},
		{name: "more CPUs than a VM has",
			change: func(p *v1b1.WorkloadPlan) {
				c := p.Spec.Projection.Containers["web"]
				c.Resources = &v1b1.ContainerResources{Limits: &v1b1.ResourceAmounts{CPU: "300"}}
				p.Spec.Projection.Containers["web"] = c
			},
			message: "The containers ask for 301 CPUs, more than the 256 a virtual machine has."},
		{name: "more start-up data than a VM carries",
			change: func(p *v1b1.WorkloadPlan) {
				for i := 0; i < 5; i++ {
					setEnv(p, "web", v1b1.EnvProjection{Name: fmt.Sprintf("LONG_%d", i), Value: ptr.To(long)})
				}
			},
			message: "The containers need 2753 bytes of start-up data, more than the 2048 a virtual machine carries."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRuntimeFixture(t)
			plan := workloadPlan()
			tc.change(plan)
			bindings := tc.bindings
			if bindings == nil {
				bindings = shopBindings()
			}
			st := f.apply(plan, bindings)
			if st.Reason != v1b1.ReasonProjectionError || st.Message != tc.message || st.Ready {
				t.Errorf("status %+v,\nwant ProjectionError %q", st, tc.message)
			}
			if got := f.writes(); len(got) != 0 {
				t.Errorf("a refused plan wrote %v", got)
			}
		})
	}
}

func setEnv(p *v1b1.WorkloadPlan, container string, e v1b1.EnvProjection) {
	c := p.Spec.Projection.Containers[container]
	c.Env = append(c.Env, e)
	p.Spec.Projection.Containers[container] = c
}

func TestRuntimeRefusesWhatIsNotTheWorkloads(t *testing.T) {
	plan := workloadPlan()
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		message string
	}{
		{"a VM of the workload's name",
			[]runtime.Object{&gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}}},
			"Another virtual machine of the namespace has the workload's name."},
		{"a service of the workload's name",
			[]runtime.Object{&gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "bank"}}}},
			"The namespace has a service shop of its virtual machines that is not the workload's."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRuntimeFixture(t, tc.objects...)
			st := f.apply(plan, shopBindings())
			if st.Reason != v1b1.ReasonProjectionError || st.Message != tc.message {
				t.Errorf("status %+v, want %q", st, tc.message)
			}
			for _, w := range f.writes() {
				if w != "create systems" {
					t.Errorf("wrote %s", w)
				}
			}
		})
	}

	t.Run("a Service of the workload's name", func(t *testing.T) {
		f := newRuntimeFixture(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"}})
		f.apply(plan, shopBindings())
		f.sync()
		f.govern(approved(gov.VMPhaseRunning, true))
		st := f.apply(plan, shopBindings())
		if st.Reason != v1b1.ReasonProjectionError || st.Message != "Another service of the namespace has the workload's name." {
			t.Errorf("status %+v", st)
		}
		for _, a := range f.kube.Actions() {
			if a.GetVerb() != "get" && a.GetVerb() != "list" {
				t.Errorf("another's Service was written: %v", a)
			}
		}
	})
}

func TestRuntimeQuotaExceeded(t *testing.T) {
	f := newRuntimeFixture(t)
	f.client.PrependReactor("create", "managedvms", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apperror.New(apperror.QuotaExceeded, gov.Resource("managedvms"), "shop", apperror.Params{"namespace": "team-a", "quota": "1"},
			"Namespace team-a has as many VMs as its quota of 1 allows.")
	})
	st := f.apply(workloadPlan(), shopBindings())
	if st.Reason != v1b1.ReasonQuotaExceeded || st.Message != "The namespace has as many virtual machines as its policy allows." {
		t.Errorf("status %+v", st)
	}
}

func TestRuntimeUsesATenantsOwnSystem(t *testing.T) {
	f := newRuntimeFixture(t, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: WorkloadSystem, Namespace: "team-a"}, Spec: gov.SystemSpec{Environment: gov.EnvironmentProd}})
	f.apply(workloadPlan(), shopBindings())
	if got := f.writes(); fmt.Sprint(got) != "[create systemservices create managedvms]" {
		t.Errorf("writes %v: the tenant's System is used as it is", got)
	}
}

func TestWorkloadServiceName(t *testing.T) {
	if got := WorkloadServiceName("shop"); got != "shop" {
		t.Errorf("WorkloadServiceName(shop) = %q", got)
	}
	long := WorkloadServiceName("productcatalogservice")
	if len(long) != 15 || !strings.HasPrefix(long, "productca-") || len(validation.IsDNS1123Label(long)) > 0 {
		t.Errorf("WorkloadServiceName(productcatalogservice) = %q", long)
	}
	if long == WorkloadServiceName("productcatalogservice2") || long != WorkloadServiceName("productcatalogservice") {
		t.Error("long names are not told apart, or not the same each time")
	}
}

func TestRuntimePlansFor(t *testing.T) {
	rt := newRuntimeFixture(t).rt
	labels := map[string]string{LabelProvider: Name, v1b1.WorkloadLabel: "shop"}
	for _, tc := range []struct {
		obj  interface{}
		want string
	}{
		{&gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Labels: labels}}, "[team-a/shop]"},
		{&gov.SystemService{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Labels: labels}}, "[team-a/shop]"},
		{&gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "t1", Labels: map[string]string{LabelProvider: Name, v1alpha1.LabelTenantID: "t1"}}}, "[]"},
		{&gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ledger"}}, "[]"},
		{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Labels: labels}}, "[]"},
	} {
		if got := fmt.Sprint(rt.PlansFor(tc.obj)); got != tc.want {
			t.Errorf("PlansFor(%T %v) = %s, want %s", tc.obj, tc.obj.(metav1.Object).GetLabels(), got, tc.want)
		}
	}
	if len(rt.Informers()) != 2 {
		t.Errorf("informers %d, want ManagedVMs and SystemServices", len(rt.Informers()))
	}
}

// The VM requests the runtime makes name the workload's last spec writer, which the plan
// carries from the Workload, so that governance makes that user the requester.
func TestRuntimeRequestsNameWhoCausedThem(t *testing.T) {
	f := newRuntimeFixture(t)
	plan := workloadPlan()
	plan.Annotations = map[string]string{common.AnnotationRequestedBy: "alice"}
	f.apply(plan, shopBindings())
	if got := f.vm().Annotations[gov.AnnotationOnBehalfOf]; got != "alice" {
		t.Errorf("the creation is on behalf of %q, want alice", got)
	}
	f.sync()
	f.govern(approved(gov.VMPhaseRunning, true))

	changed := workloadPlan()
	changed.Annotations = map[string]string{common.AnnotationRequestedBy: "bob"}
	changed.Spec.WorkloadRef.Generation = 4
	web := changed.Spec.Projection.Containers["web"]
	web.Image = "nginx:1.28"
	changed.Spec.Projection.Containers["web"] = web
	f.apply(changed, shopBindings())
	if got := f.vm().Annotations[gov.AnnotationOnBehalfOf]; got != "bob" {
		t.Errorf("the change is on behalf of %q, want bob", got)
	}
}
