// Package tenantcompute is the TenantCompute admission plugin, named after what it admits: a
// TenantCompute is stored only if the ComputeProvider it names is Ready and can provision it —
// its providerConfig passes the provider's published configSchema, and its secret sources,
// health-check types and public IP are ones the provider supports. A tenant learns of a bad
// config from kubectl apply (422, naming the field) instead of from a failed status minutes
// later.
//
// Providers come from the Plinth informer, never from etcd per request; each provider's
// schema is compiled once per change. A create is judged in full; an update only in what it
// changes that the provider judges (see judgement), so that a tenant can suspend, archive or
// change its containers' images while its provider is not Ready or after the provider
// tightened its schema, and the controller's metadata and status writes are never judged.
//
// The plugin also guards placement: a create or update that sets or changes
// spec.providerConfig.cluster (ClusterConfigKey) needs the verb use on that Cluster
// (VerbUse), asked of the authorizer, or is refused 403 Forbidden.
package tenantcompute

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/admission/initializer"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/compute/v1alpha1"
)

// PluginName is the plugin's name in --enable-admission-plugins and the plugin order.
const PluginName = "TenantCompute"

// Register adds the plugin to a registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin is the TenantCompute admission plugin.
type Plugin struct {
	*admission.Handler
	providers  listers.ComputeProviderLister
	schemas    schemas
	authorizer authorizer.Authorizer
}

var (
	_ admission.ValidationInterface          = &Plugin{}
	_ initializer.WantsPlinthInformerFactory = &Plugin{}
	_ genericinitializer.WantsAuthorizer     = &Plugin{}
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

// SetAuthorizer sets the authorizer asked whether a user may use a Cluster.
func (p *Plugin) SetAuthorizer(a authorizer.Authorizer) {
	p.authorizer = a
}

// ValidateInitialization requires the provider informer and the authorizer.
func (p *Plugin) ValidateInitialization() error {
	if p.providers == nil {
		return fmt.Errorf("%s admission plugin needs the Plinth informer factory", PluginName)
	}
	if p.authorizer == nil {
		return fmt.Errorf("%s admission plugin needs an authorizer", PluginName)
	}
	return nil
}

// Validate refuses a TenantCompute its provider cannot provision: 422 Invalid, every problem
// at its field path; and one placed on a Cluster its author may not use: 403 Forbidden.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != compute.Resource("tenantcomputes") || a.GetSubresource() != "" {
		return nil
	}
	tc, ok := a.GetObject().(*compute.TenantCompute)
	if !ok {
		return nil
	}
	var old *compute.TenantCompute
	if a.GetOperation() == admission.Update {
		// An update without its old object (never the case in the API server) is judged as
		// a create: in full.
		old, _ = a.GetOldObject().(*compute.TenantCompute)
	}
	if err := p.authorizePlacement(ctx, a, tc, old); err != nil {
		return err
	}
	j := judge(tc, old)
	if j.empty() {
		return nil
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	errs, err := p.validate(tc, j)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(compute.Kind("TenantCompute"), tc.Name, errs)
	}
	return nil
}

// judgement is what of a TenantCompute's spec its provider must judge. A create judges
// everything; an update only what it changes, down to the entry: the config when it changed,
// the secrets whose source and the containers whose health-check type are new, and a public
// IP being turned on. What the provider accepted before is not judged again, so a provider
// that is not Ready, or that has since narrowed what it supports, blocks only the changes it
// would have to judge, never suspend, archive or a change of fields it does not judge.
type judgement struct {
	// config: judge providerConfig against the schema.
	config bool
	// secrets and healthChecks are the indexes of the secrets and containers to judge.
	secrets, healthChecks []int
	// publicIP: judge spec.networking.publicIP.
	publicIP bool
}

// judge is what to judge of tc, created (old nil) or updated from old. A change of provider
// (refused by validation: providerType is immutable) is judged as a create.
func judge(tc, old *compute.TenantCompute) judgement {
	if old != nil && old.Spec.ProviderType != tc.Spec.ProviderType {
		old = nil
	}
	j := judgement{
		config:   old == nil || !sameConfig(old.Spec.ProviderConfig, tc.Spec.ProviderConfig),
		publicIP: tc.Spec.Networking.PublicIP && (old == nil || !old.Spec.Networking.PublicIP),
	}
	for i, s := range tc.Spec.Secrets {
		if old == nil || !slices.ContainsFunc(old.Spec.Secrets, func(o compute.SecretReference) bool {
			return o.Name == s.Name && o.Source == s.Source
		}) {
			j.secrets = append(j.secrets, i)
		}
	}
	for i, c := range tc.Spec.Containers {
		if c.HealthCheck == nil {
			continue
		}
		if old == nil || !slices.ContainsFunc(old.Spec.Containers, func(o compute.ContainerSpec) bool {
			return o.Name == c.Name && o.HealthCheck != nil && o.HealthCheck.Type == c.HealthCheck.Type
		}) {
			j.healthChecks = append(j.healthChecks, i)
		}
	}
	return j
}

func (j judgement) empty() bool {
	return !j.config && !j.publicIP && len(j.secrets) == 0 && len(j.healthChecks) == 0
}

// sameConfig reports whether two providerConfigs hold the same JSON value, whatever their
// formatting and key order, numbers compared exactly by value (20 is 20.0); an absent config
// is an empty object, as the schema check reads it.
func sameConfig(a, b *common.RawObject) bool {
	va, errA := canonicalConfig(a)
	vb, errB := canonicalConfig(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

// canonicalConfig decodes a providerConfig with every number as its exact rational value.
func canonicalConfig(config *common.RawObject) (interface{}, error) {
	var value interface{} = map[string]interface{}{}
	if config != nil && len(config.Raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(config.Raw))
		dec.UseNumber()
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
	}
	return canonicalNumbers(value), nil
}

// exactNumber is a JSON number as a reduced fraction: of its own type, so that it never
// equals a string with the same text.
type exactNumber string

func canonicalNumbers(value interface{}) interface{} {
	switch v := value.(type) {
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(v)); ok {
			return exactNumber(r.RatString())
		}
	case map[string]interface{}:
		for k, e := range v {
			v[k] = canonicalNumbers(e)
		}
	case []interface{}:
		for i, e := range v {
			v[i] = canonicalNumbers(e)
		}
	}
	return value
}

// decodeConfig is a providerConfig as the schema validator takes it: numbers as int64 or
// float64, as kube-apiserver decodes custom resources, so that "type: integer" accepts 3; an
// absent config is an empty object.
func decodeConfig(config *common.RawObject) (interface{}, error) {
	var value interface{} = map[string]interface{}{}
	if config != nil && len(config.Raw) > 0 {
		if err := utiljson.Unmarshal(config.Raw, &value); err != nil {
			return nil, err
		}
	}
	return value, nil
}

// validate checks what j names of tc against its provider, which must be Ready.
func (p *Plugin) validate(tc *compute.TenantCompute, j judgement) (field.ErrorList, error) {
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
	var errs field.ErrorList
	if j.config {
		errs = p.validateConfig(specPath.Child("providerConfig"), provider, tc.Spec.ProviderConfig)
	}
	for _, i := range j.secrets {
		if s := tc.Spec.Secrets[i]; !slices.Contains(status.SupportedSecretSources, s.Source) {
			errs = append(errs, field.NotSupported(specPath.Child("secrets").Index(i).Child("source"), s.Source, sorted(status.SupportedSecretSources)))
		}
	}
	for _, i := range j.healthChecks {
		if hc := tc.Spec.Containers[i].HealthCheck; !slices.Contains(status.SupportedHealthChecks, hc.Type) {
			errs = append(errs, field.NotSupported(specPath.Child("containers").Index(i).Child("healthCheck", "type"), hc.Type, sorted(status.SupportedHealthChecks)))
		}
	}
	if j.publicIP && !status.PublicIP {
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
	value, err := decodeConfig(config)
	if err != nil {
		return field.ErrorList{field.Invalid(path, "", "must be a JSON object")}
	}
	return c.validateConfig(path, value)
}

func sorted(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return out
}
