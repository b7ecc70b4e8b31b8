// Package node runs a real Kubernetes node on this machine: containerd v2 with Debian's runc
// and CNI bridge, kubelet and kube-proxy, all built from the Go module proxy
// (hack/build-tools.sh). Its pods pull real images and run them, so a chart installed onto the
// local platform runs Plinth's own images as a cluster would; the fake (kwok) nodes stay for
// tenant workloads, whose images cannot be pulled here.
//
// A node changes the machine, as a kubelet does: the node's address on the loopback interface,
// a bridge for the pods, iptables rules (the bridge's masquerading, kube-proxy's Services),
// the kubepods cgroups, and kernel settings kubelet insists on. Stop undoes all of it and puts
// the kernel settings back; Start first undoes what a node that was killed left. One node runs
// per machine at a time (a lock file says so).
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/internal/localplatform/supervisor"
)

// Names on the host every node uses; one node runs at a time.
const (
	// addressLabel marks the node's address on the loopback interface, so that cleaning up
	// finds it whatever the address was.
	addressLabel = "lo:plinth"
	// bridgeName is the pods' bridge.
	bridgeName = "plinth-pods0"
	// networkName names the CNI network; the bridge plugin's iptables rules carry it.
	networkName = "plinth-pods"
	// runDir holds the sockets, whose paths must stay short (108 bytes), and the lock.
	runDir = "/run/plinth-node"
	// stateDir holds the node's configuration, containerd's images and kubelet's pods. A fixed
	// place, not the platform's directory: a node that was killed is cleaned up by the next
	// one, wherever that one's platform lives.
	stateRoot = "/var/lib/plinth-node"
)

// Config is the node.
type Config struct {
	// Name is the Node's name.
	Name string
	// LogDir receives containerd's, kubelet's and kube-proxy's logs.
	LogDir string
	// BinDir holds containerd, containerd-shim-runc-v2, ctr, kubelet and kube-proxy.
	BinDir string
	// Runc is runc's path; CNIBinDir holds the CNI plugins (Debian's: /usr/lib/cni).
	Runc, CNIBinDir string
	// Address is the node's address, put on the loopback interface: pods reach kube-apiserver
	// there (it must listen on it), and kube-apiserver reaches kubelet there. Not a loopback
	// address: pods have loopbacks of their own, and Endpoints refuse them.
	Address string
	// PodCIDR is the pods' addresses; its first address is the bridge's (the pods' gateway).
	PodCIDR string
	// ClusterDNS is the DNS Service's address pods are given, if any.
	ClusterDNS string
	// CAFile is the cluster CA: kubelet trusts client certificates it signed.
	CAFile string
	// KubeletKubeconfig is kubelet's identity, system:node:<Name> in group system:nodes;
	// ProxyKubeconfig is kube-proxy's, system:kube-proxy.
	KubeletKubeconfig, ProxyKubeconfig string
	// SandboxImage is the pods' sandbox (pause) image, pulled by containerd when first needed.
	SandboxImage string
	// Taints are registered with the Node: tenant workloads stay on the fake nodes.
	Taints []corev1.Taint
	// Labels are registered with the Node.
	Labels map[string]string
	// KubeletPort and KubeletHealthzPort are kubelet's ports (on Address and on 127.0.0.1).
	KubeletPort, KubeletHealthzPort int
	// Progress receives a line when a process dies or is back.
	Progress io.Writer
}

// Node is a running node.
type Node struct {
	cfg        Config
	lock       *os.File
	containerd *supervisor.Process
	kubelet    *supervisor.Process
	proxy      *supervisor.Process
	saved      map[string]string
}

// Prepare takes the machine's node lock, undoes what a node that was killed left, and adds
// the node's address, so that kube-apiserver and etcd can listen on it before the node starts.
// Stop undoes it.
func Prepare(cfg Config) (_ *Node, err error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	n := &Node{cfg: cfg}
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(runDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("another local node runs on this machine (%s is locked): one node at a time", lock.Name())
	}
	n.lock = lock
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	// A node that was killed (its test timed out, the machine's session ended) left its
	// mounts, links and rules: clear them before building new ones.
	n.cleanHost()
	if err := os.RemoveAll(stateRoot); err != nil {
		return nil, err
	}
	if err := n.prepareHost(); err != nil {
		return nil, fmt.Errorf("preparing the host: %w", err)
	}
	return n, nil
}

// Start starts containerd, kubelet and kube-proxy, and returns once the Node is Ready.
func (n *Node) Start(ctx context.Context, client kubernetes.Interface) (err error) {
	cfg := n.cfg
	if err := n.writeFiles(); err != nil {
		return err
	}
	if n.containerd, err = n.run("containerd", nil, n.socketReady, "--config", n.path("containerd.toml")); err != nil {
		return err
	}
	if err := n.wait(ctx, "containerd", 30*time.Second, n.containerd, n.socketReady); err != nil {
		return err
	}
	labels := ""
	for k, v := range cfg.Labels {
		if labels != "" {
			labels += ","
		}
		labels += k + "=" + v
	}
	if n.kubelet, err = n.run("kubelet", nil, nil,
		"--config", n.path("kubelet.yaml"),
		"--kubeconfig", cfg.KubeletKubeconfig,
		"--root-dir", n.path("kubelet"),
		"--cert-dir", n.path("kubelet-pki"),
		"--hostname-override", cfg.Name,
		"--node-ip", cfg.Address,
		"--node-labels", labels,
		"--v", "1"); err != nil {
		return err
	}
	if n.proxy, err = n.run("kube-proxy", nil, nil,
		"--kubeconfig", cfg.ProxyKubeconfig,
		"--hostname-override", cfg.Name,
		"--proxy-mode", "iptables",
		"--cluster-cidr", cfg.PodCIDR,
		"--healthz-bind-address", "127.0.0.1:10256",
		"--metrics-bind-address", "127.0.0.1:10249",
		// The kernel's conntrack defaults serve a node this size; kube-proxy would otherwise
		// raise machine-wide tables and timeouts.
		"--conntrack-max-per-core", "0",
		"--conntrack-tcp-timeout-established", "0",
		"--conntrack-tcp-timeout-close-wait", "0"); err != nil {
		return err
	}
	ready := func(ctx context.Context) error { return nodeReady(ctx, client, cfg.Name) }
	return n.wait(ctx, "Node "+cfg.Name, 90*time.Second, n.kubelet, ready)
}

// Stop (safe on a nil Node) stops kube-proxy, kubelet and containerd, kills every container of the node and undoes
// what Start did to the host.
func (n *Node) Stop() {
	if n == nil {
		return
	}
	supervisor.StopAll(5*time.Second, []*supervisor.Process{n.proxy, n.kubelet})
	// Containers outlive containerd (their shims are not its children): kill them first, by
	// their cgroups, then containerd, then the shims.
	killCgroup("kubepods")
	supervisor.StopAll(5*time.Second, []*supervisor.Process{n.containerd})
	n.proxy, n.kubelet, n.containerd = nil, nil, nil
	n.cleanHost()
	if n.lock != nil {
		n.lock.Close()
		n.lock = nil
	}
}

// ContainerdSocket is containerd's CRI and API socket.
func (n *Node) ContainerdSocket() string { return filepath.Join(runDir, "containerd.sock") }

// KubeletLog and ContainerdLog are the components' logs.
func (n *Node) KubeletLog() string    { return filepath.Join(n.cfg.LogDir, "kubelet.log") }
func (n *Node) ContainerdLog() string { return filepath.Join(n.cfg.LogDir, "containerd.log") }

func (n *Node) path(name string) string     { return filepath.Join(stateRoot, name) }
func (n *Node) stateDir(name string) string { return filepath.Join(stateRoot, "state", name) }
func (n *Node) containerdRoot() string      { return n.path("containerd") }
func (n *Node) containerdState() string     { return filepath.Join(runDir, "containerd") }
func (n *Node) cniConfDir() string          { return n.path("net.d") }

func (n *Node) writeFiles() error {
	cni, err := cniConfig(n)
	if err != nil {
		return err
	}
	for name, content := range map[string]string{
		"containerd.toml": containerdConfig(n),
		"kubelet.yaml":    kubeletConfig(n),
		filepath.Join("net.d", "10-pods.conflist"): cni,
	} {
		if err := os.MkdirAll(filepath.Dir(n.path(name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(n.path(name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) run(name string, env []string, ready func(context.Context) error, args ...string) (*supervisor.Process, error) {
	return supervisor.Start(supervisor.Spec{
		Name: name, Path: filepath.Join(n.cfg.BinDir, name), Args: args,
		// containerd starts its shim by name, from PATH.
		Env:    append([]string{"PATH=" + n.cfg.BinDir + ":" + os.Getenv("PATH")}, env...),
		LogDir: n.cfg.LogDir, Ready: ready,
		Report: func(msg string) { fmt.Fprintf(n.cfg.Progress, "plinth: %s\n", msg) },
	})
}

func (n *Node) socketReady(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", n.ContainerdSocket())
	if err != nil {
		return err
	}
	return c.Close()
}

// wait polls ready until it succeeds, the process dies or timeout passes.
func (n *Node) wait(ctx context.Context, what string, timeout time.Duration, p *supervisor.Process, ready func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.Died(); err != nil {
			return false, err
		}
		last = ready(ctx)
		return last == nil, nil
	})
	if err != nil {
		if last != nil {
			err = fmt.Errorf("%w: %v", err, last)
		}
		return fmt.Errorf("%s is not ready: %w (log: %s)", what, err, p.LogPath())
	}
	return nil
}

// nodeReady succeeds once the Node reports Ready.
func nodeReady(ctx context.Context, client kubernetes.Interface, name string) error {
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return errors.New(c.Reason + ": " + c.Message)
		}
	}
	return errors.New("no Ready condition yet")
}
