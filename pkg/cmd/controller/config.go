package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	kubevirtcompute "github.com/plinth-dev/plinth/pkg/compute/providers/governedvm"
	kubernetescompute "github.com/plinth-dev/plinth/pkg/compute/providers/kubernetes"
	"github.com/plinth-dev/plinth/pkg/controllers/adoption"
	"github.com/plinth-dev/plinth/pkg/controllers/cluster"
	"github.com/plinth-dev/plinth/pkg/controllers/clustergitops"
	"github.com/plinth-dev/plinth/pkg/controllers/clusterpack"
	"github.com/plinth-dev/plinth/pkg/controllers/computeprovider"
	"github.com/plinth-dev/plinth/pkg/controllers/computequota"
	"github.com/plinth-dev/plinth/pkg/controllers/managedvm"
	"github.com/plinth-dev/plinth/pkg/controllers/ociartifact"
	"github.com/plinth-dev/plinth/pkg/controllers/ociregistry"
	"github.com/plinth-dev/plinth/pkg/controllers/packinstance"
	"github.com/plinth-dev/plinth/pkg/controllers/reconciliationrequest"
	"github.com/plinth-dev/plinth/pkg/controllers/resourcebinding"
	"github.com/plinth-dev/plinth/pkg/controllers/tenantcompute"
	"github.com/plinth-dev/plinth/pkg/controllers/workload"
	"github.com/plinth-dev/plinth/pkg/controllers/workloadplan"
	"github.com/plinth-dev/plinth/pkg/credentials"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	plinthscheme "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/scheme"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	fluxdelivery "github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
	kubectldelivery "github.com/plinth-dev/plinth/pkg/gitops/delivery/kubectl"
	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
	kubevirtprovider "github.com/plinth-dev/plinth/pkg/governance/vmprovider/kubevirt"
	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/packs/render"
	"github.com/plinth-dev/plinth/pkg/packs/revisions"
)

// Config is what the controllers run with: clients and informer factories built from valid
// options. Building it contacts nothing.
type Config struct {
	Options *Options
	// Kube reaches the cluster's built-in APIs; Plinth, Plinth's aggregated ones (JSON: they
	// serve no protobuf); Dynamic and Mapper apply template provisioners' manifests.
	Kube    kubernetes.Interface
	Plinth  clientset.Interface
	Dynamic dynamic.Interface
	Mapper  *restmapper.DeferredDiscoveryRESTMapper
	// KubeInformers and PlinthInformers are shared by all controllers: each informer exists
	// once, however many controllers read it.
	KubeInformers   kubeinformers.SharedInformerFactory
	PlinthInformers informers.SharedInformerFactory
	// TenantInformers watch only what compute providers made for TenantComputes (objects
	// labelled compute.plinth.dev/tenant-id) in the cluster Plinth is aggregated into, so the
	// providers' caches hold their tenants' objects rather than every object of the cluster.
	TenantInformers kubeinformers.SharedInformerFactory
	// Events records events.k8s.io/v1 Events for every controller.
	Events events.EventBroadcaster
	// Keys opens target clusters' sealed kubeconfigs; nil without --encryption-key-file.
	Keys keyring.Source
}

// Config builds the clients. Call it on completed, validated options.
func (o *Options) Config() (*Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = o.QPS, o.Burst
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	plinthRC := rest.CopyConfig(rc)
	plinthRC.ContentType = runtime.ContentTypeJSON
	plinth, err := clientset.NewForConfig(plinthRC)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	resync := o.InformerResync
	c := &Config{
		Options: o, Kube: kube, Plinth: plinth, Dynamic: dyn,
		Mapper:          restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery())),
		KubeInformers:   kubeinformers.NewSharedInformerFactory(kube, resync),
		PlinthInformers: informers.NewSharedInformerFactory(plinth, resync),
		Events:          events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()}),
	}
	c.TenantInformers = kubeinformers.NewSharedInformerFactoryWithOptions(kube, resync,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = computev1alpha1.LabelTenantID }))
	if o.EncryptionKeyFile != "" {
		// Followed, like plinth-apiserver's: a key added by a rotation is used without a restart.
		if c.Keys, err = keyring.NewReloading(o.EncryptionKeyFile, keyring.ReloadInterval); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type completedConfig struct{ *Config }

// CompletedConfig is a Config that New and Run accept.
type CompletedConfig struct{ *completedConfig }

// Complete marks the config complete.
func (c *Config) Complete() CompletedConfig { return CompletedConfig{&completedConfig{c}} }

// Runnable is one controller: it waits for its caches, then reconciles until ctx ends.
type Runnable interface {
	Name() string
	Run(ctx context.Context, workers int) error
}

// New calls each controller's constructor with the informers it reads. Constructors register
// their handlers, so New must run before the factories start.
func (c CompletedConfig) New(ctx context.Context) ([]Runnable, error) {
	o := c.Options
	recorder := c.Events.NewRecorder(plinthscheme.Scheme, "plinth-controller")
	score, gov, platform := c.PlinthInformers.Score().V1b1(), c.PlinthInformers.Governance().V1alpha1(), c.PlinthInformers.Platform().V1alpha1()
	core, apps := c.KubeInformers.Core().V1(), c.KubeInformers.Apps().V1()

	workloads, err := workload.NewController(ctx, c.Plinth, recorder, score.Workloads(), score.ResourceBindings(), score.WorkloadPlans(),
		score.PlatformPolicies(), core.ConfigMaps(), core.Secrets(), core.Namespaces(), o.DefaultRuntimeClass)
	if err != nil {
		return nil, err
	}
	bindings, err := resourcebinding.NewController(c.Plinth, c.Kube, c.Dynamic, c.Mapper, recorder, score.ResourceBindings(),
		score.Provisioners(), score.Workloads(), core.Secrets(), core.Services(), apps.StatefulSets(), apps.Deployments(),
		c.KubeInformers.Networking().V1().Ingresses(), resourcebinding.Options{DNSDomain: o.DNSDomain, IngressClassName: o.IngressClassName, ProvisionersConfig: o.ProvisionersConfig})
	if err != nil {
		return nil, err
	}
	creds := credentials.NewClusterProvider(c.Plinth.PlatformV1alpha1(), platform.Clusters().Lister(), c.Keys)
	// One registry of compute providers by name: the Score runtimes WorkloadPlans run on and
	// the tenant-compute providers TenantComputes name. Everything is registered before the
	// controllers that read it are built.
	providers := compute.NewRegistry()
	kubernetesRuntime := kubernetescompute.New(c.Kube, apps.Deployments().Lister(), core.Services().Lister(), core.Secrets().Lister())
	// The tenant provider reads every RoleBinding, not only its own: the editors of a
	// TenantCompute's namespace may write the tenant's Secrets.
	kubernetesProvider := kubernetescompute.NewProvider(c.Kube, c.TenantInformers, c.KubeInformers.Rbac().V1().RoleBindings(), creds)
	for _, entry := range []compute.Entry{
		{Name: kubernetescompute.ProviderName, Runtime: kubernetesRuntime, Provider: kubernetesProvider},
		{Name: kubevirtcompute.Name, Provider: kubevirtcompute.NewProvider(c.Plinth, gov.ManagedVMs()),
			Runtime: kubevirtcompute.NewRuntime(c.Plinth, c.Kube, gov.ManagedVMs(), gov.SystemServices(), core.Services().Lister())},
	} {
		if err := providers.Register(entry); err != nil {
			return nil, err
		}
	}
	plans, err := workloadplan.New(c.Plinth, recorder, providers, score.WorkloadPlans(), score.ResourceBindings(),
		apps.Deployments(), core.Services(), core.Secrets())
	if err != nil {
		return nil, err
	}
	computeInformers := c.PlinthInformers.Compute().V1alpha1()
	tenants, err := tenantcompute.NewController(c.Plinth.ComputeV1alpha1(), recorder, computeInformers.TenantComputes(), providers,
		tenantcompute.Options{ResyncPeriod: o.ComputeResyncPeriod})
	if err != nil {
		return nil, err
	}
	published, err := computeprovider.NewController(c.Plinth.ComputeV1alpha1(), recorder, computeInformers.ComputeProviders(), providers,
		computeprovider.PlinthController)
	if err != nil {
		return nil, err
	}
	quotas, err := computequota.NewController(c.Kube, core.ResourceQuotas(), computeInformers.TenantComputes(),
		computequota.Options{ResyncPeriod: o.ComputeQuotaResyncPeriod})
	if err != nil {
		return nil, err
	}
	clusters, err := cluster.NewController(c.Plinth.PlatformV1alpha1(), recorder, platform.Clusters(), creds,
		cluster.Probe(o.ClusterProbeTimeout, kubevirtprovider.DetectFromConfig), o.ClusterProbeInterval)
	if err != nil {
		return nil, err
	}
	// GitOps: the registries plinth-controller runs, and the Clusters' registries and Flux.
	gitops := c.PlinthInformers.Gitops().V1alpha1()
	registries, err := ociregistry.NewController(c.Plinth.GitopsV1alpha1(), recorder, gitops.OCIRegistries(), ociregistry.Options{
		DataRoots: o.RegistryDataRoots, VolumeDir: o.RegistryVolumeDir, ProbeInterval: o.RegistryProbeInterval,
	})
	if err != nil {
		return nil, err
	}
	// One client cache of target clusters for every GitOps controller.
	gitopsClients := delivery.NewClients(creds, platform.Clusters().Lister())
	var fluxManifests *fluxinstall.Manifests
	if o.FluxManifestsDir != "" {
		// Read once: the directory is part of plinth-controller's image, validated already.
		if fluxManifests, err = fluxinstall.Load(o.FluxManifestsDir); err != nil {
			return nil, fmt.Errorf("--flux-manifests-dir: %w", err)
		}
	}
	clusterGitOps, err := clustergitops.NewController(c.Plinth, recorder, platform.Clusters(), gitops.OCIRegistries(), gitopsClients,
		clustergitops.Options{Namespace: o.GitOpsNamespace, ProbeInterval: o.ClusterProbeInterval, FluxManifests: fluxManifests})
	if err != nil {
		return nil, err
	}
	// "Reconcile now": Flux's annotation on each target, followed until handled and Ready.
	reconciliations, err := reconciliationrequest.NewController(c.Plinth.GitopsV1alpha1(), recorder, gitops.ReconciliationRequests(),
		gitops.OCIArtifacts(), platform.Clusters(), gitopsClients, reconciliationrequest.Options{})
	if err != nil {
		return nil, err
	}
	// OCIArtifacts: pushed to their registries in Flux's format and delivered by the engine of
	// each target Cluster; the Kustomizations of Flux targets are watched through the same
	// clients, so an artifact turns Ready as soon as Flux does.
	engines := map[platformv1alpha1.GitOpsEngine]delivery.Engine{
		platformv1alpha1.GitOpsEngineKubectl: kubectldelivery.New(gitopsClients),
		platformv1alpha1.GitOpsEngineFlux:    fluxdelivery.New(gitopsClients),
	}
	artifacts, err := ociartifact.NewController(c.Plinth, recorder, gitops.OCIArtifacts(), gitops.OCIRegistries(), platform.Clusters(),
		core.ConfigMaps(), engines, ociartifact.Options{Clients: gitopsClients})
	if err != nil {
		return nil, err
	}
	// Infrastructure packs: rendered once per pack and Kubernetes version, kept as Secrets,
	// delivered per cluster by the instance controller through the cluster's engine.
	infraInformers := c.PlinthInformers.Infrastructure().V1alpha1()
	packStore := revisions.NewStore(c.Kube)
	packs, err := clusterpack.NewController(c.Plinth, c.Kube, recorder, infraInformers.InfrastructureClusterPacks(),
		infraInformers.InfrastructurePackInstances(), platform.Clusters(), render.New(), packStore, clusterpack.Options{})
	if err != nil {
		return nil, err
	}
	packInstances, err := packinstance.NewController(c.Plinth, recorder, infraInformers.InfrastructurePackInstances(),
		infraInformers.InfrastructureClusterPacks(), platform.Clusters(), gitops.OCIArtifacts(), gitopsClients, packStore,
		packinstance.Options{DriftInterval: o.PackDriftInterval})
	if err != nil {
		return nil, err
	}
	infra := kubevirtprovider.New(kubevirtprovider.FromCredentials(creds))
	vms, err := managedvm.NewController(ctx, c.Plinth.GovernanceV1alpha1(), recorder, gov.ManagedVMs(), gov.VMRevisions(), gov.ApprovalTickets(),
		platform.Clusters(), infra, o.VMPollInterval, o.VMResyncInterval)
	if err != nil {
		return nil, err
	}
	adopter, err := adoption.NewController(c.Plinth.GovernanceV1alpha1(), recorder, gov.ManagedVMs(), gov.SystemServices(), gov.PendingAdoptions(),
		platform.Clusters(), infra, o.AdoptionScanInterval)
	if err != nil {
		return nil, err
	}
	return []Runnable{workloads, bindings, plans, clusters, vms, adopter, withWorkers{tenants, o.ComputeWorkers}, published, quotas,
		registries, clusterGitOps, reconciliations, artifacts, packs, withWorkers{packInstances, o.PackWorkers}}, nil
}

// withWorkers runs a controller with a worker count of its own instead of --workers.
type withWorkers struct {
	Runnable
	workers int
}

// Run runs the controller with its own worker count.
func (w withWorkers) Run(ctx context.Context, _ int) error { return w.Runnable.Run(ctx, w.workers) }

// Run builds the controllers, starts the caches, the event sink and the health server, and
// runs the controllers while leading.
func (c CompletedConfig) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	controllers, err := c.New(ctx)
	if err != nil {
		return err
	}
	c.PlinthInformers.Start(ctx.Done())
	c.KubeInformers.Start(ctx.Done())
	c.TenantInformers.Start(ctx.Done())
	defer c.PlinthInformers.Shutdown()
	defer c.KubeInformers.Shutdown()
	defer c.TenantInformers.Shutdown()
	if err := c.Events.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	defer c.Events.Shutdown()

	var watchdog *leaderelection.HealthzAdaptor
	if c.Options.LeaderElection.LeaderElect {
		// /healthz fails when this process believes it leads but has not renewed its lease for
		// longer than the renew deadline plus this slack: a stuck leader gets restarted.
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	server := c.healthServer(watchdog)
	go func() {
		if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Health server stopped")
		}
	}()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
	}()

	// runAll returns once every controller has stopped, its workers included.
	runAll := func(ctx context.Context) {
		var running sync.WaitGroup
		for _, ctrl := range controllers {
			running.Go(func() {
				if err := ctrl.Run(ctx, c.Options.Workers); err != nil {
					logger.Error(err, "Controller stopped", "controller", ctrl.Name())
				}
			})
		}
		running.Wait()
	}
	if !c.Options.LeaderElection.LeaderElect {
		runAll(ctx)
		return nil
	}
	return c.lead(ctx, watchdog, runAll)
}

// lead runs fn while this process holds the lease; it returns when ctx ends.
func (c CompletedConfig) lead(ctx context.Context, watchdog *leaderelection.HealthzAdaptor, fn func(context.Context)) error {
	le := c.Options.LeaderElection
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	id := fmt.Sprintf("%s_%d", host, os.Getpid())
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		c.Kube.CoreV1(), c.Kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("identity", id)
	// The elector releases the lease as soon as its context ends (ReleaseOnCancel), without
	// waiting for OnStartedLeading. So it gets a context of its own, ended on shutdown only
	// once the controllers have stopped: a standby never starts while this process is still
	// in a reconcile.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	var leading atomic.Bool
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		if leading.Load() {
			<-stopped
		}
		stopElector()
	}()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: le.ResourceName, ReleaseOnCancel: true, WatchDog: watchdog,
		LeaseDuration: le.LeaseDuration.Duration, RenewDeadline: le.RenewDeadline.Duration, RetryPeriod: le.RetryPeriod.Duration,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				leading.Store(true)
				defer close(stopped)
				logger.Info("Leading: reconciling")
				// The controllers stop when leadership is lost or the process shuts down.
				runCtx, cancel := context.WithCancel(leadCtx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				fn(runCtx)
			},
			OnStoppedLeading: func() { logger.Info("Stopped leading") },
			OnNewLeader:      func(leader string) { logger.Info("Current leader", "leader", leader) },
		},
	})
	if err != nil {
		return err
	}
	elector.Run(electorCtx)
	return nil
}

// healthServer serves /healthz (the process and, when electing, the leader's lease), /readyz
// (every informer's cache synced) and /metrics.
func (c CompletedConfig) healthServer(watchdog *leaderelection.HealthzAdaptor) *http.Server {
	mux := http.NewServeMux()
	checks := []healthz.HealthChecker{healthz.PingHealthz}
	if watchdog != nil {
		checks = append(checks, watchdog)
	}
	healthz.InstallHandler(mux, checks...)
	synced := []healthz.HealthChecker{healthz.NewInformerSyncHealthz(c.KubeInformers), healthz.NewInformerSyncHealthz(c.PlinthInformers),
		healthz.NewInformerSyncHealthz(c.TenantInformers)}
	healthz.InstallReadyzHandler(mux, healthz.PingHealthz, healthz.NamedCheck("informer-sync", func(r *http.Request) error {
		for _, s := range synced {
			if err := s.Check(r); err != nil {
				return err
			}
		}
		return nil
	}))
	mux.Handle("/metrics", legacyregistry.Handler())
	return &http.Server{Addr: c.Options.BindAddress, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
}
