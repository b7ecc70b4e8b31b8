package node

import (
	"encoding/json"
	"fmt"
	"strings"
)

// containerdConfig is containerd's config.toml (version 3) for this machine: no systemd, so
// runc manages cgroups itself (cgroupfs, as kubelet is told too); overlayfs snapshots; CNI
// plugins where Debian installs them; every socket and state file under the node's own
// directories, so nothing of a system containerd is touched. Images from localhost:<port>
// are pulled over plain HTTP without configuration: containerd treats localhost as a
// registry that speaks HTTP.
func containerdConfig(n *Node) string {
	return fmt.Sprintf(`version = 3
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q

[plugins.'io.containerd.cri.v1.runtime']
  # kubelet asks for negative OOM score adjustments (-998 for a pod's sandbox), which need
  # CAP_SYS_RESOURCE; these machines run without it, and runc fails to start a container when
  # the write fails. Clamped at containerd's own score (0), as for a rootless containerd.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %q
        Root = %q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`, n.containerdRoot(), n.containerdState(), n.ContainerdSocket(), n.containerdState()+"/ttrpc.sock",
		n.cfg.SandboxImage, n.cfg.Runc, n.containerdState()+"/runc", n.cfg.CNIBinDir, n.cniConfDir())
}

// cniConfig is the pod network: one bridge on the host with the pods' gateway address (so
// the host reaches every pod directly: kube-apiserver calls plinth-apiserver's pods by
// address), addresses from host-local, and masquerading for traffic leaving PodCIDR.
func cniConfig(n *Node) (string, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       networkName,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      bridgeName,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": n.cfg.PodCIDR}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": n.stateDir("cni-ipam"),
				},
			},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	return string(b), err
}

// kubeletConfig is kubelet's KubeletConfiguration. The settings that differ from kubelet's
// defaults are the ones this machine needs, each said why.
func kubeletConfig(n *Node) string {
	taints := make([]string, 0, len(n.cfg.Taints))
	for _, t := range n.cfg.Taints {
		taints = append(taints, fmt.Sprintf("{key: %q, value: %q, effect: %q}", t.Key, t.Value, t.Effect))
	}
	dns := "[]"
	if n.cfg.ClusterDNS != "" {
		dns = fmt.Sprintf("[%q]", n.cfg.ClusterDNS)
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has cgroup v1 only (hybrid hierarchy, no systemd as PID 1): kubelet 1.35 and
# later refuse cgroup v1 unless told, and the cgroup driver is runc's own.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%[1]s
imageServiceEndpoint: unix://%[1]s
address: %[2]q
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
# kube-apiserver (logs, exec) is the only caller: it presents a client certificate of the
# cluster CA; nothing is anonymous.
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[5]q}
authorization: {mode: AlwaysAllow}
registerWithTaints: [%[6]s]
clusterDomain: cluster.local
clusterDNS: %[7]s
resolvConf: /etc/resolv.conf
# The disk is shared with everything else on the machine and often past kubelet's default
# thresholds (85%% used starts image garbage collection, 15%% free evicts pods): the node
# keeps its images and pods unless the disk is really full.
evictionHard: {memory.available: 200Mi, nodefs.available: 2%%, imagefs.available: 2%%, nodefs.inodesFree: 2%%}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
serializeImagePulls: false
podCIDR: %[8]q
maxPods: 110
`, n.ContainerdSocket(), n.cfg.Address, n.cfg.KubeletPort, n.cfg.KubeletHealthzPort, n.cfg.CAFile,
		strings.Join(taints, ", "), dns, n.cfg.PodCIDR)
}
