// Package workload is the Workload controller (the seed's orchestrator): it turns a Workload
// into its ResourceBindings and its WorkloadPlan, and is the single writer of Workload.status:
// conditions InputsValid, BindingsReady, RuntimeReady and Ready (true when the other three
// are), per-binding summaries and the endpoint, in the seed's runtime-neutral vocabulary.
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
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/resourcebinding"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	scoreinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/score/v1b1"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/platformpolicy"
	scorespec "github.com/plinth-dev/plinth/pkg/score"
)

// Name names the controller in logs, metrics and events.
const Name = "workload"

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
	recorder            events.EventRecorder
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
	c := &Controller{client: client, recorder: recorder, defaultRuntimeClass: defaultRuntimeClass, listers: Listers{
		Workloads: workloads.Lister(), Bindings: bindings.Lister(), Plans: plans.Lister(), Policies: &platformpolicy.Snapshot{},
		ConfigMaps: configMaps.Lister(), Secrets: secrets.Lister(), Namespaces: namespaces.Lister(),
	}}
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

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	namespace, name := key.Namespace, key.Name
	w, err := c.listers.Workloads.Workloads(namespace).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && w.DeletionTimestamp != nil) {
		c.written.Forget(key)
		return nil // bindings and plan are owned by the workload: garbage collection removes them
	}
	if err != nil {
		return err
	}
	w = c.written.Fresher(key, w)
	status := w.Status.DeepCopy()
	status.ObservedGeneration = w.Generation
	err = c.converge(ctx, w, status)
	setReady(status, w.Generation)
	if !apiequality.Semantic.DeepEqual(status, &w.Status) {
		updated := w.DeepCopy()
		updated.Status = *status
		written, uerr := c.client.ScoreV1b1().Workloads(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: "plinth-orchestrator"})
		if uerr != nil {
			return uerr
		}
		c.written.Record(key, w, written)
		c.recordTransitions(w, status)
	}
	return err
}

// recordTransitions records what changed for the workload's owner, once per transition: its
// resources becoming bound (BindingsReady), and Ready turning true (Ready) or false with the
// reason that holds it back (BindingPending, RuntimeProvisioning, PolicyViolation, ...).
func (c *Controller) recordTransitions(w *v1b1.Workload, status *v1b1.WorkloadStatus) {
	if meta.IsStatusConditionTrue(status.Conditions, v1b1.ConditionBindingsReady) &&
		!meta.IsStatusConditionTrue(w.Status.Conditions, v1b1.ConditionBindingsReady) {
		transition.Record(c.recorder, w, v1b1.ConditionBindingsReady, "Bind", "All resources are bound.")
	}
	transition.Condition(c.recorder, w, w.Status.Conditions, status.Conditions, v1b1.ConditionReady, v1b1.ConditionReady, "Reconcile")
}

// converge does the work and records its outcome in status; an error is retried.
func (c *Controller) converge(ctx context.Context, w *v1b1.Workload, status *v1b1.WorkloadStatus) error {
	gen := w.Generation
	source, reason, message, err := c.inputs(w)
	if err != nil {
		return err
	}
	var resolved *scorespec.Workload
	if reason == "" {
		if r, errs := scorespec.Resolve(source); len(errs) > 0 {
			reason, message = v1b1.ReasonSpecInvalid, fmt.Sprintf("The specification is invalid at %s.", errs[0].Field)
		} else {
			resolved = r
		}
	}
	if reason == "" {
		if reason, message, err = c.policyCheck(source, resolved); err != nil {
			return err
		}
	}
	if reason != "" {
		inputsInvalid(status, reason, message, gen)
		return nil
	}
	order, err := resolved.ResourceOrder()
	if err != nil {
		inputsInvalid(status, v1b1.ReasonSpecInvalid, "The params of resources "+strings.Join(err.(*scorespec.CycleError).Resources, ", ")+" refer to each other in a cycle.", gen)
		return nil
	}
	setCondition(status, v1b1.ConditionInputsValid, true, v1b1.ReasonSucceeded, "The specification is valid.", gen)

	bindings, err := c.syncBindings(ctx, w, source, resolved, order)
	var invalid *inputError
	if errors.As(err, &invalid) {
		inputsInvalid(status, v1b1.ReasonSpecInvalid, invalid.message, gen)
		return nil
	}
	if err != nil {
		return err
	}
	allBound := summarizeBindings(status, resolved, bindings, gen)
	if !allBound {
		setCondition(status, v1b1.ConditionRuntimeReady, false, v1b1.ReasonBindingPending, "The workload waits for its resources before it is materialized.", gen)
		status.Endpoint = nil
		return nil
	}

	outputs, err := c.outputs(w.Namespace, bindings)
	if err != nil {
		return err
	}
	projection, err := scorespec.Project(source, resolved, outputs)
	if err != nil {
		setCondition(status, v1b1.ConditionRuntimeReady, false, v1b1.ReasonProjectionError, "A resource output the workload uses is missing.", gen)
		status.Endpoint = nil
		return nil
	}
	runtimeClass := source.Spec.RuntimeClass
	if runtimeClass == "" {
		runtimeClass = c.defaultRuntimeClass
	}
	plan, err := c.syncPlan(ctx, w, runtimeClass, projection)
	if err != nil {
		return err
	}
	runtimeReady := c.runtimeCondition(status, plan, gen)
	status.Endpoint = nil
	if runtimeReady {
		status.Endpoint = scorespec.Endpoint(w.Name+"."+w.Namespace+".svc", resolved.Service)
	}
	return nil
}

// inputsInvalid records invalid inputs: nothing is bound or materialized until they are fixed.
func inputsInvalid(status *v1b1.WorkloadStatus, reason, message string, gen int64) {
	setCondition(status, v1b1.ConditionInputsValid, false, reason, message, gen)
	setCondition(status, v1b1.ConditionBindingsReady, false, v1b1.ReasonBindingPending, "Resources are not bound while the inputs are invalid.", gen)
	setCondition(status, v1b1.ConditionRuntimeReady, false, v1b1.ReasonRuntimeSelecting, "The workload is not materialized while the inputs are invalid.", gen)
	status.Endpoint = nil
}

// inputs is the workload with a configMapRef source replaced by the document it names, inline.
// The cached workload is never changed: a source from a ConfigMap goes into a copy.
func (c *Controller) inputs(w *v1b1.Workload) (*v1b1.Workload, string, string, error) {
	if src := w.Spec.Source; src != nil && src.ConfigMapRef != nil {
		cm, err := c.listers.ConfigMaps.ConfigMaps(w.Namespace).Get(src.ConfigMapRef.Name)
		if apierrors.IsNotFound(err) {
			return nil, v1b1.ReasonSpecInvalid, fmt.Sprintf("The Score source ConfigMap %q is missing.", src.ConfigMapRef.Name), nil
		}
		if err != nil {
			return nil, "", "", err
		}
		doc, ok := cm.Data[src.ConfigMapRef.Key]
		if !ok {
			return nil, v1b1.ReasonSpecInvalid, fmt.Sprintf("The Score source ConfigMap %q has no key %q.", src.ConfigMapRef.Name, src.ConfigMapRef.Key), nil
		}
		raw, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, v1b1.ReasonSpecInvalid, "The Score source is not valid YAML.", nil
		}
		inlined := *w
		inlined.Spec.Source = &v1b1.WorkloadSource{Inline: &common.RawObject{Raw: raw}}
		return &inlined, "", "", nil
	}
	return w, "", "", nil
}

// policyCheck applies the constraints of the policies that match now, so a policy added after
// the workload was admitted still shows up as PolicyViolation.
func (c *Controller) policyCheck(w *v1b1.Workload, resolved *scorespec.Workload) (string, string, error) {
	var nsLabels labels.Set
	// A namespace being deleted may be gone from the cache before its workloads: it has no
	// labels then. Any other lister error is retried.
	ns, err := c.listers.Namespaces.Get(w.Namespace)
	switch {
	case err == nil:
		nsLabels = ns.Labels
	case !apierrors.IsNotFound(err):
		return "", "", err
	}
	compiled := c.listers.Policies.Matching(w.Labels, nsLabels)
	if len(compiled) == 0 {
		return "", "", nil
	}
	facts := platformpolicy.NewFacts(w, resolved)
	for _, cp := range compiled {
		if v := cp.Violations(facts); len(v) > 0 {
			return v1b1.ReasonPolicyViolation, fmt.Sprintf("The workload violates platform policy %q at %s.", v[0].Policy, v[0].Field), nil
		}
	}
	return "", "", nil
}

// inputError is a problem with the workload's inputs found while binding: it is reported as
// SpecInvalid, not retried.
type inputError struct{ message string }

func (e *inputError) Error() string { return e.message }

// syncBindings creates or updates the bindings in dependency order. A resource whose params
// refer to other resources' outputs waits until those are Bound, then gets its params with the
// outputs filled in.
func (c *Controller) syncBindings(ctx context.Context, w *v1b1.Workload, source *v1b1.Workload, resolved *scorespec.Workload,
	order []string) (map[string]*v1b1.ResourceBinding, error) {
	out := map[string]*v1b1.ResourceBinding{}
	desired := sets.New[string]()
	deps := resolved.Dependencies()
	label := v1b1.WorkloadBindingLabel(w.Name)
	for _, key := range order {
		r := resolved.Resources[key]
		shared := r.ID != ""
		name := v1b1.ResourceBindingName(w.Name, key)
		if shared {
			name = v1b1.SharedResourceBindingName(r.Type, r.ID)
		}
		desired.Insert(name)
		if deps[key].Len() > 0 {
			ready := true
			for dep := range deps[key] {
				if b := out[dep]; b == nil || b.Status.Phase != v1b1.BindingPhaseBound {
					ready = false
				}
			}
			if !ready {
				existing, err := c.listers.Bindings.ResourceBindings(w.Namespace).Get(name)
				switch {
				case err == nil:
					out[key] = existing
				case !apierrors.IsNotFound(err):
					return nil, err
				}
				continue
			}
			outputs, err := c.outputs(w.Namespace, out)
			if err != nil {
				return nil, err
			}
			params, err := scorespec.ResolveParams(r.Params, scorespec.Metadata(source), outputs)
			if err != nil {
				return nil, &inputError{fmt.Sprintf("The params of resource %q cannot be resolved.", key)}
			}
			r.Params = params
		}
		owner := ownerRef(w)
		labels := map[string]string{label: key}
		if shared {
			// Several workloads own a shared binding; none controls it, and garbage collection
			// removes it with the last owner.
			owner.Controller = nil
			labels["score.dev/shared"] = "true"
		} else {
			labels[v1b1.WorkloadLabel] = w.Name
		}
		want := &v1b1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.Namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: v1b1.ResourceBindingSpec{
				WorkloadRef: v1b1.WorkloadReference{Name: w.Name, UID: string(w.UID)},
				ResourceKey: key, Type: r.Type, Class: r.Class, ID: r.ID, Params: r.Params, Metadata: r.Metadata,
				Provisioner: resourcebinding.ProvisionerName,
			},
		}
		existing, err := c.listers.Bindings.ResourceBindings(w.Namespace).Get(name)
		switch {
		case apierrors.IsNotFound(err):
			created, err := c.client.ScoreV1b1().ResourceBindings(w.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: "plinth-orchestrator"})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, err
			}
			out[key] = created
		case err != nil:
			return nil, err
		case shared:
			// The first workload to declare a shared resource decides its spec; later ones join
			// as owners.
			if existing.Labels[label] != key || !ownedBy(existing, w) {
				updated := existing.DeepCopy()
				if updated.Labels == nil {
					updated.Labels = map[string]string{}
				}
				updated.Labels[label] = key
				if !ownedBy(existing, w) {
					updated.OwnerReferences = append(updated.OwnerReferences, owner)
				}
				if existing, err = c.client.ScoreV1b1().ResourceBindings(w.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: "plinth-orchestrator"}); err != nil {
					return nil, err
				}
			}
			out[key] = existing
		default:
			if existing.Spec.Provisioner != "" && existing.Spec.Provisioner != resourcebinding.ProvisionerName {
				want.Spec.Provisioner = existing.Spec.Provisioner // claimed by an external resolver
			}
			if !apiequality.Semantic.DeepEqual(existing.Spec, want.Spec) || existing.Labels[label] != key {
				updated := existing.DeepCopy()
				updated.Spec = want.Spec
				if updated.Labels == nil {
					updated.Labels = map[string]string{}
				}
				updated.Labels[label] = key
				if existing, err = c.client.ScoreV1b1().ResourceBindings(w.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: "plinth-orchestrator"}); err != nil {
					return nil, err
				}
			}
			out[key] = existing
		}
	}
	return out, c.releaseBindings(ctx, w, desired)
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
		if _, err := c.client.ScoreV1b1().ResourceBindings(w.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: "plinth-orchestrator"}); err != nil {
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
			if ready := meta.FindStatusCondition(b.Status.Conditions, "Ready"); ready != nil {
				summary.Reason, summary.Message = ready.Reason, ready.Message
			}
			summary.OutputsAvailable = meta.IsStatusConditionTrue(b.Status.Conditions, "OutputsAvailable")
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
		setCondition(status, v1b1.ConditionBindingsReady, false, v1b1.ReasonBindingFailed, "A resource could not be provisioned.", gen)
	case !allBound:
		setCondition(status, v1b1.ConditionBindingsReady, false, v1b1.ReasonBindingPending, "Resources are being provisioned.", gen)
	default:
		setCondition(status, v1b1.ConditionBindingsReady, true, v1b1.ReasonSucceeded, "All resources are bound.", gen)
	}
	return allBound
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
		return c.client.ScoreV1b1().WorkloadPlans(w.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: "plinth-orchestrator"})
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
	return c.client.ScoreV1b1().WorkloadPlans(w.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: "plinth-orchestrator"})
}

// runtimeCondition copies the runtime's report on the current plan into RuntimeReady.
func (c *Controller) runtimeCondition(status *v1b1.WorkloadStatus, plan *v1b1.WorkloadPlan, gen int64) bool {
	ready := meta.FindStatusCondition(plan.Status.Conditions, "Ready")
	switch {
	case plan.Status.ObservedGeneration != plan.Generation || ready == nil:
		setCondition(status, v1b1.ConditionRuntimeReady, false, v1b1.ReasonRuntimeProvisioning, "The workload is being materialized.", gen)
		return false
	case ready.Status == metav1.ConditionTrue:
		setCondition(status, v1b1.ConditionRuntimeReady, true, v1b1.ReasonSucceeded, "The workload is running.", gen)
		return true
	case ready.Reason == v1b1.ReasonRuntimeProvisioning:
		// One message while provisioning, whatever step the runtime reports (materialized,
		// rolling out, starting): each step would be a Workload status write and an event
		// for the same reason. The plan's runtimeInfo.state keeps the detail.
		setCondition(status, v1b1.ConditionRuntimeReady, false, v1b1.ReasonRuntimeProvisioning, "The workload is being materialized.", gen)
		return false
	default:
		setCondition(status, v1b1.ConditionRuntimeReady, false, ready.Reason, ready.Message, gen)
		return false
	}
}

// setReady derives Ready from the other three: the first that is not True gives the reason.
func setReady(status *v1b1.WorkloadStatus, gen int64) {
	for _, t := range []string{v1b1.ConditionInputsValid, v1b1.ConditionBindingsReady, v1b1.ConditionRuntimeReady} {
		cond := meta.FindStatusCondition(status.Conditions, t)
		if cond == nil {
			setCondition(status, v1b1.ConditionReady, false, v1b1.ReasonRuntimeSelecting, "The workload has not been processed yet.", gen)
			return
		}
		if cond.Status != metav1.ConditionTrue {
			setCondition(status, v1b1.ConditionReady, false, cond.Reason, cond.Message, gen)
			return
		}
	}
	setCondition(status, v1b1.ConditionReady, true, v1b1.ReasonSucceeded, "The workload is ready.", gen)
}

func setCondition(status *v1b1.WorkloadStatus, condType string, ok bool, reason, message string, gen int64) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: condType, Status: s, Reason: reason, Message: message, ObservedGeneration: gen})
}

func ownerRef(w *v1b1.Workload) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "Workload", Name: w.Name, UID: w.UID,
		Controller: ptr.To(true)}
}
