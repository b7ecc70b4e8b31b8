package apiserver

import (
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/registry/infrastructure/clusterpack"
	"github.com/plinth-dev/plinth/pkg/registry/infrastructure/packinstance"
)

// installInfrastructure serves infrastructure.ontai.dev: InfrastructureClusterPacks and
// InfrastructurePackInstances with their status.
func (c completedConfig) installInfrastructure(s *genericapiserver.GenericAPIServer) error {
	return c.installStatusGroup(s, infrastructure.GroupName, v1alpha1.SchemeGroupVersion.Version, map[string]newStatusREST{
		"infrastructureclusterpacks":  clusterpack.NewREST,
		"infrastructurepackinstances": packinstance.NewREST,
	})
}
