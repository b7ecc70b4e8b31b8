package tenantcompute

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
	"github.com/plinth-dev/plinth/pkg/apis/platform"
)

// ClusterConfigKey is the providerConfig field that names the registered Cluster
// (platform.plinth.dev) a tenant's compute is placed on. It is a convention every provider
// follows: a provider that places tenants on Clusters takes the Cluster from this top-level
// string (its configSchema has a `cluster` property), and no provider uses the key for
// anything else. Admission reads it without asking the provider, so that neither a provider
// without a schema nor one that is not Ready lets a tenant skip the check below.
const ClusterConfigKey = "cluster"

// VerbUse is the verb a user needs on a Cluster to place compute on it. It is no REST verb:
// only this plugin asks for it, when a create or update sets or changes
// spec.providerConfig.cluster. Without it, any tenant could make plinth-controller deploy into
// any registered Cluster with the controller's own credentials.
const VerbUse = "use"

// clusters is the resource VerbUse is asked on.
var clusters = platform.Resource("clusters")

// configPath is a TenantCompute's providerConfig, and clusterPath where it names its Cluster.
var (
	configPath  = field.NewPath("spec", "providerConfig")
	clusterPath = configPath.Child(ClusterConfigKey)
)

// clusterOf is the Cluster a providerConfig names, "" for none, and the path of the key that
// names it. A config that is not a JSON object names none (the schema check judges it); a
// cluster that is not a string is invalid, since the key is reserved for Cluster names.
//
// The key is matched as the providers decode it: encoding/json matches a field name without
// regard to case ("Cluster", "CLUSTER"), so a provider whose schema does not refuse other keys
// would run the tenant on a Cluster named under any spelling. Every spelling is read here, and
// a config that spells it more than once is refused: which one a decoder keeps depends on
// their order, which the object read here does not keep.
func clusterOf(config *common.RawObject) (string, *field.Path, *field.Error) {
	if config == nil || !config.IsObject() {
		return "", clusterPath, nil
	}
	obj, err := config.Object()
	if err != nil {
		return "", clusterPath, nil
	}
	var keys []string
	for k := range obj {
		if strings.EqualFold(k, ClusterConfigKey) {
			keys = append(keys, k)
		}
	}
	switch len(keys) {
	case 0:
		return "", clusterPath, nil
	case 1:
	default:
		sort.Strings(keys)
		return "", clusterPath, field.Invalid(configPath, strings.Join(keys, ", "),
			fmt.Sprintf("names the cluster under more than one spelling of %q; give it once, as %q", ClusterConfigKey, ClusterConfigKey))
	}
	path := configPath.Child(keys[0])
	value := obj[keys[0]]
	if value == nil {
		return "", path, nil
	}
	name, ok := value.(string)
	if !ok {
		return "", path, field.Invalid(path, value, "must be the name of a Cluster")
	}
	return name, path, nil
}

// authorizePlacement refuses, 403 Forbidden, a create that names a Cluster or an update that
// names another one, unless the requesting user may use that Cluster. Keeping the Cluster a
// TenantCompute already has needs nothing, so the controller's and other users' writes are
// never judged by it.
func (p *Plugin) authorizePlacement(ctx context.Context, a admission.Attributes, tc, old *compute.TenantCompute) error {
	cluster, path, fieldErr := clusterOf(tc.Spec.ProviderConfig)
	if fieldErr != nil {
		return apierrors.NewInvalid(compute.Kind("TenantCompute"), tc.Name, field.ErrorList{fieldErr})
	}
	if cluster == "" {
		return nil
	}
	if old != nil {
		if before, _, _ := clusterOf(old.Spec.ProviderConfig); before == cluster {
			return nil
		}
	}
	u := a.GetUserInfo()
	decision, _, err := p.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            VerbUse,
		APIGroup:        clusters.Group,
		APIVersion:      "*",
		Resource:        clusters.Resource,
		Name:            cluster,
		ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		// As the server's authorization filter does: an authorizer that cannot answer is a
		// server error, not a denial.
		return apierrors.NewInternalError(fmt.Errorf("checking whether the user may use Cluster %s: %w", cluster, err))
	}
	name := "<anonymous>"
	if u != nil {
		name = u.GetName()
	}
	msg := fmt.Sprintf("User %s may not place compute on Cluster %s: the verb %s on %s is required.", name, cluster, VerbUse, clusters)
	forbidden := apierrors.NewForbidden(compute.Resource("tenantcomputes"), tc.Name, fmt.Errorf("%s: %s", path, msg))
	forbidden.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeForbidden, Field: path.String(), Message: msg}}
	return forbidden
}
