package delivery

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestArtifactLabelIsAValidLabelValueForLongNames(t *testing.T) {
	long := strings.Repeat("a", 253)
	for _, c := range [][2]string{{"team-a", "app"}, {strings.Repeat("n", 63), long}} {
		v := ArtifactLabel(c[0], c[1])
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("ArtifactLabel(%q, %q) = %q: %v", c[0], c[1], v, errs)
		}
	}
	// The separator keeps a-b/c and a/b-c apart, which a plain join would not.
	if ArtifactLabel("a-b", "c") == ArtifactLabel("a", "b-c") || ArtifactLabel("a", "b") != ArtifactLabel("a", "b") {
		t.Error("ArtifactLabel does not tell artifacts apart, or is not stable")
	}
	if got := ArtifactAnnotation("team-a", "app"); got != "team-a/app" {
		t.Errorf("ArtifactAnnotation = %q", got)
	}
}
