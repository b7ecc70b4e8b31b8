package governedvm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/score-spec/score-go/framework"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// WorkloadSystem is the System, in each workload's namespace, that holds the SystemServices of
// the namespace's workloads of runtime class kubevirt: one SystemService per workload, holding
// the workload's one ManagedVM. A tenant may create it beforehand (for example with environment
// prod, so that starting and stopping the VMs need approval too); the runtime then uses it. The
// runtime creates it when it is missing and never deletes it.
const WorkloadSystem = "workloads"

const (
	// guestMemory is the memory the guest system needs besides the containers: podman and the
	// cloud image's own services.
	guestMemory = 1 << 30
	// minMemory is the smallest VM the runtime asks for: a cloud image that installs podman on
	// its first boot needs about this much.
	minMemory = 2 << 30
	// maxVCPUs is governance's limit on a VM's virtual CPUs (validation's maxCPU).
	maxVCPUs = 256
	// filesDir is where the guest keeps the workload's files, one directory per container.
	filesDir = "/etc/plinth/files"
)

// refusal is a plan the runtime cannot run in a VM, with the one neutral sentence the workload
// shows. Retrying does not help: the workload has to change.
type refusal struct{ message string }

func (r *refusal) Error() string { return r.message }

func refuse(format string, args ...any) *refusal {
	return &refusal{message: fmt.Sprintf(format, args...)}
}

// WorkloadServiceName is the SystemService of a workload: its name when that has at most 15
// characters (governance's limit on a part of a VM's name), otherwise its first 9 characters, a
// hyphen and 5 hexadecimal digits of the SHA-256 of the whole name.
func WorkloadServiceName(workload string) string {
	if len(workload) <= maxNamePart {
		return workload
	}
	sum := sha256.Sum256([]byte(workload))
	return workload[:9] + "-" + hex.EncodeToString(sum[:])[:5]
}

// wantVM is the ManagedVM a plan asks for (the fingerprint covers the same fields as a
// tenant's): one VM whose cloud-init runs every container with
// podman, sized for all of them, booting DefaultImage. Every value it writes is one an approver
// may read: a secret output the plan uses refuses the plan instead (a VM cannot read the
// workload's Secrets, and a value in its cloud-init would be readable in the ManagedVM, its
// tickets and revisions).
func wantVM(plan *v1b1.WorkloadPlan, bindings map[string]*v1b1.ResourceBinding) (*wanted, error) {
	if msgs := namePart(plan.Namespace); len(msgs) > 0 {
		return nil, refuse("The namespace's name cannot be part of a virtual machine's name: it %s.", strings.Join(msgs, " and "))
	}
	names := sets.List(sets.KeySet(plan.Spec.Projection.Containers))
	if len(names) == 0 {
		return nil, refuse("The workload has no container to run.")
	}
	var b strings.Builder
	b.WriteString("#cloud-config\n")
	fmt.Fprintf(&b, "# Workload %s/%s, runtime class kubevirt.\n", plan.Namespace, plan.Name)
	var files []map[string]string
	var commands [][]string
	var cpu, memory resource.Quantity
	for _, name := range names {
		c := plan.Spec.Projection.Containers[name]
		run, written, err := podmanRunContainer(name, c, bindings)
		if err != nil {
			return nil, err
		}
		files = append(files, written...)
		commands = append(commands, run)
		if err := addAmounts(&cpu, &memory, c.Resources); err != nil {
			return nil, err
		}
	}
	if len(files) > 0 {
		b.WriteString("write_files:\n")
		for _, f := range files {
			b.WriteString("- ")
			b.WriteString(quoted(f))
			b.WriteString("\n")
		}
	}
	b.WriteString("packages:\n- podman\nruncmd:\n")
	writeCommand(&b, []string{"systemctl", "enable", "podman-restart.service"})
	for _, cmd := range commands {
		writeCommand(&b, cmd)
	}
	userData := b.String()
	if len(userData) > gov.MaxCloudInit {
		return nil, refuse("The containers need %d bytes of start-up data, more than the %d a virtual machine carries.", len(userData), gov.MaxCloudInit)
	}
	vcpus := (cpu.MilliValue() + 999) / 1000
	if vcpus > maxVCPUs {
		return nil, refuse("The containers ask for %d CPUs, more than the %d a virtual machine has.", vcpus, maxVCPUs)
	}
	mem := memory.Value() + guestMemory
	mem = max((mem+(1<<20)-1)/(1<<20)*(1<<20), minMemory) // whole MiB
	spec := gov.ManagedVMSpec{
		SystemServiceRef: gov.LocalObjectReference{Name: WorkloadServiceName(plan.Name)},
		Resources:        &gov.VMResources{CPU: int32(max(vcpus, 1)), Memory: *resource.NewQuantity(mem, resource.BinarySI)},
		Image:            DefaultImage,
		CloudInit:        userData,
		RunStrategy:      gov.RunStrategyAlways,
		Reason:           workloadReason(plan, names),
	}
	return &wanted{spec: spec, fingerprint: fingerprint(spec), labels: workloadVMLabels(plan)}, nil
}

// podmanRunContainer is the command that runs one container of the plan, and the files the
// guest writes for it. Containers share the VM's network (--network=host), as a pod's
// containers share theirs: each listens on its own ports, and the service's target ports are
// the VM's.
func podmanRunContainer(name string, c v1b1.ContainerProjection, bindings map[string]*v1b1.ResourceBinding) ([]string, []map[string]string, error) {
	args := []string{"podman", "run", "-d", "--name", name, "--restart=always", "--network=host"}
	for _, e := range c.Env {
		value, err := envValue(name, e, bindings)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, "-e", e.Name+"="+value)
	}
	var files []map[string]string
	for i, f := range c.Files {
		file, err := guestFile(name, i, f)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, file)
		args = append(args, "-v", file["path"]+":"+f.Target+":ro,Z")
	}
	for _, v := range c.Volumes {
		if v.Path != "" {
			return nil, nil, refuse("Container %s mounts a path inside a volume, which a virtual machine does not support.", name)
		}
		mount := "plinth-" + volumeName.ReplaceAllString(v.Source, "-") + ":" + v.Target
		if v.ReadOnly {
			mount += ":ro"
		}
		args = append(args, "-v", mount)
	}
	if c.ReadinessProbe != nil {
		return nil, nil, refuse("Container %s has a readiness probe, which a virtual machine does not run; the workload is ready when its virtual machine runs.", name)
	}
	if p := c.LivenessProbe; p != nil {
		if p.Exec == nil {
			return nil, nil, refuse("Container %s has an HTTP liveness probe; a virtual machine runs exec probes only.", name)
		}
		// podman restarts the container when its check fails, as the kubelet does.
		args = append(args, "--health-cmd", quoted(p.Exec.Command), "--health-on-failure=restart")
	}
	if len(c.Command) > 0 {
		// podman reads a JSON array as the entrypoint's words, as an image's ENTRYPOINT.
		args = append(args, "--entrypoint", quoted(c.Command))
	}
	args = append(args, qualifiedImage(c.Image))
	return append(args, c.Args...), files, nil
}

// volumeName replaces what a podman volume name may not hold.
var volumeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// envValue is a variable's value as the container sees it. A plain value is written in
// Kubernetes' $(NAME) syntax (the plan doubles every literal $), and no variable is expanded in a
// VM, so $$ becomes $ and everything else stays: the one expansion the value gets, as the
// kubelet's is in a pod. A value taken from a binding
// output is used when the output is a plain one; a secret output refuses the plan.
func envValue(container string, e v1b1.EnvProjection, bindings map[string]*v1b1.ResourceBinding) (string, error) {
	if e.From == nil {
		return strings.ReplaceAll(ptr.Deref(e.Value, ""), "$$", "$"), nil
	}
	b, ok := bindings[e.From.BindingKey]
	if !ok || b.Status.Outputs == nil {
		return "", refuse("A resource output the workload uses is missing.")
	}
	if v, ok := b.Status.Outputs.Metadata[e.From.OutputKey]; ok {
		return v, nil
	}
	return "", refuse("Container %s uses a secret output of resource %s, which a virtual machine cannot receive without showing it to its approvers.",
		container, e.From.BindingKey)
}

// guestFile is the cloud-init write_files entry of a container's file, under filesDir. The plan
// keeps expandable text in Score's syntax, escapes and all, and this is its one expansion: $$
// becomes $ (so $${HOME} is written as ${HOME}), and a placeholder the plan left is a secret
// output, which refuses the file. A file that names a source path is refused too (a cluster has
// no copy of the Score file's directory).
func guestFile(container string, i int, f v1b1.ContainerFile) (map[string]string, error) {
	file := map[string]string{"path": path.Join(filesDir, container, strconv.Itoa(i))}
	if f.Mode != "" {
		if !fileMode.MatchString(f.Mode) {
			return nil, refuse("File %s of container %s has mode %q, which is not an octal file mode.", f.Target, container, f.Mode)
		}
		file["permissions"] = f.Mode
	}
	switch {
	case f.BinaryContent != nil:
		file["encoding"], file["content"] = "b64", *f.BinaryContent
	case f.Source != nil:
		return nil, refuse("File %s of container %s names a source path, which a cluster cannot read; inline it as content.", f.Target, container)
	case f.NoExpand:
		file["content"] = ptr.Deref(f.Content, "")
	default:
		content, err := framework.SubstituteString(ptr.Deref(f.Content, ""), func(string) (string, error) {
			return "", errSecretInFile
		})
		if err != nil {
			return nil, refuse("File %s of container %s uses a secret output, which a virtual machine cannot receive without showing it to its approvers.", f.Target, container)
		}
		file["content"] = content
	}
	return file, nil
}

// errSecretInFile is a placeholder in a file's content as the plan gives it: only secret
// outputs are left for the runtime.
var errSecretInFile = errors.New("a secret output")

// fileMode is an octal file mode as cloud-init's write_files reads it, for example 0644.
var fileMode = regexp.MustCompile(`^0?[0-7]{3}$`)

// addAmounts adds a container's CPU and memory to the VM's: its limits, or its requests where
// it sets no limit.
func addAmounts(cpu, memory *resource.Quantity, r *v1b1.ContainerResources) error {
	if r == nil {
		return nil
	}
	limits, requests := ptr.Deref(r.Limits, v1b1.ResourceAmounts{}), ptr.Deref(r.Requests, v1b1.ResourceAmounts{})
	for _, a := range []struct {
		limit, request string
		sum            *resource.Quantity
	}{{limits.CPU, requests.CPU, cpu}, {limits.Memory, requests.Memory, memory}} {
		value := a.limit
		if value == "" {
			value = a.request
		}
		if value == "" {
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil || q.Sign() < 0 {
			return refuse("A resource amount of the workload is not a quantity.")
		}
		a.sum.Add(q)
	}
	return nil
}

// workloadReason tells approvers what the VM is for; it is copied into the ticket.
func workloadReason(plan *v1b1.WorkloadPlan, names []string) string {
	var containers []string
	for _, name := range names {
		containers = append(containers, fmt.Sprintf("%s (%s)", name, plan.Spec.Projection.Containers[name].Image))
	}
	r := fmt.Sprintf("Workload %s/%s (Score, runtime class kubevirt): containers %s.", plan.Namespace, plan.Name, strings.Join(containers, ", "))
	if len(r) > maxReason {
		r = r[:maxReason-len("…")] + "…"
	}
	return r
}

// workloadVMLabels are the labels of a workload's ManagedVM and SystemService: the plan's own
// (except governance's kubevirt-shepherd.io/ labels, which only the platform sets) and the
// runtime's, which name the workload.
func workloadVMLabels(plan *v1b1.WorkloadPlan) map[string]string {
	out := map[string]string{}
	if md := plan.Spec.Metadata; md != nil {
		for k, v := range md.Labels {
			if !strings.HasPrefix(k, gov.LabelPrefix) {
				out[k] = v
			}
		}
	}
	maps.Copy(out, map[string]string{LabelProvider: Name, v1b1.WorkloadLabel: plan.Spec.WorkloadRef.Name})
	return out
}
