package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// GroupName is the API group of infrastructure packs (the seed's group).
const GroupName = "infrastructure.ontai.dev"

// SchemeGroupVersion is the group and version of the objects in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types and defaults of this version.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds this version to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Generated conversion and defaulting functions register themselves in their own init;
	// addKnownTypes comes first.
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs, addFieldLabelConversions)
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&InfrastructureClusterPack{}, &InfrastructureClusterPackList{},
		&InfrastructurePackInstance{}, &InfrastructurePackInstanceList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// FieldSelectors lists, per kind, the fields beyond metadata.name and metadata.namespace that
// list and watch requests may select on. The registry computes the same fields.
var FieldSelectors = map[string][]string{
	"InfrastructureClusterPack":  {"spec.version"},
	"InfrastructurePackInstance": {"spec.clusterPackRef", "spec.targetClusterRef", "spec.version"},
}

func addFieldLabelConversions(scheme *runtime.Scheme) error {
	return common.AddFieldLabelConversions(scheme, SchemeGroupVersion, FieldSelectors)
}
