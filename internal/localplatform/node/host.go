package node

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kernelSettings are the sysctls a node changes: kubelet sets the first six at start (it
// refuses to run otherwise, short of protectKernelDefaults, which refuses instead), pods need
// forwarding, and kube-proxy sets route_localnet. Their values before the first node are kept
// in savedSettings and put back when the node stops.
var kernelSettings = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet",
}

// savedSettings is where kernelSettings' earlier values are kept; it outlives a killed node,
// so the next Start (or Stop) still restores the values from before any node.
var savedSettings = filepath.Join(runDir, "sysctl-before")

// prepareHost saves the kernel settings, turns forwarding on and adds the node's address.
func (n *Node) prepareHost() error {
	if _, err := os.Stat(savedSettings); os.IsNotExist(err) {
		var b strings.Builder
		for _, s := range kernelSettings {
			v, err := os.ReadFile(filepath.Join("/proc/sys", s))
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "%s %s\n", s, strings.TrimSpace(string(v)))
		}
		if err := os.WriteFile(savedSettings, []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return err
	}
	// The address goes on the loopback interface (this kernel has no dummy interfaces): the
	// host owns it, and pods reach it through their bridge like any address of the host.
	args := []string{"addr", "add", n.cfg.Address + "/32", "dev", "lo", "label", addressLabel}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// cleanHost undoes what a node did to the host, whether it stopped or was killed: every step
// tolerates finding nothing.
func (n *Node) cleanHost() {
	killCgroup("kubepods")
	n.killShims()
	unmountUnder(stateRoot+"/", runDir+"/", "/run/netns/cni-")
	if netns, err := filepath.Glob("/run/netns/cni-*"); err == nil {
		for _, f := range netns {
			os.Remove(f)
		}
	}
	exec.Command("ip", "link", "del", bridgeName).Run()
	exec.Command("ip", "addr", "flush", "label", addressLabel).Run()
	removeRules()
	removeCgroup("kubepods")
	restoreSettings()
	if entries, err := os.ReadDir(runDir); err == nil {
		for _, e := range entries {
			if e.Name() != "lock" {
				os.RemoveAll(filepath.Join(runDir, e.Name()))
			}
		}
	}
}

// killCgroup kills every process in the cgroup name (kubelet's kubepods) and its children,
// in every v1 hierarchy, until none is left or five seconds pass.
func killCgroup(name string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		found := false
		roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", name))
		for _, root := range roots {
			filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
					return nil
				}
				for _, pid := range readPIDs(path) {
					found = true
					syscall.Kill(pid, syscall.SIGKILL)
				}
				return nil
			})
		}
		if !found || time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroup removes the empty cgroup name and its children, deepest first.
func removeCgroup(name string) {
	roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", name))
	for _, root := range roots {
		var dirs []string
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			os.Remove(d)
		}
	}
}

func readPIDs(path string) []int {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killShims kills the node's containerd shims: each outlives containerd, by design, to keep
// its container running through a containerd restart.
func (n *Node) killShims() {
	shim := filepath.Join(n.cfg.BinDir, "containerd-shim-runc-v2")
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range procs {
		if target, err := os.Readlink(exe); err == nil && strings.TrimSuffix(target, " (deleted)") == shim {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(exe))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// unmountUnder detaches every mount whose mount point starts with one of prefixes, deepest
// first (containers' root filesystems, kubelet's volumes, pods' network namespaces).
func unmountUnder(prefixes ...string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		point := unescapeMount(fields[4])
		for _, p := range prefixes {
			if p != "" && (point == strings.TrimSuffix(p, "/") || strings.HasPrefix(point, p)) {
				points = append(points, point)
				break
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	for _, p := range points {
		syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeRules deletes the iptables chains kubelet (KUBE-KUBELET-CANARY, KUBE-FIREWALL),
// kube-proxy (KUBE-SERVICES and the rest) and the bridge plugin (one CNI- chain per pod, for
// masquerading) make, in IPv4 and IPv6, with the rules of built-in chains that jump to them.
// Nothing else on these machines makes chains of those names.
func removeRules() {
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.Command(cmd, "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			var chains [][]string
			for _, line := range strings.Split(string(out), "\n") {
				args := splitRule(line)
				switch {
				case len(args) == 2 && args[0] == "-N" && ours(args[1]):
					chains = append(chains, args[1:])
				case len(args) > 2 && args[0] == "-A" && !ours(args[1]) && ours(jumpTarget(args)):
					exec.Command(cmd, append([]string{"-t", table, "-D"}, args[1:]...)...).Run()
				}
			}
			for _, c := range chains {
				exec.Command(cmd, "-t", table, "-F", c[0]).Run()
			}
			for _, c := range chains {
				exec.Command(cmd, "-t", table, "-X", c[0]).Run()
			}
		}
	}
}

func ours(chain string) bool {
	return strings.HasPrefix(chain, "KUBE-") || strings.HasPrefix(chain, "CNI-")
}

func jumpTarget(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-j" || args[i] == "-g" {
			return args[i+1]
		}
	}
	return ""
}

// splitRule splits a line of iptables -S into arguments as a shell would: comments are
// double-quoted, with \" inside.
func splitRule(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, started := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			started = true
		case c == '"':
			inQuote, started = !inQuote, true
		case c == ' ' && !inQuote:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}

// restoreSettings puts back the kernel settings saved before the first node.
func restoreSettings() {
	data, err := os.ReadFile(savedSettings)
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if ok {
			os.WriteFile(filepath.Join("/proc/sys", name), []byte(value), 0o644)
		}
	}
	os.Remove(savedSettings)
}
