// Package adoption is the adopter: it scans target clusters for VMs that carry the platform's
// labels but have no ManagedVM, and proposes each as a PendingAdoption.
//
// It writes no status. In memory it keeps only its informers' caches and the queue, which
// holds each cluster's next scan; a restart loses nothing the API shows, and every cluster is
// scanned at once.
package adoption

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	"github.com/plinth-dev/plinth/pkg/errkind"
	govclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/governance/v1alpha1"
	govinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/governance/v1alpha1"
	platforminformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/platform/v1alpha1"
	govlisters "github.com/plinth-dev/plinth/pkg/generated/listers/governance/v1alpha1"
	platformlisters "github.com/plinth-dev/plinth/pkg/generated/listers/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/governance/vmprovider"
)

// Name names the adopter in logs, metrics and events.
const Name = "adoption"

// FieldManager names the adopter in the managedFields of the PendingAdoptions it creates.
const FieldManager = "plinth-adoption"

// Listers are what the adopter reads from informers.
type Listers struct {
	// VMIndex is the ManagedVM informer's indexer, with VMIndexers added.
	VMIndex   cache.Indexer
	Services  govlisters.SystemServiceLister
	Adoptions govlisters.PendingAdoptionLister
	Clusters  platformlisters.ClusterLister
}

// Adopter scans each HEALTHY cluster for VMs that carry the platform's labels and point at an
// existing SystemService (of the System the labels name) but have no ManagedVM, and records
// each as a PendingAdoption in the VM's namespace for an administrator to adopt. Anything else
// is ignored. Candidates whose VM is gone are removed again. Its key is a cluster name.
type Adopter struct {
	*loop.Loop
	client   govclient.GovernanceV1alpha1Interface
	events   *transition.Recorder
	listers  Listers
	infra    vmprovider.InfrastructureProvider
	interval time.Duration
	now      func() time.Time
}

// NewController returns the adopter; it scans each cluster every interval, and at once when a
// Cluster is added or its spec changes. It reads ManagedVMs (through an identity index it
// adds: a VM must not look unmanaged to a cold cache), SystemServices, PendingAdoptions and
// Clusters.
func NewController(client govclient.GovernanceV1alpha1Interface, recorder events.EventRecorder, vms govinformers.ManagedVMInformer,
	services govinformers.SystemServiceInformer, adoptions govinformers.PendingAdoptionInformer, clusters platforminformers.ClusterInformer,
	infra vmprovider.InfrastructureProvider, interval time.Duration) (*Adopter, error) {
	if err := vms.Informer().AddIndexers(VMIndexers); err != nil {
		return nil, err
	}
	a := &Adopter{client: client, events: transition.New(recorder, gov.Reasons), infra: infra, interval: interval, now: time.Now, listers: Listers{
		VMIndex: vms.Informer().GetIndexer(), Services: services.Lister(), Adoptions: adoptions.Lister(), Clusters: clusters.Lister(),
	}}
	a.Loop = loop.New(Name, a.reconcile, vms.Informer(), services.Informer(), adoptions.Informer(), clusters.Informer())
	if err := a.WatchGenerations(clusters.Informer()); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Adopter) reconcile(ctx context.Context, key cache.ObjectName) error {
	cluster := key.Name
	cl, err := a.listers.Clusters.Get(cluster)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer a.EnqueueAfter(key, a.interval)
	if cl.Status.Phase != platform.ClusterPhaseHealthy {
		return nil
	}
	found, err := a.infra.ListVMs(ctx, cluster, map[string]string{gov.LabelManagedBy: gov.ManagedByValue})
	if errkind.Unreachable(err) {
		// Gone since its last probe: the next scan looks again, without a failure's backoff.
		return errkind.Waiting(err, a.interval)
	}
	if err != nil {
		return err
	}
	present := sets.New[string]()
	for i := range found {
		vm := &found[i]
		present.Insert(vm.Namespace + "/" + vm.Name)
		candidate, err := a.candidate(cluster, vm)
		if err != nil {
			return err
		}
		if candidate == nil {
			continue
		}
		if _, err := a.listers.Adoptions.PendingAdoptions(vm.Namespace).Get(candidate.Name); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		created, err := a.client.PendingAdoptions(vm.Namespace).Create(ctx, candidate, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err == nil {
			klog.FromContext(ctx).Info("Found a VM without a ManagedVM", "vm", klog.KRef(vm.Namespace, vm.Name))
			a.events.Record(created, gov.ReasonFound, "Scan",
				fmt.Sprintf("VirtualMachine %s on cluster %s has the platform's labels but no ManagedVM.", vm.Name, cluster))
		}
	}
	stale, err := a.listers.Adoptions.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pa := range stale {
		if pa.Spec.Cluster == cluster && !present.Has(pa.Namespace+"/"+pa.Spec.VMName) {
			if err := a.client.PendingAdoptions(pa.Namespace).Delete(ctx, pa.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

// candidate is the PendingAdoption for a found VM, or nil when the VM is managed already or
// its labels do not point at an existing service of the named system. An error is a cache
// that could not be read, retried by the caller.
func (a *Adopter) candidate(cluster string, vm *vmprovider.VM) (*gov.PendingAdoption, error) {
	instance, err := strconv.Atoi(vm.Labels[gov.LabelInstance])
	if err != nil || instance < 1 {
		return nil, nil
	}
	svc, err := a.listers.Services.SystemServices(vm.Namespace).Get(vm.Labels[gov.LabelService])
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if svc.Spec.SystemRef.Name != vm.Labels[gov.LabelSystem] {
		return nil, nil
	}
	for _, key := range []string{byInstanceName(vm.Namespace, vm.Name), byServiceInstance(vm.Namespace, svc.Name, instance)} {
		managed, err := a.listers.VMIndex.ByIndex(VMsByIdentity, key)
		if err != nil {
			return nil, err
		}
		if len(managed) > 0 {
			return nil, nil
		}
	}
	ref := gov.LocalObjectReference{Name: svc.Name}
	spec := gov.ManagedVMSpec{
		SystemServiceRef: ref, InstanceType: vm.Spec.InstanceType, Image: vm.Spec.Image, Template: vm.Spec.Template,
		RunStrategy: gov.RunStrategy(vm.Spec.RunStrategy), Reason: "Adopted from cluster " + cluster + ".",
	}
	if spec.InstanceType == "" && vm.Spec.Memory != nil {
		spec.Resources = &gov.VMResources{CPU: max(vm.Spec.CPU, 1), Memory: *vm.Spec.Memory}
	}
	if spec.RunStrategy == "" {
		spec.RunStrategy = gov.RunStrategyAlways
	}
	return &gov.PendingAdoption{
		ObjectMeta: metav1.ObjectMeta{
			Name: cluster + "-" + vm.Name, Namespace: vm.Namespace,
			Labels: map[string]string{gov.LabelManagedBy: gov.ManagedByValue},
		},
		Spec: gov.PendingAdoptionSpec{
			Cluster: cluster, VMName: vm.Name, SystemServiceRef: ref, Instance: int32(instance), VMSpec: spec,
			FoundAt: metav1.NewTime(a.now()),
		},
	}, nil
}
