// Package infrastructuretest runs the infrastructure.ontai.dev registry in tests: real stores
// over an in-process etcd, stored as plinth-apiserver stores them (JSON of v1alpha1), without a
// watch cache so that reads see every write at once.
package infrastructuretest

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	infrastructureinstall "github.com/plinth-dev/plinth/pkg/apis/infrastructure/install"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/embeddedetcd/etcdtest"
)

// Scheme knows the infrastructure.ontai.dev types, with their defaults.
var Scheme = runtime.NewScheme()

// Codecs serve Scheme.
var Codecs = serializer.NewCodecFactory(Scheme)

func init() {
	infrastructureinstall.Install(Scheme)
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
}

// RunEtcd starts an etcd that stops when t ends; each of its OptionsGetters keeps its objects
// under its own key prefix.
func RunEtcd(t testing.TB) *etcdtest.Etcd {
	return etcdtest.Run(t, Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion))
}

// Decode reads a v1alpha1 object of a request body into its internal form, defaulted, as
// plinth-apiserver's handlers do before the store sees it.
func Decode(t testing.TB, body string) runtime.Object {
	t.Helper()
	obj, _, err := Codecs.UniversalDecoder(infrastructure.SchemeGroupVersion).Decode([]byte(body), nil, nil)
	if err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return obj
}

// As is a request context of user in namespace, as the server's filters make it.
var As = etcdtest.As
