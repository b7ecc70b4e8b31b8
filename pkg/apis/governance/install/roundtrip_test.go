package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	governancefuzzer "github.com/plinth-dev/plinth/pkg/apis/governance/fuzzer"
)

// TestRoundTripTypes fuzzes every governance.plinth.dev kind and checks internal → v1alpha1
// JSON → internal loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, governancefuzzer.Funcs)
}
