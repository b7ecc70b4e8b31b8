// Package localplatform runs Plinth the way a cluster runs it, on one machine and without
// containers: etcd, kube-apiserver (RBAC, front-proxy), kube-controller-manager, and
// plinth-apiserver registered through APIService objects with delegated authentication and
// authorization. `make run` and the integration tests both start it from here.
package localplatform

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/pki"
)

// The simulated KubeVirt of the local cluster: CRDs and RBAC first, then, once the CRDs are
// established, the KubeVirt resource with its version and feature gates.
var (
	//go:embed kubevirt.yaml
	kubevirtManifest string
	//go:embed kubevirt-cr.yaml
	kubevirtResource string
	//go:embed kwok-virtualmachines.yaml
	virtualMachineStages string
)

// LocalCluster is the name under which the local kube-apiserver is registered as a target
// Cluster, and TargetUser the identity of its kubeconfig.
const (
	LocalCluster = "local"
	TargetUser   = "plinth:target:local"
)

// Demo identities, each with a kubeconfig in the platform directory.
var Identities = []Identity{
	{User: "admin", Groups: []string{"system:masters"}},
	{User: "alice", Namespace: "team-a"},
	{User: "bob", Namespace: "team-b"},
	{User: "carol", Groups: []string{"platform:approvers"}},
	{User: "dana", Groups: []string{"platform:admins"}},
	// The controller's service account, authenticated by certificate so the local platform
	// needs no token machinery; RBAC matches it like the real service account.
	{User: ControllerUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:plinth-system"}, Namespace: "plinth-system"},
}

// ControllerUser is plinth-controller's service account identity.
const ControllerUser = "system:serviceaccount:plinth-system:plinth-controller"

const apiserverUser = "system:serviceaccount:plinth-system:plinth-apiserver"

// Identity is a user of the local platform.
type Identity struct {
	User      string
	Groups    []string
	Namespace string
}

// KubeconfigName is the file name of an identity's kubeconfig.
func KubeconfigName(user string) string {
	if user == ControllerUser {
		return "plinth-controller.kubeconfig"
	}
	return user + ".kubeconfig"
}

// Config is where the platform lives and which ports it uses.
type Config struct {
	// Dir holds certificates, kubeconfigs, etcd data and logs; it survives restarts.
	Dir string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kubectl and plinth-apiserver.
	BinDir string
	// ArtifactsDir is artifacts/deploy: the manifests a cluster admin applies.
	ArtifactsDir string
	// Ports; zero values are not allowed.
	EtcdPort, EtcdPeerPort, KubePort, PlinthPort, ControllerPort, KwokPort int
	// Nodes is how many fake (kwok) nodes run pods; zero means 3.
	Nodes int
	// ProvisionersConfig is plinth-controller's template provisioners file, if any.
	ProvisionersConfig string
	// ControllerArgs are extra plinth-controller flags (benchmarks compare settings with them).
	ControllerArgs []string
	// NoController leaves plinth-controller out: the API benchmark measures the servers alone.
	NoController bool
	// EtcdUnsafeNoFsync makes etcd skip fsync (tests only).
	EtcdUnsafeNoFsync bool
	// Progress receives one line per step.
	Progress io.Writer
}

// Platform is a running local platform.
type Platform struct {
	cfg        Config
	etcd       *process
	kube       *process
	kcm        *process
	scheduler  *process
	kwok       *process
	plinth     *process
	controller *process
	pkiDir     string
	kubeURL    string
}

// AdminKubeconfig is the system:masters kubeconfig.
func (p *Platform) AdminKubeconfig() string { return p.Kubeconfig("admin") }

// Kubeconfig is the kubeconfig of a demo identity.
func (p *Platform) Kubeconfig(user string) string {
	return filepath.Join(p.cfg.Dir, KubeconfigName(user))
}

// PlinthURL is plinth-apiserver's own address, bypassing kube-apiserver.
func (p *Platform) PlinthURL() string { return fmt.Sprintf("https://127.0.0.1:%d", p.cfg.PlinthPort) }

// KubeURL is kube-apiserver's address.
func (p *Platform) KubeURL() string { return p.kubeURL }

// PKIDir holds every certificate of the platform.
func (p *Platform) PKIDir() string { return p.pkiDir }

// EncryptionKeyFile is the key file plinth-apiserver and plinth-controller share to seal and
// open target clusters' kubeconfigs.
func (p *Platform) EncryptionKeyFile() string {
	return filepath.Join(p.cfg.Dir, "encryption-keys.yaml")
}

// LogDir holds each component's log.
func (p *Platform) LogDir() string { return filepath.Join(p.cfg.Dir, "logs") }

// Start brings the platform up and returns once the APIService is Available and the
// score.dev OpenAPI is served through kube-apiserver. On error, whatever started is stopped.
func Start(ctx context.Context, cfg Config) (_ *Platform, err error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	p := &Platform{cfg: cfg, pkiDir: filepath.Join(cfg.Dir, "pki"), kubeURL: fmt.Sprintf("https://127.0.0.1:%d", cfg.KubePort)}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	// A port still held (say, by a platform that is still shutting down) would make the
	// readiness checks below talk to the wrong process.
	for _, port := range []int{cfg.EtcdPort, cfg.EtcdPeerPort, cfg.KubePort, cfg.PlinthPort, cfg.ControllerPort, cfg.KwokPort} {
		if err := portFree(port); err != nil {
			return nil, err
		}
	}
	if err := p.ensurePKI(); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	p.step("etcd on 127.0.0.1:%d", cfg.EtcdPort)
	if err := p.startEtcd(); err != nil {
		return nil, err
	}
	p.step("kube-apiserver on %s", p.kubeURL)
	if err := p.startKubeAPIServer(ctx); err != nil {
		return nil, err
	}
	// kwok reads the VirtualMachine kind's schema once, at start: the simulated KubeVirt
	// comes first.
	p.step("the simulated KubeVirt")
	if err := p.installKubeVirt(ctx); err != nil {
		return nil, err
	}
	p.step("kube-controller-manager, kube-scheduler and kwok")
	if err := p.startControllerManager(); err != nil {
		return nil, err
	}
	if err := p.startSchedulerAndNodes(ctx); err != nil {
		return nil, err
	}
	p.step("applying %s and the demo tenants", cfg.ArtifactsDir)
	if err := p.install(ctx); err != nil {
		return nil, err
	}
	p.step("plinth-apiserver on %s", p.PlinthURL())
	if err := p.StartPlinth(ctx); err != nil {
		return nil, err
	}
	// Ready means tenants can work: the controller manager has folded plinth's roles into
	// the built-in edit role.
	if err := p.waitRoleAggregation(ctx); err != nil {
		return nil, err
	}
	p.step("registering this cluster as target Cluster %q", LocalCluster)
	if err := p.registerLocalCluster(ctx); err != nil {
		return nil, err
	}
	if cfg.NoController {
		return p, nil
	}
	p.step("plinth-controller")
	if err := p.StartController(); err != nil {
		return nil, err
	}
	// Ready means VMs can be approved: the controller has probed the local cluster.
	if err := p.kubectl(ctx, "wait", "--for=jsonpath={.status.phase}=HEALTHY", "cluster/"+LocalCluster, "--timeout=60s"); err != nil {
		return nil, fmt.Errorf("Cluster %s did not become HEALTHY: %w (log: %s)", LocalCluster, err, p.controller.logPath())
	}
	return p, nil
}

// Stop shuts the platform down: plinth-apiserver first (so kube-apiserver does not wait on its
// watches), then kube-controller-manager, kube-apiserver and etcd.
func (p *Platform) Stop() {
	p.StopController()
	p.StopPlinth()
	p.kwok.stop(10 * time.Second)
	p.scheduler.stop(10 * time.Second)
	p.kcm.stop(20 * time.Second)
	p.kube.stop(60 * time.Second)
	p.etcd.stop(20 * time.Second)
	p.kwok, p.scheduler, p.kcm, p.kube, p.etcd = nil, nil, nil, nil, nil
}

// StartController starts plinth-controller (with leader election) as the controller's
// service account. Several may run; one leads.
func (p *Platform) StartController() error {
	args := []string{"--kubeconfig", p.Kubeconfig(ControllerUser), "--bind-address", fmt.Sprintf("127.0.0.1:%d", p.cfg.ControllerPort),
		"--encryption-key-file", p.EncryptionKeyFile()}
	if p.cfg.ProvisionersConfig != "" {
		args = append(args, "--provisioners-config", p.cfg.ProvisionersConfig)
	}
	args = append(args, p.cfg.ControllerArgs...)
	proc, err := startProcess("plinth-controller", p.bin("plinth-controller"), p.LogDir(), args...)
	if err != nil {
		return err
	}
	p.controller = proc
	return waitTCP(proc, fmt.Sprintf("127.0.0.1:%d", p.cfg.ControllerPort), 30*time.Second)
}

// StopController stops plinth-controller.
func (p *Platform) StopController() {
	p.controller.stop(20 * time.Second)
	p.controller = nil
}

// KillController kills plinth-controller without letting it release its lease, as a crash would.
func (p *Platform) KillController() {
	if p.controller != nil && p.controller.running() {
		_ = p.controller.cmd.Process.Kill()
		<-p.controller.exited
	}
	p.controller.stop(time.Second)
	p.controller = nil
}

// ControllerURL is plinth-controller's health and metrics address.
func (p *Platform) ControllerURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d", p.cfg.ControllerPort)
}

// StopPlinth stops plinth-apiserver only.
func (p *Platform) StopPlinth() {
	p.plinth.stop(30 * time.Second)
	p.plinth = nil
}

// StartPlinth starts plinth-apiserver and waits for its APIService.
func (p *Platform) StartPlinth(ctx context.Context) error {
	serving := pki.PairIn(p.pkiDir, "plinth-serving")
	kubeconfig := filepath.Join(p.cfg.Dir, "plinth-apiserver.kubeconfig")
	var err error
	p.plinth, err = startProcess("plinth-apiserver", p.bin("plinth-apiserver"), p.LogDir(),
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPort),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(p.cfg.PlinthPort),
		"--tls-cert-file", serving.Cert, "--tls-private-key-file", serving.Key,
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		"--encryption-key-file", p.EncryptionKeyFile(),
	)
	if err != nil {
		return err
	}
	for _, apiService := range APIServices {
		if err := p.kubectl(ctx, "wait", "--for=condition=Available", "apiservice/"+apiService, "--timeout=90s"); err != nil {
			return fmt.Errorf("APIService %s did not become Available: %w (log: %s)", apiService, err, p.plinth.logPath())
		}
	}
	// The aggregated OpenAPI appears shortly after the APIService turns Available; kubectl
	// explain and server-side apply need it.
	client, err := p.adminClient()
	if err != nil {
		return err
	}
	return poll(ctx, 60*time.Second, func() error {
		for _, path := range []string{"/openapi/v3/apis/score.dev/v1b1", "/openapi/v3/apis/governance.plinth.dev/v1alpha1", "/openapi/v3/apis/platform.plinth.dev/v1alpha1"} {
			if err := client.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Error(); err != nil {
				return err
			}
		}
		return nil
	})
}

// APIServices are the APIService objects plinth-apiserver serves, one per group/version.
var APIServices = []string{"v1b1.score.dev", "v1alpha1.governance.plinth.dev", "v1alpha1.platform.plinth.dev"}

func (p *Platform) step(format string, args ...interface{}) {
	fmt.Fprintf(p.cfg.Progress, "plinth: starting "+format+"\n", args...)
}

func (p *Platform) bin(name string) string { return filepath.Join(p.cfg.BinDir, name) }

// ensurePKI creates, once, the cluster CA (client certificates of every identity and
// kube-apiserver's serving certificate), the front-proxy CA and client, the service-account
// signing key, and plinth-apiserver's own CA and serving certificate.
func (p *Platform) ensurePKI() error {
	ca, err := pki.LoadOrCreateCA(pki.PairIn(p.pkiDir, "ca"), "plinth-local-cluster-ca")
	if err != nil {
		return err
	}
	if err := ca.EnsureServing(pki.PairIn(p.pkiDir, "kube-apiserver"), "kube-apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}); err != nil {
		return err
	}
	for _, id := range Identities {
		pair := pki.PairIn(p.pkiDir, strings.TrimSuffix(KubeconfigName(id.User), ".kubeconfig"))
		if err := ca.EnsureClient(pair, id.User, id.Groups...); err != nil {
			return err
		}
		ns := id.Namespace
		if ns == "" {
			ns = "default"
		}
		if err := pki.WriteKubeconfig(p.Kubeconfig(id.User), p.kubeURL, ca.Cert, pair, id.User, ns); err != nil {
			return err
		}
	}
	if err := ca.EnsureClient(pki.PairIn(p.pkiDir, "plinth-target"), TargetUser, "plinth:targets"); err != nil {
		return err
	}
	if err := keyring.EnsureFile(p.EncryptionKeyFile()); err != nil {
		return err
	}
	apiserverClient := pki.PairIn(p.pkiDir, "plinth-apiserver-client")
	if err := ca.EnsureClient(apiserverClient, apiserverUser, "system:serviceaccounts", "system:serviceaccounts:plinth-system"); err != nil {
		return err
	}
	if err := pki.WriteKubeconfig(filepath.Join(p.cfg.Dir, "plinth-apiserver.kubeconfig"), p.kubeURL, ca.Cert, apiserverClient, apiserverUser, "plinth-system"); err != nil {
		return err
	}
	frontProxy, err := pki.LoadOrCreateCA(pki.PairIn(p.pkiDir, "front-proxy-ca"), "plinth-local-front-proxy-ca")
	if err != nil {
		return err
	}
	if err := frontProxy.EnsureClient(pki.PairIn(p.pkiDir, "front-proxy-client"), "front-proxy-client"); err != nil {
		return err
	}
	if err := pki.EnsureSigningKey(filepath.Join(p.pkiDir, "sa.key"), filepath.Join(p.pkiDir, "sa.pub")); err != nil {
		return err
	}
	plinthCA, err := pki.LoadOrCreateCA(pki.PairIn(p.pkiDir, "plinth-ca"), "plinth-apiserver-ca")
	if err != nil {
		return err
	}
	return plinthCA.EnsureServing(pki.PairIn(p.pkiDir, "plinth-serving"), "plinth-apiserver",
		[]string{"plinth-apiserver.plinth-system.svc", "plinth-apiserver.plinth-system.svc.cluster.local", "localhost"},
		[]net.IP{net.ParseIP("127.0.0.1")})
}

func (p *Platform) startEtcd() error {
	client := fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPeerPort)
	args := []string{
		"--name", "plinth-local", "--data-dir", filepath.Join(p.cfg.Dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "plinth-local=" + peer,
		"--log-level", "warn",
	}
	if p.cfg.EtcdUnsafeNoFsync {
		args = append(args, "--unsafe-no-fsync")
	}
	var err error
	if p.etcd, err = startProcess("etcd", p.bin("etcd"), p.LogDir(), args...); err != nil {
		return err
	}
	return waitTCP(p.etcd, fmt.Sprintf("127.0.0.1:%d", p.cfg.EtcdPort), 30*time.Second)
}

func (p *Platform) startKubeAPIServer(ctx context.Context) error {
	path := func(name string) string { return filepath.Join(p.pkiDir, name) }
	var err error
	p.kube, err = startProcess("kube-apiserver", p.bin("kube-apiserver"), p.LogDir(),
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPort),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(p.cfg.KubePort),
		"--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		// A /16 (65,534 Services): the benchmarks run a thousand workloads with a Service each.
		"--service-cluster-ip-range", "10.0.0.0/16",
		"--authorization-mode", "RBAC",
		"--client-ca-file", path("ca.crt"),
		"--tls-cert-file", path("kube-apiserver.crt"), "--tls-private-key-file", path("kube-apiserver.key"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", path("sa.pub"), "--service-account-signing-key-file", path("sa.key"),
		// The front proxy: kube-apiserver authenticates to aggregated servers with this client
		// certificate and passes the user in these headers; they trust only this CA and name.
		"--requestheader-client-ca-file", path("front-proxy-ca.crt"),
		"--requestheader-allowed-names", "front-proxy-client",
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", path("front-proxy-client.crt"), "--proxy-client-key-file", path("front-proxy-client.key"),
	)
	if err != nil {
		return err
	}
	client, err := p.adminClient()
	if err != nil {
		return err
	}
	return poll(ctx, 120*time.Second, func() error {
		if !p.kube.running() {
			return stopError{fmt.Errorf("kube-apiserver exited: %v (log: %s)", p.kube.exitErr, p.kube.logPath())}
		}
		return client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

func (p *Platform) waitRoleAggregation(ctx context.Context) error {
	client, err := p.adminClient()
	if err != nil {
		return err
	}
	return poll(ctx, 60*time.Second, func() error {
		if !p.kcm.running() {
			return stopError{fmt.Errorf("kube-controller-manager exited: %v (log: %s)", p.kcm.exitErr, p.kcm.logPath())}
		}
		edit, err := client.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, rule := range edit.Rules {
			for _, group := range rule.APIGroups {
				if group == "score.dev" {
					return nil
				}
			}
		}
		return fmt.Errorf("the edit role does not include score.dev yet")
	})
}

func (p *Platform) startControllerManager() error {
	var err error
	p.kcm, err = startProcess("kube-controller-manager", p.bin("kube-controller-manager"), p.LogDir(),
		"--kubeconfig", p.AdminKubeconfig(),
		"--authentication-kubeconfig", p.AdminKubeconfig(),
		"--authorization-kubeconfig", p.AdminKubeconfig(),
		"--bind-address", "127.0.0.1", "--secure-port", "0",
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		// One machine, one user: the default 20 requests per second would make a thousand
		// Deployments take minutes for no reason.
		"--kube-api-qps", "500", "--kube-api-burst", "1000",
		"--concurrent-deployment-syncs", "10", "--concurrent-replicaset-syncs", "10",
		"--service-account-private-key-file", filepath.Join(p.pkiDir, "sa.key"),
		"--root-ca-file", filepath.Join(p.pkiDir, "ca.crt"),
		// Role aggregation makes plinth's tenant roles part of admin/edit/view; the others
		// give namespaces, owner references and Deployments their usual behaviour.
		"--controllers", "clusterrole-aggregation-controller,garbage-collector-controller,namespace-controller,"+
			"serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,"+
			"deployment-controller,replicaset-controller,statefulset-controller,endpointslice-controller,node-lifecycle-controller",
	)
	return err
}

// startSchedulerAndNodes runs kube-scheduler and kwok, and registers fake nodes that kwok keeps
// Ready and whose pods it reports Running, so workloads really become available.
func (p *Platform) startSchedulerAndNodes(ctx context.Context) error {
	var err error
	p.scheduler, err = startProcess("kube-scheduler", p.bin("kube-scheduler"), p.LogDir(),
		"--kubeconfig", p.AdminKubeconfig(), "--leader-elect=false", "--secure-port", "0",
		"--kube-api-qps", "500", "--kube-api-burst", "1000")
	if err != nil {
		return err
	}
	stages, err := filepath.Glob(filepath.Join(p.cfg.BinDir, "..", "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("kwok stages are missing under %s/../kwok-stages (hack/build-tools.sh kwok writes them)", p.cfg.BinDir)
	}
	// kwok renews a Lease per node, as a kubelet does. The heartbeat stage writes node status
	// only every ten minutes, so without leases kube-controller-manager's node lifecycle
	// controller finds the nodes silent after its 50 s grace period, marks them and every pod
	// on them NotReady, and kwok's pod-ready stage (for Pending pods only) never makes those
	// pods Ready again: workloads would fall out of Ready a minute after start.
	args := []string{"--kubeconfig", p.AdminKubeconfig(), "--manage-all-nodes=true", "--cidr", "10.244.0.0/16",
		"--node-lease-duration-seconds", "40",
		"--server-address", fmt.Sprintf("127.0.0.1:%d", p.cfg.KwokPort)}
	vmStages := filepath.Join(p.cfg.Dir, "kwok-virtualmachines.yaml")
	if err := os.WriteFile(vmStages, []byte(virtualMachineStages), 0o644); err != nil {
		return err
	}
	for _, s := range append(stages, vmStages) {
		args = append(args, "--config", s)
	}
	p.kwok, err = startProcess("kwok", p.bin("kwok"), p.LogDir(), args...)
	if err != nil {
		return err
	}
	nodes := p.cfg.Nodes
	if nodes == 0 {
		nodes = 3
	}
	var manifest strings.Builder
	for i := 0; i < nodes; i++ {
		fmt.Fprintf(&manifest, `apiVersion: v1
kind: Node
metadata:
  name: kwok-node-%d
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-%d}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "250"}
  capacity: {cpu: "32", memory: 256Gi, pods: "250"}
---
`, i, i)
	}
	return p.kubectlStdin(ctx, manifest.String(), "apply", "-f", "-")
}

// install applies artifacts/deploy as a cluster admin would, then what only the local platform
// needs: the Service resolves to this machine (ExternalName localhost) because no pod runs
// plinth-apiserver, and the APIService gets the local CA bundle and port.
func (p *Platform) install(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(p.cfg.ArtifactsDir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		if replacedLocally[filepath.Base(f)] {
			continue
		}
		if err := p.kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", f); err != nil {
			return err
		}
	}
	if err := p.kubectlStdin(ctx, localManifest(p.cfg.PlinthPort), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(p.pkiDir, "plinth-ca.crt"))
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"caBundle":%q,"service":{"port":%d}}}`, base64.StdEncoding.EncodeToString(caPEM), p.cfg.PlinthPort)
	for _, apiService := range APIServices {
		if err := p.kubectl(ctx, "patch", "apiservice", apiService, "--type", "merge", "-p", patch); err != nil {
			return err
		}
	}
	return nil
}

// installKubeVirt installs the simulated KubeVirt (see kubevirt.yaml).
func (p *Platform) installKubeVirt(ctx context.Context) error {
	if err := p.kubectlStdin(ctx, kubevirtManifest, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	if err := p.kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/kubevirts.kubevirt.io", "crd/virtualmachines.kubevirt.io", "crd/virtualmachineinstances.kubevirt.io"); err != nil {
		return err
	}
	if err := p.kubectlStdin(ctx, kubevirtResource, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	client, err := p.adminClient()
	if err != nil {
		return err
	}
	return poll(ctx, 60*time.Second, func() error {
		return client.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/kubevirt.io/v1").Do(ctx).Error()
	})
}

// registerLocalCluster registers the local kube-apiserver as the target Cluster "local", with a
// self-contained kubeconfig of the plinth:targets identity, unless it is registered already.
func (p *Platform) registerLocalCluster(ctx context.Context) error {
	kubeconfig, err := p.TargetKubeconfig(p.kubeURL)
	if err != nil {
		return err
	}
	manifest, err := ClusterManifest(LocalCluster, "The local platform's own kube-apiserver, with a simulated KubeVirt.", kubeconfig)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, p.bin("kubectl"), "--kubeconfig", p.AdminKubeconfig(), "create", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "AlreadyExists") {
		// kubectl's message names the object, never the kubeconfig.
		return fmt.Errorf("registering Cluster %s: %v\n%s", LocalCluster, err, out)
	}
	return nil
}

// TargetKubeconfig is a self-contained kubeconfig of the plinth:targets identity for the
// local kube-apiserver at server (tests point it through a proxy).
func (p *Platform) TargetKubeconfig(server string) ([]byte, error) {
	return pki.InlineKubeconfig(server, filepath.Join(p.pkiDir, "ca.crt"), pki.PairIn(p.pkiDir, "plinth-target"), TargetUser)
}

// ClusterManifest is the YAML of a Cluster with the given kubeconfig.
func ClusterManifest(name, description string, kubeconfig []byte) (string, error) {
	data, err := json.Marshal(map[string]any{
		"apiVersion": "platform.plinth.dev/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"description": description, "kubeconfig": string(kubeconfig)},
	})
	return string(data), err
}

// replacedLocally are the artifacts the local platform replaces: no pod runs plinth-apiserver
// or plinth-controller, so there are no Deployments, and the Service points at this machine.
var replacedLocally = map[string]bool{"60-service.yaml": true, "70-deployment.yaml": true, "80-controller-deployment.yaml": true}

func localManifest(plinthPort int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Service
metadata:
  name: plinth-apiserver
  namespace: plinth-system
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - name: https
    port: %d
`, plinthPort)
	// Each tenant identity edits its own namespace with the built-in edit role.
	for _, id := range Identities {
		if id.Namespace == "" || len(id.Groups) > 0 {
			continue
		}
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Namespace
metadata:
  name: %[2]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: %[1]s-edit
  namespace: %[2]s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: %[1]s}
`, id.User, id.Namespace)
	}
	return b.String()
}

func (p *Platform) kubectl(ctx context.Context, args ...string) error {
	return p.kubectlStdin(ctx, "", args...)
}

func (p *Platform) kubectlStdin(ctx context.Context, stdin string, args ...string) error {
	cmd := exec.CommandContext(ctx, p.bin("kubectl"), append([]string{"--kubeconfig", p.AdminKubeconfig()}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (p *Platform) adminClient() (kubernetes.Interface, error) {
	cfg, err := p.AdminConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// AdminConfig is a REST config for the admin identity.
func (p *Platform) AdminConfig() (*rest.Config, error) { return p.ConfigFor("admin") }

// ConfigFor is a REST config for a demo identity, without client-side throttling.
func (p *Platform) ConfigFor(user string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig(user))
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

// stopError ends a poll early: the thing waited for can no longer happen.
type stopError struct{ error }

// poll retries check until it succeeds, returns a stopError, or the timeout passes.
func poll(ctx context.Context, timeout time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if _, stop := last.(stopError); stop {
			return last
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s: %w", timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// PortInUseError reports a configured port that another process holds.
type PortInUseError struct {
	Port int
	Err  error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("port %d is in use (is another platform still running?): %v", e.Port, e.Err)
}

func portFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return &PortInUseError{Port: port, Err: err}
	}
	return l.Close()
}

func waitTCP(proc *process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !proc.running() {
			return fmt.Errorf("%s exited: %v (log: %s)", proc.name, proc.exitErr, proc.logPath())
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %s (log: %s)", proc.name, addr, timeout, proc.logPath())
}

// ControllerPID is plinth-controller's process id, for measurements.
func (p *Platform) ControllerPID() int {
	if p.controller == nil {
		return 0
	}
	return p.controller.cmd.Process.Pid
}

// PIDs are the process ids of etcd, kube-apiserver and plinth-apiserver, for measurements.
func (p *Platform) PIDs() (etcd, kubeAPIServer, plinthAPIServer int) {
	pid := func(proc *process) int {
		if proc == nil {
			return 0
		}
		return proc.cmd.Process.Pid
	}
	return pid(p.etcd), pid(p.kube), pid(p.plinth)
}

// EtcdURL is the client URL of the platform's etcd.
func (p *Platform) EtcdURL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPort) }

// FreePorts asks the kernel for n distinct free loopback ports, holding each until all are
// chosen so none is handed out twice.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// PlinthDirectConfig is the admin's REST config aimed at plinth-apiserver itself rather than
// through the aggregator; plinth-apiserver accepts the admin's client certificate through
// delegated authentication. Its serving certificate, from plinth-apiserver's own CA, names
// 127.0.0.1 besides the in-cluster Service, so the connection is verified as the
// aggregator's is.
func (p *Platform) PlinthDirectConfig() (*rest.Config, error) {
	cfg, err := p.AdminConfig()
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(p.pkiDir, "plinth-ca.crt"))
	if err != nil {
		return nil, err
	}
	cfg.Host = p.PlinthURL()
	cfg.TLSClientConfig.Insecure, cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = false, caPEM, ""
	return cfg, nil
}

// ProfileCPU saves a CPU profile of kube-apiserver and of plinth-apiserver, taken at the same
// time for the given duration, as kube-apiserver.cpu.pprof and plinth-apiserver.cpu.pprof in dir
// (go tool pprof reads them).
func (p *Platform) ProfileCPU(ctx context.Context, dir string, d time.Duration) error {
	kubeCfg, err := p.AdminConfig()
	if err != nil {
		return err
	}
	plinthCfg, err := p.PlinthDirectConfig()
	if err != nil {
		return err
	}
	profile := func(cfg *rest.Config, file string) error {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = 0 // the request lasts as long as the profile
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		data, err := client.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(d.Seconds()))).DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("profile of %s: %w", cfg.Host, err)
		}
		return os.WriteFile(filepath.Join(dir, file), data, 0o644)
	}
	errs := make(chan error, 2)
	go func() { errs <- profile(kubeCfg, "kube-apiserver.cpu.pprof") }()
	go func() { errs <- profile(plinthCfg, "plinth-apiserver.cpu.pprof") }()
	return errors.Join(<-errs, <-errs)
}
