// Package initializer hands Plinth's shared informers to the admission plugins that ask for
// them, the way k8s.io/apiserver's generic initializer hands out the core ones, and the quota
// configuration to the ResourceQuota plugin, the way kube-apiserver's own initializer does.
package initializer

import (
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	quota "k8s.io/apiserver/pkg/quota/v1"

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

type quotaInitializer struct {
	configuration quota.Configuration
}

// NewQuota returns an initializer that gives c to plugins that want a quota configuration
// (k8s.io/apiserver's ResourceQuota plugin). It must run after the generic initializer: the
// plugin builds its evaluator from the configuration and the drained notification that one
// gives.
func NewQuota(c quota.Configuration) admission.PluginInitializer {
	return quotaInitializer{configuration: c}
}

// Initialize gives the quota configuration to plugins that want it.
func (i quotaInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(genericinitializer.WantsQuotaConfiguration); ok {
		wants.SetQuotaConfiguration(i.configuration)
	}
}
