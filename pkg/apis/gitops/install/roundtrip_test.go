package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	gitopsfuzzer "github.com/plinth-dev/plinth/pkg/apis/gitops/fuzzer"
)

// TestRoundTripTypes fuzzes every gitops.plinth.dev kind and checks internal → v1alpha1
// JSON → internal loses nothing.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, gitopsfuzzer.Funcs)
}
