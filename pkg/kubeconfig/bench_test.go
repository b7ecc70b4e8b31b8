package kubeconfig

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// BenchmarkRESTConfig is what plinth-controller spends turning an opened kubeconfig into a
// REST config (parse, check, build); BenchmarkCachedCopy is what a probe pays instead while
// the Cluster's generation is unchanged.
func BenchmarkRESTConfig(b *testing.B) {
	data, err := clientcmd.Write(*valid())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RESTConfig(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCachedCopy(b *testing.B) {
	data, _ := clientcmd.Write(*valid())
	cfg, err := RESTConfig(data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = rest.CopyConfig(cfg)
	}
}
