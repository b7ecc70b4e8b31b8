package approval

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/platform"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
)

func TestUnfit(t *testing.T) {
	kubevirt := []metav1.Condition{{Type: platformv1alpha1.ConditionKubeVirtAvailable, Status: metav1.ConditionTrue}}
	healthy := platform.Cluster{Status: platform.ClusterStatus{Phase: platform.ClusterPhaseHealthy, Conditions: kubevirt, EnabledFeatures: []string{"Snapshot"}}}
	noKubeVirt := healthy
	noKubeVirt.Status.Conditions = nil
	unreachable := healthy
	unreachable.Status.Phase = platform.ClusterPhaseUnreachable
	for name, tc := range map[string]struct {
		cluster  platform.Cluster
		need     []string
		degraded bool
		missing  []string
	}{
		"fits":              {healthy, []string{"Snapshot"}, false, nil},
		"needs nothing":     {healthy, nil, false, nil},
		"missing a feature": {healthy, []string{"GPU", "Snapshot"}, false, []string{"GPU"}},
		"no KubeVirt":       {noKubeVirt, nil, true, nil},
		"unreachable":       {unreachable, nil, true, nil},
	} {
		degraded, missing := unfit(&tc.cluster, governance.ManagedVMSpec{RequiredFeatures: tc.need})
		if degraded != tc.degraded || !slices.Equal(missing, tc.missing) {
			t.Errorf("%s: degraded %v missing %v", name, degraded, missing)
		}
	}
}
