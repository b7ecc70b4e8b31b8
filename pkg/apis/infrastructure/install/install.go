// Package install registers the infrastructure.ontai.dev group, internal and versioned, in a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/plinth-dev/plinth/pkg/apis/infrastructure"
	"github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
)

// Install registers the API group and adds its types to the scheme.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(infrastructure.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1alpha1.SchemeGroupVersion))
}
