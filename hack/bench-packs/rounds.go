package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	infrav1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
)

// window is what the processes used during the timed part of one side's round.
type window struct {
	// controllerCPU is plinth-controller's CPU seconds.
	controllerCPU float64
	// cpu is every process's CPU seconds: this one ("self": the Helm SDK on Helm's side) and
	// the platform's.
	cpu benchharness.Counts
	// requests are kube-apiserver's requests by resource and verb.
	requests benchharness.Counts
	wall     time.Duration
}

// meter reads the processes' usage at the start of a timed part.
type meter struct {
	e          *env
	controller benchharness.Usage
	cpu        benchharness.Counts
	requests   benchharness.Counts
	began      time.Time
}

// startMeter reads kube-apiserver's request counts (outside the CPU window: reading its
// metrics costs CPU), then the processes' CPU.
func (e *env) startMeter(ctx context.Context) (*meter, error) {
	m := &meter{e: e}
	var err error
	if m.requests, err = benchharness.APIRequests(ctx, e.cfg); err != nil {
		return nil, err
	}
	if m.controller, err = benchharness.ReadUsage(e.platform.ControllerPID()); err != nil {
		return nil, err
	}
	if m.cpu, err = benchharness.ProcessCPU(); err != nil {
		return nil, err
	}
	m.began = time.Now()
	return m, nil
}

// stop reads the usage again and returns the difference.
func (m *meter) stop(ctx context.Context) (window, error) {
	wall := time.Since(m.began)
	cpu, err := benchharness.ProcessCPU()
	if err != nil {
		return window{}, err
	}
	controller, err := benchharness.ReadUsage(m.e.platform.ControllerPID())
	if err != nil {
		return window{}, err
	}
	requests, err := benchharness.APIRequests(ctx, m.e.cfg)
	if err != nil {
		return window{}, err
	}
	return window{controllerCPU: controller.CPUSeconds - m.controller.CPUSeconds, cpu: cpu.Sub(m.cpu),
		requests: requests.Sub(m.requests), wall: wall}, nil
}

// packRound is what one pack delivery measured, each time from the pack's create.
type packRound struct {
	// rendered: the pack's status names its first revision (finalizer, chart pulled and
	// rendered, revision kept).
	rendered time.Duration
	// instance: the InfrastructurePackInstance on Cluster bench exists.
	instance time.Duration
	// ready: the instance is Ready with the revision delivered: the pack's time.
	ready time.Duration
	// driftPass is from Ready until the controller's first drift pass reported the delivered
	// objects clean; not part of the pack's time.
	driftPass time.Duration
	// driftPassControllerCPU is plinth-controller's CPU seconds over driftPass.
	driftPassControllerCPU float64
	// driftPassRequests and driftPassReconciles are kube-apiserver's requests and
	// plinth-controller's reconciles (by controller and result) over driftPass.
	driftPassRequests, driftPassReconciles benchharness.Counts
	// window is the usage from the create until Ready.
	window window
}

// helmRound is what one Helm install measured.
type helmRound struct {
	pulled, installed time.Duration
	window            window
}

// packObject is a pack of the benchmark chart at chartVersion from the registry at url,
// delivered to Cluster bench into namespace; count other than the chart's default is passed as
// a value.
func packObject(name, namespace, url, chartVersion string, count int) *infrav1alpha1.InfrastructureClusterPack {
	p := &infrav1alpha1.InfrastructureClusterPack{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: infrav1alpha1.InfrastructureClusterPackSpec{
			Version:         "v1.0.0",
			Chart:           &infrav1alpha1.PackChart{URL: url, Name: chartName, Version: chartVersion},
			TargetNamespace: namespace,
			TargetClusters:  []string{benchCluster},
		},
	}
	if count != defaultCount {
		p.Spec.Values = &common.RawObject{Raw: []byte(fmt.Sprintf(`{"count":%d}`, count))}
	}
	return p
}

// packRendered says the pack's status names a rendered revision.
func packRendered(p *infrav1alpha1.InfrastructureClusterPack) bool { return p.Status.Revision > 0 }

// instanceExists is true of any instance: the milestone of its creation.
func instanceExists(*infrav1alpha1.InfrastructurePackInstance) bool { return true }

// instanceReady says the instance delivered a revision and is Ready.
func instanceReady(i *infrav1alpha1.InfrastructurePackInstance) bool {
	return i.Status.DeliveredAt != nil && i.Status.Revision > 0 && meta.IsStatusConditionTrue(i.Status.Conditions, infrav1alpha1.ConditionReady)
}

// driftChecked says the controller's drift pass compared the instance's objects objects with
// the cluster and found them clean: the Drifted condition's message after a clean pass
// (pkg/controllers/packinstance) rather than the delivery's.
func driftChecked(objects int) func(*infrav1alpha1.InfrastructurePackInstance) bool {
	want := fmt.Sprintf("The %d delivered objects match", objects)
	return func(i *infrav1alpha1.InfrastructurePackInstance) bool {
		d := meta.FindStatusCondition(i.Status.Conditions, infrav1alpha1.ConditionDrifted)
		return d != nil && d.Status == metav1.ConditionFalse && d.Reason == infrav1alpha1.ReasonNoDrift && strings.HasPrefix(d.Message, want)
	}
}

// packRound delivers round r's pack of the chart at version to Cluster bench, checks the
// objects, then deletes the pack and its namespace.
func (e *env) packRound(ctx context.Context, r int, version string) (packRound, error) {
	name := fmt.Sprintf("pack-%02d", r)
	namespace := "bench-" + name
	ctx, cancel := context.WithTimeout(ctx, e.o.roundTimeout)
	defer cancel()
	res, err := e.deliverPack(ctx, name, namespace, version, defaultCount)
	if err != nil {
		return packRound{}, err
	}
	if err := e.countObjects(ctx, namespace, name, defaultCount); err != nil {
		return packRound{}, err
	}
	return res, e.deletePack(ctx, name, namespace)
}

// deliverPack creates a pack of count copies of the chart's kinds and waits until its
// instance on Cluster bench is Ready, then until the controller's first drift pass is done.
// A delivery that does not get there fails with the pack's and the instance's conditions.
func (e *env) deliverPack(ctx context.Context, name, namespace, version string, count int) (packRound, error) {
	packs := e.plinth.InfrastructureV1alpha1().InfrastructureClusterPacks(packNamespace)
	instances := e.plinth.InfrastructureV1alpha1().InfrastructurePackInstances(infrav1alpha1.InstanceNamespace(benchCluster))
	instance := infrav1alpha1.InstanceName(name, benchCluster)

	watches, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	rendered := benchharness.Await(watches, benchharness.ByName(packs, name), packRendered)
	created := benchharness.Await(watches, benchharness.ByName(instances, instance), instanceExists)
	ready := benchharness.Await(watches, benchharness.ByName(instances, instance), instanceReady)
	checked := benchharness.Await(watches, benchharness.ByName(instances, instance), driftChecked(count*kindsPerCopy))
	if err := benchharness.Opened(ctx, rendered, created, ready, checked); err != nil {
		return packRound{}, err
	}
	m, err := e.startMeter(ctx)
	if err != nil {
		return packRound{}, err
	}
	start := time.Now()
	if _, err := packs.Create(ctx, packObject(name, namespace, chartURL(e.registry), version, count), metav1.CreateOptions{}); err != nil {
		return packRound{}, err
	}
	var res packRound
	if res.ready, err = ready.Since(start); err != nil {
		return packRound{}, fmt.Errorf("pack %s/%s did not get Ready on Cluster %s (%s): %w", packNamespace, name, benchCluster, e.instanceState(context.Background(), name), err)
	}
	if res.window, err = m.stop(ctx); err != nil {
		return packRound{}, err
	}
	atReady, err := benchharness.ReadUsage(e.platform.ControllerPID())
	if err != nil {
		return packRound{}, err
	}
	requestsAtReady, reconcilesAtReady, err := e.counts(ctx)
	if err != nil {
		return packRound{}, err
	}
	if res.rendered, err = rendered.Since(start); err != nil {
		return packRound{}, err
	}
	if res.instance, err = created.Since(start); err != nil {
		return packRound{}, err
	}
	passDone, err := checked.Since(start)
	if err != nil {
		return packRound{}, fmt.Errorf("the controller's first drift pass of pack %s/%s did not report %d clean objects (%s): %w",
			packNamespace, name, count*kindsPerCopy, e.instanceState(context.Background(), name), err)
	}
	afterPass, err := benchharness.ReadUsage(e.platform.ControllerPID())
	if err != nil {
		return packRound{}, err
	}
	requests, reconciles, err := e.counts(ctx)
	if err != nil {
		return packRound{}, err
	}
	res.driftPass = passDone - res.ready
	res.driftPassControllerCPU = afterPass.CPUSeconds - atReady.CPUSeconds
	res.driftPassRequests, res.driftPassReconciles = requests.Sub(requestsAtReady), reconciles.Sub(reconcilesAtReady)
	return res, nil
}

// counts are kube-apiserver's requests and plinth-controller's reconciles so far.
func (e *env) counts(ctx context.Context) (requests, reconciles benchharness.Counts, err error) {
	if requests, err = benchharness.APIRequests(ctx, e.cfg); err != nil {
		return nil, nil, err
	}
	if reconciles, err = benchharness.Reconciles(ctx, e.platform.ControllerURL()); err != nil {
		return nil, nil, err
	}
	return requests, reconciles, nil
}

// deletePack deletes a pack, waits until it and its instance are gone (the instance's
// finalizer deletes what it delivered), then deletes the namespace it delivered into, which
// the controller created outside the delivered objects.
func (e *env) deletePack(ctx context.Context, name, namespace string) error {
	packs := e.plinth.InfrastructureV1alpha1().InfrastructureClusterPacks(packNamespace)
	instances := e.plinth.InfrastructureV1alpha1().InfrastructurePackInstances(infrav1alpha1.InstanceNamespace(benchCluster))
	if err := packs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	instance := infrav1alpha1.InstanceName(name, benchCluster)
	if err := benchharness.Gone(ctx, 2*time.Minute,
		func(ctx context.Context) error { _, err := packs.Get(ctx, name, metav1.GetOptions{}); return err },
		func(ctx context.Context) error {
			_, err := instances.Get(ctx, instance, metav1.GetOptions{})
			return err
		}); err != nil {
		return fmt.Errorf("deleting pack %s/%s (%s): %w", packNamespace, name, e.instanceState(context.Background(), name), err)
	}
	return e.deleteNamespace(ctx, namespace)
}

// helmRound installs round r's release of the chart at version with the Helm SDK, checks the
// objects, then deletes the release's namespace (its objects and the release Secret go with
// it).
func (e *env) helmRound(ctx context.Context, r int, version string) (helmRound, error) {
	name := fmt.Sprintf("helm-%02d", r)
	namespace := "bench-" + name
	ctx, cancel := context.WithTimeout(ctx, e.o.roundTimeout)
	defer cancel()
	dir, err := newHelmDir(e.helmDir, name)
	if err != nil {
		return helmRound{}, err
	}
	h := helmInstall{
		kubeconfig: e.platform.AdminKubeconfig(), discoveryCache: filepath.Join(e.helmDir, "discovery"), dir: dir,
		qps: float32(e.o.helmQPS), burst: e.o.helmBurst,
		chartRef: chartURL(e.registry) + "/" + chartName, version: version, namespace: namespace, release: name,
	}
	m, err := e.startMeter(ctx)
	if err != nil {
		return helmRound{}, err
	}
	t, _, err := h.run(ctx)
	if err != nil {
		return helmRound{}, err
	}
	w, err := m.stop(ctx)
	if err != nil {
		return helmRound{}, err
	}
	if err := e.countObjects(ctx, namespace, name, defaultCount); err != nil {
		return helmRound{}, err
	}
	return helmRound{pulled: t.pulled, installed: t.installed, window: w}, e.deleteNamespace(ctx, namespace)
}
