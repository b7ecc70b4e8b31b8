package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/plinth-dev/plinth/pkg/apis/platform"
	"github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/registry/platform/cluster"
)

// installPlatform serves platform.plinth.dev: Clusters, their status and their sealed
// credentials. It returns the Clusters' REST: the governance flow reads its store to place VMs,
// and guards its deletion.
func (c completedConfig) installPlatform(s *genericapiserver.GenericAPIServer) (*cluster.REST, error) {
	group := genericapiserver.NewDefaultAPIGroupInfo(platform.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.NegotiatedSerializer = c.GenericConfig.Serializer
	clusters, status, credentials, err := cluster.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter, c.EncryptionKeys)
	if err != nil {
		return nil, err
	}
	group.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"clusters":             clusters,
		"clusters/status":      status,
		"clusters/credentials": credentials,
	}
	return clusters, s.InstallAPIGroup(&group)
}
