// Package check holds the invariants the platform must keep through a fault, as pure
// functions over what the load generator recorded and a snapshot of the platform's state:
// no acknowledged write lost, no object twice, instance numbers unique and dense, and every
// object converged.
package check

import (
	"fmt"
	"sort"

	"github.com/plinth-dev/plinth/test/faults/load"
)

// Classes of violations.
const (
	// Lost: an acknowledged write is missing, or the object holds older content.
	Lost = "lost"
	// Duplicate: an object exists twice (two Deployments for a Workload, two VirtualMachines
	// for an instance, a VirtualMachine for an instance no ManagedVM holds, two tickets for a
	// request, an instance number given twice).
	Duplicate = "duplicate"
	// Numbering: a service's instance numbers are not 1..n.
	Numbering = "numbering"
	// NotConverged: an object is not (yet) where the controllers must bring it.
	NotConverged = "not-converged"
)

// ObjectState is what a snapshot saw of one Workload or TenantCompute.
type ObjectState struct {
	// Seq is the seq in its image (load.ImageSeq); 0 for an image the generator did not write.
	Seq                            int64
	Generation, ObservedGeneration int64
	// Ready is its Ready condition being True (a Workload) or its phase Ready (a
	// TenantCompute).
	Ready bool
	// Deployments are the Deployments made for it; DeploymentSeqs their images' seqs.
	Deployments    []string
	DeploymentSeqs []int64
}

// PackState is what a snapshot saw of one InfrastructureClusterPack delivered to one cluster.
type PackState struct {
	// Seq is the seq in its version (load.PackSeq).
	Seq int64
	// Ready is its Ready condition being True for the status of its current generation and
	// version.
	Ready bool
	// Instances are its InstancePackInstances for the cluster (one is right);
	// InstanceSeq and InstanceReady describe the first one.
	Instances     []string
	InstanceSeq   int64
	InstanceReady bool
	// DeliveredSeq is the seq the delivered ConfigMap on the cluster holds (0: none).
	DeliveredSeq int64
}

// VMState is what a snapshot saw of one ManagedVM.
type VMState struct {
	Service string
	// Instance is status.instance (0 until approved and allocated); Approved is
	// status.approvedRevision > 0; Pending is a pending approval.
	Instance          int32
	Approved, Pending bool
	Phase             string
	// CreateTickets are the create tickets whose target is this VM.
	CreateTickets []string
}

// VirtualMachine is a VirtualMachine on the cluster, by its Plinth labels.
type VirtualMachine struct {
	Namespace, Name, Service string
	Instance                 int32
}

// Snapshot is the platform's state, by namespace/name.
type Snapshot struct {
	Workloads       map[string]ObjectState
	TenantComputes  map[string]ObjectState
	Packs           map[string]PackState
	VMs             map[string]VMState
	VirtualMachines []VirtualMachine
	// RunningPhase is the ManagedVM phase that counts as converged.
	RunningPhase string
	// RegistryTags are the tags the registry holds, as repository:tag.
	RegistryTags map[string]bool
}

// Violation is one broken invariant.
type Violation struct {
	Class, Object, Detail string
}

func (v Violation) String() string { return v.Class + " " + v.Object + ": " + v.Detail }

// Check compares the snapshot with the latest acknowledged write of each object and returns
// every violation, sorted.
func Check(latest map[load.Key]load.Write, s Snapshot) []Violation {
	var out []Violation
	add := func(class, object, format string, args ...any) {
		out = append(out, Violation{class, object, fmt.Sprintf(format, args...)})
	}
	for key, w := range latest {
		id := key.Namespace + "/" + key.Name
		switch key.Kind {
		case load.KindWorkload, load.KindTenantCompute:
			objects := s.Workloads
			if key.Kind == load.KindTenantCompute {
				objects = s.TenantComputes
			}
			o, ok := objects[id]
			if !ok {
				add(Lost, key.Kind+" "+id, "acknowledged (seq %d, resourceVersion %s) but missing", w.Seq, w.ResourceVersion)
			} else if o.Seq < w.Seq {
				add(Lost, key.Kind+" "+id, "holds seq %d, but seq %d was acknowledged (resourceVersion %s)", o.Seq, w.Seq, w.ResourceVersion)
			}
		case load.KindPack:
			pack, ok := s.Packs[id]
			if !ok {
				add(Lost, "pack "+id, "acknowledged (seq %d, resourceVersion %s) but missing", w.Seq, w.ResourceVersion)
			} else if pack.Seq < w.Seq {
				add(Lost, "pack "+id, "holds seq %d, but seq %d was acknowledged (resourceVersion %s)", pack.Seq, w.Seq, w.ResourceVersion)
			}
		case load.KindManagedVM:
			vm, ok := s.VMs[id]
			if !ok {
				add(Lost, "ManagedVM "+id, "acknowledged (%s, resourceVersion %s) but missing", w.Verb, w.ResourceVersion)
			} else if w.Seq >= 2 && !vm.Approved {
				add(Lost, "ManagedVM "+id, "its approval was acknowledged (ticket resourceVersion %s) but it is not approved", w.ResourceVersion)
			}
		case load.KindTag:
			if ref := key.Namespace + ":" + key.Name; !s.RegistryTags[ref] {
				add(Lost, "tag "+ref, "pushed (digest %s) but missing", w.ResourceVersion)
			}
		}
	}
	out = append(out, checkObjects(load.KindWorkload, s.Workloads)...)
	out = append(out, checkObjects(load.KindTenantCompute, s.TenantComputes)...)
	for id, pack := range s.Packs {
		switch {
		case len(pack.Instances) > 1:
			add(Duplicate, "pack "+id, "%d instances for one cluster: %v", len(pack.Instances), pack.Instances)
		case len(pack.Instances) == 0:
			add(NotConverged, "pack "+id, "no instance")
		case pack.InstanceSeq != pack.Seq || !pack.InstanceReady:
			add(NotConverged, "pack "+id, "its instance is at seq %d (Ready %v), the pack at seq %d", pack.InstanceSeq, pack.InstanceReady, pack.Seq)
		}
		if !pack.Ready {
			add(NotConverged, "pack "+id, "not Ready at its generation and version")
		}
		if pack.DeliveredSeq != pack.Seq {
			add(NotConverged, "pack "+id, "the cluster holds seq %d, the pack asks for seq %d", pack.DeliveredSeq, pack.Seq)
		}
	}
	out = append(out, checkVMs(s)...)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// checkObjects checks that each object has one Deployment, running its seq, and is Ready at
// its generation.
func checkObjects(kind string, objects map[string]ObjectState) []Violation {
	var out []Violation
	add := func(class, object, format string, args ...any) {
		out = append(out, Violation{class, object, fmt.Sprintf(format, args...)})
	}
	for id, o := range objects {
		switch {
		case len(o.Deployments) > 1:
			add(Duplicate, kind+" "+id, "%d Deployments: %v", len(o.Deployments), o.Deployments)
		case len(o.Deployments) == 0:
			add(NotConverged, kind+" "+id, "no Deployment")
		case o.DeploymentSeqs[0] != o.Seq:
			add(NotConverged, kind+" "+id, "its Deployment runs seq %d, the %s asks for seq %d", o.DeploymentSeqs[0], kind, o.Seq)
		}
		if !o.Ready || o.ObservedGeneration != o.Generation {
			add(NotConverged, kind+" "+id, "Ready %v at observed generation %d of %d", o.Ready, o.ObservedGeneration, o.Generation)
		}
	}
	return out
}

// checkVMs checks tickets, instance numbers and VirtualMachines.
func checkVMs(s Snapshot) []Violation {
	var out []Violation
	add := func(class, object, format string, args ...any) {
		out = append(out, Violation{class, object, fmt.Sprintf(format, args...)})
	}
	type service struct{ namespace, name string }
	numbers := map[service]map[int32][]string{}
	for id, vm := range s.VMs {
		switch n := len(vm.CreateTickets); {
		case n > 1:
			add(Duplicate, "ManagedVM "+id, "%d create tickets: %v", n, vm.CreateTickets)
		case n == 0:
			add(Lost, "ManagedVM "+id, "no create ticket")
		}
		switch {
		case vm.Pending:
			add(NotConverged, "ManagedVM "+id, "still waits for approval")
		case vm.Approved && vm.Instance == 0:
			add(NotConverged, "ManagedVM "+id, "approved without an instance number")
		case vm.Approved && vm.Phase != s.RunningPhase:
			add(NotConverged, "ManagedVM "+id, "phase %q, want %q", vm.Phase, s.RunningPhase)
		}
		if vm.Instance > 0 {
			svc := service{namespaceOf(id), vm.Service}
			if numbers[svc] == nil {
				numbers[svc] = map[int32][]string{}
			}
			numbers[svc][vm.Instance] = append(numbers[svc][vm.Instance], id)
		}
	}
	for svc, byNumber := range numbers {
		object := "SystemService " + svc.namespace + "/" + svc.name
		for n := int32(1); n <= int32(len(byNumber)); n++ {
			if _, ok := byNumber[n]; !ok {
				add(Numbering, object, "instance numbers %v are not 1..%d", keys(byNumber), len(byNumber))
				break
			}
		}
		for n, ids := range byNumber {
			if len(ids) > 1 {
				sort.Strings(ids)
				add(Duplicate, object, "instance %d given to %v", n, ids)
			}
		}
	}
	onCluster := map[service]map[int32][]string{}
	for _, v := range s.VirtualMachines {
		svc := service{v.Namespace, v.Service}
		if onCluster[svc] == nil {
			onCluster[svc] = map[int32][]string{}
		}
		onCluster[svc][v.Instance] = append(onCluster[svc][v.Instance], v.Name)
	}
	for svc, byNumber := range onCluster {
		for n, names := range byNumber {
			if len(names) > 1 {
				sort.Strings(names)
				add(Duplicate, "SystemService "+svc.namespace+"/"+svc.name, "instance %d has %d VirtualMachines: %v", n, len(names), names)
			}
		}
	}
	// A VirtualMachine whose instance no ManagedVM holds is one too many: its ManagedVM has
	// another one (its number changed) or none.
	for _, v := range s.VirtualMachines {
		if len(numbers[service{v.Namespace, v.Service}][v.Instance]) == 0 {
			add(Duplicate, "VirtualMachine "+v.Namespace+"/"+v.Name, "instance %d of %s, which no ManagedVM holds", v.Instance, v.Service)
		}
	}
	for id, vm := range s.VMs {
		if vm.Instance > 0 && len(onCluster[service{namespaceOf(id), vm.Service}][vm.Instance]) == 0 {
			add(NotConverged, "ManagedVM "+id, "no VirtualMachine for instance %d", vm.Instance)
		}
	}
	return out
}

func namespaceOf(id string) string {
	for i := range id {
		if id[i] == '/' {
			return id[:i]
		}
	}
	return ""
}

func keys(m map[int32][]string) []int32 {
	out := make([]int32, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Only keeps the violations of the given classes.
func Only(vs []Violation, classes ...string) []Violation {
	var out []Violation
	for _, v := range vs {
		for _, c := range classes {
			if v.Class == c {
				out = append(out, v)
				break
			}
		}
	}
	return out
}
