// Package install registers the score.dev group, internal and versioned, in a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/plinth-dev/plinth/pkg/apis/score"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// Install registers the API group and adds its types to the scheme.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(score.AddToScheme(scheme))
	utilruntime.Must(v1b1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1b1.SchemeGroupVersion))
}
