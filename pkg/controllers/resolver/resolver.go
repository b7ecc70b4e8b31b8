// Package resolver is the controller that binds ResourceBindings with Plinth's built-in
// provisioners. Bindings whose type has no built-in provisioner stay Pending, naming the type,
// so an external resolver can claim them through spec.provisioner and write their status.
package resolver

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// ProvisionerName is the spec.provisioner value of bindings the built-in provisioners handle.
const ProvisionerName = "plinth"

// Controller reconciles ResourceBindings.
type Controller struct {
	*loop.Loop
	client       clientset.Interface
	bindings     listers.ResourceBindingLister
	provisioners map[string]Provisioner
}

// New returns the resolver controller.
func New(client clientset.Interface, bindings listers.ResourceBindingLister, provisioners map[string]Provisioner) *Controller {
	c := &Controller{client: client, bindings: bindings, provisioners: provisioners}
	c.Loop = loop.New("resolver", c.reconcile)
	return c
}

func (c *Controller) reconcile(ctx context.Context, namespace, name string) error {
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
			c.EnqueueAfter(namespace, name, 5*time.Second)
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
