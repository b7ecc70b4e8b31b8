package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/registry/compute/computeprovider"
	"github.com/plinth-dev/plinth/pkg/registry/compute/tenantcompute"
)

// installCompute serves compute.plinth.dev: TenantComputes and ComputeProviders with their
// status. TenantIDClaims are stored by the tenantcomputes storage and never served.
func (c completedConfig) installCompute(s *genericapiserver.GenericAPIServer) error {
	group := genericapiserver.NewDefaultAPIGroupInfo(compute.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	group.NegotiatedSerializer = c.GenericConfig.Serializer
	tenants, tenantStatus, err := tenantcompute.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter)
	if err != nil {
		return err
	}
	providers, providerStatus, err := computeprovider.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter)
	if err != nil {
		tenants.Destroy()
		return err
	}
	group.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"tenantcomputes":          tenants,
		"tenantcomputes/status":   tenantStatus,
		"computeproviders":        providers,
		"computeproviders/status": providerStatus,
	}
	return s.InstallAPIGroup(&group)
}
