// Package controller is plinth-controller's command: flags → options → run. It runs the
// orchestrator, the resolver and the runtime controllers on the elected leader; standbys keep
// their caches warm and take over when the lease expires.
package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	governancev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
	kubernetesruntime "github.com/plinth-dev/plinth/pkg/compute/providers/kubernetes"
	clustercontroller "github.com/plinth-dev/plinth/pkg/controllers/cluster"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/orchestrator"
	"github.com/plinth-dev/plinth/pkg/controllers/resolver"
	runtimecontroller "github.com/plinth-dev/plinth/pkg/controllers/runtime"
	"github.com/plinth-dev/plinth/pkg/controllers/vmruntime"
	"github.com/plinth-dev/plinth/pkg/credentials"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/platformpolicy"
	kubevirtprovider "github.com/plinth-dev/plinth/pkg/provider/kubevirt"
)

// Options are plinth-controller's flags.
type Options struct {
	Kubeconfig          string
	BindAddress         string
	Workers             int
	DefaultRuntimeClass string
	DNSDomain           string
	IngressClassName    string
	LeaderElect         bool
	LeaseNamespace      string
	LeaseName           string
	LeaseDuration       time.Duration
	RenewDeadline       time.Duration
	RetryPeriod         time.Duration
	QPS                 float32
	Burst               int
	ProvisionersConfig  string
	// EncryptionKeyFile is the key file shared with plinth-apiserver that opens target
	// clusters' sealed kubeconfigs.
	EncryptionKeyFile    string
	ClusterProbeInterval time.Duration
	ClusterProbeTimeout  time.Duration
	// VMPollInterval is how soon a VM in transition is looked at again; VMResyncInterval, a VM
	// at rest; AdoptionScanInterval, how often each cluster is scanned for VMs to adopt.
	VMPollInterval       time.Duration
	VMResyncInterval     time.Duration
	AdoptionScanInterval time.Duration
}

// NewCommand returns the plinth-controller command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := &Options{
		BindAddress: ":10280", Workers: 4, DefaultRuntimeClass: "kubernetes", DNSDomain: "plinth.local",
		LeaderElect: true, LeaseNamespace: "plinth-system", LeaseName: "plinth-controller",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		QPS: 200, Burst: 400,
		ClusterProbeInterval: 30 * time.Second, ClusterProbeTimeout: 10 * time.Second,
		VMPollInterval: time.Second, VMResyncInterval: 30 * time.Second, AdoptionScanInterval: 30 * time.Second,
	}
	cmd := &cobra.Command{
		Use:          "plinth-controller",
		Short:        "Orchestrate Plinth Workloads into resource bindings, plans and running workloads",
		SilenceUsage: true,
		RunE:         func(c *cobra.Command, _ []string) error { return o.Run(c.Context()) },
	}
	cmd.SetContext(ctx)
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "Kubeconfig of the cluster; empty means in-cluster configuration.")
	f.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address of /healthz, /readyz and /metrics.")
	f.IntVar(&o.Workers, "workers", o.Workers, "Concurrent reconciles per controller.")
	f.StringVar(&o.DefaultRuntimeClass, "default-runtime-class", o.DefaultRuntimeClass, "Runtime class for workloads that name none after admission.")
	f.StringVar(&o.DNSDomain, "dns-domain", o.DNSDomain, "Domain under which dns resources get host names.")
	f.StringVar(&o.IngressClassName, "ingress-class", o.IngressClassName, "IngressClass of the Ingresses that route resources create; empty means the cluster's default class.")
	f.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader on a Lease; only the leader reconciles.")
	f.StringVar(&o.LeaseNamespace, "leader-elect-namespace", o.LeaseNamespace, "Namespace of the leader Lease.")
	f.StringVar(&o.LeaseName, "leader-elect-name", o.LeaseName, "Name of the leader Lease.")
	f.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby waits before taking over an unrenewed lease.")
	f.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader tries to renew before giving up.")
	f.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew.")
	f.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second the controller may send to the API servers.")
	f.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests above --kube-api-qps.")
	f.StringVar(&o.EncryptionKeyFile, "encryption-key-file", "", "plinth-apiserver's key file, which opens target clusters' sealed kubeconfigs. Without it, no target cluster is used.")
	f.DurationVar(&o.ClusterProbeInterval, "cluster-probe-interval", o.ClusterProbeInterval, "How often each target cluster's health and capabilities are probed.")
	f.DurationVar(&o.ClusterProbeTimeout, "cluster-probe-timeout", o.ClusterProbeTimeout, "How long one probe request to a target cluster may take.")
	f.DurationVar(&o.VMPollInterval, "vm-poll-interval", o.VMPollInterval, "How soon a governed VM in transition (creating, stopping, a ticket executing) is looked at again.")
	f.DurationVar(&o.VMResyncInterval, "vm-resync-interval", o.VMResyncInterval, "How often a governed VM at rest is compared with its cluster.")
	f.DurationVar(&o.AdoptionScanInterval, "adoption-scan-interval", o.AdoptionScanInterval, "How often each HEALTHY cluster is scanned for labelled VMs without a ManagedVM.")
	f.StringVar(&o.ProvisionersConfig, "provisioners-config", "", "File of template provisioners that add resource types, or redefine built-in ones (see docs/controller.md).")
	return cmd
}

// Run starts caches and the health server, then reconciles while leading.
func (o *Options) Run(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	plinthCfg := rest.CopyConfig(cfg)
	plinthCfg.ContentType = runtime.ContentTypeJSON
	plinth, err := clientset.NewForConfig(plinthCfg)
	if err != nil {
		return err
	}
	plinthInformers := informers.NewSharedInformerFactory(plinth, 10*time.Minute)
	kubeInformers := kubeinformers.NewSharedInformerFactory(kube, 10*time.Minute)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	controllers, err := o.build(kube, plinth, dyn, mapper, plinthInformers, kubeInformers)
	if err != nil {
		return err
	}
	plinthInformers.Start(ctx.Done())
	kubeInformers.Start(ctx.Done())

	ready := make(chan struct{})
	go func() {
		plinthInformers.WaitForCacheSync(ctx.Done())
		kubeInformers.WaitForCacheSync(ctx.Done())
		close(ready)
	}()
	server := o.healthServer(ready)
	go func() {
		if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Health server stopped")
		}
	}()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
	}()

	runAll := func(ctx context.Context) {
		for _, c := range controllers {
			go func(l *loop.Loop) {
				if err := l.Run(ctx, o.Workers); err != nil {
					klog.ErrorS(err, "Controller stopped")
				}
			}(c)
		}
		<-ctx.Done()
	}
	if !o.LeaderElect {
		runAll(ctx)
		return nil
	}
	id, _ := os.Hostname()
	id = fmt.Sprintf("%s_%d", id, os.Getpid())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaseNamespace, o.LeaseName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return err
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, Name: o.LeaseName, ReleaseOnCancel: true,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				klog.InfoS("Leading: reconciling", "identity", id)
				runAll(ctx)
			},
			OnStoppedLeading: func() { klog.InfoS("Stopped leading", "identity", id) },
			OnNewLeader:      func(leader string) { klog.InfoS("Current leader", "identity", leader) },
		},
	})
	return nil
}

func (o *Options) healthServer(ready <-chan struct{}) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
			_, _ = w.Write([]byte("ok"))
		default:
			http.Error(w, "caches are not synced", http.StatusServiceUnavailable)
		}
	})
	mux.Handle("/metrics", legacyregistry.Handler())
	return &http.Server{Addr: o.BindAddress, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
}

// build wires the controllers to their informers.
func (o *Options) build(kube kubernetes.Interface, plinth clientset.Interface, dyn dynamic.Interface, mapper meta.RESTMapper,
	pf informers.SharedInformerFactory, kf kubeinformers.SharedInformerFactory) ([]*loop.Loop, error) {
	score := pf.Score().V1b1()
	workloads, bindings, plans, policies := score.Workloads(), score.ResourceBindings(), score.WorkloadPlans(), score.PlatformPolicies()
	configMaps, secrets, namespaces, services := kf.Core().V1().ConfigMaps(), kf.Core().V1().Secrets(), kf.Core().V1().Namespaces(), kf.Core().V1().Services()
	deployments, statefulSets := kf.Apps().V1().Deployments(), kf.Apps().V1().StatefulSets()
	apiVersion := v1b1.SchemeGroupVersion.String()

	policySnapshot := &platformpolicy.Snapshot{}
	orch := orchestrator.New(plinth, orchestrator.Listers{
		Workloads: workloads.Lister(), Bindings: bindings.Lister(), Plans: plans.Lister(), Policies: policySnapshot,
		ConfigMaps: configMaps.Lister(), Secrets: secrets.Lister(), Namespaces: namespaces.Lister(),
	}, o.DefaultRuntimeClass)
	allWorkloads := func(interface{}) []string {
		list, _ := workloads.Lister().List(labels.Everything())
		keys := make([]string, 0, len(list))
		for _, w := range list {
			keys = append(keys, w.Namespace+"/"+w.Name)
		}
		return keys
	}
	workloadsUsingConfigMap := func(obj interface{}) []string {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			return nil
		}
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		list, _ := workloads.Lister().Workloads(ns).List(labels.Everything())
		var keys []string
		for _, w := range list {
			if s := w.Spec.Source; s != nil && s.ConfigMapRef != nil && s.ConfigMapRef.Name == name {
				keys = append(keys, ns+"/"+w.Name)
			}
		}
		return keys
	}
	for _, err := range []error{
		orch.Watch(workloads.Informer()),
		orch.WatchMapped(bindings.Informer(), loop.OwnerKeys(apiVersion, "Workload")),
		orch.WatchMapped(plans.Informer(), loop.OwnerKeys(apiVersion, "Workload")),
		// One handler refreshes the compiled policies and then re-queues every workload, so no
		// reconcile can see the change's event before the snapshot has it.
		orch.WatchMapped(policies.Informer(), func(obj interface{}) []string {
			all, _ := policies.Lister().List(labels.Everything())
			policySnapshot.Set(all)
			return allWorkloads(obj)
		}),
		orch.WatchMapped(configMaps.Informer(), workloadsUsingConfigMap),
	} {
		if err != nil {
			return nil, err
		}
	}
	_ = secrets.Informer()
	_ = namespaces.Informer()

	env := resolver.Env{
		Client: kube, Secrets: secrets.Lister(), Services: services.Lister(), StatefulSets: statefulSets.Lister(), DNSDomain: o.DNSDomain,
		IngressClassName: o.IngressClassName,
		Dynamic:          dyn, Mapper: mapper,
	}
	provisioners := resolver.Builtins(env)
	if o.ProvisionersConfig != "" {
		templates, err := resolver.LoadTemplates(o.ProvisionersConfig, env)
		if err != nil {
			return nil, err
		}
		for typ, p := range templates {
			provisioners[typ] = p
		}
	}
	res := resolver.New(plinth, bindings.Lister(), provisioners)
	for _, err := range []error{
		res.Watch(bindings.Informer()),
		res.WatchMapped(statefulSets.Informer(), loop.OwnerKeys(apiVersion, "ResourceBinding")),
		// Template provisioners may run Deployments; their readiness decides the binding's.
		res.WatchMapped(deployments.Informer(), loop.OwnerKeys(apiVersion, "ResourceBinding")),
	} {
		if err != nil {
			return nil, err
		}
	}
	_ = services.Informer()

	runtimes := compute.NewRegistry()
	if err := runtimes.Register(kubernetesruntime.New(kube, deployments.Lister(), services.Lister(), secrets.Lister())); err != nil {
		return nil, err
	}
	rt := runtimecontroller.New(plinth, plans.Lister(), bindings.Lister(), runtimes)
	planOfBinding := func(obj interface{}) []string {
		b, ok := obj.(*v1b1.ResourceBinding)
		if !ok {
			return nil
		}
		// A shared binding feeds the plan of every workload that uses it.
		var keys []string
		for k := range b.Labels {
			if workload, found := strings.CutPrefix(k, v1b1.WorkloadBindingLabel("")); found {
				keys = append(keys, b.Namespace+"/"+workload)
			}
		}
		return keys
	}
	for _, err := range []error{
		rt.Watch(plans.Informer()),
		rt.WatchMapped(deployments.Informer(), loop.OwnerKeys(apiVersion, "WorkloadPlan")),
		rt.WatchMapped(bindings.Informer(), planOfBinding),
	} {
		if err != nil {
			return nil, err
		}
	}
	var keys keyring.Source
	if o.EncryptionKeyFile != "" {
		// Followed, like plinth-apiserver's: a key added by a rotation is used without a restart.
		reloading, err := keyring.NewReloading(o.EncryptionKeyFile, keyring.ReloadInterval)
		if err != nil {
			return nil, err
		}
		keys = reloading
	}
	clusters := pf.Platform().V1alpha1().Clusters()
	clusterCreds := credentials.NewClusterProvider(plinth.PlatformV1alpha1(), clusters.Lister(), keys)
	prober := clustercontroller.New(plinth.PlatformV1alpha1(), clusters.Lister(), clusterCreds,
		clustercontroller.Probe(o.ClusterProbeTimeout, kubevirtprovider.DetectFromConfig), o.ClusterProbeInterval)
	if err := prober.WatchGenerations(clusters.Informer()); err != nil {
		return nil, err
	}
	vmRuntime, adopter, err := o.buildVMRuntime(plinth, pf, clusterCreds)
	if err != nil {
		return nil, err
	}
	return []*loop.Loop{orch.Loop, res.Loop, rt.Loop, prober.Loop, vmRuntime.Loop, adopter.Loop}, nil
}

// buildVMRuntime wires the governed-VM runtime and the adopter to the KubeVirt provider.
func (o *Options) buildVMRuntime(plinth clientset.Interface, pf informers.SharedInformerFactory, creds credentials.Provider) (*vmruntime.Controller, *vmruntime.Adopter, error) {
	g := pf.Governance().V1alpha1()
	vms, revisions, tickets, services, adoptions := g.ManagedVMs(), g.VMRevisions(), g.ApprovalTickets(), g.SystemServices(), g.PendingAdoptions()
	clusters := pf.Platform().V1alpha1().Clusters()
	infra := kubevirtprovider.New(kubevirtprovider.FromCredentials(creds))
	// Lookups by target VM and by VM identity run on every poll; index them.
	for informer, indexers := range map[cache.SharedIndexInformer]cache.Indexers{
		tickets.Informer(): vmruntime.TicketIndexers, vms.Informer(): vmruntime.VMIndexers,
	} {
		if err := informer.AddIndexers(indexers); err != nil {
			return nil, nil, err
		}
	}
	rt := vmruntime.New(plinth.GovernanceV1alpha1(), vmruntime.Listers{
		VMs: vms.Lister(), Revisions: revisions.Lister(), Tickets: tickets.Lister(), Clusters: clusters.Lister(),
		TicketIndex: tickets.Informer().GetIndexer(),
	}, infra, o.VMPollInterval, o.VMResyncInterval)
	vmsOnCluster := func(obj interface{}) []string {
		c, ok := obj.(*platformv1alpha1.Cluster)
		if !ok {
			return nil
		}
		all, _ := vms.Lister().List(labels.Everything())
		var keys []string
		for _, vm := range all {
			if vm.Status.Cluster == c.Name {
				keys = append(keys, vm.Namespace+"/"+vm.Name)
			}
		}
		return keys
	}
	for _, err := range []error{
		rt.Watch(vms.Informer()),
		rt.WatchMapped(tickets.Informer(), func(obj interface{}) []string {
			if t, ok := obj.(*governancev1alpha1.ApprovalTicket); ok {
				return []string{t.Namespace + "/" + t.Spec.TargetRef.Name}
			}
			return nil
		}),
		rt.WatchMapped(revisions.Informer(), func(obj interface{}) []string {
			if r, ok := obj.(*governancev1alpha1.VMRevision); ok {
				return []string{r.Namespace + "/" + r.Spec.VMName}
			}
			return nil
		}),
		// Probes rewrite a Cluster's status every interval; its VMs care only when the
		// phase changes.
		rt.WatchMappedIf(clusters.Informer(), vmsOnCluster, func(oldObj, obj interface{}) bool {
			o, ok1 := oldObj.(*platformv1alpha1.Cluster)
			n, ok2 := obj.(*platformv1alpha1.Cluster)
			return !ok1 || !ok2 || o.Status.Phase != n.Status.Phase
		}),
	} {
		if err != nil {
			return nil, nil, err
		}
	}
	adopter := vmruntime.NewAdopter(plinth.GovernanceV1alpha1(), vmruntime.AdopterListers{
		VMIndex: vms.Informer().GetIndexer(), Services: services.Lister(), Adoptions: adoptions.Lister(), Clusters: clusters.Lister(),
	}, infra, o.AdoptionScanInterval)
	if err := adopter.WatchGenerations(clusters.Informer()); err != nil {
		return nil, nil, err
	}
	// The adopter reads these through listers: a VM must not look unmanaged to a cold cache.
	adopter.WaitFor(vms.Informer(), services.Informer(), adoptions.Informer())
	return rt, adopter, nil
}
