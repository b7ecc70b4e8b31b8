package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/plinth-dev/plinth/pkg/registry/store"
)

// newStatusREST builds a resource and its status subresource.
type newStatusREST func(*runtime.Scheme, generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error)

// installStatusGroup serves one version of a group whose resources each have a status
// subresource and nothing else, built by the given constructors by resource name. A
// constructor that fails destroys the stores built before it.
func (c completedConfig) installStatusGroup(s *genericapiserver.GenericAPIServer, group, version string, resources map[string]newStatusREST) error {
	info := genericapiserver.NewDefaultAPIGroupInfo(group, Scheme, metav1.ParameterCodec, Codecs)
	info.NegotiatedSerializer = c.GenericConfig.Serializer
	storage := map[string]rest.Storage{}
	for resource, newREST := range resources {
		main, status, err := newREST(Scheme, c.GenericConfig.RESTOptionsGetter)
		if err != nil {
			for _, installed := range storage {
				installed.Destroy()
			}
			return err
		}
		storage[resource] = main
		storage[resource+"/status"] = status
	}
	info.VersionedResourcesStorageMap[version] = storage
	return s.InstallAPIGroup(&info)
}
