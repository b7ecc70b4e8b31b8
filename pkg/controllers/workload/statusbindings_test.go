package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	clienttesting "k8s.io/client-go/testing"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// TestStatusBindingsListEveryEffectiveResource: status.bindings has one entry per resource the
// workload declares, in spec.resources or in its inline Score document. kubectl's BINDINGS
// column (pkg/registry/score/workload) counts these entries, so they must cover both.
func TestStatusBindingsListEveryEffectiveResource(t *testing.T) {
	const document = `{"apiVersion":"score.dev/v1b1","metadata":{"name":"shop"},
"containers":{"main":{"image":"shop:1"}},
"resources":{"cache":{"type":"redis"},"queue":{"type":"amqp"}}}`
	inline := func() *v1b1.Workload {
		w := newWorkload("shop", "shop:1")
		w.Spec.Containers, w.Spec.Resources = nil, nil
		w.Spec.Source = &v1b1.WorkloadSource{Inline: &common.RawObject{Raw: []byte(document)}}
		return w
	}
	mixed := func() *v1b1.Workload {
		w := inline()
		w.Spec.Resources = map[string]v1b1.ResourceSpec{"db": {Type: "postgres"}}
		return w
	}
	for name, tc := range map[string]struct {
		workload *v1b1.Workload
		want     []string
	}{
		"inline only": {inline(), []string{"cache", "queue"}},
		"mixed":       {mixed(), []string{"cache", "db", "queue"}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.workloads = append(f.workloads, tc.workload)
			for range tc.want {
				f.actions = append(f.actions, clienttesting.NewCreateAction(bindingsResource, "team-a", nil))
			}
			f.actions = append(f.actions, clienttesting.NewUpdateSubresourceAction(workloadsResource, "status", "team-a", nil))
			f.events = []string{"Normal BindingPending Resources are being provisioned."}
			f.run("shop")
			actions := f.plinth.Actions()
			written := actions[len(actions)-1].(clienttesting.UpdateAction).GetObject().(*v1b1.Workload)
			var keys []string
			for _, b := range written.Status.Bindings {
				keys = append(keys, b.Key)
			}
			if diff := cmp.Diff(tc.want, keys); diff != "" {
				t.Errorf("status.bindings keys (-want +got):\n%s", diff)
			}
		})
	}
}
