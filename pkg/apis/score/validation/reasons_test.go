package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// Controllers write only the reasons score.dev declares (the status writer refuses any other),
// and the API server accepts only the Workload reasons listed here: the two lists must be one,
// or a status a controller computes would be refused on write, or a declared reason never be
// accepted. The reasons only Events carry are the difference.
func TestWorkloadReasonsAreTheDeclaredOnes(t *testing.T) {
	eventOnly := sets.New(v1b1.ReasonReady, v1b1.ReasonBindingsReady, v1b1.ReasonBound)
	declared := sets.List(sets.New(v1b1.Reasons.Reasons()...).Difference(eventOnly))
	if diff := cmp.Diff(declared, sets.List(sets.New(WorkloadConditionReasons...))); diff != "" {
		t.Errorf("reasons score.dev declares for conditions (-) and Workload validation accepts (+):\n%s", diff)
	}
}
