package v1b1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Score workloads.
const GroupName = "score.dev"

// SchemeGroupVersion is the group and version of the objects in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1b1"}

var (
	// SchemeBuilder registers the types, defaults and field label conversions of this version.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds this version to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Generated conversion and defaulting functions register themselves in their own init;
	// addKnownTypes and the field label conversions come first.
	localSchemeBuilder.Register(addKnownTypes, addFieldLabelConversions, addDefaultingFuncs)
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Workload{}, &WorkloadList{},
		&PlatformPolicy{}, &PlatformPolicyList{},
		&Provisioner{}, &ProvisionerList{},
		&ResourceBinding{}, &ResourceBindingList{},
		&WorkloadPlan{}, &WorkloadPlanList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
