package cluster

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
)

func clusterList(n int) *platform.ClusterList {
	l := &platform.ClusterList{}
	for i := 0; i < n; i++ {
		l.Items = append(l.Items, platform.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i), Labels: map[string]string{"zone": "a"}},
			Spec:       platform.ClusterSpec{Kubeconfig: envelopePrefix + "k1:" + strings.Repeat("A", 7000)},
			Status: platform.ClusterStatus{Phase: platform.ClusterPhaseHealthy, EnabledFeatures: []string{"A", "B"},
				Conditions: []metav1.Condition{{Type: "Reachable", Status: metav1.ConditionTrue}}},
		})
	}
	return l
}

// BenchmarkRedactList is the redaction every list of 1000 Clusters pays: a copy of each item
// with the kubeconfig blanked. BenchmarkDeepCopyList is the deep copy it avoids.
func BenchmarkRedactList(b *testing.B) {
	l := clusterList(1000)
	b.ReportAllocs()
	for b.Loop() {
		_ = redact(l)
	}
}

func BenchmarkDeepCopyList(b *testing.B) {
	l := clusterList(1000)
	b.ReportAllocs()
	for b.Loop() {
		out := l.DeepCopy()
		for i := range out.Items {
			out.Items[i].Spec.Kubeconfig = ""
		}
	}
}
