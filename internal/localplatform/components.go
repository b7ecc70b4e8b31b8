package localplatform

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/plinth-dev/plinth/internal/localplatform/supervisor"
)

// run starts a component binary under supervision: its deaths and returns are reported on
// the platform's output, and ready (if any) tells when a restarted one serves again.
func (p *Platform) run(name string, ready func(context.Context) error, args ...string) (*supervisor.Process, error) {
	return p.runEnv(name, nil, ready, args...)
}

// runEnv is run with KEY=value settings added to the component's environment.
func (p *Platform) runEnv(name string, env []string, ready func(context.Context) error, args ...string) (*supervisor.Process, error) {
	return supervisor.Start(p.spec(name, env, ready, args...))
}

// spec is how the platform supervises a component: its binary, its log in LogDir, restarts
// reported as progress.
func (p *Platform) spec(name string, env []string, ready func(context.Context) error, args ...string) supervisor.Spec {
	return supervisor.Spec{
		Name: name, Path: p.bin(name), Args: args, Env: env, LogDir: p.LogDir(), Ready: ready,
		Report: func(msg string) { fmt.Fprintf(p.cfg.Progress, "plinth: %s\n", msg) },
	}
}

// EtcdMemberName is the name of the platform's one etcd member; a restored snapshot must
// name it again (etcdutl snapshot restore --name).
const EtcdMemberName = "plinth-local"

// EtcdDataDir is etcd's data directory, <platform dir>/etcd: what a restore replaces.
func (p *Platform) EtcdDataDir() string { return filepath.Join(p.cfg.Dir, "etcd") }

// EtcdPeerURL is the peer URL of the platform's etcd member, which a restored snapshot must
// advertise again (etcdutl snapshot restore --initial-cluster, --initial-advertise-peer-urls).
func (p *Platform) EtcdPeerURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPeerPort)
}

func (p *Platform) startEtcd(ctx context.Context) error {
	client := p.EtcdURL()
	peer := p.EtcdPeerURL()
	args := []string{
		"--name", EtcdMemberName, "--data-dir", p.EtcdDataDir(),
		"--listen-client-urls", p.etcdListenURLs(), "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", EtcdMemberName + "=" + peer,
		"--log-level", "warn",
	}
	if p.cfg.EtcdUnsafeNoFsync {
		args = append(args, "--unsafe-no-fsync")
	}
	ready := listening(fmt.Sprintf("127.0.0.1:%d", p.cfg.EtcdPort))
	spec := p.spec("etcd", nil, ready, args...)
	spec.Back = p.etcdBack
	var err error
	if p.etcd, err = supervisor.Start(spec); err != nil {
		return err
	}
	return waitFor(ctx, "etcd", 30*time.Second, p.etcd, ready)
}

func (p *Platform) startKubeAPIServer(ctx context.Context) error {
	path := func(name string) string { return filepath.Join(p.pkiDir, name) }
	var err error
	p.kube, err = p.run("kube-apiserver", p.kubeReady, append([]string{
		"--etcd-servers", p.EtcdURL(),
		"--secure-port", strconv.Itoa(p.cfg.KubePort),
		// A /16 (65,534 Services): the benchmarks run a thousand workloads with a Service each.
		"--service-cluster-ip-range", "10.0.0.0/16",
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
	}, p.kubeAPIServerExtraArgs()...)...)
	if err != nil {
		return err
	}
	return waitFor(ctx, "kube-apiserver", 120*time.Second, p.kube, p.kubeReady)
}

// kubeAPIServerExtraArgs are where kube-apiserver listens and whom it authorizes how (which
// a real node changes), then Config's flags.
func (p *Platform) kubeAPIServerExtraArgs() []string {
	args := []string{"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		"--authorization-mode", "RBAC"}
	if p.cfg.RealNode != nil {
		args = p.nodeKubeAPIServerArgs()
	}
	return append(args, p.cfg.KubeAPIServerArgs...)
}

// etcdListenURLs is where etcd serves clients: loopback, and the real node's address, where
// its pods reach it (a chart's external etcd), when the platform has one.
func (p *Platform) etcdListenURLs() string {
	if p.cfg.RealNode != nil {
		return p.EtcdURL() + "," + p.NodeEtcdURL()
	}
	return p.EtcdURL()
}

func (p *Platform) startControllerManager() error {
	var err error
	p.kcm, err = p.run("kube-controller-manager", nil,
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
		// give namespaces, owner references and Deployments their usual behaviour. The PV
		// binder binds claims to the volumes StorageClass local's provisioner makes (volumes.go).
		// The protection controllers are needed, not optional: kube-apiserver's default
		// StorageObjectInUseProtection admission puts their finalizers on every claim and
		// volume, and only they take them off (a claim once no pod uses it, a volume once
		// unbound), so without them no claim, volume or namespace holding one could be deleted.
		"--controllers", "clusterrole-aggregation-controller,garbage-collector-controller,namespace-controller,"+
			"serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,"+
			"deployment-controller,replicaset-controller,statefulset-controller,endpointslice-controller,node-lifecycle-controller,"+
			"persistentvolume-binder-controller,persistentvolume-protection-controller,persistentvolumeclaim-protection-controller",
	)
	return err
}

func (p *Platform) startScheduler() error {
	var err error
	p.scheduler, err = p.run("kube-scheduler", nil,
		"--kubeconfig", p.AdminKubeconfig(), "--leader-elect=false", "--secure-port", "0",
		"--kube-api-qps", "500", "--kube-api-burst", "1000")
	return err
}

// startKwok runs kwok, which keeps the fake nodes (registerNodes) Ready and reports their
// pods Running, so workloads really become available.
func (p *Platform) startKwok() error {
	stages, err := filepath.Glob(filepath.Join(p.cfg.BinDir, "..", "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("kwok stages are missing under %s/../kwok-stages (hack/build-tools.sh kwok writes them)", p.cfg.BinDir)
	}
	// kwok renews a Lease per node, as a kubelet does. The heartbeat stage writes node status
	// only every ten minutes, so without leases kube-controller-manager's node lifecycle
	// controller finds the nodes silent after its 50 s grace period, marks them and every pod
	// on them NotReady, and kwok's pod-ready stage (for Pending pods only) never makes those
	// pods Ready again: workloads would fall out of Ready a minute after start.
	address := fmt.Sprintf("127.0.0.1:%d", p.cfg.KwokPort)
	// kwok keeps only the fake nodes (registerNodes annotates them): a real node's status is its
	// kubelet's.
	args := []string{"--kubeconfig", p.AdminKubeconfig(), "--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake", "--cidr", "10.244.0.0/16",
		"--node-lease-duration-seconds", "40",
		"--server-address", address}
	vmStages := filepath.Join(p.cfg.Dir, "kwok-virtualmachines.yaml")
	if err := os.WriteFile(vmStages, []byte(virtualMachineStages), 0o644); err != nil {
		return err
	}
	for _, s := range append(stages, vmStages) {
		args = append(args, "--config", s)
	}
	p.kwok, err = p.run("kwok", listening(address), args...)
	p.kwokOnce.Store(p.kwok)
	return err
}

// etcdBack restarts kwok once a restarted etcd is back. KubeVirt's controllers, which kwok's
// VirtualMachine stages stand in for, retry a failed status write and resync every object;
// kwok does neither: it retries only refused connections, timeouts and 429/503 answers, and
// acts on an object only when an event for it arrives. A write of kwok's that kube-apiserver
// had passed to etcd when etcd died is answered 500 (the likeliest of the errors outside that
// list), and kwok drops that stage for good: a VirtualMachine created just before would never
// run. kube-apiserver itself stays up, so kwok's watches see no break and no relist would
// bring the object back. A fresh kwok lists
// everything again and plays every stage that is due.
func (p *Platform) etcdBack() {
	kwok := p.kwokOnce.Load()
	if kwok == nil {
		return // not started yet: it will list everything when it starts
	}
	if err := kwok.Restart("etcd was restarted; kwok lists every object again"); err != nil {
		fmt.Fprintf(p.cfg.Progress, "plinth: kwok was not restarted after etcd: %v\n", err)
	}
}
