// Package localplatform runs Plinth the way a cluster runs it, on one machine and without
// containers: etcd, kube-apiserver (RBAC, front-proxy), kube-controller-manager,
// plinth-apiserver registered through APIService objects with delegated authentication and
// authorization, plinth-controller, and Flux's source-controller and kustomize-controller.
// `make run` and the integration tests both start it from here.
//
// This file brings the platform up and down; pki.go and identities.go make its certificates
// and users, components.go and plinth.go start its processes (kept running by the supervisor
// package), flux.go installs and starts Flux, manifests.go installs what a cluster admin would
// apply, volumes.go gives claims volumes (the default StorageClass and its provisioner),
// ready.go waits, and clients.go talks to it.
package localplatform

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/internal/localplatform/node"
	"github.com/plinth-dev/plinth/internal/localplatform/supervisor"
)

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
	// RegistryPort is the localhost port of Cluster local's OCI registry, which plinth-controller
	// runs (the Cluster has spec.gitOps.registryEnabled); zero picks a free one.
	RegistryPort int
	// Nodes is how many fake (kwok) nodes run pods; zero means 3.
	Nodes int
	// ProvisionersConfig is plinth-controller's template provisioners file, if any.
	ProvisionersConfig string
	// ControllerArgs are extra plinth-controller flags (benchmarks compare settings with them).
	ControllerArgs []string
	// PlinthArgs are extra plinth-apiserver flags (the API benchmark serves CBOR with them).
	PlinthArgs []string
	// KubeAPIServerArgs are extra kube-apiserver flags (bench-workloads --diagnose audits
	// Deployment writes with them).
	KubeAPIServerArgs []string
	// NoController leaves plinth-controller out: the API benchmark measures the servers alone.
	NoController bool
	// KubernetesOnly starts a bare target cluster: etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok with its nodes (and the simulated KubeVirt kwok's stages read), no
	// Flux and no Plinth; PlinthPort and ControllerPort are unused. Tests register it as a
	// second Cluster.
	KubernetesOnly bool
	// RealNode, if set, adds a real node (kubelet, containerd, runc) whose pods run real
	// images (realnode.go); it needs root and changes the machine until Stop.
	RealNode *RealNodeConfig
	// EtcdUnsafeNoFsync makes etcd skip fsync (tests only).
	EtcdUnsafeNoFsync bool
	// Progress receives one line per step, and one whenever a component dies or is back after
	// a restart. It is written from several goroutines, one line per write.
	Progress io.Writer
}

// StopTimeout bounds Stop: Ctrl-C on `make run` must be done within ten seconds.
const StopTimeout = 8 * time.Second

// Platform is a running local platform.
type Platform struct {
	cfg       Config
	etcd      *supervisor.Process
	kube      *supervisor.Process
	kcm       *supervisor.Process
	scheduler *supervisor.Process
	kwok      *supervisor.Process
	// kwokOnce is kwok for etcdBack, which runs on etcd's supervision goroutine: set when kwok
	// starts, never cleared.
	kwokOnce   atomic.Pointer[supervisor.Process]
	plinth     *supervisor.Process
	controller *supervisor.Process
	fluxProcs  []*supervisor.Process // in the order of FluxControllers
	flux       fluxAddrs
	pkiDir     string
	kubeURL    string
	admin      kubernetes.Interface
	// standby is a second plinth-controller, once StartStandbyController ran.
	standby *supervisor.Process
	// stopVolumes stops the volume provisioner (volumes.go); nil until it runs.
	stopVolumes func()
	// node is the real node, if Config.RealNode asked for one, and dns its pods' CoreDNS.
	node *node.Node
	dns  *supervisor.Process
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

// EtcdURL is the client URL of the platform's etcd.
func (p *Platform) EtcdURL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPort) }

// RegistryEndpoint is where Cluster local's OCI registry listens once plinth-controller runs
// it: localhost:<RegistryPort>.
func (p *Platform) RegistryEndpoint() string { return fmt.Sprintf("localhost:%d", p.cfg.RegistryPort) }

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
// score.dev OpenAPI is served through kube-apiserver. From then on, a component that dies is
// reported on cfg.Progress and restarted. On error, whatever started is stopped.
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
	if p.cfg.RegistryPort == 0 {
		ports, err := FreePorts(1, p.configuredPorts()...)
		if err != nil {
			return nil, err
		}
		p.cfg.RegistryPort = ports[0]
	}
	// The registry's port too: plinth-controller starts the registry later, and a port held by
	// something else would only show as the OCIRegistry's Error then.
	for _, port := range p.configuredPorts() {
		if err := portFree(port); err != nil {
			return nil, err
		}
	}
	if err := p.ensurePKI(); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	if p.admin, err = p.adminClient(); err != nil {
		return nil, err
	}
	if cfg.RealNode != nil {
		if err := p.prepareNode(); err != nil {
			return nil, fmt.Errorf("the real node: %w", err)
		}
	}
	p.step("etcd on 127.0.0.1:%d", cfg.EtcdPort)
	if err := p.startEtcd(ctx); err != nil {
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
	if cfg.KubernetesOnly {
		return p, p.startWorkloads(ctx)
	}
	// Flux starts early and is waited for last: its start-up overlaps the rest.
	p.step("Flux's %s", strings.Join(FluxControllers, " and "))
	if err := p.installFlux(ctx); err != nil {
		return nil, err
	}
	if err := p.startFlux(); err != nil {
		return nil, err
	}
	if err := p.startWorkloads(ctx); err != nil {
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
	if err := waitFor(ctx, "role aggregation", 60*time.Second, p.kcm, p.rolesAggregated); err != nil {
		return nil, err
	}
	if err := p.fluxReady(ctx); err != nil {
		return nil, err
	}
	p.step("registering this cluster as target Cluster %q (GitOps engine Flux, registry on localhost:%d)", LocalCluster, p.cfg.RegistryPort)
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
		return nil, fmt.Errorf("Cluster %s did not become HEALTHY: %w (log: %s)", LocalCluster, err, p.controller.LogPath())
	}
	return p, nil
}

// startWorkloads starts what runs workloads: kube-controller-manager, kube-scheduler and kwok
// with its nodes, and the default StorageClass with its volume provisioner.
func (p *Platform) startWorkloads(ctx context.Context) error {
	p.step("kube-controller-manager, kube-scheduler, kwok and StorageClass %s's provisioner", StorageClassName)
	if err := p.startControllerManager(); err != nil {
		return err
	}
	if err := p.startScheduler(); err != nil {
		return err
	}
	if err := p.startKwok(); err != nil {
		return err
	}
	if err := p.startVolumes(ctx); err != nil {
		return err
	}
	if err := p.registerNodes(ctx); err != nil {
		return err
	}
	if p.node != nil {
		return p.startNode(ctx)
	}
	return nil
}

// Stop shuts the platform down within StopTimeout. The volume provisioner, which runs in this
// process, stops first; then supervision ends, so that no component comes back while the
// others go. Then kube-apiserver's clients, plinth-apiserver
// and Flux among them (so that kube-apiserver does not wait on its watches), get SIGTERM together,
// then kube-apiserver, then etcd; a group still running at the end of its share of the time
// is killed.
func (p *Platform) Stop() {
	// The real node first: its pods and kube-proxy's rules go while kube-apiserver is there.
	p.node.Stop()
	p.node = nil
	if p.stopVolumes != nil {
		p.stopVolumes()
		p.stopVolumes = nil
	}
	supervisor.StopAll(StopTimeout,
		append([]*supervisor.Process{p.controller, p.standby, p.plinth, p.kwok, p.scheduler, p.kcm, p.dns}, p.fluxProcs...),
		[]*supervisor.Process{p.kube},
		[]*supervisor.Process{p.etcd})
	p.controller, p.standby, p.plinth, p.kwok, p.scheduler, p.kcm, p.kube, p.etcd, p.fluxProcs, p.dns = nil, nil, nil, nil, nil, nil, nil, nil, nil, nil
}

func (p *Platform) step(format string, args ...interface{}) {
	fmt.Fprintf(p.cfg.Progress, "plinth: starting "+format+"\n", args...)
}

func (p *Platform) bin(name string) string { return filepath.Join(p.cfg.BinDir, name) }

// configuredPorts are the ports the platform's components are given (the registry's once it
// is chosen). Each stays free until its component binds it, possibly late in the start: ports
// the platform chooses itself (Flux's) must avoid them, or a component started later finds
// its port taken, and a readiness check of the earlier one talks to the later one.
func (p *Platform) configuredPorts() []int {
	ports := []int{p.cfg.EtcdPort, p.cfg.EtcdPeerPort, p.cfg.KubePort, p.cfg.KwokPort}
	if !p.cfg.KubernetesOnly {
		ports = append(ports, p.cfg.PlinthPort, p.cfg.ControllerPort)
		if p.cfg.RegistryPort != 0 {
			ports = append(ports, p.cfg.RegistryPort)
		}
	}
	return ports
}
