package clustergitops

import (
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	platformac "github.com/plinth-dev/plinth/pkg/generated/applyconfiguration/platform/v1alpha1"
	platformclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/platform/v1alpha1"
)

// gitOpsPart is this controller's part of a Cluster's status: status.gitOps and the
// FluxAvailable condition. The cluster controller owns the rest.
func gitOpsPart(client platformclient.ClustersGetter) statuswriter.Part[*platformv1alpha1.Cluster, *platformac.ClusterApplyConfiguration] {
	return statuswriter.Part[*platformv1alpha1.Cluster, *platformac.ClusterApplyConfiguration]{
		Of:     ofGitOps,
		Apply:  client.Clusters().ApplyStatus,
		Update: client.Clusters().UpdateStatus,
		Put:    putGitOps,
	}
}

// ofGitOps is the apply configuration of cl's GitOps part; zero values are left out, as their
// JSON leaves them out.
func ofGitOps(cl *platformv1alpha1.Cluster) *platformac.ClusterApplyConfiguration {
	part := platformac.ClusterStatus().
		WithConditions(statuswriter.ApplyConditions(cl.Status.Conditions, platformv1alpha1.ConditionFluxAvailable)...)
	if g := cl.Status.GitOps; g != nil {
		gitOps := platformac.ClusterGitOpsStatus()
		for _, comp := range g.FluxComponents {
			fc := platformac.FluxComponent().WithName(comp.Name)
			if comp.Version != "" {
				fc.WithVersion(comp.Version)
			}
			gitOps.WithFluxComponents(fc)
		}
		if g.Registry != "" {
			gitOps.WithRegistry(g.Registry)
		}
		if g.RegistryEndpoint != "" {
			gitOps.WithRegistryEndpoint(g.RegistryEndpoint)
		}
		part.WithGitOps(gitOps)
	}
	return platformac.Cluster(cl.Name).WithStatus(part)
}

// putGitOps copies the GitOps part of from into into.
func putGitOps(into, from *platformv1alpha1.Cluster) *platformv1alpha1.Cluster {
	into.Status.GitOps = from.Status.GitOps.DeepCopy()
	statuswriter.PutConditions(&into.Status.Conditions, from.Status.Conditions, platformv1alpha1.ConditionFluxAvailable)
	return into
}
