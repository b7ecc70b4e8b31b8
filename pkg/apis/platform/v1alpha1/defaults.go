package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// DefaultRegistryPort is the port of a Cluster's registry unless it says, registry:3's own.
const DefaultRegistryPort = 5000

// SetDefaults_ClusterGitOps delivers with the Kubectl engine, checks every minute, and puts the
// registry on port 5000.
func SetDefaults_ClusterGitOps(obj *ClusterGitOps) {
	if obj.Engine == "" {
		obj.Engine = GitOpsEngineKubectl
	}
	if obj.FluxInterval == nil {
		obj.FluxInterval = &metav1.Duration{Duration: DefaultFluxInterval}
	}
	if obj.RegistryEnabled && obj.RegistryPort == 0 {
		obj.RegistryPort = DefaultRegistryPort
	}
}
