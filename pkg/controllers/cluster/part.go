package cluster

import (
	"slices"

	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	platformac "github.com/plinth-dev/plinth/pkg/generated/applyconfiguration/platform/v1alpha1"
	platformclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/platform/v1alpha1"
)

// probeConditions are the conditions of a Cluster the prober owns (clustergitops owns
// FluxAvailable).
var probeConditions = []string{platform.ConditionCredentialsValid, platform.ConditionReachable, platform.ConditionKubeVirtAvailable}

// probePart is the prober's part of a Cluster's status: everything but status.gitOps,
// encryptionKeyID (plinth-apiserver's storage writes it) and the conditions it does not own.
func probePart(client platformclient.ClustersGetter) statuswriter.Part[*platform.Cluster, *platformac.ClusterApplyConfiguration] {
	return statuswriter.Part[*platform.Cluster, *platformac.ClusterApplyConfiguration]{
		Of:     ofProbe,
		Apply:  client.Clusters().ApplyStatus,
		Update: client.Clusters().UpdateStatus,
		Put:    putProbe,
	}
}

// ofProbe is the apply configuration of cl's probe part; zero values are left out, as their
// JSON leaves them out.
func ofProbe(cl *platform.Cluster) *platformac.ClusterApplyConfiguration {
	s, part := &cl.Status, platformac.ClusterStatus()
	if s.Phase != "" {
		part.WithPhase(s.Phase)
	}
	if s.APIServerURL != "" {
		part.WithAPIServerURL(s.APIServerURL)
	}
	if s.KubernetesVersion != "" {
		part.WithKubernetesVersion(s.KubernetesVersion)
	}
	if s.KubevirtVersion != "" {
		part.WithKubevirtVersion(s.KubevirtVersion)
	}
	if len(s.EnabledFeatures) > 0 {
		part.WithEnabledFeatures(s.EnabledFeatures...)
	}
	if s.LastProbeTime != nil {
		part.WithLastProbeTime(*s.LastProbeTime)
	}
	if s.ObservedGeneration != 0 {
		part.WithObservedGeneration(s.ObservedGeneration)
	}
	part.WithConditions(statuswriter.ApplyConditions(s.Conditions, probeConditions...)...)
	return platformac.Cluster(cl.Name).WithStatus(part)
}

// putProbe copies the probe part of from into into.
func putProbe(into, from *platform.Cluster) *platform.Cluster {
	s, f := &into.Status, &from.Status
	s.Phase, s.APIServerURL, s.KubernetesVersion, s.KubevirtVersion = f.Phase, f.APIServerURL, f.KubernetesVersion, f.KubevirtVersion
	s.EnabledFeatures, s.LastProbeTime, s.ObservedGeneration = slices.Clone(f.EnabledFeatures), f.LastProbeTime.DeepCopy(), f.ObservedGeneration
	statuswriter.PutConditions(&s.Conditions, f.Conditions, probeConditions...)
	return into
}
