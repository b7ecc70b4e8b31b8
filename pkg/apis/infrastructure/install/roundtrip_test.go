package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	infrastructurefuzzer "github.com/plinth-dev/plinth/pkg/apis/infrastructure/fuzzer"
)

// TestRoundTripTypes fuzzes every infrastructure.ontai.dev kind and checks internal → v1alpha1
// JSON → internal loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, infrastructurefuzzer.Funcs)
}
