package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	computefuzzer "github.com/plinth-dev/plinth/pkg/apis/compute/fuzzer"
)

// TestRoundTripTypes fuzzes every compute.plinth.dev kind and checks internal → v1alpha1
// JSON → internal loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, computefuzzer.Funcs)
}
