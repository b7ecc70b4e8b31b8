// Package resourcebinding is the controller that binds ResourceBindings with Plinth's built-in
// provisioners. Bindings whose type has no built-in provisioner stay Pending, naming the type,
// so an external resolver can claim them through spec.provisioner and write their status.
// It is woken by bindings and by the StatefulSets and Deployments its provisioners make.
//
// In memory, besides its informers' caches, it keeps:
//   - the bindings its status writes returned, and the template provisioners' state Secrets its
//     updates returned, until the caches show them (loop.Written);
//   - per route binding, the Ingress it last applied (appliedIngresses), so that an unchanged
//     route applies nothing;
//   - the Provisioner objects compiled into templates, by resourceVersion (templateSet).
//
// A restart loses nothing the API does not hold: the caches fill again, each route applies its
// Ingress once more, and the Provisioner objects are compiled again.
package resourcebinding

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/errkind"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	scoreinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/score/v1b1"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/provisioners"
)

// Name names the controller in logs, metrics and events.
const Name = "resourcebinding"

// The status.provisionerInfo.controller values: which kind of provisioner bound a binding.
const (
	builtinController  = "plinth-builtin"
	templateController = "plinth-template"
)

// fieldManager names the controller (the seed's resolver) in the managedFields of the binding
// status, Ingresses and Secrets it writes.
const fieldManager = "plinth-resolver"

// ProvisionerName is the spec.provisioner value of bindings the built-in provisioners handle.
const ProvisionerName = "plinth"

// Options configure the built-in provisioners.
type Options struct {
	// DNSDomain is the domain dns resources get hosts in.
	DNSDomain string
	// IngressClassName is the class of the Ingresses routes create; empty means the
	// cluster's default class.
	IngressClassName string
	// ProvisionersConfig is a score-k8s provisioners file whose template provisioners add
	// resource types or replace built-in ones; empty means none.
	ProvisionersConfig string
}

// Controller reconciles ResourceBindings.
type Controller struct {
	*loop.Loop
	status   *statuswriter.Writer[*v1b1.ResourceBinding]
	bindings listers.ResourceBindingLister
	env      Env
	state    *stateStore
	// builtins are the provisioners written in Go, by type: the last resort.
	builtins map[string]Provisioner
	// templates resolve bindings first: the Provisioner objects, the provisioners file and the
	// built-in template provisioners, most specific match first.
	templates *templateSet
	// written holds the bindings this controller's status writes returned until the cache
	// has them: the binding's own objects (StatefulSet, Deployment, Ingress) wake it right
	// after a write.
	written loop.Written[*v1b1.ResourceBinding]
}

// NewController returns the ResourceBinding controller. Its provisioners read Secrets,
// Services and StatefulSets from the caches; template provisioners apply their manifests
// through the dynamic client and may run Deployments, whose readiness decides the binding's.
func NewController(client clientset.Interface, kube kubernetes.Interface, dyn dynamic.Interface, mapper meta.RESTMapper,
	recorder events.EventRecorder, bindings scoreinformers.ResourceBindingInformer, provisionerObjects scoreinformers.ProvisionerInformer,
	workloads scoreinformers.WorkloadInformer, secrets coreinformers.SecretInformer,
	services coreinformers.ServiceInformer, statefulSets appsinformers.StatefulSetInformer, deployments appsinformers.DeploymentInformer,
	ingresses networkinginformers.IngressInformer, opts Options) (*Controller, error) {
	env := Env{
		Client: kube, Secrets: secrets.Lister(), Services: services.Lister(), StatefulSets: statefulSets.Lister(),
		DNSDomain: opts.DNSDomain, IngressClassName: opts.IngressClassName, Dynamic: dyn, Mapper: mapper,
		Workloads: workloads.Lister(), Ingresses: ingresses.Lister(),
	}
	static, err := staticTemplates(opts.ProvisionersConfig)
	if err != nil {
		return nil, err
	}
	c := &Controller{bindings: bindings.Lister(), env: env, state: newStateStore(kube, secrets.Lister()),
		builtins: Builtins(env), templates: newTemplateSet(static, provisionerObjects.Lister())}
	c.writeStatusWith(client, recorder)
	c.Loop = loop.New(Name, c.reconcile, bindings.Informer(), provisionerObjects.Informer(), workloads.Informer(),
		secrets.Informer(), services.Informer(), statefulSets.Informer(), deployments.Informer(), ingresses.Informer())
	owners := loop.OwnerKeys(v1b1.SchemeGroupVersion.String(), "ResourceBinding")
	for _, err := range []error{
		// On spec changes, deletions and resyncs, not on status-only updates: the controller's
		// own status write would only wake it to find nothing to do, or a route to apply its
		// Ingress again before the Ingress reached the cache. The resync is needed: not all
		// that the provisioners make is watched (a database's Secret and Service, a template's
		// objects of any kind), so it is what repairs them, and what writes back a status
		// someone else edited.
		c.WatchMappedIf(bindings.Informer(), loop.Self, loop.SpecDeletionOrResync),
		c.WatchMapped(statefulSets.Informer(), owners),
		c.WatchMapped(deployments.Informer(), owners),
		// A route's Ingress edited or deleted by someone else is applied again.
		c.WatchMapped(ingresses.Informer(), owners),
		// An Ingress in a route's way (ForeignObjectError), gone or changed, lets the route publish.
		c.WatchMapped(ingresses.Informer(), c.refusedRouteOf),
		// A Provisioner applied, changed or deleted takes effect without a restart: the set is
		// rebuilt and every binding of its type is looked at again.
		c.WatchMapped(provisionerObjects.Informer(), c.provisionerChanged),
		// Templates read the namespace's workloads and their ports (a service resource names
		// another workload): a binding may bind, or its outputs change, when a workload comes,
		// changes or goes.
		c.WatchMappedIf(workloads.Informer(), c.bindingsWorkloadsConcern, loop.SpecOrDeletionChanged),
	} {
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// writeStatusWith sets up the controller's status writer: bindings' status through client,
// their Ready outcomes as events through recorder.
func (c *Controller) writeStatusWith(client clientset.Interface, recorder events.EventRecorder) {
	c.status = &statuswriter.Writer[*v1b1.ResourceBinding]{
		FieldManager: fieldManager,
		Reasons:      v1b1.Reasons,
		Conditions:   func(b *v1b1.ResourceBinding) []metav1.Condition { return b.Status.Conditions },
		Update: func(ctx context.Context, b *v1b1.ResourceBinding, opts metav1.UpdateOptions) (*v1b1.ResourceBinding, error) {
			return client.ScoreV1b1().ResourceBindings(b.Namespace).UpdateStatus(ctx, b, opts)
		},
		Events: transition.New(recorder, v1b1.Reasons),
		// Bindings are the platform's, not the tenant's: their outcomes only, Bound or a warning.
		Rules:   []transition.Rule{{Condition: v1b1.ConditionReady, ReadyReason: v1b1.ReasonBound, Action: "Provision", OutcomesOnly: true}},
		Written: &c.written,
	}
}

// refusedRouteOf maps an Ingress that no ResourceBinding controls to the Failed binding of its
// name: a route refuses to take over an Ingress of its name (ForeignObjectError), and that
// Ingress's deletion is what lets it publish.
func (c *Controller) refusedRouteOf(obj interface{}) []cache.ObjectName {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.APIVersion == v1b1.SchemeGroupVersion.String() && ref.Kind == "ResourceBinding" {
		return nil
	}
	b, err := c.bindings.ResourceBindings(m.GetNamespace()).Get(m.GetName())
	if err != nil || b.Status.Phase != v1b1.BindingPhaseFailed {
		return nil
	}
	return []cache.ObjectName{cache.NewObjectName(b.Namespace, b.Name)}
}

// provisionerChanged rebuilds the template set from the Provisioner objects (the informer's
// store already holds the change) and names the bindings it may concern: those of its type, and
// those it bound (its type may have changed).
func (c *Controller) provisionerChanged(obj interface{}) []cache.ObjectName {
	p, ok := obj.(*v1b1.Provisioner)
	c.templates.rebuild()
	if !ok {
		return nil
	}
	bindings, err := c.bindings.List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []cache.ObjectName
	for _, b := range bindings {
		if b.Spec.Type == p.Spec.Type || boundBy(b, provisioners.SourceObject, p.Name) {
			keys = append(keys, cache.MetaObjectToName(b))
		}
	}
	return keys
}

// boundBy says whether the binding was provisioned by the named template provisioner.
func boundBy(b *v1b1.ResourceBinding, source provisioners.Source, name string) bool {
	info := b.Status.ProvisionerInfo
	return info != nil && info.Controller == templateController && info.Metadata["source"] == source.String() && info.Metadata["name"] == name
}

// bindingsWorkloadsConcern names the bindings of a workload's namespace that a change of its
// workloads may concern: those whose template provisioner reads the namespace's workloads and
// their ports (a service resource may name a workload that has just come, changed or gone), and
// the workload's own bindings not bound yet whose template reads its metadata (the binding can
// reach this controller before its workload does). Other provisioners read no workload: waking
// every unbound binding of the namespace for every workload would be a reconcile per binding
// per workload in a burst of new workloads, and an Ingress applied again each time.
func (c *Controller) bindingsWorkloadsConcern(obj interface{}) []cache.ObjectName {
	w, ok := obj.(*v1b1.Workload)
	if !ok {
		return nil
	}
	bindings, err := c.bindings.ResourceBindings(w.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []cache.ObjectName
	for _, b := range bindings {
		t, ok := c.provisionerFor(b).(*templateProvisioner)
		if !ok {
			continue
		}
		spec := t.entry.Template.Spec()
		if mentions(spec, ".WorkloadServices") ||
			(b.Status.Phase != v1b1.BindingPhaseBound && b.Spec.WorkloadRef.Name == w.Name && mentions(spec, ".WorkloadMetadata")) {
			keys = append(keys, cache.MetaObjectToName(b))
		}
	}
	return keys
}

// provisionerFor resolves a binding. A bound binding keeps the provisioner that bound it while
// that provisioner exists and still matches it: a provisioner applied later for its type would
// otherwise make a new, empty database under a resource whose data lives in the old one
// (score-k8s refuses such a switch outright). Otherwise: the template provisioner that matches
// its type, class and id most specifically, else the Go provisioner of its type; nil when
// nothing provides the type.
func (c *Controller) provisionerFor(b *v1b1.ResourceBinding) Provisioner {
	id := ResourceID(b)
	if info := b.Status.ProvisionerInfo; b.Status.Phase == v1b1.BindingPhaseBound && info != nil {
		switch info.Controller {
		case builtinController:
			if p, ok := c.builtins[b.Spec.Type]; ok {
				return p
			}
		case templateController:
			for _, source := range []provisioners.Source{provisioners.SourceObject, provisioners.SourceConfigFile, provisioners.SourceBuiltIn} {
				if source.String() != info.Metadata["source"] {
					continue
				}
				if entry := c.templates.named(b.Spec.Type, source, info.Metadata["name"]); entry != nil && entry.Matches(b.Spec.Type, b.Spec.Class, id) {
					return &templateProvisioner{env: c.env, state: c.state, entry: entry}
				}
			}
		}
	}
	if entry := c.templates.match(b.Spec.Type, b.Spec.Class, id); entry != nil {
		return &templateProvisioner{env: c.env, state: c.state, entry: entry}
	}
	return c.builtins[b.Spec.Type]
}

// reconcile provisions one binding with the provisioner that handles it and writes the outcome
// as its status. A binding an external resolver claimed is left to it.
func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	b, err := c.bindings.ResourceBindings(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) || (err == nil && b.DeletionTimestamp != nil) {
		c.forget(key) // owned objects, the state Secret among them, are garbage collected
		return nil
	}
	if err != nil {
		return err
	}
	b = c.written.Fresher(key, b)
	if b.Spec.Provisioner != "" && b.Spec.Provisioner != ProvisionerName {
		return nil // claimed by an external resolver
	}
	after := b.DeepCopy()
	after.Status.ObservedGeneration = b.Generation
	provisionErr := c.provision(ctx, key, b, &after.Status)
	if _, _, err := c.status.Write(ctx, b, after); err != nil {
		return err
	}
	return provisionErr
}

// forget drops what the controller remembers of a binding that is gone.
func (c *Controller) forget(key cache.ObjectName) {
	c.state.forget(key)
	c.written.Forget(key)
	for _, p := range c.builtins {
		if f, ok := p.(forgetter); ok {
			f.forget(key)
		}
	}
}

// provision runs the binding's provisioner and records the outcome in status: Pending when no
// provisioner handles its type, Binding while the resource comes up, Bound once it can be
// used, Failed when provisioning failed. It returns the provisioner's error: a Stalled one
// (params or objects that must change first) is not retried, any other is.
func (c *Controller) provision(ctx context.Context, key cache.ObjectName, b *v1b1.ResourceBinding, status *v1b1.ResourceBindingStatus) error {
	provisioner := c.provisionerFor(b)
	if provisioner == nil {
		status.Phase = v1b1.BindingPhasePending
		setConditions(status, metav1.ConditionFalse, v1b1.ReasonBindingPending,
			fmt.Sprintf("No provisioner handles resource type %q yet; an external resolver may claim it.", b.Spec.Type))
		return nil
	}
	result, err := provisioner.Provision(ctx, b)
	switch {
	case errkind.IsStalled(err):
		// The provisioner's sentence names the param or the object that must change.
		status.Phase = v1b1.BindingPhaseFailed
		setConditions(status, metav1.ConditionFalse, v1b1.ReasonBindingFailed, err.Error())
		return err
	case err != nil:
		status.Phase = v1b1.BindingPhaseFailed
		setConditions(status, metav1.ConditionFalse, v1b1.ReasonBindingFailed, "The resource could not be provisioned.")
		return err
	case result.Ready:
		status.Phase = v1b1.BindingPhaseBound
		if status.BindingTime == nil {
			now := metav1.Now()
			status.BindingTime = &now
		}
		setConditions(status, metav1.ConditionTrue, v1b1.ReasonSucceeded, result.Message)
	default:
		status.Phase = v1b1.BindingPhaseBinding
		setConditions(status, metav1.ConditionFalse, v1b1.ReasonBindingPending, result.Message)
		// Readiness is also watched through owned objects, but an event can fall between a
		// crashed leader and its successor; look again rather than wait for one.
		c.EnqueueAfter(key, 5*time.Second)
	}
	publishOutputs(status, provisioner, result)
	return nil
}

// publishOutputs records what a provisioner that succeeded reports: the outputs, where the
// secret ones are, and which provisioner bound the binding.
func publishOutputs(status *v1b1.ResourceBindingStatus, provisioner Provisioner, result Result) {
	status.Outputs = &v1b1.BindingOutputs{Metadata: result.Values}
	if result.SecretName != "" {
		status.Outputs.Credentials = &v1b1.CredentialsReference{SecretRef: &v1b1.SecretKeyReference{Name: result.SecretName}}
	}
	status.Outputs.Secrets = result.Secrets
	if host := result.Values["host"]; host != "" {
		status.Outputs.ConnectionString = host + ":" + result.Values["port"]
	}
	status.ProvisionerInfo = &v1b1.ProvisionerInfo{Controller: builtinController, Version: "v1"}
	if t, ok := provisioner.(*templateProvisioner); ok {
		status.ProvisionerInfo = &v1b1.ProvisionerInfo{Controller: templateController, Version: "v1",
			Metadata: map[string]string{"uri": t.entry.Template.Spec().URI, "source": t.entry.Source.String(), "name": t.entry.Name}}
	}
}

// setConditions sets Provisioned, OutputsAvailable and Ready together: for the built-in
// provisioners outputs exist exactly when the resource is provisioned.
func setConditions(status *v1b1.ResourceBindingStatus, s metav1.ConditionStatus, reason, message string) {
	for _, t := range []string{v1b1.ConditionProvisioned, v1b1.ConditionOutputsAvailable, v1b1.ConditionReady} {
		conditions.Set(&status.Conditions, status.ObservedGeneration, t, s, reason, message)
	}
}
