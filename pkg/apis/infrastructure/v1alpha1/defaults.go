package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_InfrastructureClusterPackSpec fills the seed's defaults: onDrift Warn, drift
// Detect, the release namespace "default" and a history of 10 revisions.
func SetDefaults_InfrastructureClusterPackSpec(obj *InfrastructureClusterPackSpec) {
	if obj.DriftPolicy == "" {
		obj.DriftPolicy = DriftPolicyDetect
	}
	if obj.DependencyPolicy == nil {
		obj.DependencyPolicy = &DependencyPolicy{}
	}
	if obj.TargetNamespace == "" {
		obj.TargetNamespace = DefaultTargetNamespace
	}
	if obj.RevisionHistoryLimit == nil {
		obj.RevisionHistoryLimit = ptr.To[int32](DefaultRevisionHistoryLimit)
	}
}

// SetDefaults_DependencyPolicy defaults onDrift to Warn, the seed's default.
func SetDefaults_DependencyPolicy(obj *DependencyPolicy) {
	if obj.OnDrift == "" {
		obj.OnDrift = OnDriftWarn
	}
}
