// Package computetest runs the compute.plinth.dev registry in tests: real stores over an
// in-process etcd, stored as plinth-apiserver stores them (JSON of v1alpha1), without a watch
// cache so that reads see every write at once.
package computetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	computeinstall "github.com/plinth-dev/plinth/pkg/apis/compute/install"
	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/embeddedetcd"
)

// Scheme knows the compute.plinth.dev types.
var Scheme = runtime.NewScheme()

func init() {
	computeinstall.Install(Scheme)
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
}

// Etcd is an in-process etcd; each OptionsGetter of one test keeps its objects under its own
// key prefix.
type Etcd struct {
	config  *storagebackend.Config
	getters atomic.Int32
}

// RunEtcd starts an etcd that stops when t ends.
func RunEtcd(t testing.TB) *Etcd {
	t.Helper()
	etcd, err := embeddedetcd.Start(context.Background(), embeddedetcd.Options{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	config := storagebackend.NewDefaultConfig("/registry", nil)
	config.Transport.ServerList = []string{etcd.ClientURL}
	config.Codec = serializer.NewCodecFactory(Scheme).LegacyCodec(computev1alpha1.SchemeGroupVersion)
	return &Etcd{config: config}
}

// OptionsGetter returns REST options under a key prefix of their own.
func (e *Etcd) OptionsGetter() generic.RESTOptionsGetter {
	config := *e.config
	config.Prefix = fmt.Sprintf("%s/getter-%d", e.config.Prefix, e.getters.Add(1))
	return optionsGetter{config: &config}
}

type optionsGetter struct {
	config *storagebackend.Config
}

func (o optionsGetter) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig:  o.config.ForResource(resource),
		Decorator:      generic.UndecoratedStorage,
		ResourcePrefix: "/" + resource.Group + "/" + resource.Resource,
	}, nil
}

// As is a request context of user in namespace, as the server's filters make it.
func As(namespace, name string, groups ...string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: name, Groups: groups})
}
