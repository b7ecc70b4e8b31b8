package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/test/integration/framework"
)

// BenchmarkWorkloads measures the served API end to end (client → TLS → plinth-apiserver →
// embedded etcd without fsync → back) with the generated clientset. Run with
// `make bench` and compare sub-benchmarks of one run: the machine is shared and noisy.
func BenchmarkWorkloads(b *testing.B) {
	p := framework.StartPlinth(b, framework.Options{})
	ctx := context.Background()
	wl := p.Client.ScoreV1b1().Workloads("bench")

	var n atomic.Int64 // names stay unique across the benchmark's repeated runs
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				w := newWorkload(fmt.Sprintf("c-%d", n.Add(1)), "kubernetes")
				if _, err := wl.Create(ctx, w, metav1.CreateOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})

	// A fixed population for reads.
	reads := p.Client.ScoreV1b1().Workloads("bench-read")
	for i := 0; i < 500; i++ {
		if _, err := reads.Create(ctx, newWorkload(fmt.Sprintf("r-%d", i), "kubernetes"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := reads.Get(ctx, fmt.Sprintf("r-%d", i%500), metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// resourceVersion=0 may be served from the watch cache instead of a quorum read from etcd.
	b.Run("get-from-cache", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := reads.Get(ctx, fmt.Sprintf("r-%d", i%500), metav1.GetOptions{ResourceVersion: "0"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list-500", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			list, err := reads.List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 500 {
				b.Fatalf("list: %d items, %v", len(list.Items), err)
			}
		}
	})
	// The same list as kubectl get asks for it: a server-side table.
	b.Run("list-500-table", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			err := p.Client.ScoreV1b1().RESTClient().Get().Namespace("bench-read").Resource("workloads").
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Error()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list-500-field-selector-none-match", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := reads.List(ctx, metav1.ListOptions{FieldSelector: "spec.runtimeClass=kubevirt"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
