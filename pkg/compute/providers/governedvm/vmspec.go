package governedvm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
)

// maxReason is the longest reason governance accepts on a ManagedVM (copied into its tickets).
const maxReason = 1024

// wanted is the ManagedVM a TenantCompute asks for.
type wanted struct {
	spec gov.ManagedVMSpec
	// fingerprint identifies the governed fields of spec (size, image, cloud-init, run
	// strategy); the ManagedVM records the one last requested (AnnotationRequestedSpec).
	fingerprint string
	// labels are the labels the provider sets on the ManagedVM: the tenant's and its own.
	labels map[string]string
}

// want is the ManagedVM tc asks for. Its error is one a retry cannot fix.
func want(tc *v1alpha1.TenantCompute) (*wanted, error) {
	cfg, err := configOf(tc)
	if err != nil {
		return nil, err
	}
	ud := userData(tc)
	if len(ud) > gov.MaxCloudInit {
		return nil, fmt.Errorf("the containers need %d bytes of cloud-init, more than the %d a governed VM carries; use fewer or shorter environment values, arguments or containers",
			len(ud), gov.MaxCloudInit)
	}
	run := gov.RunStrategyAlways
	if tc.Spec.Suspended {
		run = gov.RunStrategyHalted
	}
	spec := gov.ManagedVMSpec{
		SystemServiceRef: gov.LocalObjectReference{Name: serviceName(tc)},
		Resources:        &gov.VMResources{CPU: vcpus(tc.Spec.Resources.CPU), Memory: memory(tc.Spec.Resources.Memory)},
		Image:            cfg.Image,
		CloudInit:        ud,
		RunStrategy:      run,
		Reason:           reason(tc),
	}
	return &wanted{spec: spec, fingerprint: fingerprint(spec), labels: vmLabels(tc)}, nil
}

// fingerprint identifies the governed fields a provider or runtime sets in a VM spec: size
// (CPU and memory), image, cloud-init and run strategy.
func fingerprint(spec gov.ManagedVMSpec) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s\x00%s", spec.Resources.CPU, spec.Resources.Memory.String(), spec.Image, spec.CloudInit, spec.RunStrategy)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// vcpus is a CPU amount in millicores as whole virtual CPUs, rounded up.
func vcpus(millicores int32) int32 { return max((millicores+999)/1000, 1) }

// memory is an amount in megabytes as the guest's memory, in Mi.
func memory(mb int32) resource.Quantity {
	return *resource.NewQuantity(int64(mb)*1024*1024, resource.BinarySI)
}

// reason tells approvers what the request is for; it is copied into the ticket.
func reason(tc *v1alpha1.TenantCompute) string {
	var containers []string
	for _, c := range tc.Spec.Containers {
		containers = append(containers, fmt.Sprintf("%s (%s)", c.Name, c.Image))
	}
	r := fmt.Sprintf("Compute of tenant %s (TenantCompute %s/%s), kubevirt compute provider: containers %s.",
		tc.Spec.TenantID, tc.Namespace, tc.Name, strings.Join(containers, ", "))
	if len(r) > maxReason {
		r = r[:maxReason-len("…")] + "…"
	}
	return r
}

// vmLabels are the labels of the tenant's ManagedVM: the tenant's spec.labels (except
// governance's own kubevirt-shepherd.io/ labels, which only the platform sets) and the
// provider's, which name the TenantCompute.
func vmLabels(tc *v1alpha1.TenantCompute) map[string]string {
	out := map[string]string{}
	for k, v := range tc.Spec.Labels {
		if !strings.HasPrefix(k, gov.LabelPrefix) {
			out[k] = v
		}
	}
	maps.Copy(out, ownLabels(tc))
	return out
}

// ownLabels name the TenantCompute on what the provider creates for it.
func ownLabels(tc *v1alpha1.TenantCompute) map[string]string {
	return map[string]string{
		LabelProvider:                        Name,
		v1alpha1.LabelTenantComputeNamespace: tc.Namespace,
		v1alpha1.LabelTenantComputeName:      tc.Name,
		v1alpha1.LabelTenantID:               tc.Spec.TenantID,
	}
}

// withLabels sets the wanted labels on a VM's labels and removes those of the tenant's that
// the provider set before and the tenant has dropped (AnnotationTenantLabels lists them). It
// reports whether anything changed.
func withLabels(vm *gov.ManagedVM, w *wanted) bool {
	before := maps.Clone(vm.Labels)
	if vm.Labels == nil {
		vm.Labels = map[string]string{}
	}
	for _, k := range strings.Split(vm.Annotations[AnnotationTenantLabels], ",") {
		if _, still := w.labels[k]; k != "" && !still {
			delete(vm.Labels, k)
		}
	}
	maps.Copy(vm.Labels, w.labels)
	tenantKeys := strings.Join(sets.List(sets.KeySet(w.labels)), ",")
	changed := !maps.Equal(before, vm.Labels) || vm.Annotations[AnnotationTenantLabels] != tenantKeys
	setAnnotation(vm, AnnotationTenantLabels, tenantKeys)
	return changed
}

func setAnnotation(vm *gov.ManagedVM, key, value string) {
	if vm.Annotations == nil {
		vm.Annotations = map[string]string{}
	}
	vm.Annotations[key] = value
}

// requestFor names, in the VM's AnnotationOnBehalfOf, the user who caused the request the
// provider or runtime is about to write: the one the server recorded as the last spec writer of
// the TenantCompute or Workload (from its annotations, or the plan's). Without a recorded user
// the annotation goes, so that a request never names someone who did not cause it.
func requestFor(vm *gov.ManagedVM, annotations map[string]string) {
	if user := annotations[common.AnnotationRequestedBy]; user != "" {
		setAnnotation(vm, gov.AnnotationOnBehalfOf, user)
		return
	}
	delete(vm.Annotations, gov.AnnotationOnBehalfOf)
}

// needsRestart says whether a change only takes effect in a new instance of the VM: its size,
// its image, or the cloud-init that starts its containers, which runs when the VM starts.
func needsRestart(old, changed gov.ManagedVMSpec) bool {
	return old.Image != changed.Image || old.CloudInit != changed.CloudInit ||
		!apiequality.Semantic.DeepEqual(old.Resources, changed.Resources) || old.InstanceType != changed.InstanceType
}

// changesOf lists, one entry each, what a new spec changes.
func changesOf(old, changed gov.ManagedVMSpec) []string {
	var out []string
	if old.Image != changed.Image {
		out = append(out, fmt.Sprintf("image: %s → %s", old.Image, changed.Image))
	}
	if !apiequality.Semantic.DeepEqual(old.Resources, changed.Resources) || old.InstanceType != changed.InstanceType {
		out = append(out, fmt.Sprintf("size: %s → %s", sizeOf(old), sizeOf(changed)))
	}
	if old.CloudInit != changed.CloudInit {
		was, now := containersIn(old.CloudInit), containersIn(changed.CloudInit)
		n := len(out)
		for _, name := range sets.List(sets.KeySet(was).Union(sets.KeySet(now))) {
			switch a, b := was[name], now[name]; {
			case a == "":
				out = append(out, fmt.Sprintf("container %s: added", name))
			case b == "":
				out = append(out, fmt.Sprintf("container %s: removed", name))
			case a != b:
				out = append(out, fmt.Sprintf("container %s: changed", name))
			}
		}
		if len(out) == n {
			out = append(out, "cloud-init: changed") // not a container: the rest of the user data
		}
	}
	if old.RunStrategy != changed.RunStrategy {
		out = append(out, fmt.Sprintf("run strategy: %s → %s", old.RunStrategy, changed.RunStrategy))
	}
	return out
}

func sizeOf(s gov.ManagedVMSpec) string {
	switch {
	case s.Resources != nil:
		return fmt.Sprintf("%d vCPU, %s", s.Resources.CPU, s.Resources.Memory.String())
	case s.InstanceType != "":
		return "instance type " + s.InstanceType
	}
	return "none"
}
