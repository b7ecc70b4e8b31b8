package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_SystemSpec makes test the default environment, as in the seed.
func SetDefaults_SystemSpec(obj *SystemSpec) {
	if obj.Environment == "" {
		obj.Environment = EnvironmentTest
	}
}

// SetDefaults_ManagedVMSpec keeps a VM running unless asked otherwise.
func SetDefaults_ManagedVMSpec(obj *ManagedVMSpec) {
	if obj.RunStrategy == "" {
		obj.RunStrategy = RunStrategyAlways
	}
}

// SetDefaults_ApprovalPolicySpec requires one approval unless the policy says more.
func SetDefaults_ApprovalPolicySpec(obj *ApprovalPolicySpec) {
	if obj.RequiredApprovals == 0 {
		obj.RequiredApprovals = 1
	}
}
