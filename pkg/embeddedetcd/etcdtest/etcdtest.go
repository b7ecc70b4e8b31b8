// Package etcdtest runs plinth-apiserver's embedded etcd for registry tests (k8s.io/apiserver's
// testserver.RunEtcd would duplicate it at the price of testify in go.mod) and hands out REST
// options that keep each caller's objects under a key prefix of their own.
package etcdtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/plinth-dev/plinth/pkg/embeddedetcd"
)

// Etcd is an in-process etcd that several stores of one test can share.
type Etcd struct {
	config  *storagebackend.Config
	getters atomic.Int32
}

// Run starts an etcd that stops when t ends. codec encodes objects for storage: the served
// versions' JSON, as plinth-apiserver stores them.
func Run(t testing.TB, codec runtime.Codec) *Etcd {
	t.Helper()
	etcd, err := embeddedetcd.Start(context.Background(), embeddedetcd.Options{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	config := storagebackend.NewDefaultConfig("/registry", nil)
	config.Transport.ServerList = []string{etcd.ClientURL}
	config.Codec = codec
	return &Etcd{config: config}
}

// OptionsGetter returns REST options under a key prefix no other getter of this etcd uses,
// giving every resource its own prefix below it, without a watch cache: reads see every write
// at once.
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

// As is a request context of user name (in groups) in namespace, as the server's filters make
// it.
func As(namespace, name string, groups ...string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: name, Groups: groups})
}
