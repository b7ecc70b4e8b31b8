// Package computeprovider publishes the compute providers a controller serves as
// ComputeProvider objects: one per provider of its registry, named after the provider, with
// spec.controller naming the controller and a status that says what the provider accepts
// (the JSON Schema of its providerConfig, the defaults, the secret sources, health checks and
// public IPs it supports) and that it is Ready. An object missing is created, one deleted is
// created again, a status someone else changed is restored. A ComputeProvider of the same
// name that another controller registered is not touched: the conflict is reported (a Warning
// event and an error in the log) and the other controller keeps the name.
//
// Status is written as plinth-computeprovider through a statuswriter, with the reasons
// compute.plinth.dev declares.
//
// In memory the controller keeps the ComputeProviders its registry's descriptors make (computed
// once at start) and, per provider name, the other controller whose registration of that name
// it last reported. A restart loses only the latter: a conflict that lasts is reported once
// more after a restart.
package computeprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	computeclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/compute/v1alpha1"
	computeinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/compute/v1alpha1"
	computelisters "github.com/plinth-dev/plinth/pkg/generated/listers/compute/v1alpha1"
)

// Name names the controller in logs, metrics and events.
const Name = "computeprovider"

// PlinthController is the spec.controller of the providers plinth-controller serves.
const PlinthController = "plinth.dev/plinth-controller"

// FieldManager names the controller in the managedFields of the statuses it writes.
const FieldManager = "plinth-computeprovider"

// Registry is what the controller needs of the compute provider registry.
type Registry interface {
	Providers() []compute.Provider
}

// Controller publishes a registry's providers as ComputeProviders.
type Controller struct {
	*loop.Loop
	client computeclient.ComputeProvidersGetter
	events *transition.Recorder
	status *statuswriter.Writer[*v1alpha1.ComputeProvider]
	lister computelisters.ComputeProviderLister
	owner  string
	// published is each provider's ComputeProvider as it should be, by name, computed once:
	// descriptors do not change while the process runs.
	published map[string]*v1alpha1.ComputeProvider
	now       func() time.Time

	// reported is, by provider name, the other controller whose registration was last
	// reported: each conflict is reported once, not on every change of the other object.
	mu       sync.Mutex
	reported map[string]string
}

// NewController returns the controller that publishes the providers of registry as
// ComputeProviders whose spec.controller is owner (PlinthController for plinth-controller's
// built-in providers). It reads ComputeProviders and is woken by changes to those it
// publishes; every provider is published when it starts. A descriptor whose config schema or
// defaults are not a JSON object is refused here, before anything is published.
func NewController(client computeclient.ComputeProvidersGetter, recorder events.EventRecorder,
	providers computeinformers.ComputeProviderInformer, registry Registry, owner string) (*Controller, error) {
	c := &Controller{
		client: client, events: transition.New(recorder, v1alpha1.Reasons), lister: providers.Lister(), owner: owner,
		published: map[string]*v1alpha1.ComputeProvider{}, now: time.Now, reported: map[string]string{},
	}
	c.status = &statuswriter.Writer[*v1alpha1.ComputeProvider]{
		FieldManager: FieldManager, Reasons: v1alpha1.Reasons,
		Conditions: func(cp *v1alpha1.ComputeProvider) []metav1.Condition { return cp.Status.Conditions },
		Update:     client.ComputeProviders().UpdateStatus,
	}
	for _, p := range registry.Providers() {
		cp, err := publication(p, owner)
		if err != nil {
			return nil, err
		}
		c.published[p.Name()] = cp
	}
	c.Loop = loop.New(Name, c.reconcile, providers.Informer())
	if err := c.WatchMapped(providers.Informer(), c.owned); err != nil {
		return nil, err
	}
	for name := range c.published {
		// A provider whose object does not exist yet gets no informer event.
		c.Enqueue(cache.NewObjectName("", name))
	}
	return c, nil
}

// owned maps a ComputeProvider to itself when it has the name of a provider this controller
// publishes, or when this controller registered it (spec.controller) and no longer serves it.
func (c *Controller) owned(obj interface{}) []cache.ObjectName {
	keys := loop.Self(obj)
	if len(keys) != 1 {
		return nil
	}
	if c.published[keys[0].Name] != nil {
		return keys
	}
	if cp, ok := obj.(*v1alpha1.ComputeProvider); ok && cp.Spec.Controller == c.owner {
		return keys
	}
	return nil
}

// retire marks a provider this controller registered but no longer serves (a build without
// it, a configuration that leaves it out) not Ready, so admission stops accepting tenants for
// it instead of storing tenants nothing will provision. The object stays: tenants that name it
// keep a readable reference, and a later version that serves it again takes it back.
func (c *Controller) retire(ctx context.Context, name string) error {
	cp, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cp.Spec.Controller != c.owner {
		return nil
	}
	if was := meta.FindStatusCondition(cp.Status.Conditions, v1alpha1.ConditionProviderReady); was != nil && was.Status == metav1.ConditionFalse && was.Reason == v1alpha1.ReasonNotServed {
		return nil
	}
	updated := cp.DeepCopy()
	conditions.SetAt(&updated.Status.Conditions, cp.Generation, metav1.NewTime(c.now()), v1alpha1.ConditionProviderReady, metav1.ConditionFalse,
		v1alpha1.ReasonNotServed, fmt.Sprintf("%s no longer serves this provider.", c.owner))
	stored, wrote, err := c.status.Write(ctx, cp, updated)
	if err != nil || !wrote {
		return err
	}
	klog.FromContext(ctx).Info("Compute provider no longer served", "provider", name)
	c.events.Record(stored, v1alpha1.ReasonNotServed, "Register", fmt.Sprintf("%s no longer serves provider %s.", c.owner, name))
	return nil
}

// publication is the ComputeProvider a provider's descriptor makes, without its Ready
// condition and observed generation (they depend on the stored object).
func publication(p compute.Provider, owner string) (*v1alpha1.ComputeProvider, error) {
	d := p.Descriptor()
	schema, err := rawObject(d.ConfigSchema)
	if err != nil {
		return nil, fmt.Errorf("compute provider %q: its config schema: %w", p.Name(), err)
	}
	defaults, err := rawObject(d.ConfigDefaults)
	if err != nil {
		return nil, fmt.Errorf("compute provider %q: its config defaults: %w", p.Name(), err)
	}
	return &v1alpha1.ComputeProvider{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name()},
		Spec:       v1alpha1.ComputeProviderSpec{Controller: owner, Description: d.Description},
		Status: v1alpha1.ComputeProviderStatus{
			ConfigSchema: schema, ConfigDefaults: defaults,
			SupportedSecretSources: d.SecretSources, SupportedHealthChecks: d.HealthChecks, PublicIP: d.PublicIP,
		},
	}, nil
}

// rawObject wraps JSON that must be an object; empty JSON is no value.
func rawObject(raw []byte) (*common.RawObject, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	o := &common.RawObject{Raw: raw}
	if !o.IsObject() {
		return nil, fmt.Errorf("not a JSON object")
	}
	return o, nil
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	want := c.published[key.Name]
	if want == nil {
		return c.retire(ctx, key.Name)
	}
	logger := klog.FromContext(ctx)
	cp, err := c.lister.Get(key.Name)
	switch {
	case apierrors.IsNotFound(err):
		created, err := c.client.ComputeProviders().Create(ctx, &v1alpha1.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: key.Name}, Spec: want.Spec}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind; its add event brings the object back here
		}
		if err != nil {
			return err
		}
		logger.Info("Registered compute provider", "provider", key.Name)
		c.events.Record(created, v1alpha1.ReasonRegistered, "Register", fmt.Sprintf("%s registered provider %s.", c.owner, key.Name))
		cp = created
	case err != nil:
		return err
	}
	if cp.Spec.Controller != c.owner {
		c.conflict(ctx, cp)
		return nil
	}
	c.mu.Lock()
	delete(c.reported, key.Name)
	c.mu.Unlock()

	if cp.Spec.Description != want.Spec.Description {
		updated := cp.DeepCopy()
		updated.Spec.Description = want.Spec.Description
		if cp, err = c.client.ComputeProviders().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	updated := cp.DeepCopy()
	updated.Status = *c.desiredStatus(cp, want)
	if _, wrote, err := c.status.Write(ctx, cp, updated); err != nil || !wrote {
		return err
	}
	logger.V(2).Info("Published compute provider status", "provider", key.Name)
	return nil
}

// desiredStatus is the status cp should have: the descriptor's, Ready, at cp's generation. The
// stored schema and defaults are kept when they are the same JSON (the API server may have
// reformatted them), and so is the Ready condition's transition time while it stays True; any
// other condition someone wrote is dropped.
func (c *Controller) desiredStatus(cp, want *v1alpha1.ComputeProvider) *v1alpha1.ComputeProviderStatus {
	st := want.Status.DeepCopy()
	if sameJSON(cp.Status.ConfigSchema, st.ConfigSchema) {
		st.ConfigSchema = cp.Status.ConfigSchema.DeepCopy()
	}
	if sameJSON(cp.Status.ConfigDefaults, st.ConfigDefaults) {
		st.ConfigDefaults = cp.Status.ConfigDefaults.DeepCopy()
	}
	st.ObservedGeneration = cp.Generation
	st.Conditions = nil
	if was := meta.FindStatusCondition(cp.Status.Conditions, v1alpha1.ConditionProviderReady); was != nil {
		st.Conditions = []metav1.Condition{*was}
	}
	conditions.SetAt(&st.Conditions, cp.Generation, metav1.NewTime(c.now()), v1alpha1.ConditionProviderReady, metav1.ConditionTrue,
		v1alpha1.ReasonRegistered, fmt.Sprintf("%s serves this provider.", c.owner))
	return st
}

// conflict reports, once, that another controller registered a provider of this name.
func (c *Controller) conflict(ctx context.Context, cp *v1alpha1.ComputeProvider) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reported[cp.Name] == cp.Spec.Controller {
		return
	}
	c.reported[cp.Name] = cp.Spec.Controller
	klog.FromContext(ctx).Error(fmt.Errorf("provider %s is registered by %s", cp.Name, cp.Spec.Controller),
		"Not publishing the compute provider", "provider", cp.Name, "controller", c.owner)
	c.events.Record(cp, v1alpha1.ReasonProviderConflict, "Register",
		fmt.Sprintf("Provider %s is registered by %s; %s does not publish its own provider of that name.", cp.Name, cp.Spec.Controller, c.owner))
}

// sameJSON says whether two raw objects hold the same JSON value.
func sameJSON(a, b *common.RawObject) bool {
	if a == nil || b == nil || len(a.Raw) == 0 || len(b.Raw) == 0 {
		return (a == nil || len(a.Raw) == 0) && (b == nil || len(b.Raw) == 0)
	}
	var av, bv interface{}
	if json.Unmarshal(a.Raw, &av) != nil || json.Unmarshal(b.Raw, &bv) != nil {
		return false
	}
	return reflect.DeepEqual(av, bv)
}
