package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubevirtclient "kubevirt.io/client-go/kubevirt"

	"github.com/plinth-dev/plinth/internal/localplatform"
	compute "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// backupWorkload asks for a postgres database: its generated password lives in a Secret on
// kube-apiserver, which the same snapshot must bring back unchanged.
const backupWorkload = `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: %s
spec:
  containers:
    main:
      image: registry.example.com/shop:1.4
      variables:
        DB_HOST: ${resources.db.host}
        DB_PASSWORD: ${resources.db.password}
  resources:
    db: {type: postgres}
`

// TestBackupRestore is docs/install.md's backup and restore on the local platform, etcd with
// fsync: objects of every Plinth group (a Workload with a generated database password, a
// ManagedVM approved by carol and running, a Cluster with a sealed kubeconfig, a
// TenantCompute, an infrastructure pack, the OCIRegistry the controller made) are saved with
// `etcdctl snapshot save`; a Workload created after the snapshot; the platform stopped, etcd's
// data directory wiped and `etcdutl snapshot restore`d; the platform started again on the same
// directory. Every object is back with its UID and spec, the later Workload is gone, the
// kubeconfigs still decrypt (the controller probes both Clusters HEALTHY again), the
// password is the same, and new writes work, the next VM getting the next instance number.
func TestBackupRestore(t *testing.T) {
	var cfg localplatform.Config
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.EtcdUnsafeNoFsync = false
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=2s", "--vm-poll-interval=500ms")
		cfg = *c
	})
	ctx := context.Background()
	const ns = "team-a"
	var c backupClients
	c.connect(t, p)

	// Objects of every group, each settled (Ready, RUNNING, HEALTHY) before the snapshot.
	kubectlApply(t, p.Kubeconfig("alice"), ns, fmt.Sprintf(backupWorkload, "shop"))
	waitWorkloadReady(t, p, ns, "shop")
	if _, err := c.alice.GovernanceV1alpha1().Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "vault"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.alice.GovernanceV1alpha1().SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "vault"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createTicket := c.requestVM(t, ns, "ledger")
	c.waitVM(t, ns, "ledger", gov.VMPhaseRunning)
	c.waitTicket(t, ns, createTicket, gov.TicketSuccess)
	kubeconfig, err := p.TargetKubeconfig(p.KubeURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.dana.PlatformV1alpha1().Clusters().Create(ctx, &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "backup"},
		Spec: platform.ClusterSpec{Description: "Kept across a restore.", Kubeconfig: string(kubeconfig)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitHealthy(t, "backup", time.Time{})
	c.waitProvider(t, "kubernetes")
	if _, err := c.alice.ComputeV1alpha1().TenantComputes(ns).Create(ctx, newTenant("kept", "kept-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitTenant(t, ns, "kept")
	pack := rawPack("kept", "v1.0.0", []string{localplatform.LocalCluster}, "team-b",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept-by-pack"},"data":{"kept":"yes"}}`)
	if _, err := c.dana.InfrastructureV1alpha1().InfrastructureClusterPacks(packsNS).Create(ctx, pack, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, 2*time.Minute, func() (bool, string) {
		_, err := c.kube.CoreV1().ConfigMaps("team-b").Get(ctx, "kept-by-pack", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("the pack's ConfigMap: %v", err)
	})

	before := c.plinthObjects(t)
	for _, group := range []string{"score.dev", "governance.plinth.dev", "platform.plinth.dev", "compute.plinth.dev", "gitops.plinth.dev", "infrastructure.ontai.dev"} {
		if countGroup(before, group) == 0 {
			t.Errorf("no object of group %s to back up", group)
		}
	}
	kept := c.kubeState(t, ns)
	dbPassword := c.secretValue(t, ns, kept.passwordRef)

	// The backup: one command against the running etcd.
	snapshot := filepath.Join(t.TempDir(), "plinth.db")
	start := time.Now()
	runTool(t, "etcdctl", "--endpoints", p.EtcdURL(), "snapshot", "save", snapshot)
	saveTime := time.Since(start)
	info, err := os.Stat(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Revision  int64 `json:"revision"`
		TotalKey  int   `json:"totalKey"`
		TotalSize int64 `json:"totalSize"`
	}
	if err := json.Unmarshal([]byte(runTool(t, "etcdutl", "snapshot", "status", snapshot, "-w", "json")), &status); err != nil {
		t.Fatal(err)
	}
	kubectlApply(t, p.Kubeconfig("alice"), ns, fmt.Sprintf(backupWorkload, "after-snapshot"))

	// Disaster: the platform stops and etcd's data is gone; restore and start again.
	p.Stop()
	if err := os.RemoveAll(p.EtcdDataDir()); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	runTool(t, "etcdutl", "snapshot", "restore", snapshot, "--data-dir", p.EtcdDataDir(), "--name", localplatform.EtcdMemberName,
		"--initial-cluster", localplatform.EtcdMemberName+"="+p.EtcdPeerURL(), "--initial-advertise-peer-urls", p.EtcdPeerURL(),
		"--bump-revision", "1000000000", "--mark-compacted")
	restoreTime := time.Since(start)
	start = time.Now()
	// A probe stamped after this was made by the restarted controller; the restored status
	// carries the last probe before the snapshot.
	restartedAt := metav1.NewTime(start).Rfc3339Copy()
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	restored, err := localplatform.Start(startCtx, cfg)
	if err != nil {
		t.Fatalf("the platform does not start on the restored data: %v", err)
	}
	t.Cleanup(restored.Stop)
	restartTime := time.Since(start)
	c.connect(t, restored)
	t.Logf("snapshot: %d bytes (%d keys, revision %d), saved in %s; restored in %s; platform up again in %s",
		info.Size(), status.TotalKey, status.Revision, saveTime.Round(time.Millisecond), restoreTime.Round(time.Millisecond), restartTime.Round(time.Second))

	t.Run("every object is back with its UID and spec; what came after the snapshot is not", func(t *testing.T) {
		after := c.plinthObjects(t)
		for key, was := range before {
			now, ok := after[key]
			if !ok {
				t.Errorf("%s is gone", key)
				continue
			}
			if now.uid != was.uid || now.created != was.created || !reflect.DeepEqual(now.spec, was.spec) {
				t.Errorf("%s changed: UID %s → %s, created %s → %s, spec equal %v", key, was.uid, now.uid, was.created, now.created, reflect.DeepEqual(now.spec, was.spec))
			}
		}
		t.Logf("%d Plinth objects compared", len(before))
		if _, err := c.alice.ScoreV1b1().Workloads(ns).Get(ctx, "after-snapshot", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the Workload created after the snapshot: %v", err)
		}
	})

	t.Run("governance records are whole: ticket, revision, instance number, audit trail", func(t *testing.T) {
		vm, err := c.alice.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, "ledger", metav1.GetOptions{})
		if err != nil || vm.Status.InstanceName != "team-a-vault-db-01" || vm.Status.Phase != gov.VMPhaseRunning {
			t.Fatalf("VM: %+v %v", vm, err)
		}
		tk, err := c.alice.GovernanceV1alpha1().ApprovalTickets(ns).Get(ctx, createTicket, metav1.GetOptions{})
		if err != nil || tk.Status.State != gov.TicketSuccess || len(tk.Status.Decisions) != 1 || tk.Status.Decisions[0].User != "carol" {
			t.Errorf("ticket: %+v %v", tk, err)
		}
		svc, err := c.alice.GovernanceV1alpha1().SystemServices(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil || svc.Status.NextInstanceIndex != 2 {
			t.Errorf("service counter: %+v %v", svc, err)
		}
		audits, err := c.alice.GovernanceV1alpha1().AuditLogs(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.actor=carol"})
		if err != nil || len(audits.Items) == 0 {
			t.Errorf("carol's decision is not in the audit trail: %+v %v", audits, err)
		}
	})

	t.Run("the kubeconfigs still decrypt: both Clusters are probed HEALTHY after the restart", func(t *testing.T) {
		c.waitHealthy(t, "backup", restartedAt.Time)
		c.waitHealthy(t, localplatform.LocalCluster, restartedAt.Time)
	})

	t.Run("the cluster's own objects are back: Deployment, VirtualMachine, the same database password", func(t *testing.T) {
		now := c.kubeState(t, ns)
		if now.deployment != kept.deployment || now.virtualMachine != kept.virtualMachine || now.packConfigMap != kept.packConfigMap {
			t.Errorf("UIDs before %+v, after %+v", kept, now)
		}
		if got := c.secretValue(t, ns, now.passwordRef); got != dbPassword {
			t.Error("the database password changed")
		}
		waitWorkloadReady(t, restored, ns, "shop")
	})

	t.Run("new writes work: a Workload, the next VM (instance 02), a Cluster", func(t *testing.T) {
		kubectlApply(t, restored.Kubeconfig("alice"), ns, fmt.Sprintf(backupWorkload, "after-restore"))
		waitWorkloadReady(t, restored, ns, "after-restore")
		ticket := c.requestVM(t, ns, "ledger2")
		vm := c.waitVM(t, ns, "ledger2", gov.VMPhaseRunning)
		c.waitTicket(t, ns, ticket, gov.TicketSuccess)
		if vm.Status.InstanceName != "team-a-vault-db-02" {
			t.Errorf("the next VM is %q", vm.Status.InstanceName)
		}
		if _, err := c.dana.PlatformV1alpha1().Clusters().Create(ctx, &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "after-restore"},
			Spec: platform.ClusterSpec{Kubeconfig: string(kubeconfig)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.waitHealthy(t, "after-restore", time.Time{})
	})
}

// backupClients reach one platform as the demo identities; connect again after a restart.
type backupClients struct {
	alice, carol, dana clientset.Interface
	kube               kubernetes.Interface
	dynamic            dynamic.Interface
	discovery          discovery.DiscoveryInterface
	kubevirt           kubevirtclient.Interface
}

func (c *backupClients) connect(t *testing.T, p *localplatform.Platform) {
	t.Helper()
	clientFor := func(user string) clientset.Interface {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg)
	}
	c.alice, c.carol, c.dana = clientFor("alice"), clientFor("carol"), clientFor("dana")
	admin, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	c.kube = kubernetes.NewForConfigOrDie(admin)
	c.dynamic = dynamic.NewForConfigOrDie(admin)
	c.discovery = discovery.NewDiscoveryClientForConfigOrDie(admin)
	c.kubevirt = kubevirtclient.NewForConfigOrDie(admin)
}

// requestVM asks for a VM of service db as alice and has carol approve it on Cluster local;
// it returns the ticket.
func (c *backupClients) requestVM(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.alice.GovernanceV1alpha1().ManagedVMs(ns).Create(ctx, &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gov.ManagedVMSpec{SystemServiceRef: gov.LocalObjectReference{Name: "db"}, InstanceType: "u1.small",
			Image: "quay.io/containerdisks/fedora:40"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vm, err := c.alice.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || vm.Status.PendingApproval == nil {
		t.Fatalf("no pending request on %s: %+v %v", name, vm, err)
	}
	ticket := vm.Status.PendingApproval.Ticket
	if _, err := c.carol.GovernanceV1alpha1().ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove,
		Cluster: localplatform.LocalCluster}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("approving %s: %v", ticket, err)
	}
	return ticket
}

func (c *backupClients) waitVM(t *testing.T, ns, name string, phase gov.VMPhase) *gov.ManagedVM {
	t.Helper()
	var vm *gov.ManagedVM
	waitForCondition(t, 2*time.Minute, func() (bool, string) {
		var err error
		if vm, err = c.alice.GovernanceV1alpha1().ManagedVMs(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return vm.Status.Phase == phase, fmt.Sprintf("%+v", vm.Status)
	})
	return vm
}

func (c *backupClients) waitTicket(t *testing.T, ns, name string, state gov.TicketState) {
	t.Helper()
	waitForCondition(t, 2*time.Minute, func() (bool, string) {
		tk, err := c.alice.GovernanceV1alpha1().ApprovalTickets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return tk.Status.State == state, fmt.Sprintf("%s: %s", tk.Status.State, tk.Status.Message)
	})
}

// waitHealthy waits until the controller has probed the Cluster HEALTHY after since, which
// it can only do with the kubeconfig decrypted.
func (c *backupClients) waitHealthy(t *testing.T, name string, since time.Time) {
	t.Helper()
	waitForCondition(t, 2*time.Minute, func() (bool, string) {
		cl, err := c.dana.PlatformV1alpha1().Clusters().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		probed := cl.Status.LastProbeTime != nil && !cl.Status.LastProbeTime.Time.Before(since)
		return cl.Status.Phase == platform.ClusterPhaseHealthy && probed, fmt.Sprintf("%+v", cl.Status)
	})
}

func (c *backupClients) waitProvider(t *testing.T, name string) {
	t.Helper()
	waitForCondition(t, time.Minute, func() (bool, string) {
		cp, err := c.dana.ComputeV1alpha1().ComputeProviders().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(cp.Status.Conditions, compute.ConditionProviderReady), fmt.Sprintf("%+v", cp.Status.Conditions)
	})
}

func (c *backupClients) waitTenant(t *testing.T, ns, name string) {
	t.Helper()
	waitForCondition(t, 2*time.Minute, func() (bool, string) {
		tc, err := c.alice.ComputeV1alpha1().TenantComputes(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return tc.Status.Phase == compute.PhaseReady, fmt.Sprintf("phase %s conditions %+v", tc.Status.Phase, tc.Status.Conditions)
	})
}

// backedUp is what must come back of a Plinth object.
type backedUp struct {
	uid, created string
	spec         any
}

// plinthObjects lists every object of every resource plinth-apiserver serves, by
// group/resource/namespace/name.
func (c *backupClients) plinthObjects(t *testing.T) map[string]backedUp {
	t.Helper()
	objects := map[string]backedUp{}
	for _, apiService := range localplatform.APIServices {
		version, group, _ := strings.Cut(apiService, ".")
		gv := schema.GroupVersion{Group: group, Version: version}
		resources, err := c.discovery.ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		for _, r := range resources.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			list, err := c.dynamic.Resource(gv.WithResource(r.Name)).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing %s: %v", r.Name, err)
			}
			for _, o := range list.Items {
				spec, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec")
				key := fmt.Sprintf("%s/%s %s/%s", group, r.Name, o.GetNamespace(), o.GetName())
				objects[key] = backedUp{uid: string(o.GetUID()), created: o.GetCreationTimestamp().String(), spec: spec}
			}
		}
	}
	return objects
}

func hasVerb(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}

func countGroup(objects map[string]backedUp, group string) int {
	n := 0
	for key := range objects {
		if strings.HasPrefix(key, group+"/") {
			n++
		}
	}
	return n
}

// kubeObjects are UIDs of what the controller made on the cluster, and where the database
// password is.
type kubeObjects struct {
	deployment, virtualMachine, packConfigMap string
	passwordRef                               [2]string
}

func (c *backupClients) kubeState(t *testing.T, ns string) kubeObjects {
	t.Helper()
	ctx := context.Background()
	var k kubeObjects
	d, err := c.kube.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.deployment = string(d.UID)
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "DB_PASSWORD" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			k.passwordRef = [2]string{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}
		}
	}
	if k.passwordRef[0] == "" {
		t.Fatalf("DB_PASSWORD is not a Secret reference: %+v", d.Spec.Template.Spec.Containers[0].Env)
	}
	vm, err := c.kubevirt.KubevirtV1().VirtualMachines(ns).Get(ctx, "team-a-vault-db-01", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.virtualMachine = string(vm.UID)
	cm, err := c.kube.CoreV1().ConfigMaps("team-b").Get(ctx, "kept-by-pack", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.packConfigMap = string(cm.UID)
	return k
}

func (c *backupClients) secretValue(t *testing.T, ns string, ref [2]string) string {
	t.Helper()
	s, err := c.kube.CoreV1().Secrets(ns).Get(context.Background(), ref[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	value := s.Data[ref[1]]
	if len(value) == 0 {
		t.Fatalf("Secret %s has no %s", ref[0], ref[1])
	}
	return string(value)
}

// runTool runs a binary of the platform's bin directory and returns its standard output.
func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(framework.BinDir(), name), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func kubectlApply(t *testing.T, kubeconfig, ns, manifest string) {
	t.Helper()
	if out, err := framework.KubectlStdin(kubeconfig, manifest, "apply", "--server-side", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

func waitWorkloadReady(t *testing.T, p *localplatform.Platform, ns, name string) {
	t.Helper()
	if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/"+name, "-n", ns, "--timeout=120s"); err != nil {
		t.Fatalf("Workload %s is not Ready: %v\n%s", name, err, out)
	}
}
