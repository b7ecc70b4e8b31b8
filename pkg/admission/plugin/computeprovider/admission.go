// Package computeprovider is the ComputeProvider admission plugin: a TenantCompute is stored
// only if the ComputeProvider it names is Ready and can provision it — its providerConfig
// passes the provider's published configSchema, and its secret sources, health-check types
// and public IP are ones the provider supports. A tenant learns of a bad config from kubectl
// apply (422, naming the field) instead of from a failed status minutes later.
//
// Providers come from the Plinth informer, never from etcd per request; each provider's
// schema is compiled once per change. Only a create, or an update that changes the spec, is
// judged: the controller's metadata and status writes never are, so a provider that goes away
// cannot block finalizers or status.
package computeprovider

import (
	"context"
	"fmt"
	"io"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/admission/initializer"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/compute/v1alpha1"
)

// PluginName is the plugin's name in --enable-admission-plugins and the plugin order.
const PluginName = "ComputeProvider"

// Register adds the plugin to a registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin is the ComputeProvider admission plugin.
type Plugin struct {
	*admission.Handler
	providers listers.ComputeProviderLister
	schemas   schemas
}

var (
	_ admission.ValidationInterface          = &Plugin{}
	_ initializer.WantsPlinthInformerFactory = &Plugin{}
)

// New returns a plugin for TenantCompute creates and updates.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetPlinthInformerFactory reads ComputeProviders from the factory; the plugin is ready once
// their cache has synced.
func (p *Plugin) SetPlinthInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Compute().V1alpha1().ComputeProviders()
	p.setProviders(informer.Lister(), informer.Informer().HasSynced)
}

// setProviders sets where providers are read and when that cache is ready.
func (p *Plugin) setProviders(providers listers.ComputeProviderLister, synced cache.InformerSynced) {
	p.providers = providers
	p.SetReadyFunc(admission.ReadyFunc(synced))
}

// ValidateInitialization requires the provider informer.
func (p *Plugin) ValidateInitialization() error {
	if p.providers == nil {
		return fmt.Errorf("%s admission plugin needs the Plinth informer factory", PluginName)
	}
	return nil
}

// Validate refuses a TenantCompute its provider cannot provision: 422 Invalid, every problem
// at its field path.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != compute.Resource("tenantcomputes") || a.GetSubresource() != "" {
		return nil
	}
	tc, ok := a.GetObject().(*compute.TenantCompute)
	if !ok {
		return nil
	}
	if a.GetOperation() == admission.Update {
		if old, ok := a.GetOldObject().(*compute.TenantCompute); ok && apiequality.Semantic.DeepEqual(old.Spec, tc.Spec) {
			return nil
		}
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	errs, err := p.validate(tc)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(compute.Kind("TenantCompute"), tc.Name, errs)
	}
	return nil
}

func (p *Plugin) validate(tc *compute.TenantCompute) (field.ErrorList, error) {
	specPath := field.NewPath("spec")
	provider, err := p.readyProvider(tc.Spec.ProviderType)
	if err != nil {
		return nil, err
	}
	if provider == nil {
		ready, err := p.readyNames()
		if err != nil {
			return nil, err
		}
		path := specPath.Child("providerType")
		if len(ready) == 0 {
			return field.ErrorList{field.Invalid(path, tc.Spec.ProviderType, "no ComputeProvider is Ready")}, nil
		}
		return field.ErrorList{field.NotSupported(path, tc.Spec.ProviderType, ready)}, nil
	}
	status := provider.Status
	errs := p.validateConfig(specPath.Child("providerConfig"), provider, tc.Spec.ProviderConfig)
	for i, s := range tc.Spec.Secrets {
		if !slices.Contains(status.SupportedSecretSources, s.Source) {
			errs = append(errs, field.NotSupported(specPath.Child("secrets").Index(i).Child("source"), s.Source, sorted(status.SupportedSecretSources)))
		}
	}
	for i, c := range tc.Spec.Containers {
		if c.HealthCheck != nil && !slices.Contains(status.SupportedHealthChecks, c.HealthCheck.Type) {
			errs = append(errs, field.NotSupported(specPath.Child("containers").Index(i).Child("healthCheck", "type"), c.HealthCheck.Type, sorted(status.SupportedHealthChecks)))
		}
	}
	if tc.Spec.Networking.PublicIP && !status.PublicIP {
		errs = append(errs, field.Forbidden(specPath.Child("networking", "publicIP"),
			fmt.Sprintf("ComputeProvider %q offers no public IPs", provider.Name)))
	}
	return errs, nil
}

// readyProvider is the named provider if it exists and its Ready condition is True.
func (p *Plugin) readyProvider(name string) (*computev1alpha1.ComputeProvider, error) {
	if name == "" {
		return nil, nil
	}
	provider, err := p.providers.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !isReady(provider) {
		return nil, nil
	}
	return provider, nil
}

// readyNames are the Ready providers' names, sorted.
func (p *Plugin) readyNames() ([]string, error) {
	all, err := p.providers.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var names []string
	for _, provider := range all {
		if isReady(provider) {
			names = append(names, provider.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

func isReady(provider *computev1alpha1.ComputeProvider) bool {
	return meta.IsStatusConditionTrue(provider.Status.Conditions, computev1alpha1.ConditionProviderReady)
}

// validateConfig checks providerConfig against the provider's configSchema. A provider that
// publishes no schema takes any config; an absent config is checked as an empty object, so a
// schema's required fields are required.
func (p *Plugin) validateConfig(path *field.Path, provider *computev1alpha1.ComputeProvider, config *common.RawObject) field.ErrorList {
	schema := provider.Status.ConfigSchema
	if schema == nil || len(schema.Raw) == 0 {
		return nil
	}
	c := p.schemas.get(provider.Name, schema.Raw)
	if c.err != nil {
		// Nothing the tenant wrote can pass a schema that cannot be read; the provider's
		// controller must publish a usable one.
		return field.ErrorList{field.InternalError(path, fmt.Errorf("ComputeProvider %q publishes a configSchema that cannot be used: %v", provider.Name, c.err))}
	}
	var value interface{} = map[string]interface{}{}
	if config != nil && len(config.Raw) > 0 {
		// Numbers as int64 or float64, as kube-apiserver decodes custom resources, so that
		// "type: integer" accepts 3.
		if err := utiljson.Unmarshal(config.Raw, &value); err != nil {
			return field.ErrorList{field.Invalid(path, "", "must be a JSON object")}
		}
	}
	return c.validateConfig(path, value)
}

func sorted(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return out
}
