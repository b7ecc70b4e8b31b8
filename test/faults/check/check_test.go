package check

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/test/faults/load"
)

const running = "RUNNING"

// healthy is a converged snapshot matching healthyWrites.
func healthy() Snapshot {
	return Snapshot{
		RunningPhase: running,
		Workloads: map[string]ObjectState{
			"ns/w-000": {Seq: 5, Generation: 3, ObservedGeneration: 3, Ready: true, Deployments: []string{"w-000"}, DeploymentSeqs: []int64{5}},
		},
		TenantComputes: map[string]ObjectState{
			"ns/tc-000": {Seq: 2, Generation: 2, ObservedGeneration: 2, Ready: true, Deployments: []string{"faults-000"}, DeploymentSeqs: []int64{2}},
		},
		Packs: map[string]PackState{
			"plinth-system/faults-0": {Seq: 3, Ready: true, Instances: []string{"faults-0-local"}, InstanceSeq: 3, InstanceReady: true, DeliveredSeq: 3},
		},
		VMs: map[string]VMState{
			"ns/vm-000": {Service: "svc-0", Instance: 1, Approved: true, Phase: running, CreateTickets: []string{"t1"}},
			"ns/vm-001": {Service: "svc-0", Instance: 2, Approved: true, Phase: running, CreateTickets: []string{"t2"}},
			"ns/vm-002": {Service: "svc-1", Instance: 1, Approved: true, Phase: running, CreateTickets: []string{"t3"}},
		},
		VirtualMachines: []VirtualMachine{
			{"ns", "ns-faults-svc-0-01", "svc-0", 1}, {"ns", "ns-faults-svc-0-02", "svc-0", 2}, {"ns", "ns-faults-svc-1-01", "svc-1", 1},
		},
		RegistryTags: map[string]bool{"faults/load:1.0.1": true, "faults/load:1.0.2": true},
	}
}

func healthyWrites() map[load.Key]load.Write {
	return map[load.Key]load.Write{
		{Kind: load.KindWorkload, Namespace: "ns", Name: "w-000"}:           {Seq: 4, ResourceVersion: "40"},
		{Kind: load.KindManagedVM, Namespace: "ns", Name: "vm-000"}:         {Verb: load.VerbApprove, Seq: 2},
		{Kind: load.KindManagedVM, Namespace: "ns", Name: "vm-001"}:         {Verb: load.VerbCreate, Seq: 1},
		{Kind: load.KindTag, Namespace: "faults/load", Name: "1.0.2"}:       {Verb: load.VerbPush, Seq: 2},
		{Kind: load.KindPack, Namespace: "plinth-system", Name: "faults-0"}: {Verb: load.VerbUpdate, Seq: 3},
		{Kind: load.KindTenantCompute, Namespace: "ns", Name: "tc-000"}:     {Verb: load.VerbUpdate, Seq: 2},
	}
}

func TestCheckPassesAConvergedSnapshotHoldingAtLeastEveryWrite(t *testing.T) {
	if vs := Check(healthyWrites(), healthy()); len(vs) != 0 {
		t.Errorf("violations: %v", vs)
	}
}

func TestCheckFindsEachViolation(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*Snapshot, map[load.Key]load.Write)
		want   string // class and object of the one violation expected
	}{
		"a Workload lost": {func(s *Snapshot, _ map[load.Key]load.Write) { delete(s.Workloads, "ns/w-000") }, "lost Workload ns/w-000"},
		"a Workload with older content": {func(_ *Snapshot, w map[load.Key]load.Write) {
			w[load.Key{Kind: load.KindWorkload, Namespace: "ns", Name: "w-000"}] = load.Write{Seq: 6}
		}, "lost Workload ns/w-000"},
		"two Deployments": {func(s *Snapshot, _ map[load.Key]load.Write) {
			wl := s.Workloads["ns/w-000"]
			wl.Deployments, wl.DeploymentSeqs = []string{"w-000", "w-000-x"}, []int64{5, 5}
			s.Workloads["ns/w-000"] = wl
		}, "duplicate Workload ns/w-000"},
		"a Deployment behind": {func(s *Snapshot, _ map[load.Key]load.Write) {
			wl := s.Workloads["ns/w-000"]
			wl.DeploymentSeqs = []int64{4}
			s.Workloads["ns/w-000"] = wl
		}, "not-converged Workload ns/w-000"},
		"a Workload not Ready": {func(s *Snapshot, _ map[load.Key]load.Write) {
			wl := s.Workloads["ns/w-000"]
			wl.ObservedGeneration = 2
			s.Workloads["ns/w-000"] = wl
		}, "not-converged Workload ns/w-000"},
		"a VM lost": {func(s *Snapshot, _ map[load.Key]load.Write) {
			delete(s.VMs, "ns/vm-001")
			s.VirtualMachines = s.VirtualMachines[:1]
			s.VirtualMachines = append(s.VirtualMachines, VirtualMachine{"ns", "ns-faults-svc-1-01", "svc-1", 1})
		}, "lost ManagedVM ns/vm-001"},
		"an approval lost": {func(s *Snapshot, _ map[load.Key]load.Write) {
			vm := s.VMs["ns/vm-000"]
			vm.Approved, vm.Pending, vm.Instance = false, false, 0
			s.VMs["ns/vm-000"] = vm
			// svc-0 then numbers only vm-001 (2): that is a numbering violation too.
			vm = s.VMs["ns/vm-001"]
			vm.Instance = 1
			s.VMs["ns/vm-001"] = vm
			s.VirtualMachines = s.VirtualMachines[:1]
			s.VirtualMachines = append(s.VirtualMachines, VirtualMachine{"ns", "ns-faults-svc-1-01", "svc-1", 1})
		}, "lost ManagedVM ns/vm-000"},
		"two tickets for one request": {func(s *Snapshot, _ map[load.Key]load.Write) {
			vm := s.VMs["ns/vm-001"]
			vm.CreateTickets = []string{"t2", "t9"}
			s.VMs["ns/vm-001"] = vm
		}, "duplicate ManagedVM ns/vm-001"},
		"no ticket for a request": {func(s *Snapshot, _ map[load.Key]load.Write) {
			vm := s.VMs["ns/vm-001"]
			vm.CreateTickets = nil
			s.VMs["ns/vm-001"] = vm
		}, "lost ManagedVM ns/vm-001"},
		"an instance number given twice": {func(s *Snapshot, _ map[load.Key]load.Write) {
			s.VMs["ns/vm-009"] = VMState{Service: "svc-1", Instance: 1, Approved: true, Phase: running, CreateTickets: []string{"t10"}}
		}, "duplicate SystemService ns/svc-1"},
		"a gap in the numbers": {func(s *Snapshot, _ map[load.Key]load.Write) {
			vm := s.VMs["ns/vm-002"]
			vm.Instance = 2
			s.VMs["ns/vm-002"] = vm
			s.VirtualMachines[2].Instance = 2
		}, "numbering SystemService ns/svc-1"},
		"two VirtualMachines for an instance": {func(s *Snapshot, _ map[load.Key]load.Write) {
			s.VirtualMachines = append(s.VirtualMachines, VirtualMachine{"ns", "copy", "svc-1", 1})
		}, "duplicate SystemService ns/svc-1"},
		"a VirtualMachine no ManagedVM holds": {func(s *Snapshot, _ map[load.Key]load.Write) {
			s.VirtualMachines = append(s.VirtualMachines, VirtualMachine{"ns", "ns-faults-svc-1-02", "svc-1", 2})
		}, "duplicate VirtualMachine ns/ns-faults-svc-1-02"},
		"no VirtualMachine for an instance": {func(s *Snapshot, _ map[load.Key]load.Write) {
			s.VirtualMachines = s.VirtualMachines[:2]
		}, "not-converged ManagedVM ns/vm-002"},
		"a VM not running": {func(s *Snapshot, _ map[load.Key]load.Write) {
			vm := s.VMs["ns/vm-002"]
			vm.Phase = "CREATING"
			s.VMs["ns/vm-002"] = vm
		}, "not-converged ManagedVM ns/vm-002"},
		"a TenantCompute with older content": {func(s *Snapshot, _ map[load.Key]load.Write) {
			tc := s.TenantComputes["ns/tc-000"]
			tc.Seq, tc.DeploymentSeqs = 1, []int64{1}
			s.TenantComputes["ns/tc-000"] = tc
		}, "lost TenantCompute ns/tc-000"},
		"a TenantCompute with two Deployments": {func(s *Snapshot, _ map[load.Key]load.Write) {
			tc := s.TenantComputes["ns/tc-000"]
			tc.Deployments, tc.DeploymentSeqs = []string{"a", "b"}, []int64{2, 2}
			s.TenantComputes["ns/tc-000"] = tc
		}, "duplicate TenantCompute ns/tc-000"},
		"a TenantCompute not Ready": {func(s *Snapshot, _ map[load.Key]load.Write) {
			tc := s.TenantComputes["ns/tc-000"]
			tc.Ready = false
			s.TenantComputes["ns/tc-000"] = tc
		}, "not-converged TenantCompute ns/tc-000"},
		"a pack with an older version": {func(_ *Snapshot, w map[load.Key]load.Write) {
			w[load.Key{Kind: load.KindPack, Namespace: "plinth-system", Name: "faults-0"}] = load.Write{Seq: 4}
		}, "lost pack plinth-system/faults-0"},
		"a pack missing": {func(s *Snapshot, _ map[load.Key]load.Write) { delete(s.Packs, "plinth-system/faults-0") }, "lost pack plinth-system/faults-0"},
		"two instances of a pack on a cluster": {func(s *Snapshot, _ map[load.Key]load.Write) {
			p := s.Packs["plinth-system/faults-0"]
			p.Instances = []string{"faults-0-local", "faults-0-local-2"}
			s.Packs["plinth-system/faults-0"] = p
		}, "duplicate pack plinth-system/faults-0"},
		"an instance behind": {func(s *Snapshot, _ map[load.Key]load.Write) {
			p := s.Packs["plinth-system/faults-0"]
			p.InstanceSeq = 2
			s.Packs["plinth-system/faults-0"] = p
		}, "not-converged pack plinth-system/faults-0"},
		"a delivery not on the cluster": {func(s *Snapshot, _ map[load.Key]load.Write) {
			p := s.Packs["plinth-system/faults-0"]
			p.DeliveredSeq = 0
			s.Packs["plinth-system/faults-0"] = p
		}, "not-converged pack plinth-system/faults-0"},
		"a pack not Ready": {func(s *Snapshot, _ map[load.Key]load.Write) {
			p := s.Packs["plinth-system/faults-0"]
			p.Ready = false
			s.Packs["plinth-system/faults-0"] = p
		}, "not-converged pack plinth-system/faults-0"},
		"a pushed tag lost": {func(s *Snapshot, _ map[load.Key]load.Write) { delete(s.RegistryTags, "faults/load:1.0.2") }, "lost tag faults/load:1.0.2"},
		"a request still pending": {func(s *Snapshot, _ map[load.Key]load.Write) {
			s.VMs["ns/vm-003"] = VMState{Service: "svc-2", Pending: true, CreateTickets: []string{"t4"}}
		}, "not-converged ManagedVM ns/vm-003"},
	} {
		t.Run(name, func(t *testing.T) {
			s, w := healthy(), healthyWrites()
			tc.change(&s, w)
			vs := Check(w, s)
			found := false
			for _, v := range vs {
				if strings.HasPrefix(v.String(), tc.want+":") {
					found = true
				}
			}
			if !found {
				t.Errorf("violations %v, want one %q", vs, tc.want)
			}
		})
	}
}

func TestOnlyKeepsTheGivenClasses(t *testing.T) {
	vs := []Violation{{Lost, "a", ""}, {NotConverged, "b", ""}, {Duplicate, "c", ""}}
	got := Only(vs, Lost, Duplicate)
	if len(got) != 2 || got[0].Object != "a" || got[1].Object != "c" {
		t.Errorf("Only = %v", got)
	}
	if len(Only(vs)) != 0 {
		t.Error("Only without classes kept something")
	}
}
