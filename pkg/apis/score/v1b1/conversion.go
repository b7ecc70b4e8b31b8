package v1b1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
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
	for kind, extra := range selectableFields {
		allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		for _, f := range extra {
			allowed[f] = true
		}
		kind := kind
		err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(kind),
			func(label, value string) (string, string, error) {
				if allowed[label] {
					return label, value, nil
				}
				return "", "", fmt.Errorf("field label %q is not supported for %s", label, kind)
			})
		if err != nil {
			return err
		}
	}
	return nil
}
