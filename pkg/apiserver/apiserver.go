// Package apiserver assembles plinth-apiserver: the scheme of every Plinth API group, the
// generic server configuration and the REST storage installed for each group.
package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/featuregate"

	computeinstall "github.com/plinth-dev/plinth/pkg/apis/compute/install"
	gitopsinstall "github.com/plinth-dev/plinth/pkg/apis/gitops/install"
	governanceinstall "github.com/plinth-dev/plinth/pkg/apis/governance/install"
	infrastructureinstall "github.com/plinth-dev/plinth/pkg/apis/infrastructure/install"
	platforminstall "github.com/plinth-dev/plinth/pkg/apis/platform/install"
	"github.com/plinth-dev/plinth/pkg/apis/score"
	scoreinstall "github.com/plinth-dev/plinth/pkg/apis/score/install"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/registry/score/platformpolicy"
	"github.com/plinth-dev/plinth/pkg/registry/score/provisioner"
	"github.com/plinth-dev/plinth/pkg/registry/score/resourcebinding"
	"github.com/plinth-dev/plinth/pkg/registry/score/workload"
	"github.com/plinth-dev/plinth/pkg/registry/score/workloadplan"
	"github.com/plinth-dev/plinth/pkg/registry/store"
)

var (
	// Scheme knows every Plinth type, internal and versioned.
	Scheme = runtime.NewScheme()
	// Codecs encodes and decodes Plinth objects; storage and tests use it. What the server
	// negotiates with clients is NewSerializer's.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	scoreinstall.Install(Scheme)
	governanceinstall.Install(Scheme)
	platforminstall.Install(Scheme)
	computeinstall.Install(Scheme)
	gitopsinstall.Install(Scheme)
	infrastructureinstall.Install(Scheme)

	// The generic server needs the meta/v1 option types registered in the empty group.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{},
	)
}

// NewSerializer is what the server negotiates with clients, built once the feature gates are
// parsed: Plinth's codecs with the options the generic server gives built-in groups
// (NewDefaultAPIGroupInfo), which a group that sets its own serializer would otherwise lose.
// Lists stream item by item in JSON, so a large list is not built in memory twice. CBOR is
// offered, for requests and responses and as cbor-seq on watches, only while the
// CBORServingAndStorage gate is on: the generic server refuses to start with a serializer that
// offers it otherwise. Protobuf is never offered, because Plinth types have no protobuf
// encoding: advertising it would make the server pick protobuf for clients that accept
// "protobuf, json" and then fail with 406.
func NewSerializer(gates featuregate.FeatureGate) runtime.NegotiatedSerializer {
	options := []serializer.CodecFactoryOptionsMutator{serializer.WithStreamingCollectionEncodingToJSON()}
	if gates.Enabled(features.CBORServingAndStorage) {
		options = append(options, serializer.WithSerializer(cbor.NewSerializerInfo))
	}
	return withoutProtobuf{serializer.NewCodecFactory(Scheme, options...)}
}

type withoutProtobuf struct{ serializer.CodecFactory }

func (w withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range w.CodecFactory.SupportedMediaTypes() {
		if info.MediaType != runtime.ContentTypeProtobuf {
			out = append(out, info)
		}
	}
	return out
}

// Config is the server's configuration, as pkg/cmd/apiserver builds it from validated options.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	// EncryptionKeys seal target clusters' kubeconfigs; nil refuses to store them.
	EncryptionKeys keyring.Source
	// RuntimeUsers are plinth-controller's identities: the VM runtime's finalizer is theirs.
	RuntimeUsers []string
}

// completedConfig is a Config whose generic part has its defaults filled in.
type completedConfig struct {
	GenericConfig  genericapiserver.CompletedConfig
	EncryptionKeys keyring.Source
	RuntimeUsers   []string
}

// CompletedConfig is what New is built from. Its only field is private, so outside this
// package the one way to get a usable value is Config.Complete: a server can never be built
// from a configuration whose defaults were skipped.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in defaults. It mutates the generic configuration it completes.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		GenericConfig:  c.GenericConfig.Complete(),
		EncryptionKeys: c.EncryptionKeys,
		RuntimeUsers:   c.RuntimeUsers,
	}}
}

// Server is a running plinth-apiserver.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New builds the server and installs every API group.
func (c completedConfig) New() (*Server, error) {
	genericServer, err := c.GenericConfig.New("plinth-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s := &Server{GenericAPIServer: genericServer}

	scoreGroup := genericapiserver.NewDefaultAPIGroupInfo(score.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	scoreGroup.NegotiatedSerializer = c.GenericConfig.Serializer
	storage := map[string]rest.Storage{}
	for resource, newREST := range map[string]func(*runtime.Scheme, generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error){
		"workloads":        workload.NewREST,
		"platformpolicies": platformpolicy.NewREST,
		"resourcebindings": resourcebinding.NewREST,
		"workloadplans":    workloadplan.NewREST,
	} {
		main, status, err := newREST(Scheme, c.GenericConfig.RESTOptionsGetter)
		if err != nil {
			return nil, err
		}
		storage[resource] = main
		storage[resource+"/status"] = status
	}
	// Provisioners have no status: the main resource alone.
	if storage["provisioners"], err = provisioner.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter); err != nil {
		return nil, err
	}
	scoreGroup.VersionedResourcesStorageMap[v1b1.SchemeGroupVersion.Version] = storage
	if err := genericServer.InstallAPIGroup(&scoreGroup); err != nil {
		return nil, err
	}
	clusters, err := c.installPlatform(genericServer)
	if err != nil {
		return nil, err
	}
	if err := c.installGovernance(genericServer, clusters); err != nil {
		return nil, err
	}
	if err := c.installCompute(genericServer); err != nil {
		return nil, err
	}
	if err := c.installGitOps(genericServer); err != nil {
		return nil, err
	}
	if err := c.installInfrastructure(genericServer); err != nil {
		return nil, err
	}
	return s, nil
}
