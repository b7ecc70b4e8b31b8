package common

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AddFieldLabelConversions makes the API accept field selectors on metadata.name,
// metadata.namespace and, per kind of gv, the listed extra fields; any other field is refused
// with a message naming the kind. Each extra field must also be computed by the kind's
// registry, which is where selection happens.
func AddFieldLabelConversions(scheme *runtime.Scheme, gv schema.GroupVersion, extraByKind map[string][]string) error {
	for kind, extra := range extraByKind {
		allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		for _, f := range extra {
			allowed[f] = true
		}
		err := scheme.AddFieldLabelConversionFunc(gv.WithKind(kind),
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
