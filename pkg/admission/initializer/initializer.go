// Package initializer hands Plinth's shared informers to the admission plugins that ask for
// them, the way k8s.io/apiserver's generic initializer hands out the core ones.
package initializer

import (
	"k8s.io/apiserver/pkg/admission"

	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

// WantsPlinthInformerFactory is implemented by plugins that read Plinth objects.
type WantsPlinthInformerFactory interface {
	SetPlinthInformerFactory(informers.SharedInformerFactory)
	admission.InitializationValidator
}

type pluginInitializer struct {
	informers informers.SharedInformerFactory
}

var _ admission.PluginInitializer = pluginInitializer{}

// New returns an initializer for the given factory.
func New(f informers.SharedInformerFactory) admission.PluginInitializer {
	return pluginInitializer{informers: f}
}

// Initialize gives the factory to plugins that want it.
func (i pluginInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(WantsPlinthInformerFactory); ok {
		wants.SetPlinthInformerFactory(i.informers)
	}
}
