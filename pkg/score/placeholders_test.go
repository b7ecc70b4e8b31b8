package score

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// placeholderWorkload spreads n copies of ref over a variable, a file and a resource's params.
func placeholderWorkload(n int, ref string) *v1b1.Workload {
	third := n / 3
	params := `{"p":"` + strings.Repeat(ref, third) + `"}`
	return &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec: v1b1.WorkloadSpec{
			Containers: map[string]v1b1.Container{"main": {
				Image:     "nginx",
				Variables: map[string]string{"V": strings.Repeat(ref, n-2*third)},
				Files:     []v1b1.ContainerFile{{Target: "/f", Content: ptr.To(strings.Repeat(ref, third))}},
			}},
			Resources: map[string]v1b1.ResourceSpec{"db": {Type: "postgres", Params: &common.RawObject{Raw: []byte(params)}}},
		},
	}
}

func TestPlaceholderBound(t *testing.T) {
	if _, errs := Resolve(placeholderWorkload(MaxPlaceholders, "${metadata.name}")); len(errs) != 0 {
		t.Fatalf("%d placeholders: %v", MaxPlaceholders, errs)
	}
	_, errs := Resolve(placeholderWorkload(MaxPlaceholders+1, "${metadata.name}"))
	if len(errs) != 1 || errs[0].Field != "spec.resources[db].params[p]" || !strings.Contains(errs[0].Detail, "1000 placeholders") {
		t.Fatalf("%d placeholders: %v, want one error where the count passes the bound", MaxPlaceholders+1, errs)
	}
	// Bad placeholders past the bound are not reported one by one.
	_, errs = Resolve(placeholderWorkload(10*MaxPlaceholders, "${resources.missing.host}"))
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, "placeholders, the most") {
		t.Fatalf("%d bad placeholders: %d errors, want the count's one", 10*MaxPlaceholders, len(errs))
	}
}

func TestBadPlaceholderErrorsQuoteThePlaceholderOnly(t *testing.T) {
	w := placeholderWorkload(300, "${resources.missing.host} ")
	_, errs := Resolve(w)
	if len(errs) != 300 {
		t.Fatalf("%d errors, want one per bad placeholder", len(errs))
	}
	for _, e := range errs {
		if len(e.Error()) > 200 || !strings.Contains(e.Error(), "${resources.missing.host}") {
			t.Fatalf("error %q: it must name the placeholder and not repeat the whole value", e.Error())
		}
	}
}
