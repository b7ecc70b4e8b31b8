package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/plinth-dev/plinth/pkg/apis/governance"
	"github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	governancestorage "github.com/plinth-dev/plinth/pkg/registry/governance/storage"
	"github.com/plinth-dev/plinth/pkg/registry/platform/cluster"
)

func (c completedConfig) installGovernance(s *genericapiserver.GenericAPIServer, clusters *cluster.REST) error {
	group := genericapiserver.NewDefaultAPIGroupInfo(governance.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.NegotiatedSerializer = c.GenericConfig.Serializer
	storage, err := governancestorage.New(Scheme, c.GenericConfig.RESTOptionsGetter, c.GenericConfig.Authorization.Authorizer, clusters, c.RuntimeUsers)
	if err != nil {
		return err
	}
	group.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = storage.Resources
	return s.InstallAPIGroup(&group)
}
