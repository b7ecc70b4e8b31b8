// Package resourcebinding is the controller that binds ResourceBindings with Plinth's built-in
// provisioners. Bindings whose type has no built-in provisioner stay Pending, naming the type,
// so an external resolver can claim them through spec.provisioner and write their status.
// It is woken by bindings and by the StatefulSets and Deployments its provisioners make.
package resourcebinding

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	scoreinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/score/v1b1"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// Name names the controller in logs, metrics and events.
const Name = "resourcebinding"

// ProvisionerName is the spec.provisioner value of bindings the built-in provisioners handle.
const ProvisionerName = "plinth"

// Options configure the built-in provisioners.
type Options struct {
	// DNSDomain is the domain dns resources get hosts in.
	DNSDomain string
	// IngressClassName is the class of the Ingresses routes create; empty means the
	// cluster's default class.
	IngressClassName string
	// ProvisionersConfig is a file of template provisioners that add resource types or
	// redefine built-in ones; empty means none.
	ProvisionersConfig string
}

// Controller reconciles ResourceBindings.
type Controller struct {
	*loop.Loop
	client       clientset.Interface
	recorder     events.EventRecorder
	bindings     listers.ResourceBindingLister
	provisioners map[string]Provisioner
}

// NewController returns the ResourceBinding controller. Its provisioners read Secrets,
// Services and StatefulSets from the caches; template provisioners apply their manifests
// through the dynamic client and may run Deployments, whose readiness decides the binding's.
func NewController(client clientset.Interface, kube kubernetes.Interface, dyn dynamic.Interface, mapper meta.RESTMapper,
	recorder events.EventRecorder, bindings scoreinformers.ResourceBindingInformer, secrets coreinformers.SecretInformer,
	services coreinformers.ServiceInformer, statefulSets appsinformers.StatefulSetInformer, deployments appsinformers.DeploymentInformer,
	opts Options) (*Controller, error) {
	env := Env{
		Client: kube, Secrets: secrets.Lister(), Services: services.Lister(), StatefulSets: statefulSets.Lister(),
		DNSDomain: opts.DNSDomain, IngressClassName: opts.IngressClassName, Dynamic: dyn, Mapper: mapper,
	}
	provisioners := Builtins(env)
	if opts.ProvisionersConfig != "" {
		templates, err := LoadTemplates(opts.ProvisionersConfig, env)
		if err != nil {
			return nil, err
		}
		for typ, p := range templates {
			provisioners[typ] = p
		}
	}
	c := &Controller{client: client, recorder: recorder, bindings: bindings.Lister(), provisioners: provisioners}
	c.Loop = loop.New(Name, c.reconcile,
		bindings.Informer(), secrets.Informer(), services.Informer(), statefulSets.Informer(), deployments.Informer())
	owners := loop.OwnerKeys(v1b1.SchemeGroupVersion.String(), "ResourceBinding")
	for _, err := range []error{
		c.Watch(bindings.Informer()),
		c.WatchMapped(statefulSets.Informer(), owners),
		c.WatchMapped(deployments.Informer(), owners),
	} {
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	namespace, name := key.Namespace, key.Name
	b, err := c.bindings.ResourceBindings(namespace).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && b.DeletionTimestamp != nil) {
		return nil // owned objects are garbage collected
	}
	if err != nil {
		return err
	}
	if b.Spec.Provisioner != "" && b.Spec.Provisioner != ProvisionerName {
		return nil // claimed by an external resolver
	}
	status := b.Status.DeepCopy()
	status.ObservedGeneration = b.Generation
	provisioner, ok := c.provisioners[b.Spec.Type]
	var provisionErr error
	switch {
	case !ok:
		status.Phase = v1b1.BindingPhasePending
		setConditions(status, metav1.ConditionFalse, v1b1.ReasonBindingPending,
			fmt.Sprintf("No provisioner handles resource type %q yet; an external resolver may claim it.", b.Spec.Type))
	default:
		result, err := provisioner.Provision(ctx, b)
		provisionErr = err
		var userErr userError
		switch {
		case errors.As(err, &userErr):
			// Retrying cannot help: the binding waits for its params or its objects to change.
			provisionErr = nil
			status.Phase = v1b1.BindingPhaseFailed
			setConditions(status, metav1.ConditionFalse, v1b1.ReasonBindingFailed, userErr.userMessage())
		case err != nil:
			status.Phase = v1b1.BindingPhaseFailed
			setConditions(status, metav1.ConditionFalse, v1b1.ReasonBindingFailed, "The resource could not be provisioned.")
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
		if err == nil {
			status.Outputs = &v1b1.BindingOutputs{Metadata: result.Values}
			if result.SecretName != "" {
				status.Outputs.Credentials = &v1b1.CredentialsReference{SecretRef: &v1b1.SecretKeyReference{Name: result.SecretName}}
			}
			if host := result.Values["host"]; host != "" {
				status.Outputs.ConnectionString = host + ":" + result.Values["port"]
			}
			status.ProvisionerInfo = &v1b1.ProvisionerInfo{Controller: "plinth-builtin", Version: "v1"}
		}
	}
	if !apiequality.Semantic.DeepEqual(status, &b.Status) {
		updated := b.DeepCopy()
		updated.Status = *status
		if _, err := c.client.ScoreV1b1().ResourceBindings(namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: "plinth-resolver"}); err != nil {
			return err
		}
		transition.Outcome(c.recorder, b, b.Status.Conditions, status.Conditions, "Ready", "Bound", "Provision")
	}
	return provisionErr
}

// setConditions sets Provisioned, OutputsAvailable and Ready together: for the built-in
// provisioners outputs exist exactly when the resource is provisioned.
func setConditions(status *v1b1.ResourceBindingStatus, s metav1.ConditionStatus, reason, message string) {
	for _, t := range []string{"Provisioned", "OutputsAvailable", "Ready"} {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: status.ObservedGeneration})
	}
}
