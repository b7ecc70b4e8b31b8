package localplatform

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth-dev/plinth/internal/localplatform/node"
	"github.com/plinth-dev/plinth/pkg/pki"
)

// RealNode is the Node's name of the platform's real node (Config.RealNode).
const RealNode = "plinth-node"

// RealNodeTaint keeps everything off the real node that does not tolerate it: tenant
// workloads run on the fake nodes, whose pods need no image; what a test installs onto the
// real node (a chart) tolerates it and selects the node by name.
var RealNodeTaint = corev1.Taint{Key: "plinth.dev/real-node", Effect: corev1.TaintEffectNoSchedule}

// RealNodeConfig adds a real node to the platform (package node): containerd, runc, kubelet
// and kube-proxy, so pods run real images. kube-apiserver and etcd then also listen on the
// node's address, which pods reach (and kube-apiserver advertises, as the kubernetes
// Service's endpoint); the Node authorizer and NodeRestriction admit kubelet.
type RealNodeConfig struct {
	// SandboxImage is the pods' pause image; the caller serves it from a registry on localhost.
	SandboxImage string
	// Address is the node's address; empty means DefaultNodeAddress.
	Address string
}

// DefaultNodeAddress is the real node's address: a private one not routed anywhere else.
const DefaultNodeAddress = "10.250.0.1"

// NodePodCIDR is the real node's pod network, apart from kwok's 10.244.0.0/16.
const NodePodCIDR = "10.251.0.0/16"

// NodeAddress is the real node's address, or "" when the platform has none.
func (p *Platform) NodeAddress() string {
	if p.cfg.RealNode == nil {
		return ""
	}
	if p.cfg.RealNode.Address != "" {
		return p.cfg.RealNode.Address
	}
	return DefaultNodeAddress
}

// NodeEtcdURL is the platform's etcd as pods on the real node reach it.
func (p *Platform) NodeEtcdURL() string {
	return "http://" + net.JoinHostPort(p.NodeAddress(), strconv.Itoa(p.cfg.EtcdPort))
}

// ensureNodePKI issues kubelet's, kube-proxy's and kube-apiserver's kubelet-client
// certificates, with kubeconfigs for the first two.
func (p *Platform) ensureNodePKI(ca *pki.CA) error {
	for _, id := range []struct{ name, user, group string }{
		{"kubelet", "system:node:" + RealNode, "system:nodes"},
		{"kube-proxy", "system:kube-proxy", ""},
	} {
		pair := pki.PairIn(p.pkiDir, id.name)
		var groups []string
		if id.group != "" {
			groups = append(groups, id.group)
		}
		if err := ca.EnsureClient(pair, id.user, groups...); err != nil {
			return err
		}
		if err := pki.WriteKubeconfig(filepath.Join(p.cfg.Dir, id.name+".kubeconfig"), p.kubeURL, ca.Cert, pair, id.user, "default"); err != nil {
			return err
		}
	}
	// kube-apiserver calls kubelet (logs, exec, port-forward) as a member of system:masters;
	// kubelet trusts the cluster CA.
	return ca.EnsureClient(pki.PairIn(p.pkiDir, "kube-apiserver-kubelet-client"), "kube-apiserver-kubelet-client", "system:masters")
}

// nodeKubeAPIServerArgs are kube-apiserver's flags for a platform with a real node.
func (p *Platform) nodeKubeAPIServerArgs() []string {
	path := func(name string) string { return filepath.Join(p.pkiDir, name) }
	return []string{
		// Pods reach kube-apiserver at the kubernetes Service's endpoint, the node's address
		// (the lease reconciler writes it); loopback stays open for the host's clients.
		"--bind-address", "0.0.0.0", "--advertise-address", p.NodeAddress(), "--endpoint-reconciler-type", "lease",
		"--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--kubelet-client-certificate", path("kube-apiserver-kubelet-client.crt"),
		"--kubelet-client-key", path("kube-apiserver-kubelet-client.key"),
	}
}

// nodeConfig is the real node's configuration.
func (p *Platform) nodeConfig() node.Config {
	return node.Config{
		Name: RealNode, LogDir: p.LogDir(), BinDir: p.cfg.BinDir,
		Runc: "/usr/sbin/runc", CNIBinDir: "/usr/lib/cni",
		Address: p.NodeAddress(), PodCIDR: NodePodCIDR, ClusterDNS: p.NodeAddress(),
		CAFile:            filepath.Join(p.pkiDir, "ca.crt"),
		KubeletKubeconfig: filepath.Join(p.cfg.Dir, "kubelet.kubeconfig"),
		ProxyKubeconfig:   filepath.Join(p.cfg.Dir, "kube-proxy.kubeconfig"),
		SandboxImage:      p.cfg.RealNode.SandboxImage,
		Taints:            []corev1.Taint{RealNodeTaint},
		Labels:            map[string]string{"plinth.dev/node": "real"},
		KubeletPort:       10250, KubeletHealthzPort: 10248,
		Progress: p.cfg.Progress,
	}
}

// prepareNode takes the machine's node lock and adds the node's address before etcd and
// kube-apiserver listen on it.
func (p *Platform) prepareNode() error {
	n, err := node.Prepare(p.nodeConfig())
	if err != nil {
		return err
	}
	p.node = n
	return nil
}

// startNode starts containerd, kubelet and kube-proxy and waits for the Node to be Ready.
func (p *Platform) startNode(ctx context.Context) error {
	p.step("the real node %s (containerd, kubelet, kube-proxy) and CoreDNS on %s", RealNode, p.NodeAddress())
	if err := p.startDNS(ctx); err != nil {
		return err
	}
	return p.node.Start(ctx, p.admin)
}

// NodeKubeURL is kube-apiserver as pods on the real node reach it without a Service.
func (p *Platform) NodeKubeURL() string {
	return "https://" + net.JoinHostPort(p.NodeAddress(), strconv.Itoa(p.cfg.KubePort))
}

// NodeAdminKubeconfig is a self-contained admin kubeconfig for kube-apiserver at the real
// node's address: what a Cluster registered from a pod on that node needs.
func (p *Platform) NodeAdminKubeconfig() ([]byte, error) {
	return pki.InlineKubeconfig(p.NodeKubeURL(), filepath.Join(p.pkiDir, "ca.crt"), pki.PairIn(p.pkiDir, "admin"), "admin")
}

// startDNS runs CoreDNS for the real node's pods, at the node's address (kubelet gives pods
// that nameserver): Services and a StatefulSet's members by name under cluster.local, every
// other name forwarded to the machine's resolver.
func (p *Platform) startDNS(ctx context.Context) error {
	ports, err := FreePorts(1, p.configuredPorts()...)
	if err != nil {
		return err
	}
	ready := fmt.Sprintf("127.0.0.1:%d", ports[0])
	corefile := filepath.Join(p.cfg.Dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(fmt.Sprintf(`.:53 {
    bind %s
    errors
    ready %s
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 30
    loop
}
`, p.NodeAddress(), ready, p.AdminKubeconfig())), 0o644); err != nil {
		return err
	}
	check := func(ctx context.Context) error { return httpOK(ctx, "http://"+ready+"/ready") }
	if p.dns, err = p.run("coredns", check, "-conf", corefile); err != nil {
		return err
	}
	return waitFor(ctx, "CoreDNS", 30*time.Second, p.dns, check)
}
