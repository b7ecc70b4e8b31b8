package governedvm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

// defaultHealthRetries is podman's own default number of failed checks before a container is
// unhealthy, used when the tenant gives no unhealthyThreshold.
const defaultHealthRetries = 3

// userData is the cloud-config that runs the tenant's containers in the VM: it installs podman,
// has podman-restart.service start the containers again after a reboot of the guest, and runs
// each container with its ports, environment, command and limits. A container disk starts from
// a fresh disk on every start of the VM, so cloud-init runs this on every start; that is why a
// change is applied with a restart (see needsRestart).
//
// Every command is a YAML flow sequence of JSON-quoted strings, so that no value is read as
// another YAML type (cloud-init's YAML 1.1 reads an unquoted 10:20 as the number 620) and
// cloud-init quotes each word for the shell. Secret values are never written: the provider
// supports no secret source (SecretSources is empty), so admission refuses tenant secrets.
func userData(tc *v1alpha1.TenantCompute) string {
	var b strings.Builder
	b.WriteString("#cloud-config\n")
	fmt.Fprintf(&b, "# The containers of tenant %s (TenantCompute %s/%s), run by the kubevirt compute provider.\n",
		tc.Spec.TenantID, tc.Namespace, tc.Name)
	b.WriteString("packages:\n- podman\nruncmd:\n")
	writeCommand(&b, []string{"systemctl", "enable", "podman-restart.service"})
	for i := range tc.Spec.Containers {
		writeCommand(&b, podmanRun(&tc.Spec.Containers[i]))
	}
	return b.String()
}

// writeCommand writes one runcmd entry.
func writeCommand(b *strings.Builder, args []string) {
	b.WriteString("- ")
	b.WriteString(quoted(args))
	b.WriteString("\n")
}

// quoted is v as JSON without HTML escaping: a valid YAML flow value, readable by approvers.
func quoted(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings and string slices always encode
	return strings.TrimSuffix(buf.String(), "\n")
}

// podmanRun is the command that runs one container.
func podmanRun(c *v1alpha1.ContainerSpec) []string {
	args := []string{"podman", "run", "-d", "--name", c.Name, "--restart=always"}
	for _, p := range c.Ports {
		args = append(args, "-p", fmt.Sprintf("%d:%d/%s", hostPort(p), p.ContainerPort, protocol(p)))
	}
	for _, k := range sets.List(sets.KeySet(c.Env)) {
		args = append(args, "-e", k+"="+c.Env[k])
	}
	if r := c.Resources; r != nil {
		if r.CPU > 0 {
			args = append(args, "--cpus="+strconv.FormatFloat(float64(r.CPU)/1000, 'f', -1, 64))
		}
		if r.Memory > 0 {
			args = append(args, fmt.Sprintf("--memory=%dm", r.Memory))
		}
	}
	if hc := c.HealthCheck; hc != nil && hc.Type == v1alpha1.HealthCheckExec {
		retries := hc.UnhealthyThreshold
		if retries <= 0 {
			retries = defaultHealthRetries
		}
		// podman counts failures only: healthyThreshold has no podman equivalent.
		args = append(args, "--health-cmd", quoted(hc.Command),
			fmt.Sprintf("--health-interval=%ds", hc.IntervalSeconds), fmt.Sprintf("--health-timeout=%ds", hc.TimeoutSeconds),
			fmt.Sprintf("--health-retries=%d", retries), "--health-on-failure=restart")
	}
	if len(c.Command) > 0 {
		// podman reads a JSON array as the entrypoint's words, as an image's ENTRYPOINT.
		args = append(args, "--entrypoint", quoted(c.Command))
	}
	args = append(args, qualifiedImage(c.Image))
	return append(args, c.Args...)
}

// hostPort is the port a container port is published on in the VM: hostPort, or the container
// port itself.
func hostPort(p v1alpha1.PortMapping) int32 {
	if p.HostPort != 0 {
		return p.HostPort
	}
	return p.ContainerPort
}

func protocol(p v1alpha1.PortMapping) string {
	if p.Protocol == "" {
		return v1alpha1.ProtocolTCP
	}
	return p.Protocol
}

// qualifiedImage spells an image reference out as Docker and the kubelet read it (nginx is
// docker.io/library/nginx): podman in a guest without a terminal refuses a short name it would
// have to ask about.
func qualifiedImage(image string) string {
	first, _, ok := strings.Cut(image, "/")
	switch {
	case !ok:
		return "docker.io/library/" + image
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return image
	default:
		return "docker.io/" + image
	}
}

// containersIn reads back, from user data this provider wrote, each container's podman command
// by container name: what an update compares to name the containers it changes.
func containersIn(userData string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(userData, "\n") {
		entry, ok := strings.CutPrefix(line, "- [")
		if !ok {
			continue
		}
		var args []string
		if json.Unmarshal([]byte("["+entry), &args) != nil || len(args) < 2 || args[0] != "podman" || args[1] != "run" {
			continue
		}
		if i := slices.Index(args, "--name"); i >= 0 && i+1 < len(args) {
			out[args[i+1]] = line
		}
	}
	return out
}
