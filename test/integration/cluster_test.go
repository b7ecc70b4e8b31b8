package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth-dev/plinth/internal/localplatform"
	governance "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	govclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestClusters registers target clusters on the local platform and checks, from the outside,
// that their kubeconfigs are write-only and encrypted, that plinth-controller probes them
// (HEALTHY with the simulated KubeVirt, UNREACHABLE while the network is down, HEALTHY again),
// that a new kubeconfig takes effect without a restart, that access is for platform
// administrators (and the sealed credentials for the controller only), and that a key
// rotation re-encrypts what is stored.
func TestClusters(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=1s", "--cluster-probe-timeout=2s")
	})
	ctx := context.Background()
	clientFor := func(user string) clientset.Interface {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg)
	}
	admin, alice, dana := clientFor("admin"), clientFor("alice"), clientFor("dana")
	controller := clientFor(localplatform.ControllerUser)

	// What must never appear in a response or a log: the target identity's private key, in
	// any of the forms a kubeconfig carries it.
	keyPEM, err := os.ReadFile(filepath.Join(p.PKIDir(), "plinth-target.key"))
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{"client-key-data", "PRIVATE KEY", base64.StdEncoding.EncodeToString(keyPEM)[:48], string(keyPEM[40:90])}
	noSecret := func(what, s string) {
		t.Helper()
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("%s contains the kubeconfig (%.20q…)", what, secret)
			}
		}
	}
	waitPhase := func(t *testing.T, name string, phase platform.ClusterPhase, timeout time.Duration, extra func(*platform.Cluster) bool) *platform.Cluster {
		t.Helper()
		var last *platform.Cluster
		waitForCondition(t, timeout, func() (bool, string) {
			c, err := admin.PlatformV1alpha1().Clusters().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			last = c
			return c.Status.Phase == phase && (extra == nil || extra(c)), fmt.Sprintf("%+v", c.Status)
		})
		return last
	}

	t.Run("the local cluster is registered and HEALTHY with the simulated KubeVirt", func(t *testing.T) {
		c := waitPhase(t, localplatform.LocalCluster, platform.ClusterPhaseHealthy, 60*time.Second, func(c *platform.Cluster) bool { return c.Status.KubevirtVersion != "" })
		s := c.Status
		if s.KubevirtVersion != "v1.9.0" || s.KubernetesVersion != "v1.37.1" || s.APIServerURL != p.KubeURL() || s.EncryptionKeyID != "k1" || s.ObservedGeneration != 1 {
			t.Errorf("status: %+v", s)
		}
		if strings.Join(s.EnabledFeatures, ",") != "DataVolumes,HotplugVolumes,LiveMigration,Snapshot" {
			t.Errorf("features %v", s.EnabledFeatures)
		}
		if c.Spec.Kubeconfig != "" {
			t.Error("get returned the kubeconfig")
		}
		out, err := framework.Kubectl(p.AdminKubeconfig(), "get", "clusters", "-o", "wide")
		if err != nil {
			t.Fatal(out)
		}
		expectTable(t, out, []string{"NAME", "PHASE", "KUBEVIRT", "API SERVER", "KUBERNETES", "FEATURES", "KEY", "AGE"},
			[]string{"local", "HEALTHY", "v1.9.0", p.KubeURL(), "v1.37.1", "DataVolumes,HotplugVolumes,LiveMigration,Snapshot", "k1"})
		out, err = framework.Kubectl(p.AdminKubeconfig(), "explain", "clusters.spec.kubeconfig")
		if err != nil || !strings.Contains(out, "write-only") {
			t.Errorf("kubectl explain: %v %s", err, out)
		}
	})

	proxy := newTCPProxy(t, strings.TrimPrefix(p.KubeURL(), "https://"))
	target, err := p.TargetKubeconfig("https://" + proxy.addr)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := localplatform.ClusterManifest("edge", "Reached through a proxy the test can cut.", target)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the kubeconfig is in no response: create, dry run, get, list, watch, table, apply, managed fields", func(t *testing.T) {
		w, err := admin.PlatformV1alpha1().Clusters().Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		out, err := framework.KubectlStdin(p.AdminKubeconfig(), manifest, "create", "--dry-run=server", "-o", "json", "-f", "-")
		if err != nil {
			t.Fatal(out)
		}
		noSecret("dry-run create", out)
		// Client-side apply keeps the whole manifest in an annotation unless the server takes
		// the kubeconfig out of it.
		out, err = framework.KubectlStdin(p.AdminKubeconfig(), manifest, "apply", "-o", "json", "-f", "-")
		if err != nil {
			t.Fatal(out)
		}
		noSecret("apply", out)
		// Applying the same manifest again (as GitOps tools do on every sync) changes nothing.
		if out, err := framework.KubectlStdin(p.AdminKubeconfig(), manifest, "apply", "-f", "-"); err != nil {
			t.Fatal(out)
		}
		if c, err := admin.PlatformV1alpha1().Clusters().Get(ctx, "edge", metav1.GetOptions{}); err != nil || c.Generation != 1 {
			t.Errorf("re-applying the same kubeconfig: generation %d, %v", c.Generation, err)
		}
		// The watch starts with the existing clusters, then sees edge being added and probed
		// (MODIFIED events come from the watch cache, wrapped for serialization).
		for modified := false; !modified; {
			ev := nextEvent(t, w)
			raw, _ := json.Marshal(ev.Object)
			noSecret("watch event", string(raw))
			c, ok := ev.Object.(*platform.Cluster)
			if !ok {
				t.Fatalf("watch event %s %T", ev.Type, ev.Object)
			}
			if c.Spec.Kubeconfig != "" || strings.Contains(string(raw), "plinth-sealed") {
				t.Fatalf("a %s watch event carries the kubeconfig", ev.Type)
			}
			modified = c.Name == "edge" && ev.Type == watch.Modified
		}
		rc := admin.PlatformV1alpha1().RESTClient()
		for what, req := range map[string]func() ([]byte, error){
			"get": func() ([]byte, error) {
				return rc.Get().AbsPath("/apis/platform.plinth.dev/v1alpha1/clusters/edge").DoRaw(ctx)
			},
			"list": func() ([]byte, error) {
				return rc.Get().AbsPath("/apis/platform.plinth.dev/v1alpha1/clusters").DoRaw(ctx)
			},
			"table": func() ([]byte, error) {
				return rc.Get().AbsPath("/apis/platform.plinth.dev/v1alpha1/clusters").Param("includeObject", "Object").
					SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
			},
			"status": func() ([]byte, error) {
				return rc.Get().AbsPath("/apis/platform.plinth.dev/v1alpha1/clusters/edge/status").DoRaw(ctx)
			},
		} {
			body, err := req()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			noSecret(what, string(body))
			if strings.Contains(string(body), "plinth-sealed") {
				t.Errorf("%s returned the sealed value", what)
			}
		}
		out, err = framework.Kubectl(p.AdminKubeconfig(), "get", "cluster", "edge", "-o", "yaml", "--show-managed-fields")
		if err != nil {
			t.Fatal(out)
		}
		noSecret("kubectl get -o yaml with managed fields", out)
		if !strings.Contains(out, "f:kubeconfig") {
			t.Errorf("managed fields should name the field, not its value:\n%s", out)
		}
	})

	t.Run("etcd holds the kubeconfig only as AES-GCM ciphertext", func(t *testing.T) {
		etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{p.EtcdURL()}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer etcd.Close()
		for _, name := range []string{"local", "edge"} {
			resp, err := etcd.Get(ctx, "/registry/plinth.dev/platform.plinth.dev/clusters/"+name)
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("etcd %s: %v %v", name, resp, err)
			}
			stored := string(resp.Kvs[0].Value)
			noSecret("etcd value of "+name, stored)
			if !strings.Contains(stored, `"kubeconfig":"plinth-sealed/v1:k1:`) {
				t.Errorf("etcd value of %s is not sealed: %.300s", name, stored)
			}
		}
	})

	t.Run("only platform administrators see clusters; only the controller reads sealed credentials", func(t *testing.T) {
		_, err := alice.PlatformV1alpha1().Clusters().List(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "alice lists clusters")
		_, err = alice.PlatformV1alpha1().Clusters().Create(ctx, &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: platform.ClusterSpec{Kubeconfig: string(target)}}, metav1.CreateOptions{})
		expectForbidden(t, err, "alice registers a cluster")
		if list, err := dana.PlatformV1alpha1().Clusters().List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) < 2 {
			t.Errorf("dana lists clusters: %v", err)
		}
		_, err = dana.PlatformV1alpha1().Clusters().GetCredentials(ctx, "edge", metav1.GetOptions{})
		expectForbidden(t, err, "dana reads sealed credentials")
		_, err = alice.PlatformV1alpha1().Clusters().GetCredentials(ctx, "edge", metav1.GetOptions{})
		expectForbidden(t, err, "alice reads sealed credentials")
		creds, err := controller.PlatformV1alpha1().Clusters().GetCredentials(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the controller reads sealed credentials: %v", err)
		}
		raw, _ := json.Marshal(creds)
		noSecret("credentials subresource", string(raw))
		keys, err := keyring.Load(p.EncryptionKeyFile())
		if err != nil {
			t.Fatal(err)
		}
		plain, err := keys.Open(creds.EncryptionKeyID, creds.SealedKubeconfig, []byte("platform.plinth.dev/clusters/edge/"+string(creds.UID)))
		if err != nil || string(plain) != string(target) {
			t.Errorf("the sealed credentials do not open to the registered kubeconfig with the key file: %v", err)
		}
		if _, err := keys.Open(creds.EncryptionKeyID, creds.SealedKubeconfig, []byte("platform.plinth.dev/clusters/local/"+string(creds.UID))); err == nil {
			t.Error("the ciphertext opens for another cluster")
		}
	})

	t.Run("bad kubeconfigs and names are refused with the field and without echoing the kubeconfig", func(t *testing.T) {
		cfg, err := clientcmd.Load(target)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range cfg.AuthInfos {
			a.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1"}
		}
		withExec, _ := clientcmd.Write(*cfg)
		for name, tc := range map[string]struct {
			cluster *platform.Cluster
			field   string
		}{
			"exec plugin":   {&platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "bad-exec"}, Spec: platform.ClusterSpec{Kubeconfig: string(withExec)}}, "spec.kubeconfig"},
			"no kubeconfig": {&platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "bad-empty"}}, "spec.kubeconfig"},
			"garbage":       {&platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "bad-garbage"}, Spec: platform.ClusterSpec{Kubeconfig: "{{" + string(keyPEM)}}, "spec.kubeconfig"},
			"bad name":      {&platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}, Spec: platform.ClusterSpec{Kubeconfig: string(target)}}, "metadata.name"},
		} {
			_, err := dana.PlatformV1alpha1().Clusters().Create(ctx, tc.cluster, metav1.CreateOptions{})
			expectInvalid(t, err, tc.field)
			noSecret(name+" error", fmt.Sprint(err))
			if _, err := admin.PlatformV1alpha1().Clusters().Get(ctx, tc.cluster.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: something was stored: %v", name, err)
			}
		}
		// The sealed value cannot be copied where readers would see it.
		_, err = admin.PlatformV1alpha1().Clusters().Patch(ctx, "edge", types.JSONPatchType,
			[]byte(`[{"op":"copy","from":"/spec/kubeconfig","path":"/metadata/annotations/leak"}]`), metav1.PatchOptions{})
		expectInvalid(t, err, "metadata.annotations[leak]")
		// An update with a bad kubeconfig keeps the stored one.
		_, err = admin.PlatformV1alpha1().Clusters().Patch(ctx, "edge", types.MergePatchType, []byte(`{"spec":{"kubeconfig":"not: [a kubeconfig"}}`), metav1.PatchOptions{})
		expectInvalid(t, err, "spec.kubeconfig")
	})

	t.Run("a cut network makes the cluster UNREACHABLE, then HEALTHY again", func(t *testing.T) {
		waitPhase(t, "edge", platform.ClusterPhaseHealthy, 60*time.Second, nil)
		proxy.Stop()
		c := waitPhase(t, "edge", platform.ClusterPhaseUnreachable, 30*time.Second, nil)
		if r := findCondition(c, "Reachable"); r == nil || r.Status != metav1.ConditionFalse || r.Reason != "Unreachable" {
			t.Errorf("Reachable: %+v", r)
		}
		t.Run("approvals place VMs only on registered, HEALTHY clusters with the features the VM needs", func(t *testing.T) {
			testPlacement(t, p)
		})
		proxy.Start()
		waitPhase(t, "edge", platform.ClusterPhaseHealthy, 30*time.Second, nil)
	})

	t.Run("a new kubeconfig takes effect without a restart", func(t *testing.T) {
		other := newTCPProxy(t, strings.TrimPrefix(p.KubeURL(), "https://"))
		next, err := p.TargetKubeconfig("https://" + other.addr)
		if err != nil {
			t.Fatal(err)
		}
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"kubeconfig": string(next)}})
		updated, err := dana.PlatformV1alpha1().Clusters().Patch(ctx, "edge", types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Spec.Kubeconfig != "" {
			t.Error("the patch response carries the kubeconfig")
		}
		gen := updated.Generation
		proxy.Stop() // only the new address works now
		waitPhase(t, "edge", platform.ClusterPhaseHealthy, 30*time.Second, func(c *platform.Cluster) bool {
			return c.Status.APIServerURL == "https://"+other.addr && c.Status.ObservedGeneration == gen
		})
		// An update without a kubeconfig keeps it and does not count as a spec change.
		same, err := dana.PlatformV1alpha1().Clusters().Patch(ctx, "edge", types.MergePatchType, []byte(`{"metadata":{"labels":{"zone":"b"}}}`), metav1.PatchOptions{})
		if err != nil || same.Generation != gen {
			t.Errorf("a label change: generation %d → %d, %v", gen, same.Generation, err)
		}
	})

	t.Run("key rotation without a restart: a new key encrypts, the old one decrypts, a write re-encrypts", func(t *testing.T) {
		f, err := keyring.ReadFile(p.EncryptionKeyFile())
		if err != nil {
			t.Fatal(err)
		}
		k2, err := keyring.GenerateKey("k2")
		if err != nil {
			t.Fatal(err)
		}
		writeKeys := func(keys ...keyring.FileKey) {
			t.Helper()
			if err := keyring.WriteFile(p.EncryptionKeyFile(), keyring.File{Keys: keys}); err != nil {
				t.Fatal(err)
			}
		}
		// A new kubeconfig generation makes the controller read and open the credentials again.
		touchSpec := func(description string) int64 {
			t.Helper()
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"description": description}})
			c, err := dana.PlatformV1alpha1().Clusters().Patch(ctx, "local", types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return c.Generation
		}
		probedAt := func(gen int64, phase platform.ClusterPhase) *platform.Cluster {
			t.Helper()
			return waitPhase(t, "local", phase, 30*time.Second, func(c *platform.Cluster) bool { return c.Status.ObservedGeneration == gen })
		}

		writeKeys(append([]keyring.FileKey{k2}, f.Keys...)...)
		time.Sleep(3 * time.Second) // both processes look at the file every 2 s
		// The documented re-encryption step: touch every Cluster.
		if out, err := framework.Kubectl(p.AdminKubeconfig(), "annotate", "clusters", "--all", "platform.plinth.dev/reencrypted-at="+time.Now().Format("20060102T150405"), "--overwrite"); err != nil {
			t.Fatal(out)
		}
		waitPhase(t, "local", platform.ClusterPhaseHealthy, 30*time.Second, func(c *platform.Cluster) bool { return c.Status.EncryptionKeyID == "k2" })
		// edge is unreachable by now (its proxy ended with the last subtest); its stored
		// kubeconfig is re-encrypted all the same.
		waitForCondition(t, 30*time.Second, func() (bool, string) {
			c, err := admin.PlatformV1alpha1().Clusters().Get(ctx, "edge", metav1.GetOptions{})
			return err == nil && c.Status.EncryptionKeyID == "k2", fmt.Sprint(err)
		})

		// Only the new key left: everything still opens.
		writeKeys(k2)
		time.Sleep(3 * time.Second)
		c := probedAt(touchSpec("rotated to k2"), platform.ClusterPhaseHealthy)
		if cond := findCondition(c, "CredentialsValid"); cond.Status != metav1.ConditionTrue {
			t.Errorf("CredentialsValid: %+v", cond)
		}

		// A key file without the sealing key: the kubeconfig cannot be opened, and says why.
		k3, _ := keyring.GenerateKey("k3")
		writeKeys(k3)
		time.Sleep(3 * time.Second)
		c = probedAt(touchSpec("no key for it"), platform.ClusterPhaseUnknown)
		if cond := findCondition(c, "CredentialsValid"); cond.Status != metav1.ConditionFalse || cond.Reason != "UnknownEncryptionKey" {
			t.Errorf("CredentialsValid: %+v", cond)
		}
		if c.Status.EncryptionKeyID != "k2" {
			t.Errorf("a server without the sealing key changed the stored kubeconfig: key %s", c.Status.EncryptionKeyID)
		}
		writeKeys(k2)
		time.Sleep(3 * time.Second)
		probedAt(touchSpec("k2 is back"), platform.ClusterPhaseHealthy)
	})

	t.Run("no log line holds a kubeconfig", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(p.LogDir(), "*.log"))
		if len(files) == 0 {
			t.Fatal("no logs")
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			noSecret("log "+filepath.Base(f), string(data))
		}
	})
}

// testPlacement runs while Cluster edge is UNREACHABLE and local is HEALTHY.
func testPlacement(t *testing.T, p *localplatform.Platform) {
	ctx := context.Background()
	gov := func(user string) govclient.GovernanceV1alpha1Interface {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg).GovernanceV1alpha1()
	}
	alice, carol := gov("alice"), gov("carol")
	const ns = "team-a"
	if _, err := alice.Systems(ns).Create(ctx, &governance.System{ObjectMeta: metav1.ObjectMeta{Name: "maps"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SystemServices(ns).Create(ctx, &governance.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "tiles"},
		Spec: governance.SystemServiceSpec{SystemRef: governance.LocalObjectReference{Name: "maps"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vm, err := alice.ManagedVMs(ns).Create(ctx, &governance.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "tiles-gpu"},
		Spec: governance.ManagedVMSpec{SystemServiceRef: governance.LocalObjectReference{Name: "tiles"}, InstanceType: "u1.small",
			Image: "quay.io/containerdisks/fedora:40", RequiredFeatures: []string{"GPU", "Snapshot"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ticket := vm.Status.PendingApproval.Ticket
	decide := func(d governance.TicketDecision) error {
		d.Decision = governance.DecisionApprove
		_, err := carol.ApprovalTickets(ns).Decide(ctx, ticket, &d, metav1.CreateOptions{})
		return err
	}
	expectCode(t, decide(governance.TicketDecision{}), apperror.ClusterRequired, "approval without a cluster")
	expectCode(t, decide(governance.TicketDecision{Cluster: "atlantis"}), apperror.ClusterNotFound, "approval on an unregistered cluster")
	err = decide(governance.TicketDecision{Cluster: "edge"})
	expectCode(t, err, apperror.ClusterDegraded, "approval on an UNREACHABLE cluster")
	if params := apperror.ParamsOf(err); params["phase"] != "UNREACHABLE" {
		t.Errorf("params %v", params)
	}
	err = decide(governance.TicketDecision{Cluster: "local"})
	expectCode(t, err, apperror.ClusterMissingFeatures, "approval on a cluster without GPU")
	if params := apperror.ParamsOf(err); params["features"] != "GPU" {
		t.Errorf("params %v", params)
	}
	// Nothing was decided by the refused approvals; an approver who drops the requirement
	// places the VM.
	modified := vm.Spec.DeepCopy()
	modified.RequiredFeatures = []string{"Snapshot"}
	if err := decide(governance.TicketDecision{Cluster: "local", ModifiedSpec: modified}); err != nil {
		t.Fatal(err)
	}
	got, err := alice.ManagedVMs(ns).Get(ctx, "tiles-gpu", metav1.GetOptions{})
	if err != nil || got.Status.Cluster != "local" || got.Status.Instance != 1 {
		t.Fatalf("VM after approval: %+v %v", got.Status, err)
	}
	tk, _ := alice.ApprovalTickets(ns).Get(ctx, ticket, metav1.GetOptions{})
	if len(tk.Status.Decisions) != 1 {
		t.Errorf("refused approvals were recorded: %+v", tk.Status.Decisions)
	}
}

func findCondition(c *platform.Cluster, condType string) *metav1.Condition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == condType {
			return &c.Status.Conditions[i]
		}
	}
	return &metav1.Condition{}
}

// tcpProxy forwards connections to a target until stopped; started again, it listens on the
// same address, so a cluster behind it is cut off and restored as by a network outage.
type tcpProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{t: t, addr: fmt.Sprintf("127.0.0.1:%d", port), target: target}
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

func (p *tcpProxy) Start() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// Stop closes the listener and every open connection.
func (p *tcpProxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
