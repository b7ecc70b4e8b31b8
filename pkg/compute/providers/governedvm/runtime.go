package governedvm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	govclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/governance/v1alpha1"
	govinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/governance/v1alpha1"
	govlisters "github.com/plinth-dev/plinth/pkg/generated/listers/governance/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/apperror"
)

// runtimeFieldManager writes the runtime's Services.
const runtimeFieldManager = "plinth-runtime-kubevirt"

// Runtime is the kubevirt Score runtime: each WorkloadPlan of runtime class kubevirt gets a
// governed ManagedVM of the plan's name in the plan's namespace, owned by the plan, under the
// SystemService WorkloadServiceName(workload) of the System WorkloadSystem. The VM's cloud-init
// runs the plan's containers with podman. Creating and changing the VM are requests like any
// tenant's, through the approval flow; deleting the workload deletes the plan, and the garbage
// collector's deletion of the VM waits for approval in turn. Create it with NewRuntime.
type Runtime struct {
	client       govclient.GovernanceV1alpha1Interface
	kube         kubernetes.Interface
	vms          govlisters.ManagedVMLister
	services     govlisters.SystemServiceLister
	kubeServices corelisters.ServiceLister
	informers    []cache.SharedIndexInformer
	// now is the clock of restart requests.
	now func() time.Time
}

var (
	_ compute.Runtime      = &Runtime{}
	_ compute.PlanNotifier = &Runtime{}
)

// NewRuntime returns the kubevirt runtime. It writes governance objects through client and
// Services through kube, and reads ManagedVMs and SystemServices from plinth-controller's shared
// governance informers (the WorkloadPlan controller waits for them and is woken by their
// changes: compute.PlanNotifier) and Services from services, a lister the WorkloadPlan
// controller waits for already.
func NewRuntime(client versioned.Interface, kube kubernetes.Interface, managedVMs govinformers.ManagedVMInformer,
	systemServices govinformers.SystemServiceInformer, services corelisters.ServiceLister) *Runtime {
	return &Runtime{
		client: client.GovernanceV1alpha1(), kube: kube, vms: managedVMs.Lister(), services: systemServices.Lister(), kubeServices: services,
		informers: []cache.SharedIndexInformer{managedVMs.Informer(), systemServices.Informer()}, now: time.Now,
	}
}

// Name is "kubevirt", the runtime class.
func (r *Runtime) Name() string { return Name }

// Informers are the ManagedVM and SystemService informers.
func (r *Runtime) Informers() []cache.SharedIndexInformer { return r.informers }

// PlansFor names the plan of a ManagedVM or SystemService the runtime made, from its labels
// (plans are named after their workload).
func (r *Runtime) PlansFor(obj interface{}) []cache.ObjectName {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	switch obj.(type) {
	case *gov.ManagedVM, *gov.SystemService:
	default:
		return nil
	}
	workload := m.GetLabels()[v1b1.WorkloadLabel]
	if m.GetLabels()[LabelProvider] != Name || workload == "" {
		return nil
	}
	return []cache.ObjectName{cache.NewObjectName(m.GetNamespace(), workload)}
}

// Apply asks for the plan's VM, or for the change the plan makes to it, and reports the VM as
// governance and the VM runtime show it. A plan the runtime cannot run in a VM is a
// ProjectionError, written before anything is asked for.
func (r *Runtime) Apply(ctx context.Context, plan *v1b1.WorkloadPlan, bindings map[string]*v1b1.ResourceBinding) (compute.Status, error) {
	w, err := wantVM(plan, bindings)
	if err != nil {
		return refusedStatus(err)
	}
	vm, err := r.ensureVM(ctx, plan, w)
	if err != nil {
		return refusedStatus(err)
	}
	if err := r.ownService(ctx, plan, vm); err != nil {
		return compute.Status{}, err
	}
	if err := r.ensureEndpoint(ctx, plan, vm); err != nil {
		return refusedStatus(err)
	}
	return planStatus(plan, vm, w), nil
}

// refusedStatus reports an error: a refusal as a ProjectionError (not retried until something
// changes), a quota the namespace has used up as QuotaExceeded, anything else as the error it
// is, for the controller to retry.
func refusedStatus(err error) (compute.Status, error) {
	var refused *refusal
	switch {
	case errors.As(err, &refused):
		return compute.Status{Reason: v1b1.ReasonProjectionError, Message: refused.message}, nil
	case apperror.CodeOf(err) == apperror.QuotaExceeded:
		return compute.Status{Reason: v1b1.ReasonQuotaExceeded, Message: "The namespace has as many virtual machines as its policy allows."}, nil
	}
	return compute.Status{}, err
}

// ensureVM brings the plan's ManagedVM to what the plan asks for and returns it. The
// informer's cache decides whether anything is to be done, so that a plan at rest costs no
// request; a write is decided on the stored VM, which the cache may lag behind.
func (r *Runtime) ensureVM(ctx context.Context, plan *v1b1.WorkloadPlan, w *wanted) (*gov.ManagedVM, error) {
	cached, err := r.vms.ManagedVMs(plan.Namespace).Get(plan.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		if done, err := settledFor(cached, plan, w); done || err != nil {
			return cached, err
		}
	}
	live, err := r.client.ManagedVMs(plan.Namespace).Get(ctx, plan.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return r.createVM(ctx, plan, w)
	}
	if err != nil {
		return nil, err
	}
	if done, err := settledFor(live, plan, w); done || err != nil {
		return live, err
	}
	return r.requestChange(ctx, plan, live, w)
}

// settledFor says whether the VM needs no write from the runtime: it is being deleted (it is
// asked for again once it is gone), another request of it waits for a decision, or it carries
// what the plan asks for. A VM of the plan's name that the plan does not control is refused.
func settledFor(vm *gov.ManagedVM, plan *v1b1.WorkloadPlan, w *wanted) (bool, error) {
	switch {
	case vm.DeletionTimestamp != nil:
		return true, nil
	case !metav1.IsControlledBy(vm, plan):
		return true, refuse("Another virtual machine of the namespace has the workload's name.")
	case vm.Status.PendingApproval != nil:
		return true, nil
	}
	return !requestWantedFor(vm, plan, w) && !withLabels(vm.DeepCopy(), w), nil
}

// requestWantedFor says whether the plan's VM spec is to be asked for: it is not the one last
// asked for, or that one was rejected and the workload has changed since (a new generation
// asks again, whatever it changed).
func requestWantedFor(vm *gov.ManagedVM, plan *v1b1.WorkloadPlan, w *wanted) bool {
	return vm.Annotations[AnnotationRequestedSpec] != w.fingerprint ||
		(rejected(vm) && vm.Annotations[AnnotationRequestedGeneration] != planGeneration(plan) && !applied(vm, w))
}

// planGeneration is the generation of the workload the plan was made from.
func planGeneration(plan *v1b1.WorkloadPlan) string {
	return strconv.FormatInt(plan.Spec.WorkloadRef.Generation, 10)
}

// createVM asks for the plan's VM, after its System and SystemService.
func (r *Runtime) createVM(ctx context.Context, plan *v1b1.WorkloadPlan, w *wanted) (*gov.ManagedVM, error) {
	if err := r.ensureWorkloadSystem(ctx, plan.Namespace); err != nil {
		return nil, err
	}
	if err := r.ensureWorkloadService(ctx, plan); err != nil {
		return nil, err
	}
	vm := &gov.ManagedVM{
		ObjectMeta: metav1.ObjectMeta{Name: plan.Name, Namespace: plan.Namespace, OwnerReferences: []metav1.OwnerReference{planOwner(plan)}},
		Spec:       w.spec,
	}
	withLabels(vm, w)
	setAnnotation(vm, AnnotationRequestedSpec, w.fingerprint)
	setAnnotation(vm, AnnotationRequestedGeneration, planGeneration(plan))
	requestFor(vm, plan.Annotations)
	return r.client.ManagedVMs(plan.Namespace).Create(ctx, vm, metav1.CreateOptions{})
}

// requestChange writes the VM's labels and, when it is to be asked for, the plan's spec: a
// modify request (with a restart of an approved VM, which applies size, image and cloud-init).
// A VM whose creation was rejected is asked for anew.
func (r *Runtime) requestChange(ctx context.Context, plan *v1b1.WorkloadPlan, live *gov.ManagedVM, w *wanted) (*gov.ManagedVM, error) {
	updated := live.DeepCopy()
	if requestWantedFor(live, plan, w) {
		if live.Status.Instance == 0 && rejected(live) {
			// Never approved: deleting it needs no approval and leaves nothing behind.
			err := r.client.ManagedVMs(live.Namespace).Delete(ctx, live.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(live.UID)}})
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
			return r.createVM(ctx, plan, w)
		}
		spec := w.spec
		spec.RestartedAt = live.Spec.RestartedAt
		if live.Status.Instance != 0 && needsRestart(live.Spec, spec) {
			spec.RestartedAt = r.now().UTC().Format(time.RFC3339)
		}
		updated.Spec = spec
		setAnnotation(updated, AnnotationRequestedSpec, w.fingerprint)
		setAnnotation(updated, AnnotationRequestedGeneration, planGeneration(plan))
		requestFor(updated, plan.Annotations)
	}
	withLabels(updated, w)
	out, err := r.client.ManagedVMs(live.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if code := apperror.CodeOf(err); code == apperror.PendingRequestExists || code == apperror.DuplicatePendingRequest {
		// Another request came first: the plan's is asked for once that one is decided.
		return live, nil
	}
	return out, err
}

// ensureWorkloadSystem creates the System WorkloadSystem unless it exists (whoever created it).
func (r *Runtime) ensureWorkloadSystem(ctx context.Context, namespace string) error {
	systems := r.client.Systems(namespace)
	if _, err := systems.Get(ctx, WorkloadSystem, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return err
	}
	_, err := systems.Create(ctx, &gov.System{
		ObjectMeta: metav1.ObjectMeta{Name: WorkloadSystem, Namespace: namespace, Labels: map[string]string{LabelProvider: Name}},
		Spec: gov.SystemSpec{Documentation: "The Score workloads of runtime class kubevirt in this namespace: one SystemService and one ManagedVM per workload, " +
			"requested by the kubevirt runtime."},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ensureWorkloadService creates the workload's SystemService, or checks that the one of its
// name is the workload's.
func (r *Runtime) ensureWorkloadService(ctx context.Context, plan *v1b1.WorkloadPlan) error {
	name := WorkloadServiceName(plan.Name)
	services := r.client.SystemServices(plan.Namespace)
	svc, err := services.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && !workloadServiceOf(svc, plan):
		return refuse("The namespace has a service %s of its virtual machines that is not the workload's.", name)
	case !apierrors.IsNotFound(err):
		return err
	}
	_, err = services.Create(ctx, &gov.SystemService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: plan.Namespace, Labels: workloadVMLabels(plan)},
		Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: WorkloadSystem},
			Documentation: fmt.Sprintf("The VM of workload %s/%s (Score, runtime class kubevirt).", plan.Namespace, plan.Name)},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// workloadServiceOf says whether a SystemService is the one the runtime made for the plan's
// workload.
func workloadServiceOf(svc *gov.SystemService, plan *v1b1.WorkloadPlan) bool {
	return svc.Labels[LabelProvider] == Name && svc.Labels[v1b1.WorkloadLabel] == plan.Spec.WorkloadRef.Name &&
		svc.Spec.SystemRef.Name == WorkloadSystem
}

// ownService makes the VM the owner of its SystemService, so that the garbage collector removes
// the service once the VM is gone (a service with a VM cannot be deleted). It is done after
// the VM exists, and again whenever the cache shows the service without it.
func (r *Runtime) ownService(ctx context.Context, plan *v1b1.WorkloadPlan, vm *gov.ManagedVM) error {
	if vm.UID == "" || vm.DeletionTimestamp != nil || !metav1.IsControlledBy(vm, plan) {
		return nil
	}
	svc, err := r.services.SystemServices(plan.Namespace).Get(vm.Spec.SystemServiceRef.Name)
	if apierrors.IsNotFound(err) {
		return nil // not in the cache yet: its add event brings the plan back
	}
	if err != nil || !workloadServiceOf(svc, plan) {
		return err
	}
	for _, ref := range svc.OwnerReferences {
		if ref.UID == vm.UID {
			return nil
		}
	}
	updated := svc.DeepCopy()
	updated.OwnerReferences = append(updated.OwnerReferences, metav1.OwnerReference{
		APIVersion: gov.SchemeGroupVersion.String(), Kind: "ManagedVM", Name: vm.Name, UID: vm.UID})
	_, err = r.client.SystemServices(plan.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	return err
}

// planOwner is the plan as the controlling owner of what the runtime makes for it.
func planOwner(plan *v1b1.WorkloadPlan) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "WorkloadPlan", Name: plan.Name, UID: plan.UID, Controller: ptr.To(true)}
}
