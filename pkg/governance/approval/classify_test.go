package approval

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
)

func TestClassify(t *testing.T) {
	disk := resource.MustParse("20Gi")
	base := governance.ManagedVMSpec{
		SystemServiceRef: governance.LocalObjectReference{Name: "redis"}, InstanceType: "u1.medium", DiskSize: &disk,
		Image: "fedora", RunStrategy: governance.RunStrategyAlways, Reason: "cache",
	}
	with := func(change func(s *governance.ManagedVMSpec)) governance.ManagedVMSpec {
		s := *base.DeepCopy()
		change(&s)
		return s
	}
	bigger := resource.MustParse("40Gi")
	cases := []struct {
		name string
		new  governance.ManagedVMSpec
		want governance.Operation
	}{
		{"unchanged", base, ""},
		{"reason only", with(func(s *governance.ManagedVMSpec) { s.Reason = "other" }), ""},
		{"same disk spelled differently", with(func(s *governance.ManagedVMSpec) { q := resource.MustParse("20480Mi"); s.DiskSize = &q }), ""},
		{"halt", with(func(s *governance.ManagedVMSpec) { s.RunStrategy = governance.RunStrategyHalted }), governance.OperationStop},
		{"manual is a start", with(func(s *governance.ManagedVMSpec) { s.RunStrategy = governance.RunStrategyManual }), governance.OperationStart},
		{"restart", with(func(s *governance.ManagedVMSpec) { s.RestartedAt = "2026-11-23T10:00:00Z" }), governance.OperationRestart},
		{"disk", with(func(s *governance.ManagedVMSpec) { s.DiskSize = &bigger }), governance.OperationModify},
		{"cloud-init", with(func(s *governance.ManagedVMSpec) { s.CloudInit = "#cloud-config\npackages: [podman]\n" }), governance.OperationModify},
		{"cloud-init and restart together", with(func(s *governance.ManagedVMSpec) {
			s.CloudInit = "#cloud-config\n"
			s.RestartedAt = "2026-11-23T10:00:00Z"
		}), governance.OperationModify},
		{"stop and resize together", with(func(s *governance.ManagedVMSpec) {
			s.RunStrategy = governance.RunStrategyHalted
			s.InstanceType = "u1.large"
		}), governance.OperationModify},
		{"restart and stop together", with(func(s *governance.ManagedVMSpec) {
			s.RunStrategy = governance.RunStrategyHalted
			s.RestartedAt = "2026-11-23T10:00:00Z"
		}), governance.OperationModify},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(base, tc.new); got != tc.want {
				t.Errorf("classify = %q, want %q", got, tc.want)
			}
		})
	}
}
