package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	scorefuzzer "github.com/plinth-dev/plinth/pkg/apis/score/fuzzer"
)

// TestRoundTripTypes fuzzes every score.dev kind and checks internal → v1b1 JSON → internal
// loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, scorefuzzer.Funcs)
}
