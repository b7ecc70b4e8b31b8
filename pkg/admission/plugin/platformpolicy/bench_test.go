package platformpolicy

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// BenchmarkAdmission is the cost of PlatformPolicy admission (mutation then validation) for one
// Workload, with N policies of which one in ten selects it.
func BenchmarkAdmission(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		for _, team := range []string{"team-0", "team-x"} { // selected by a tenth of the policies; by none
			b.Run(fmt.Sprintf("policies=%d/workload=%s", n, team), func(b *testing.B) {
				var policies []*v1b1.PlatformPolicy
				for i := 0; i < n; i++ {
					team := fmt.Sprintf("team-%d", i%10)
					policies = append(policies, newPolicy(fmt.Sprintf("p-%04d", i), int32(i%7), func(p *v1b1.PlatformPolicy) {
						p.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}
						p.Spec.Defaults = &v1b1.PolicyDefaults{RuntimeClass: "kubernetes", Labels: map[string]string{"policy": p.Name},
							Resources: map[string]v1b1.ResourceDefaults{"postgres": {Class: "small"}}}
						p.Spec.Constraints = &v1b1.PolicyConstraints{
							AllowedRuntimeClasses: []string{"kubernetes"},
							ResourceTypes:         &v1b1.ResourceTypeConstraints{Denied: []string{"mysql"}},
							Images:                &v1b1.ImageConstraints{AllowedRegistries: []string{"registry.example.com"}, RequiredTags: []string{"v*"}},
						}
					}))
				}
				p := newPlugin(b, policies...)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					w := workload(map[string]string{"team": team})
					a := attrs(w, admission.Create, false)
					if err := p.Admit(ctx, a, nil); err != nil {
						b.Fatal(err)
					}
					if err := p.Validate(ctx, a, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
