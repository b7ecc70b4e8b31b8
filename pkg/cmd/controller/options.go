// Package controller is plinth-controller's command, in sample-apiserver's order: flags →
// Options → Complete → Validate → Config → CompletedConfig.New → Run. Nothing is contacted,
// listened on or started before validation has passed. It only builds clients and informer
// factories, calls each controller's constructor (each controller registers its own handlers
// and waits for its own caches) and runs them on the elected leader; standbys keep their caches
// warm and take over when the lease expires.
package controller

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	componentbasevalidation "k8s.io/component-base/config/validation"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/controllers/clustergitops"
	"github.com/plinth-dev/plinth/pkg/controllers/ociregistry"
	"github.com/plinth-dev/plinth/pkg/controllers/packinstance"
	"github.com/plinth-dev/plinth/pkg/controllers/resourcebinding"
	"github.com/plinth-dev/plinth/pkg/gitops/fluxinstall"
	"github.com/plinth-dev/plinth/pkg/version"
)

// Options are plinth-controller's flags.
type Options struct {
	Kubeconfig  string
	BindAddress string
	Workers     int
	// ComputeWorkers is the tenant-compute controller's own worker count: its reconciles wait
	// on the provider's requests to target clusters, so more of them run at once than the
	// other controllers need.
	ComputeWorkers      int
	DefaultRuntimeClass string
	DNSDomain           string
	IngressClassName    string
	// LeaderElection is component-base's configuration, bound to its standard --leader-elect*
	// flags.
	LeaderElection     componentbaseconfig.LeaderElectionConfiguration
	QPS                float32
	Burst              int
	ProvisionersConfig string
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
	// ComputeResyncPeriod is how often a Ready or Stopped TenantCompute is checked against its
	// spec with its provider's Update.
	ComputeResyncPeriod time.Duration
	// ComputeQuotaResyncPeriod is how often every ResourceQuota that limits a compute resource
	// is recounted from the TenantComputes (kube-controller-manager's
	// --resource-quota-sync-period for the compute resources).
	ComputeQuotaResyncPeriod time.Duration
	// RegistryVolumeDir is where OCIRegistries that name no dataPath keep their data, one
	// directory per volume; RegistryDataRoots are the directories a spec.dataPath must be inside
	// (default: RegistryVolumeDir alone), so that an OCIRegistry cannot make plinth-controller
	// write anywhere on its host. RegistryProbeInterval is how often each registry's /v2/ and
	// storage are checked.
	RegistryVolumeDir     string
	RegistryDataRoots     []string
	RegistryProbeInterval time.Duration
	// GitOpsNamespace is where the OCIRegistries of Clusters with spec.gitOps.registryEnabled
	// are created.
	GitOpsNamespace string
	// FluxManifestsDir holds Flux's CRDs, <dir>/<controller>/*.yaml and a VERSION file, with
	// which Flux is installed on Clusters with spec.gitOps.installFlux; empty means no install.
	FluxManifestsDir string
	// PackDriftInterval is how often each delivered InfrastructurePackInstance is compared
	// with its cluster; PackWorkers is how many instances are delivered or compared at once.
	PackDriftInterval time.Duration
	PackWorkers       int
	// InformerResync is how often the shared informers replay their caches to the
	// controllers' handlers. Controllers write nothing when a replay finds nothing changed; a
	// test shortens it to see that they do not.
	InformerResync time.Duration
}

// DefaultRegistryVolumeDir is where registries keep their data unless --registry-volume-dir
// says otherwise: plinth-controller's data directory, a volume of its pod.
const DefaultRegistryVolumeDir = "/var/lib/plinth-controller/registries"

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		BindAddress: ":10280", Workers: 4, ComputeWorkers: 16, DefaultRuntimeClass: "kubernetes", DNSDomain: "plinth.local",
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect: true, ResourceLock: resourcelock.LeasesResourceLock,
			ResourceNamespace: "plinth-system", ResourceName: "plinth-controller",
			LeaseDuration: metav1.Duration{Duration: 15 * time.Second}, RenewDeadline: metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod: metav1.Duration{Duration: 2 * time.Second},
		},
		QPS: 200, Burst: 400,
		ClusterProbeInterval: 30 * time.Second, ClusterProbeTimeout: 10 * time.Second,
		VMPollInterval: time.Second, VMResyncInterval: 30 * time.Second, AdoptionScanInterval: 30 * time.Second,
		ComputeResyncPeriod: 5 * time.Minute, ComputeQuotaResyncPeriod: 5 * time.Minute,
		RegistryVolumeDir: DefaultRegistryVolumeDir, RegistryProbeInterval: ociregistry.DefaultProbeInterval,
		GitOpsNamespace:   clustergitops.DefaultNamespace,
		PackDriftInterval: packinstance.DefaultDriftInterval, PackWorkers: 8,
		InformerResync: 10 * time.Minute,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the cluster; empty means in-cluster configuration.")
	f.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address of /healthz, /readyz and /metrics.")
	f.IntVar(&o.Workers, "workers", o.Workers, "Concurrent reconciles per controller.")
	f.IntVar(&o.ComputeWorkers, "compute-workers", o.ComputeWorkers, "Concurrent reconciles of the tenant-compute controller, whose reconciles wait on the provider's requests to target clusters.")
	f.StringVar(&o.DefaultRuntimeClass, "default-runtime-class", o.DefaultRuntimeClass, "Runtime class for workloads that name none after admission.")
	f.StringVar(&o.DNSDomain, "dns-domain", o.DNSDomain, "Domain under which dns resources get host names.")
	f.StringVar(&o.IngressClassName, "ingress-class", o.IngressClassName, "IngressClass of the Ingresses that route resources create; empty means the cluster's default class.")
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, f)
	f.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second the controller may send to the API servers.")
	f.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests above --kube-api-qps.")
	f.StringVar(&o.EncryptionKeyFile, "encryption-key-file", o.EncryptionKeyFile, "plinth-apiserver's key file, which opens target clusters' sealed kubeconfigs. Without it, no target cluster is used.")
	f.DurationVar(&o.ClusterProbeInterval, "cluster-probe-interval", o.ClusterProbeInterval, "How often each target cluster's health and capabilities are probed.")
	f.DurationVar(&o.ClusterProbeTimeout, "cluster-probe-timeout", o.ClusterProbeTimeout, "How long one probe request to a target cluster may take.")
	f.DurationVar(&o.VMPollInterval, "vm-poll-interval", o.VMPollInterval, "How soon a governed VM in transition (creating, stopping, a ticket executing) is looked at again.")
	f.DurationVar(&o.VMResyncInterval, "vm-resync-interval", o.VMResyncInterval, "How often a governed VM at rest is compared with its cluster.")
	f.DurationVar(&o.AdoptionScanInterval, "adoption-scan-interval", o.AdoptionScanInterval, "How often each HEALTHY cluster is scanned for labelled VMs without a ManagedVM.")
	f.DurationVar(&o.ComputeResyncPeriod, "compute-resync-period", o.ComputeResyncPeriod, "How often a Ready or Stopped TenantCompute is checked against its spec by its provider (annotate it with compute.plinth.dev/reconcile-requested-at to check it now).")
	f.DurationVar(&o.ComputeQuotaResyncPeriod, "compute-quota-resync-period", o.ComputeQuotaResyncPeriod, "How often every ResourceQuota that limits compute.plinth.dev resources is recounted from the TenantComputes, which gives back what admission charged for creates refused after it.")
	f.StringVar(&o.RegistryVolumeDir, "registry-volume-dir", o.RegistryVolumeDir, "Absolute directory of the OCI registries' volumes: an OCIRegistry without spec.dataPath stores in <dir>/<spec.volumeName>, or <dir>/<namespace>-<name>.")
	f.StringSliceVar(&o.RegistryDataRoots, "registry-data-roots", o.RegistryDataRoots, "Absolute directories an OCIRegistry's spec.dataPath must be inside; a dataPath elsewhere is refused (default: --registry-volume-dir).")
	f.DurationVar(&o.RegistryProbeInterval, "registry-probe-interval", o.RegistryProbeInterval, "How often each OCI registry's /v2/ and data directory are checked; a registry that stopped answering is started again.")
	f.StringVar(&o.GitOpsNamespace, "gitops-namespace", o.GitOpsNamespace, "Namespace of the OCIRegistries that Clusters with spec.gitOps.registryEnabled own.")
	f.StringVar(&o.FluxManifestsDir, "flux-manifests-dir", o.FluxManifestsDir, "Directory of Flux "+fluxinstall.Version+"'s CRDs (<dir>/source-controller and <dir>/kustomize-controller, each with its *.yaml files and a VERSION file), with which Flux is installed on Clusters with spec.gitOps.installFlux; empty means Flux is installed nowhere.")
	f.DurationVar(&o.PackDriftInterval, "pack-drift-interval", o.PackDriftInterval, "How often each delivered infrastructure pack is compared with its cluster for drift.")
	f.IntVar(&o.PackWorkers, "pack-workers", o.PackWorkers, "Concurrent deliveries and drift checks of infrastructure pack instances: clusters are delivered in parallel up to this many.")
	f.DurationVar(&o.InformerResync, "informer-resync", o.InformerResync, "How often the informers replay their caches to the controllers, which look at every object again (and write nothing where nothing changed).")
	f.StringVar(&o.ProvisionersConfig, "provisioners-config", o.ProvisionersConfig, "A score-k8s provisioners file whose template:// provisioners add resource types, or replace built-in ones (see docs/score.md).")
}

// Complete fills in what the flags leave open.
func (o *Options) Complete() error {
	if o.LeaderElection.ResourceLock == "" {
		o.LeaderElection.ResourceLock = resourcelock.LeasesResourceLock
	}
	if len(o.RegistryDataRoots) == 0 && o.RegistryVolumeDir != "" {
		o.RegistryDataRoots = []string{o.RegistryVolumeDir}
	}
	return nil
}

// Validate reports every invalid option at once. It reads files (the provisioners file is
// parsed) but writes and contacts nothing.
func (o *Options) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not host:port", o.BindAddress))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1, not %d", o.Workers))
	}
	if o.ComputeWorkers < 1 {
		errs = append(errs, fmt.Errorf("--compute-workers must be at least 1, not %d", o.ComputeWorkers))
	}
	if o.PackWorkers < 1 {
		errs = append(errs, fmt.Errorf("--pack-workers must be at least 1, not %d", o.PackWorkers))
	}
	if o.QPS <= 0 || o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive"))
	}
	for flag, d := range map[string]time.Duration{
		"--cluster-probe-interval": o.ClusterProbeInterval, "--cluster-probe-timeout": o.ClusterProbeTimeout,
		"--vm-poll-interval": o.VMPollInterval, "--vm-resync-interval": o.VMResyncInterval, "--adoption-scan-interval": o.AdoptionScanInterval,
		"--compute-resync-period": o.ComputeResyncPeriod, "--compute-quota-resync-period": o.ComputeQuotaResyncPeriod,
		"--registry-probe-interval": o.RegistryProbeInterval, "--pack-drift-interval": o.PackDriftInterval,
		"--informer-resync": o.InformerResync,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, not %s", flag, d))
		}
	}
	if !filepath.IsAbs(o.RegistryVolumeDir) {
		errs = append(errs, fmt.Errorf("--registry-volume-dir %q is not an absolute path", o.RegistryVolumeDir))
	}
	for _, root := range o.RegistryDataRoots {
		if !filepath.IsAbs(root) {
			errs = append(errs, fmt.Errorf("--registry-data-roots: %q is not an absolute path", root))
		}
	}
	if msgs := validation.IsDNS1123Label(o.GitOpsNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--gitops-namespace %q is not a namespace name: %s", o.GitOpsNamespace, strings.Join(msgs, "; ")))
	}
	if o.FluxManifestsDir != "" {
		if _, err := fluxinstall.Load(o.FluxManifestsDir); err != nil {
			errs = append(errs, fmt.Errorf("--flux-manifests-dir: %w", err))
		}
	}
	if o.DefaultRuntimeClass == "" {
		errs = append(errs, fmt.Errorf("--default-runtime-class must not be empty"))
	}
	for flag, path := range map[string]string{"--kubeconfig": o.Kubeconfig, "--encryption-key-file": o.EncryptionKeyFile} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	if o.ProvisionersConfig != "" {
		if err := resourcebinding.CheckProvisionersFile(o.ProvisionersConfig); err != nil {
			errs = append(errs, fmt.Errorf("--provisioners-config: %w", err))
		}
	}
	for _, err := range componentbasevalidation.ValidateLeaderElectionConfiguration(&o.LeaderElection, field.NewPath("leaderElection")) {
		errs = append(errs, err)
	}
	return utilerrors.NewAggregate(errs)
}

// NewCommand returns the plinth-controller command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use: "plinth-controller",
		// --version prints the release and source revision (make images stamps them).
		Version:      version.Get().String(),
		Short:        "Orchestrate Plinth Workloads, governed VMs and target clusters",
		SilenceUsage: true,
		RunE: func(c *cobra.Command, _ []string) error {
			// Loggers come from the context, carrying the controller and the key; klog hands
			// them out only with contextual logging on.
			klog.EnableContextualLogging(true)
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			cfg, err := o.Config()
			if err != nil {
				return err
			}
			return cfg.Complete().Run(c.Context())
		},
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	return cmd
}
