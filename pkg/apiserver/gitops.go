package apiserver

import (
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/plinth-dev/plinth/pkg/apis/gitops"
	"github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/registry/gitops/ociartifact"
	"github.com/plinth-dev/plinth/pkg/registry/gitops/ociregistry"
	"github.com/plinth-dev/plinth/pkg/registry/gitops/reconciliationrequest"
)

// installGitOps serves gitops.plinth.dev: OCIRegistries, OCIArtifacts and
// ReconciliationRequests with their status.
func (c completedConfig) installGitOps(s *genericapiserver.GenericAPIServer) error {
	return c.installStatusGroup(s, gitops.GroupName, v1alpha1.SchemeGroupVersion.Version, map[string]newStatusREST{
		"ociregistries":          ociregistry.NewREST,
		"ociartifacts":           ociartifact.NewREST,
		"reconciliationrequests": reconciliationrequest.NewREST,
	})
}
