// Package gitopstest runs the gitops.plinth.dev registry in tests: real stores over an
// in-process etcd, stored as plinth-apiserver stores them (JSON of v1alpha1), without a watch
// cache so that reads see every write at once.
package gitopstest

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	gitopsinstall "github.com/plinth-dev/plinth/pkg/apis/gitops/install"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/embeddedetcd/etcdtest"
)

// Scheme knows the gitops.plinth.dev types.
var Scheme = runtime.NewScheme()

func init() {
	gitopsinstall.Install(Scheme)
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
}

// RunEtcd starts an etcd that stops when t ends; each of its OptionsGetters keeps its objects
// under its own key prefix.
func RunEtcd(t testing.TB) *etcdtest.Etcd {
	return etcdtest.Run(t, serializer.NewCodecFactory(Scheme).LegacyCodec(gitopsv1alpha1.SchemeGroupVersion))
}

// As is a request context of user in namespace, as the server's filters make it.
var As = etcdtest.As
