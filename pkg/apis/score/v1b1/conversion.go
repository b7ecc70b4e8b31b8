package v1b1

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// Field selectors beyond metadata.name and metadata.namespace. Each must also be returned by the
// kind's GetAttrs in its registry strategy; registering it here is what makes the API accept it.
var selectableFields = map[string][]string{
	"Workload":        {"spec.runtimeClass"},
	"ResourceBinding": {"spec.workloadRef.name", "spec.type", "status.phase"},
	"WorkloadPlan":    {"spec.workloadRef.name", "spec.runtimeClass", "status.phase"},
	"PlatformPolicy":  {},
}

// SelectableFields lists the extra field selectors of a kind, for documentation and tests.
func SelectableFields(kind string) []string { return selectableFields[kind] }

func addFieldLabelConversions(scheme *runtime.Scheme) error {
	return common.AddFieldLabelConversions(scheme, SchemeGroupVersion, selectableFields)
}
