// Package workload is the Workload controller (the seed's orchestrator): it turns a Workload
// into its ResourceBindings and its WorkloadPlan, and is the single writer of Workload.status:
// conditions InputsValid, BindingsReady, RuntimeReady and Ready (true when the other three
// are), per-binding summaries and the endpoint, in the seed's runtime-neutral vocabulary
// (score.dev's Reasons).
//
// In memory, besides its informers' caches, it keeps the compiled platform policies (rebuilt
// from the PlatformPolicy informer on every change of it) and, until the Workload cache shows
// them, the Workloads its status writes returned (loop.Written). A restart loses nothing the
// API does not hold: the policies are compiled again as the informer fills, and the first
// reconciles read the Workloads from the cache.
package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/resourcebinding"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/errkind"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	scoreinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/score/v1b1"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/platformpolicy"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

// Name names the controller in logs, metrics and events.
const Name = "workload"

// fieldManager names the controller (the seed's orchestrator) in the managedFields of what it
// writes: Workload status, bindings and plans.
const fieldManager = "plinth-orchestrator"

// Listers are the caches the orchestrator reads.
type Listers struct {
	Workloads listers.WorkloadLister
	Bindings  listers.ResourceBindingLister
	Plans     listers.WorkloadPlanLister
	// Policies is kept current from the PlatformPolicy informer.
	Policies   *platformpolicy.Snapshot
	ConfigMaps corelisters.ConfigMapLister
	Secrets    corelisters.SecretLister
	Namespaces corelisters.NamespaceLister
}

// Controller reconciles Workloads.
type Controller struct {
	*loop.Loop
	client              clientset.Interface
	events              *transition.Recorder
	status              *statuswriter.Writer[*v1b1.Workload]
	listers             Listers
	defaultRuntimeClass string
	// written holds the Workloads this controller's status writes returned until the cache
	// has them: reconciles woken by bindings and plans come quickly after a write.
	written loop.Written[*v1b1.Workload]
}

// NewController returns the Workload controller. It reads Workloads, their bindings and plan,
// the platform policies, the ConfigMaps Score sources live in, the Secrets that name a
// binding's secret outputs and the Namespaces' labels policies select on, and waits for all of
// those caches. It is woken by each of them: Workloads, the bindings and plans they own, every
// policy change (for every workload), the ConfigMaps their sources name, their bindings'
// Secrets and their namespace's labels. defaultRuntimeClass
// is used for workloads that set none after admission (normally a PlatformPolicy sets it).
func NewController(ctx context.Context, client clientset.Interface, recorder events.EventRecorder,
	workloads scoreinformers.WorkloadInformer, bindings scoreinformers.ResourceBindingInformer,
	plans scoreinformers.WorkloadPlanInformer, policies scoreinformers.PlatformPolicyInformer,
	configMaps coreinformers.ConfigMapInformer, secrets coreinformers.SecretInformer, namespaces coreinformers.NamespaceInformer,
	defaultRuntimeClass string) (*Controller, error) {
	c := &Controller{client: client, events: transition.New(recorder, v1b1.Reasons), defaultRuntimeClass: defaultRuntimeClass, listers: Listers{
		Workloads: workloads.Lister(), Bindings: bindings.Lister(), Plans: plans.Lister(), Policies: &platformpolicy.Snapshot{},
		ConfigMaps: configMaps.Lister(), Secrets: secrets.Lister(), Namespaces: namespaces.Lister(),
	}}
	c.status = &statuswriter.Writer[*v1b1.Workload]{
		FieldManager: fieldManager,
		Reasons:      v1b1.Reasons,
		Conditions:   func(w *v1b1.Workload) []metav1.Condition { return w.Status.Conditions },
		Update: func(ctx context.Context, w *v1b1.Workload, opts metav1.UpdateOptions) (*v1b1.Workload, error) {
			return client.ScoreV1b1().Workloads(w.Namespace).UpdateStatus(ctx, w, opts)
		},
		// No Events here: recordTransitions records them after the write, BindingsReady's
		// before Ready's, in the order they happened.
		Written: &c.written,
	}
	c.Loop = loop.New(Name, c.reconcile, workloads.Informer(), bindings.Informer(), plans.Informer(), policies.Informer(),
		configMaps.Informer(), secrets.Informer(), namespaces.Informer())
	logger := klog.FromContext(ctx)
	owners := loop.OwnerKeys(v1b1.SchemeGroupVersion.String(), "Workload")
	for _, err := range []error{
		c.Watch(workloads.Informer()),
		c.WatchMapped(bindings.Informer(), owners),
		c.WatchMapped(plans.Informer(), owners),
		// One handler refreshes the compiled policies and then re-queues every workload, so no
		// reconcile can see the change's event before the snapshot has it.
		c.WatchMapped(policies.Informer(), func(interface{}) []cache.ObjectName {
			all, err := policies.Lister().List(labels.Everything())
			if err != nil {
				utilruntime.HandleErrorWithLogger(logger, err, "Listing platform policies failed")
				return nil
			}
			c.listers.Policies.Set(all)
			return c.allWorkloads(logger)
		}),
		c.WatchMapped(configMaps.Informer(), c.workloadsUsingConfigMap(logger)),
		// A binding's credentials Secret can reach the cache after the binding turned Bound;
		// the workload's projection needs its keys, so the Secret wakes the workloads too.
		c.WatchMapped(secrets.Informer(), c.workloadsUsingSecret(logger)),
		// Policies select namespaces by label: a relabelled namespace may change which apply.
		c.WatchMappedIf(namespaces.Informer(), c.workloadsInNamespace(logger), func(oldObj, obj interface{}) bool {
			o, ok1 := oldObj.(*corev1.Namespace)
			n, ok2 := obj.(*corev1.Namespace)
			return !ok1 || !ok2 || !labels.Equals(o.Labels, n.Labels)
		}),
	} {
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// workloadsUsingSecret maps a Secret owned by ResourceBindings to the workloads that use
// those bindings (each marked on the binding by its own label).
func (c *Controller) workloadsUsingSecret(logger klog.Logger) loop.KeysFunc {
	bindingsOf := loop.OwnerKeys(v1b1.SchemeGroupVersion.String(), "ResourceBinding")
	return func(obj interface{}) []cache.ObjectName {
		var keys []cache.ObjectName
		for _, ref := range bindingsOf(obj) {
			b, err := c.listers.Bindings.ResourceBindings(ref.Namespace).Get(ref.Name)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				utilruntime.HandleErrorWithLogger(logger, err, "Reading a binding failed", "binding", ref)
				continue
			}
			for _, w := range v1b1.WorkloadsOfBinding(b) {
				keys = append(keys, cache.NewObjectName(b.Namespace, w))
			}
		}
		return keys
	}
}

// workloadsInNamespace maps a Namespace to every workload in it.
func (c *Controller) workloadsInNamespace(logger klog.Logger) loop.KeysFunc {
	return func(obj interface{}) []cache.ObjectName {
		ns, err := cache.ObjectToName(obj)
		if err != nil {
			return nil
		}
		return c.workloads(logger, ns.Name, nil)
	}
}

// allWorkloads is every workload of every namespace.
func (c *Controller) allWorkloads(logger klog.Logger) []cache.ObjectName {
	return c.workloads(logger, metav1.NamespaceAll, nil)
}

// workloadsUsingConfigMap maps a ConfigMap to the workloads whose Score source it holds.
func (c *Controller) workloadsUsingConfigMap(logger klog.Logger) loop.KeysFunc {
	return func(obj interface{}) []cache.ObjectName {
		cm, err := cache.ObjectToName(obj)
		if err != nil {
			return nil
		}
		return c.workloads(logger, cm.Namespace, func(w *v1b1.Workload) bool {
			s := w.Spec.Source
			return s != nil && s.ConfigMapRef != nil && s.ConfigMapRef.Name == cm.Name
		})
	}
}

// workloads is the keys of the cached workloads of namespace (all namespaces for
// NamespaceAll) that keep accepts (all for nil). A lister failure is reported and maps to none.
func (c *Controller) workloads(logger klog.Logger, namespace string, keep func(*v1b1.Workload) bool) []cache.ObjectName {
	list, err := c.listers.Workloads.Workloads(namespace).List(labels.Everything())
	if err != nil {
		utilruntime.HandleErrorWithLogger(logger, err, "Listing workloads failed", "namespace", namespace)
		return nil
	}
	keys := make([]cache.ObjectName, 0, len(list))
	for _, w := range list {
		if keep == nil || keep(w) {
			keys = append(keys, cache.MetaObjectToName(w))
		}
	}
	return keys
}

// reconcile brings one workload's bindings and plan to what it declares and writes the status
// that results, once it differs from the stored one.
func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	w, err := c.listers.Workloads.Workloads(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) || (err == nil && w.DeletionTimestamp != nil) {
		c.written.Forget(key)
		return nil // bindings and plan are owned by the workload: garbage collection removes them
	}
	if err != nil {
		return err
	}
	w = c.written.Fresher(key, w)
	after := w.DeepCopy()
	after.Status.ObservedGeneration = w.Generation
	err = c.converge(ctx, w, &after.Status)
	setReady(&after.Status, w.Generation)
	stored, wrote, werr := c.status.Write(ctx, w, after)
	if werr != nil {
		return werr
	}
	if wrote {
		c.recordTransitions(w, stored)
	}
	return err
}

// readyTransitions are the Ready condition's transitions, each an Event with the reason that
// holds the workload back (BindingPending, RuntimeProvisioning, PolicyViolation, ...), or Ready
// when it turns True.
var readyTransitions = transition.Rule{Condition: v1b1.ConditionReady, ReadyReason: v1b1.ReasonReady, Action: "Reconcile"}

// recordTransitions records what a status write changed for the workload's owner, once per
// transition: its resources becoming bound (BindingsReady, which Ready does not say: a
// workload may wait for its runtime long after), then Ready's transition.
func (c *Controller) recordTransitions(before, after *v1b1.Workload) {
	if meta.IsStatusConditionTrue(after.Status.Conditions, v1b1.ConditionBindingsReady) &&
		!meta.IsStatusConditionTrue(before.Status.Conditions, v1b1.ConditionBindingsReady) {
		c.events.Record(after, v1b1.ReasonBindingsReady, "Bind", "All resources are bound.")
	}
	c.events.Conditions(after, before.Status.Conditions, after.Status.Conditions, readyTransitions)
}

// converge does the work and records its outcome in status. Inputs that cannot be used are
// reported in InputsValid and returned as a Stalled error: nothing is bound or materialized,
// and nothing is retried, until the workload or what it reads changes. Any other error is
// retried.
func (c *Controller) converge(ctx context.Context, w *v1b1.Workload, status *v1b1.WorkloadStatus) error {
	in, err := c.usableInputs(w)
	if err == nil {
		conditions.Set(&status.Conditions, w.Generation, v1b1.ConditionInputsValid, metav1.ConditionTrue, v1b1.ReasonSucceeded, "The specification is valid.")
		err = c.bindAndMaterialize(ctx, w, in, status)
	}
	var invalid *inputsError
	if errors.As(err, &invalid) {
		inputsInvalid(status, invalid.reason, invalid.message, w.Generation)
	}
	return err
}

// bindAndMaterialize binds the workload's resources and, once all are bound, materializes it
// through its plan.
func (c *Controller) bindAndMaterialize(ctx context.Context, w *v1b1.Workload, in *inputs, status *v1b1.WorkloadStatus) error {
	bindings, err := c.syncBindings(ctx, w, in)
	if err != nil {
		return err
	}
	if !summarizeBindings(status, in.resolved, bindings, w.Generation) {
		conditions.Set(&status.Conditions, w.Generation, v1b1.ConditionRuntimeReady, metav1.ConditionFalse, v1b1.ReasonBindingPending,
			"The workload waits for its resources before it is materialized.")
		status.Endpoint = nil
		return nil
	}
	return c.materialize(ctx, w, in, bindings, status)
}

// inputsInvalid records invalid inputs: nothing is bound or materialized until they are fixed.
func inputsInvalid(status *v1b1.WorkloadStatus, reason, message string, gen int64) {
	conditions.Set(&status.Conditions, gen, v1b1.ConditionInputsValid, metav1.ConditionFalse, reason, message)
	conditions.Set(&status.Conditions, gen, v1b1.ConditionBindingsReady, metav1.ConditionFalse, v1b1.ReasonBindingPending,
		"Resources are not bound while the inputs are invalid.")
	conditions.Set(&status.Conditions, gen, v1b1.ConditionRuntimeReady, metav1.ConditionFalse, v1b1.ReasonRuntimeSelecting,
		"The workload is not materialized while the inputs are invalid.")
	status.Endpoint = nil
}

// inputsError is a problem with what the workload's owner wrote, as InputsValid reports it.
// It is always returned marked errkind.Stalled (invalidInputs): retrying cannot fix it.
type inputsError struct{ reason, message string }

func (e *inputsError) Error() string { return e.message }

// invalidInputs is the Stalled error of inputs that cannot be used, with the reason and the
// message (one sentence naming what is wrong) InputsValid reports.
func invalidInputs(reason, format string, args ...any) error {
	return errkind.Stalled(&inputsError{reason: reason, message: fmt.Sprintf(format, args...)})
}

// inputs is what the workload's owner wrote, ready to bind: the workload with its source
// inline, its effective Score workload and the order its resources bind in.
type inputs struct {
	source   *v1b1.Workload
	resolved *scorespec.Workload
	order    []string
}

// usableInputs reads and checks what the workload's owner wrote: its source, the Score
// specification, the platform policies that apply to it now and the references between its
// resources' params. Inputs that cannot be used are an invalidInputs error.
func (c *Controller) usableInputs(w *v1b1.Workload) (*inputs, error) {
	source, err := c.inlineSource(w)
	if err != nil {
		return nil, err
	}
	resolved, errs := scorespec.Resolve(source)
	if len(errs) > 0 {
		return nil, invalidInputs(v1b1.ReasonSpecInvalid, "The specification is invalid at %s.", errs[0].Field)
	}
	if err := c.policyCheck(source, resolved); err != nil {
		return nil, err
	}
	order, err := resolved.ResourceOrder()
	var cycle *scorespec.CycleError
	switch {
	case errors.As(err, &cycle):
		return nil, invalidInputs(v1b1.ReasonSpecInvalid, "The params of resources %s refer to each other in a cycle.", strings.Join(cycle.Resources, ", "))
	case err != nil:
		return nil, err
	}
	return &inputs{source: source, resolved: resolved, order: order}, nil
}

// inlineSource is the workload with a configMapRef source replaced by the document it names,
// inline. The cached workload is never changed: a source from a ConfigMap goes into a copy.
func (c *Controller) inlineSource(w *v1b1.Workload) (*v1b1.Workload, error) {
	src := w.Spec.Source
	if src == nil || src.ConfigMapRef == nil {
		return w, nil
	}
	cm, err := c.listers.ConfigMaps.ConfigMaps(w.Namespace).Get(src.ConfigMapRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, invalidInputs(v1b1.ReasonSpecInvalid, "The Score source ConfigMap %q is missing.", src.ConfigMapRef.Name)
	}
	if err != nil {
		return nil, err
	}
	doc, ok := cm.Data[src.ConfigMapRef.Key]
	if !ok {
		return nil, invalidInputs(v1b1.ReasonSpecInvalid, "The Score source ConfigMap %q has no key %q.", src.ConfigMapRef.Name, src.ConfigMapRef.Key)
	}
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, invalidInputs(v1b1.ReasonSpecInvalid, "The Score source is not valid YAML.")
	}
	inlined := *w
	inlined.Spec.Source = &v1b1.WorkloadSource{Inline: &common.RawObject{Raw: raw}}
	return &inlined, nil
}

// policyCheck applies the constraints of the policies that match now, so a policy added after
// the workload was admitted still shows up as PolicyViolation.
func (c *Controller) policyCheck(w *v1b1.Workload, resolved *scorespec.Workload) error {
	var nsLabels labels.Set
	// A namespace being deleted may be gone from the cache before its workloads: it has no
	// labels then. Any other lister error is retried.
	ns, err := c.listers.Namespaces.Get(w.Namespace)
	switch {
	case err == nil:
		nsLabels = ns.Labels
	case !apierrors.IsNotFound(err):
		return err
	}
	compiled := c.listers.Policies.Matching(w.Labels, nsLabels)
	if len(compiled) == 0 {
		return nil
	}
	facts := platformpolicy.NewFacts(w, resolved)
	for _, cp := range compiled {
		if v := cp.Violations(facts); len(v) > 0 {
			return invalidInputs(v1b1.ReasonPolicyViolation, "The workload violates platform policy %q at %s.", v[0].Policy, v[0].Field)
		}
	}
	return nil
}

// syncBindings brings the workload's bindings to what it declares, in dependency order, and
// lets go of those it no longer declares. It returns the bindings by resource; a binding made
// by a reconcile the cache has not caught up with yet is missing, as a pending one would be.
func (c *Controller) syncBindings(ctx context.Context, w *v1b1.Workload, in *inputs) (map[string]*v1b1.ResourceBinding, error) {
	bindings := map[string]*v1b1.ResourceBinding{}
	desired := sets.New[string]()
	deps := in.resolved.Dependencies()
	for _, key := range in.order {
		r := in.resolved.Resources[key]
		name := bindingName(w, key, r)
		desired.Insert(name)
		var b *v1b1.ResourceBinding
		var err error
		if dependenciesBound(deps[key], bindings) {
			b, err = c.bindResource(ctx, w, in, key, r, deps[key], bindings)
		} else {
			// Its params wait for outputs that do not exist yet: its binding stays as it is.
			b, err = c.cachedBinding(w.Namespace, name)
		}
		if err != nil {
			return nil, err
		}
		if b != nil {
			bindings[key] = b
		}
	}
	return bindings, c.releaseBindings(ctx, w, desired)
}

// bindingName is the name of a resource's binding: one of the workload's own, or the one every
// workload of the namespace that declares the same shared resource uses.
func bindingName(w *v1b1.Workload, key string, r v1b1.ResourceSpec) string {
	if shared(r) {
		return v1b1.SharedResourceBindingName(r.Type, r.ID)
	}
	return v1b1.ResourceBindingName(w.Name, key)
}

// shared says whether a resource is shared with the namespace's other workloads: it has a
// Score id.
func shared(r v1b1.ResourceSpec) bool { return r.ID != "" }

// dependenciesBound says whether every resource a resource's params name is Bound, so that
// their outputs can be filled in.
func dependenciesBound(deps sets.Set[string], bindings map[string]*v1b1.ResourceBinding) bool {
	for dep := range deps {
		if b := bindings[dep]; b == nil || b.Status.Phase != v1b1.BindingPhaseBound {
			return false
		}
	}
	return true
}

// cachedBinding is the binding of the name as the cache has it, nil when there is none.
func (c *Controller) cachedBinding(namespace, name string) (*v1b1.ResourceBinding, error) {
	b, err := c.listers.Bindings.ResourceBindings(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return b, err
}

// bindResource creates or updates one resource's binding, its params filled in from the
// outputs of the resources they name (deps, all bound).
func (c *Controller) bindResource(ctx context.Context, w *v1b1.Workload, in *inputs, key string, r v1b1.ResourceSpec,
	deps sets.Set[string], bindings map[string]*v1b1.ResourceBinding) (*v1b1.ResourceBinding, error) {
	params, err := c.paramsWithOutputs(w, in, key, r, deps, bindings)
	if err != nil {
		return nil, err
	}
	want := desiredBinding(w, key, r, params)
	existing, err := c.listers.Bindings.ResourceBindings(w.Namespace).Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		return c.createBinding(ctx, want)
	case err != nil:
		return nil, err
	case shared(r):
		return c.joinSharedBinding(ctx, w, key, existing)
	default:
		return c.updateOwnBinding(ctx, w, key, existing, want)
	}
}

// paramsWithOutputs is the resource's params with the outputs of the resources they name
// filled in; params that name no other resource are passed as written. Params that cannot be
// resolved (they name a secret output, or one the resource does not have) are invalid inputs.
func (c *Controller) paramsWithOutputs(w *v1b1.Workload, in *inputs, key string, r v1b1.ResourceSpec,
	deps sets.Set[string], bindings map[string]*v1b1.ResourceBinding) (*common.RawObject, error) {
	if deps.Len() == 0 {
		return r.Params, nil
	}
	outputs, err := c.outputs(w.Namespace, bindings)
	if err != nil {
		return nil, err
	}
	params, err := scorespec.ResolveParams(r.Params, scorespec.Metadata(in.source), outputs)
	if err != nil {
		return nil, invalidInputs(v1b1.ReasonSpecInvalid, "The params of resource %q cannot be resolved.", key)
	}
	return params, nil
}

// desiredBinding is the binding a resource asks for. A shared binding has several owners and
// none controls it: garbage collection removes it with the last.
func desiredBinding(w *v1b1.Workload, key string, r v1b1.ResourceSpec, params *common.RawObject) *v1b1.ResourceBinding {
	owner := ownerRef(w)
	labels := map[string]string{v1b1.WorkloadBindingLabel(w.Name): key}
	if shared(r) {
		owner.Controller = nil
		labels["score.dev/shared"] = "true"
	} else {
		labels[v1b1.WorkloadLabel] = w.Name
	}
	return &v1b1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName(w, key, r), Namespace: w.Namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: v1b1.ResourceBindingSpec{
			WorkloadRef: v1b1.WorkloadReference{Name: w.Name, UID: string(w.UID)},
			ResourceKey: key, Type: r.Type, Class: r.Class, ID: r.ID, Params: params, Metadata: r.Metadata,
			Provisioner: resourcebinding.ProvisionerName,
		},
	}
}

// createBinding creates a binding the cache does not have. One that exists already was made by
// a reconcile the cache has not caught up with: nil, and it is waited for as a pending one.
func (c *Controller) createBinding(ctx context.Context, want *v1b1.ResourceBinding) (*v1b1.ResourceBinding, error) {
	created, err := c.client.ScoreV1b1().ResourceBindings(want.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil, nil
	}
	return created, err
}

// joinSharedBinding makes the workload an owner and user of a shared binding. The first
// workload to declare a shared resource decides its spec; later ones only join.
func (c *Controller) joinSharedBinding(ctx context.Context, w *v1b1.Workload, key string, existing *v1b1.ResourceBinding) (*v1b1.ResourceBinding, error) {
	label := v1b1.WorkloadBindingLabel(w.Name)
	if existing.Labels[label] == key && ownedBy(existing, w) {
		return existing, nil
	}
	updated := existing.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	updated.Labels[label] = key
	if !ownedBy(existing, w) {
		owner := ownerRef(w)
		owner.Controller = nil
		updated.OwnerReferences = append(updated.OwnerReferences, owner)
	}
	return c.client.ScoreV1b1().ResourceBindings(w.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: fieldManager})
}

// updateOwnBinding brings one of the workload's own bindings to the spec it asks for. A binding
// an external resolver claimed (spec.provisioner) stays claimed.
func (c *Controller) updateOwnBinding(ctx context.Context, w *v1b1.Workload, key string, existing, want *v1b1.ResourceBinding) (*v1b1.ResourceBinding, error) {
	if existing.Spec.Provisioner != "" && existing.Spec.Provisioner != resourcebinding.ProvisionerName {
		want.Spec.Provisioner = existing.Spec.Provisioner
	}
	label := v1b1.WorkloadBindingLabel(w.Name)
	if apiequality.Semantic.DeepEqual(existing.Spec, want.Spec) && existing.Labels[label] == key {
		return existing, nil
	}
	updated := existing.DeepCopy()
	updated.Spec = want.Spec
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	updated.Labels[label] = key
	return c.client.ScoreV1b1().ResourceBindings(w.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: fieldManager})
}

// releaseBindings lets go of bindings the workload no longer declares: its own are deleted; from
// a shared one it removes itself, deleting the binding when no owner is left.
func (c *Controller) releaseBindings(ctx context.Context, w *v1b1.Workload, desired sets.Set[string]) error {
	label := v1b1.WorkloadBindingLabel(w.Name)
	selector, err := labels.Parse(label)
	if err != nil {
		return err
	}
	used, err := c.listers.Bindings.ResourceBindings(w.Namespace).List(selector)
	if err != nil {
		return err
	}
	for _, b := range used {
		if desired.Has(b.Name) {
			continue
		}
		var owners []metav1.OwnerReference
		for _, ref := range b.OwnerReferences {
			if ref.UID != w.UID {
				owners = append(owners, ref)
			}
		}
		if metav1.IsControlledBy(b, w) || len(owners) == 0 {
			if err := c.client.ScoreV1b1().ResourceBindings(w.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			continue
		}
		updated := b.DeepCopy()
		updated.OwnerReferences = owners
		delete(updated.Labels, label)
		if _, err := c.client.ScoreV1b1().ResourceBindings(w.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return err
		}
	}
	return nil
}

func ownedBy(b *v1b1.ResourceBinding, w *v1b1.Workload) bool {
	for _, ref := range b.OwnerReferences {
		if ref.UID == w.UID {
			return true
		}
	}
	return false
}

// summarizeBindings writes status.bindings and BindingsReady; it reports whether all are bound.
func summarizeBindings(status *v1b1.WorkloadStatus, resolved *scorespec.Workload, bindings map[string]*v1b1.ResourceBinding, gen int64) bool {
	status.Bindings = nil
	allBound, anyFailed := true, false
	for _, key := range sets.List(sets.KeySet(resolved.Resources)) {
		b := bindings[key]
		summary := v1b1.BindingSummary{Key: key, Phase: v1b1.BindingPhasePending, Reason: v1b1.ReasonBindingPending, Message: "The resource is waiting to be provisioned."}
		// Only where a binding rests is copied: Bound, Failed, or Pending with no provisioner
		// for its type (the message names the type). Binding, the provisioner at work with its
		// progress messages, would be a Workload status write per step, and the Workload's owner
		// learns nothing from it that "waiting to be provisioned" does not say.
		if b != nil && b.Status.Phase != "" && b.Status.Phase != v1b1.BindingPhaseBinding {
			summary.Phase = b.Status.Phase
			if ready := meta.FindStatusCondition(b.Status.Conditions, v1b1.ConditionReady); ready != nil {
				summary.Reason, summary.Message = ready.Reason, ready.Message
			}
			summary.OutputsAvailable = meta.IsStatusConditionTrue(b.Status.Conditions, v1b1.ConditionOutputsAvailable)
		}
		switch summary.Phase {
		case v1b1.BindingPhaseBound:
			summary.Reason = v1b1.ReasonSucceeded
		case v1b1.BindingPhaseFailed:
			anyFailed = true
			allBound = false
			summary.Reason = v1b1.ReasonBindingFailed
		default:
			allBound = false
			summary.Reason = v1b1.ReasonBindingPending
		}
		status.Bindings = append(status.Bindings, summary)
	}
	switch {
	case anyFailed:
		conditions.Set(&status.Conditions, gen, v1b1.ConditionBindingsReady, metav1.ConditionFalse, v1b1.ReasonBindingFailed, "A resource could not be provisioned.")
	case !allBound:
		conditions.Set(&status.Conditions, gen, v1b1.ConditionBindingsReady, metav1.ConditionFalse, v1b1.ReasonBindingPending, "Resources are being provisioned.")
	default:
		conditions.Set(&status.Conditions, gen, v1b1.ConditionBindingsReady, metav1.ConditionTrue, v1b1.ReasonSucceeded, "All resources are bound.")
	}
	return allBound
}

// materialize hands the bound workload to its runtime through its plan and copies the
// runtime's report into RuntimeReady and the endpoint.
func (c *Controller) materialize(ctx context.Context, w *v1b1.Workload, in *inputs, bindings map[string]*v1b1.ResourceBinding,
	status *v1b1.WorkloadStatus) error {
	outputs, err := c.outputs(w.Namespace, bindings)
	if err != nil {
		return err
	}
	projection, err := scorespec.Project(in.source, in.resolved, outputs)
	if err != nil {
		// The placeholder's own sentence names the resource and the output the workload asked
		// for, and those it has: the user's words, not the runtime's.
		message := "A resource output the workload uses is missing."
		var pe *scorespec.ProjectionError
		if errors.As(err, &pe) && pe.Message != "" {
			message = pe.Message
		}
		conditions.Set(&status.Conditions, w.Generation, v1b1.ConditionRuntimeReady, metav1.ConditionFalse, v1b1.ReasonProjectionError, message)
		status.Endpoint = nil
		return nil
	}
	runtimeClass := in.source.Spec.RuntimeClass
	if runtimeClass == "" {
		runtimeClass = c.defaultRuntimeClass
	}
	plan, err := c.syncPlan(ctx, w, runtimeClass, projection)
	if err != nil {
		return err
	}
	status.Endpoint = nil
	if runtimeCondition(status, plan, w.Generation) {
		status.Endpoint = scorespec.Endpoint(w.Name+"."+w.Namespace+".svc", in.resolved.Service)
	}
	return nil
}

// outputs collects each bound resource's outputs; secret output names are the keys of its
// credentials Secret (only the keys are read here, never used as values).
func (c *Controller) outputs(namespace string, bindings map[string]*v1b1.ResourceBinding) (map[string]scorespec.Outputs, error) {
	out := map[string]scorespec.Outputs{}
	for key, b := range bindings {
		o := scorespec.Outputs{Values: map[string]string{}, Secrets: sets.New[string]()}
		if b.Status.Outputs != nil {
			for k, v := range b.Status.Outputs.Metadata {
				o.Values[k] = v
			}
			for k := range b.Status.Outputs.Secrets {
				o.Secrets.Insert(k)
			}
			if cred := b.Status.Outputs.Credentials; cred != nil && cred.SecretRef != nil {
				// A Secret not seen yet has no keys yet: its outputs wait, as unbound ones do.
				s, err := c.listers.Secrets.Secrets(namespace).Get(cred.SecretRef.Name)
				switch {
				case err == nil:
					for k := range s.Data {
						o.Secrets.Insert(k)
					}
				case !apierrors.IsNotFound(err):
					return nil, err
				}
			}
		}
		out[key] = o
	}
	return out, nil
}

// syncPlan creates or updates the workload's plan: the projection for its runtime class, and who
// wrote the workload's spec.
func (c *Controller) syncPlan(ctx context.Context, w *v1b1.Workload, runtimeClass string, p *scorespec.Projection) (*v1b1.WorkloadPlan, error) {
	want := &v1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: map[string]string{v1b1.WorkloadLabel: w.Name},
			OwnerReferences: []metav1.OwnerReference{ownerRef(w)}},
		Spec: v1b1.WorkloadPlanSpec{
			WorkloadRef:  v1b1.PlanWorkloadReference{Name: w.Name, UID: string(w.UID), Generation: w.Generation},
			RuntimeClass: runtimeClass,
			Projection:   p.Projection,
			Bindings:     p.Bindings,
			Metadata:     &v1b1.PlanMetadata{Labels: map[string]string{v1b1.WorkloadLabel: w.Name}, OwnershipMode: v1b1.OwnershipModeController},
		},
	}
	// Who wrote the workload's spec, as plinth-apiserver recorded it: a runtime's requests for
	// the plan (a governed VM's ticket) name that user as their requester.
	requestedBy, recorded := w.Annotations[common.AnnotationRequestedBy]
	if recorded {
		want.Annotations = map[string]string{common.AnnotationRequestedBy: requestedBy}
	}
	existing, err := c.listers.Plans.WorkloadPlans(w.Namespace).Get(w.Name)
	if apierrors.IsNotFound(err) {
		return c.client.ScoreV1b1().WorkloadPlans(w.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
	}
	if err != nil {
		return nil, err
	}
	was, had := existing.Annotations[common.AnnotationRequestedBy]
	if apiequality.Semantic.DeepEqual(existing.Spec, want.Spec) && was == requestedBy && had == recorded {
		return existing, nil
	}
	updated := existing.DeepCopy()
	updated.Spec = want.Spec
	if recorded {
		metav1.SetMetaDataAnnotation(&updated.ObjectMeta, common.AnnotationRequestedBy, requestedBy)
	} else {
		delete(updated.Annotations, common.AnnotationRequestedBy)
	}
	return c.client.ScoreV1b1().WorkloadPlans(w.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: fieldManager})
}

// runtimeCondition copies the runtime's report on the current plan into RuntimeReady and says
// whether the workload runs.
func runtimeCondition(status *v1b1.WorkloadStatus, plan *v1b1.WorkloadPlan, gen int64) bool {
	ready := meta.FindStatusCondition(plan.Status.Conditions, v1b1.ConditionReady)
	switch {
	case plan.Status.ObservedGeneration != plan.Generation || ready == nil:
		conditions.Set(&status.Conditions, gen, v1b1.ConditionRuntimeReady, metav1.ConditionFalse, v1b1.ReasonRuntimeProvisioning, "The workload is being materialized.")
		return false
	case ready.Status == metav1.ConditionTrue:
		conditions.Set(&status.Conditions, gen, v1b1.ConditionRuntimeReady, metav1.ConditionTrue, v1b1.ReasonSucceeded, "The workload is running.")
		return true
	case ready.Reason == v1b1.ReasonRuntimeProvisioning:
		// One message while provisioning, whatever step the runtime reports (materialized,
		// rolling out, starting): each step would be a Workload status write and an event
		// for the same reason. The plan's runtimeInfo.state keeps the detail.
		conditions.Set(&status.Conditions, gen, v1b1.ConditionRuntimeReady, metav1.ConditionFalse, v1b1.ReasonRuntimeProvisioning, "The workload is being materialized.")
		return false
	default:
		// The plan's reasons are the workload's: score.dev declares them once for both.
		conditions.Set(&status.Conditions, gen, v1b1.ConditionRuntimeReady, metav1.ConditionFalse, ready.Reason, ready.Message)
		return false
	}
}

// setReady derives Ready from the other three: the first that is not True gives the reason.
func setReady(status *v1b1.WorkloadStatus, gen int64) {
	for _, t := range []string{v1b1.ConditionInputsValid, v1b1.ConditionBindingsReady, v1b1.ConditionRuntimeReady} {
		cond := meta.FindStatusCondition(status.Conditions, t)
		if cond == nil {
			conditions.Set(&status.Conditions, gen, v1b1.ConditionReady, metav1.ConditionFalse, v1b1.ReasonRuntimeSelecting, "The workload has not been processed yet.")
			return
		}
		if cond.Status != metav1.ConditionTrue {
			conditions.Set(&status.Conditions, gen, v1b1.ConditionReady, metav1.ConditionFalse, cond.Reason, cond.Message)
			return
		}
	}
	conditions.Set(&status.Conditions, gen, v1b1.ConditionReady, metav1.ConditionTrue, v1b1.ReasonSucceeded, "The workload is ready.")
}

func ownerRef(w *v1b1.Workload) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "Workload", Name: w.Name, UID: w.UID,
		Controller: ptr.To(true)}
}
