package integration

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/internal/benchharness"
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

// BenchmarkConsistentGet measures --consistent-get-from-cache side by side: two standalone
// servers, one reading a GET without a resourceVersion from etcd (the default) and one from
// its watch cache at etcd's current revision (pkg/registry/cachedget), each with the same 500
// Workloads, read by 16 parallel clients. Besides the client's latency it reports the
// server's CPU per get (server-ms/op, from /proc): what decides throughput when the server is
// the bottleneck, as in make bench's get row. "writes-elsewhere" updates a PlatformPolicy
// every 10 ms meanwhile: etcd's revision then moves without an event in the Workloads' cache,
// which must learn from etcd that it is current before it answers.
func BenchmarkConsistentGet(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"etcd", nil},
		{"watch-cache", []string{"--consistent-get-from-cache"}},
	} {
		p := framework.StartPlinth(b, framework.Options{ExtraArgs: c.args})
		reads := p.Client.ScoreV1b1().Workloads("bench-read")
		for i := 0; i < 500; i++ {
			if _, err := reads.Create(ctx, newWorkload(fmt.Sprintf("r-%d", i), "kubernetes"), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		policy, err := p.Client.ScoreV1b1().PlatformPolicies().Create(ctx, newPolicy("elsewhere", 1), metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, writes := range []bool{false, true} {
			name := c.name + "/quiet"
			if writes {
				name = c.name + "/writes-elsewhere"
			}
			b.Run(name, func(b *testing.B) {
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					if !writes {
						return
					}
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-time.After(10 * time.Millisecond):
						}
						policy.Spec.Priority = int32(i%100 + 1)
						updated, err := p.Client.ScoreV1b1().PlatformPolicies().Update(ctx, policy, metav1.UpdateOptions{})
						if err != nil {
							b.Error(err)
							return
						}
						policy = updated
					}
				}()
				defer func() { close(stop); <-done }()
				before, err := benchharness.ReadUsage(p.PID())
				if err != nil {
					b.Fatal(err)
				}
				var next atomic.Int64
				b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 clients
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := reads.Get(ctx, fmt.Sprintf("r-%d", next.Add(1)%500), metav1.GetOptions{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				after, err := benchharness.ReadUsage(p.PID())
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric((after.CPUSeconds-before.CPUSeconds)*1000/float64(b.N), "server-ms/op")
			})
		}
	}
}
