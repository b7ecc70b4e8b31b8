package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	platformfuzzer "github.com/plinth-dev/plinth/pkg/apis/platform/fuzzer"
)

// TestRoundTripTypes fuzzes every platform.plinth.dev kind and checks internal → v1alpha1
// JSON → internal loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, platformfuzzer.Funcs)
}
