package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/registry/infrastructure/clusterpack"
	"github.com/plinth-dev/plinth/pkg/registry/infrastructure/packinstance"
	"github.com/plinth-dev/plinth/pkg/registry/store"
)

// installInfrastructure serves infrastructure.ontai.dev: InfrastructureClusterPacks and
// InfrastructurePackInstances with their status.
func (c completedConfig) installInfrastructure(s *genericapiserver.GenericAPIServer) error {
	group := genericapiserver.NewDefaultAPIGroupInfo(infrastructure.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.NegotiatedSerializer = Serializer
	storage := map[string]rest.Storage{}
	for resource, newREST := range map[string]func(*runtime.Scheme, generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error){
		"infrastructureclusterpacks":  clusterpack.NewREST,
		"infrastructurepackinstances": packinstance.NewREST,
	} {
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
	group.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = storage
	return s.InstallAPIGroup(&group)
}
