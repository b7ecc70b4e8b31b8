// Package apiserver is plinth-apiserver's command, built the way k8s.io/sample-apiserver's is:
// flags fill Options; Complete derives what they imply, Validate refuses bad combinations,
// and only then Run writes files, starts the embedded etcd and turns the options into a
// Config whose completed form builds the server.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	plinthinitializer "github.com/plinth-dev/plinth/pkg/admission/initializer"
	"github.com/plinth-dev/plinth/pkg/admission/plugin/gitopstargets"
	"github.com/plinth-dev/plinth/pkg/admission/plugin/packtargets"
	"github.com/plinth-dev/plinth/pkg/admission/plugin/platformpolicy"
	"github.com/plinth-dev/plinth/pkg/admission/plugin/provisioners"
	"github.com/plinth-dev/plinth/pkg/admission/plugin/tenantcompute"
	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	governancev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	infrastructurev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/apiserver"
	"github.com/plinth-dev/plinth/pkg/apiserver/patchtypes"
	"github.com/plinth-dev/plinth/pkg/authentication/frontproxy"
	"github.com/plinth-dev/plinth/pkg/authorization"
	computequota "github.com/plinth-dev/plinth/pkg/compute/quota"
	"github.com/plinth-dev/plinth/pkg/embeddedetcd"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
	plinthopenapi "github.com/plinth-dev/plinth/pkg/generated/openapi"
	"github.com/plinth-dev/plinth/pkg/keyring"
	"github.com/plinth-dev/plinth/pkg/registry/cachedget"
	"github.com/plinth-dev/plinth/pkg/standalone"
	"github.com/plinth-dev/plinth/pkg/version"
)

const etcdPathPrefix = "/registry/plinth.dev"

// Options are plinth-apiserver's flags. Use them in the order NewCommand does: Complete,
// Validate, Run.
type Options struct {
	Recommended *genericoptions.RecommendedOptions

	// DataDir holds the embedded etcd's data when --etcd-servers is not given.
	DataDir string
	// EmbeddedEtcdUnsafeNoFsync trades durability for speed in tests and benchmarks.
	EmbeddedEtcdUnsafeNoFsync bool
	// Standalone serves without a kube-apiserver: a private CA, a system:masters client
	// certificate and an admin kubeconfig under StandaloneDir.
	Standalone    bool
	StandaloneDir string
	// PlatformGroups and PlatformUsers may reach the internal APIs (PlatformPolicy,
	// Provisioner, ResourceBinding, WorkloadPlan); everyone else is denied before RBAC is asked.
	PlatformGroups []string
	PlatformUsers  []string
	// ApproverGroups may, besides the platform identities, decide approval tickets and adopt
	// VMs; everyone else is denied those before RBAC is asked.
	ApproverGroups []string
	// EncryptionKeyFile holds the AES-256 keys that seal target clusters' kubeconfigs; the
	// first key encrypts, all decrypt. --standalone creates one under StandaloneDir.
	EncryptionKeyFile string
	// ConsistentGetFromCache answers GETs without a resourceVersion from the watch cache once
	// it has caught up with etcd's current revision (pkg/registry/cachedget), instead of
	// reading and decoding the object from etcd.
	ConsistentGetFromCache bool
	// ShutdownDelay is how long the server goes on serving after SIGTERM, with /readyz
	// failing, before it stops listening: time for the endpoints to drop the replica, so that
	// a rolling update or a drain sends no request to a closed port. ShutdownSendRetryAfter
	// then keeps the port open until the requests in flight are done, answering new ones 429
	// with Retry-After instead of refusing the connection. The chart does not set it: behind
	// kube-apiserver the one client is the aggregator's HTTP/2 connection, which the server's
	// GOAWAY moves to another replica at once, while a 429 makes the end client wait five
	// seconds (docs/reliability.md, Losing a replica).
	ShutdownDelay          time.Duration
	ShutdownSendRetryAfter bool

	Out io.Writer

	// embeddedEtcd is set by Complete when --etcd-servers is not given: Run starts an etcd
	// under DataDir.
	embeddedEtcd bool
	// createKeyFile is set by Complete for --standalone without --encryption-key-file: Run
	// creates the key file.
	createKeyFile bool

	// informers feeds the admission plugins; started after the server starts.
	informers informers.SharedInformerFactory
}

// storageVersions is the version each group's objects are stored in: the one it serves.
var storageVersions = schema.GroupVersions{v1b1.SchemeGroupVersion, governancev1alpha1.SchemeGroupVersion, platformv1alpha1.SchemeGroupVersion,
	computev1alpha1.SchemeGroupVersion, gitopsv1alpha1.SchemeGroupVersion, infrastructurev1alpha1.SchemeGroupVersion}

// NewOptions returns the defaults.
func NewOptions(out io.Writer) *Options {
	o := &Options{
		Recommended:    genericoptions.NewRecommendedOptions(etcdPathPrefix, apiserver.Codecs.LegacyCodec(storageVersions...)),
		DataDir:        filepath.Join(".plinth", "data"),
		StandaloneDir:  ".plinth",
		PlatformGroups: []string{"system:masters", "platform:admins"},
		PlatformUsers:  []string{"system:serviceaccount:plinth-system:plinth-controller"},
		ApproverGroups: []string{"platform:approvers"},
		Out:            out,
	}
	// Store every object as JSON of its group's one served version: readable with etcdctl.
	o.Recommended.Etcd.StorageConfig.EncodeVersioner = storageVersions
	o.Recommended.Etcd.DefaultStorageMediaType = runtime.ContentTypeJSON
	// Without a secure port flag the server listens on 8443 like sample-apiserver.
	o.Recommended.SecureServing.BindPort = 8443
	// PlatformPolicy runs after namespace lifecycle and before webhooks and admission
	// policies, so they see the defaulted workload; TenantCompute, GitOpsTargets,
	// PackTargets and Provisioners beside it. ResourceQuota runs last, as in kube-apiserver, so
	// that a request another plugin refuses is never charged to a quota.
	plugins := o.Recommended.Admission.Plugins
	platformpolicy.Register(plugins)
	tenantcompute.Register(plugins)
	gitopstargets.Register(plugins)
	packtargets.Register(plugins)
	provisioners.Register(plugins)
	resourcequota.Register(plugins)
	order := o.Recommended.Admission.RecommendedPluginOrder
	order = append([]string{order[0], platformpolicy.PluginName, tenantcompute.PluginName, gitopstargets.PluginName, packtargets.PluginName, provisioners.PluginName}, order[1:]...)
	o.Recommended.Admission.RecommendedPluginOrder = append(order, resourcequota.PluginName)
	o.Recommended.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		f, err := o.plinthInformers(c.LoopbackClientConfig)
		if err != nil {
			return nil, err
		}
		// The generic initializer, which runs before these, gives ResourceQuota the kube
		// client and the ResourceQuota informer (from --kubeconfig); the quota configuration
		// adds the TenantCompute evaluator.
		return []admission.PluginInitializer{plinthinitializer.New(f), plinthinitializer.NewQuota(computequota.NewConfiguration())}, nil
	}
	return o
}

// NewCommand returns the plinth-apiserver command. It runs the options through Complete,
// Validate and Run, in that order: nothing is written and nothing is started before the
// flags have passed validation.
func NewCommand(ctx context.Context, o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use: "plinth-apiserver",
		// --version prints the release and source revision (make images stamps them).
		Version: version.Get().String(),
		Short:   "Serve Plinth's platform APIs as a Kubernetes aggregated API server",
		Long: "plinth-apiserver serves the score.dev API group (and Plinth's platform groups) from its own\n" +
			"etcd-backed storage. Behind a kube-apiserver it is registered through APIService objects\n" +
			"and delegates authentication and authorization; with --standalone it serves kubectl\n" +
			"directly. Without --etcd-servers it runs an embedded etcd under --data-dir.",
		SilenceUsage: true,
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	return cmd
}

// AddFlags adds the generic server's flags and Plinth's own to flags.
func (o *Options) AddFlags(flags *pflag.FlagSet) {
	o.Recommended.AddFlags(flags)
	utilfeature.DefaultMutableFeatureGate.AddFlag(flags)
	flags.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory of the embedded etcd's data, used when --etcd-servers is not given.")
	flags.BoolVar(&o.EmbeddedEtcdUnsafeNoFsync, "embedded-etcd-unsafe-no-fsync", false, "Skip fsync in the embedded etcd. Faster, but a crash can lose recent writes; for tests only.")
	flags.BoolVar(&o.Standalone, "standalone", false, "Serve without a kube-apiserver: client-certificate authentication against a private CA, system:masters allowed, no delegated checks.")
	flags.StringVar(&o.StandaloneDir, "standalone-dir", o.StandaloneDir, "Directory of the standalone CA, certificates and admin.kubeconfig.")
	flags.StringSliceVar(&o.PlatformGroups, "platform-groups", o.PlatformGroups, "Groups that may use the internal APIs (PlatformPolicy, Provisioner, ResourceBinding, WorkloadPlan), subject to RBAC. Everyone else is denied whatever RBAC grants.")
	flags.StringVar(&o.EncryptionKeyFile, "encryption-key-file", "", "Key file (YAML: keys: [{id, secret: base64 of 32 bytes}]) whose first key encrypts target clusters' kubeconfigs and whose every key decrypts them. Without it, Clusters cannot be created. With --standalone, a file is created under --standalone-dir when none is given.")
	flags.BoolVar(&o.ConsistentGetFromCache, "consistent-get-from-cache", false, "Answer a client's GET without a resourceVersion from the watch cache once it has caught up with etcd's current revision, as fresh as a read from etcd. Off by default; it waits about 50 ms per GET while other kinds are written (docs/benchmarks.md).")
	flags.DurationVar(&o.ShutdownDelay, "shutdown-delay-duration", 0, "Time to go on serving after SIGTERM, with /readyz failing, before the port closes, so that the Service's endpoints drop this replica first (the chart sets 5s).")
	flags.BoolVar(&o.ShutdownSendRetryAfter, "shutdown-send-retry-after", false, "After --shutdown-delay-duration, keep the port open until the requests in flight are done and answer new ones 429 with a Retry-After header, which clients retry, instead of refusing connections.")
	flags.StringSliceVar(&o.PlatformUsers, "platform-users", o.PlatformUsers, "Users (such as the controller's service account) that may use the internal APIs, subject to RBAC.")
	flags.StringSliceVar(&o.ApproverGroups, "approver-groups", o.ApproverGroups, "Groups that may, besides --platform-groups and --platform-users, approve or reject tickets and adopt VMs, subject to RBAC. Everyone else is denied those whatever RBAC grants.")
}

// Complete derives the settings the flags imply. It only computes: files and processes are
// left to Run, so that a command line Validate refuses leaves no trace on the machine.
func (o *Options) Complete() error {
	o.embeddedEtcd = len(o.Recommended.Etcd.StorageConfig.Transport.ServerList) == 0
	if o.Standalone {
		o.completeStandalone()
	}
	return nil
}

// completeStandalone points authentication at the private CA Run will create and turns off
// everything that needs a kube-apiserver: delegated token and access reviews, the core API
// client, Kubernetes admission plugins and priority-and-fairness.
func (o *Options) completeStandalone() {
	f := standalone.FilesIn(o.StandaloneDir)
	r := o.Recommended
	if r.SecureServing.ServerCert.CertKey.CertFile == "" {
		r.SecureServing.ServerCert.CertKey.CertFile = f.Serving.Cert
		r.SecureServing.ServerCert.CertKey.KeyFile = f.Serving.Key
	}
	r.Authentication.ClientCert.ClientCA = f.CA.Cert
	r.Authentication.RemoteKubeConfigFileOptional = true
	r.Authentication.SkipInClusterLookup = true
	r.Authorization.RemoteKubeConfigFileOptional = true
	r.CoreAPI = nil
	r.Admission = nil
	r.Features.EnablePriorityAndFairness = false
	if o.EncryptionKeyFile == "" {
		o.EncryptionKeyFile = filepath.Join(o.StandaloneDir, "encryption-keys.yaml")
		o.createKeyFile = true
	}
}

// Validate reports every problem with the completed options at once.
func (o *Options) Validate() error {
	recommended := *o.Recommended
	if o.embeddedEtcd {
		// The embedded etcd's address exists only once Run has started it; everything else
		// about storage is checked now.
		etcd := *recommended.Etcd
		etcd.StorageConfig.Transport.ServerList = []string{"http://127.0.0.1:2379"}
		recommended.Etcd = &etcd
	}
	errs := recommended.Validate()
	if o.embeddedEtcd && o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty when --etcd-servers is not given"))
	}
	if o.Standalone {
		if o.StandaloneDir == "" {
			errs = append(errs, errors.New("--standalone-dir must not be empty with --standalone"))
		}
		if o.Recommended.SecureServing.BindPort == 0 {
			errs = append(errs, errors.New("--standalone needs a --secure-port: the admin kubeconfig points at it"))
		}
	}
	for _, flag := range []struct {
		name   string
		values []string
	}{{"--platform-groups", o.PlatformGroups}, {"--platform-users", o.PlatformUsers}, {"--approver-groups", o.ApproverGroups}} {
		for _, v := range flag.values {
			if strings.TrimSpace(v) == "" {
				errs = append(errs, fmt.Errorf("%s must not contain an empty name", flag.name))
				break
			}
		}
	}
	if o.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay-duration %s must not be negative", o.ShutdownDelay))
	}
	if o.EncryptionKeyFile != "" && !o.createKeyFile {
		// Read, not written: a key file that cannot be used stops the server before it starts
		// rather than when the first Cluster is created.
		if _, err := keyring.Load(o.EncryptionKeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--encryption-key-file: %w", err))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// Run writes the standalone credentials and starts the embedded etcd when the options ask for
// them, then builds the server and serves until ctx ends. Call it on completed, validated
// options.
func (o *Options) Run(ctx context.Context) error {
	if o.Standalone {
		if err := o.writeStandaloneFiles(); err != nil {
			return err
		}
	}
	if o.embeddedEtcd {
		etcd, err := embeddedetcd.Start(ctx, embeddedetcd.Options{Dir: o.DataDir, UnsafeNoFsync: o.EmbeddedEtcdUnsafeNoFsync})
		if err != nil {
			return err
		}
		// etcd stops after the API server has drained, so in-flight writes complete.
		defer etcd.Close()
		klog.InfoS("Started embedded etcd", "dataDir", o.DataDir, "clientURL", etcd.ClientURL)
		o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{etcd.ClientURL}
	}
	config, err := o.Config()
	if err != nil {
		return err
	}
	server, err := config.Complete().New()
	if err != nil {
		return err
	}
	if o.informers != nil {
		// Readiness waits for this hook: admission never runs on a half-filled policy cache.
		server.GenericAPIServer.AddPostStartHookOrDie("plinth-start-informers", func(ctx genericapiserver.PostStartHookContext) error {
			o.informers.Start(ctx.Done())
			o.informers.WaitForCacheSync(ctx.Done())
			return nil
		})
	}
	if o.Standalone {
		f := standalone.FilesIn(o.StandaloneDir)
		server.GenericAPIServer.AddPostStartHookOrDie("plinth-standalone-kubeconfig", func(genericapiserver.PostStartHookContext) error {
			fmt.Fprintf(o.Out, "plinth-apiserver is serving; try: kubectl --kubeconfig %s get workloads -A\n", f.Kubeconfig)
			return nil
		})
	}
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// writeStandaloneFiles creates the private CA, the serving and admin certificates and the key
// file unless they exist, and writes the admin kubeconfig for this server's address.
func (o *Options) writeStandaloneFiles() error {
	f := standalone.FilesIn(o.StandaloneDir)
	if err := standalone.EnsurePKI(f); err != nil {
		return fmt.Errorf("preparing standalone certificates: %w", err)
	}
	if o.createKeyFile {
		if err := keyring.EnsureFile(o.EncryptionKeyFile); err != nil {
			return fmt.Errorf("preparing the standalone key file: %w", err)
		}
	}
	serving := o.Recommended.SecureServing
	host := serving.BindAddress.String()
	if serving.BindAddress.IsUnspecified() {
		host = "127.0.0.1"
	}
	return standalone.WriteKubeconfig(f, "https://"+net.JoinHostPort(host, strconv.Itoa(serving.BindPort)))
}

// Config turns the options into the server's configuration.
func (o *Options) Config() (*apiserver.Config, error) {
	if err := o.Recommended.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}
	cfg := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	// Built here, after the flags are parsed, because CBOR follows --feature-gates.
	cfg.Serializer = apiserver.NewSerializer(utilfeature.DefaultFeatureGate)
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(plinthopenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "Plinth"
	cfg.OpenAPIConfig.Info.Version = "v1b1"
	// Server-side apply builds its type models from OpenAPI v3: without it, apply fails.
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(plinthopenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "Plinth"
	cfg.OpenAPIV3Config.Info.Version = "v1b1"
	// PATCH takes JSON patch, merge patch and apply, as for custom resources, and the OpenAPI
	// says so: kubectl apply and diff then compute a JSON merge patch, which merges the inline
	// Score document and the name-keyed maps that a strategic merge patch cannot describe.
	patchtypes.Install(&cfg.Config)
	cfg.FeatureGate = utilfeature.DefaultFeatureGate
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	if err := o.Recommended.ApplyTo(cfg); err != nil {
		return nil, err
	}
	cfg.ShutdownDelayDuration, cfg.ShutdownSendRetryAfter = o.ShutdownDelay, o.ShutdownSendRetryAfter
	if o.ConsistentGetFromCache {
		cfg.RESTOptionsGetter = cachedget.RESTOptionsGetter(cfg.RESTOptionsGetter)
	}
	if rh := cfg.Authentication.RequestHeaderConfig; rh != nil && cfg.Authentication.Authenticator != nil {
		// The aggregator's certificate chain is verified once, not on every proxied request.
		cfg.Authentication.Authenticator = frontproxy.New(rh, cfg.Authentication.Authenticator)
		// Outside the whole chain: until the front proxy's CA is loaded (an informer, a second
		// or two after start), relayed requests would run as system:anonymous.
		build := cfg.BuildHandlerChainFunc
		cfg.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
			return frontproxy.WithCALoaded(build(apiHandler, c), rh)
		}
	}
	// Admission plugins ask the delegated authorizer (RBAC), not the chain below: ApplyTo's
	// generic initializer has already handed it out, and standaloneAdmission gets it too.
	// The TenantCompute plugin asks it for the verb use on a Cluster, which a platform team
	// may grant a tenant group; the internal-API authorizer, which keeps Clusters' objects
	// from everyone outside the platform groups, must not refuse that.
	delegated := cfg.Authorization.Authorizer
	chained, err := o.authorizer(delegated)
	if err != nil {
		return nil, err
	}
	// The approval flow asks this chain whether a user may approve, so the internal-API
	// authorizer's refusals hold there too.
	cfg.Authorization.Authorizer = chained
	if o.Standalone {
		// No kube-apiserver means no Kubernetes admission chain; Plinth's own plugins still run.
		if cfg.AdmissionControl, err = o.standaloneAdmission(cfg, delegated); err != nil {
			return nil, err
		}
	}
	var keys keyring.Source
	if o.EncryptionKeyFile != "" {
		// Followed, not read once: a rotation takes effect without a restart.
		reloading, err := keyring.NewReloading(o.EncryptionKeyFile, keyring.ReloadInterval)
		if err != nil {
			return nil, err
		}
		keys = reloading
		klog.InfoS("Loaded the cluster credential key file", "path", o.EncryptionKeyFile, "encryptingKey", reloading.Keyring().Primary())
	} else {
		klog.InfoS("No --encryption-key-file: Clusters cannot be created until the server has one")
	}
	return &apiserver.Config{GenericConfig: cfg, EncryptionKeys: keys, RuntimeUsers: o.PlatformUsers}, nil
}

// authorizer is the chain requests are authorized with: the internal-API authorizer, then the
// delegated one (RBAC).
func (o *Options) authorizer(delegated authorizer.Authorizer) (authorizer.Authorizer, error) {
	// The internal-API authorizer runs first: it can only deny, so RBAC still decides for
	// platform identities and for every public API.
	internal := authorization.NewInternalAPIAuthorizer(authorization.InternalAPIs, authorization.Identities{
		Users: o.PlatformUsers, Groups: o.PlatformGroups, ApproverGroups: o.ApproverGroups,
	})
	// Requests ask kube-apiserver without the object's name first, so that the delegated
	// authorizer's cache answers for every object of a kind (issue 21); admission keeps the
	// undecorated authorizer.
	return union.New(
		union.NamedAuthorizer{AuthorizerName: "plinth-internal-api", Authorizer: internal},
		union.NamedAuthorizer{AuthorizerName: "delegated", Authorizer: authorization.NewNameFreeFirst(delegated)},
	)
}

// plinthInformers returns the informer factory admission plugins share, created once from the
// loopback client. Plinth types are JSON only, so the client must not ask for protobuf.
func (o *Options) plinthInformers(loopback *rest.Config) (informers.SharedInformerFactory, error) {
	if o.informers != nil {
		return o.informers, nil
	}
	cfg := rest.CopyConfig(loopback)
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	o.informers = informers.NewSharedInformerFactory(client, 0)
	return o.informers, nil
}

// standaloneAdmission is the admission chain of a server without a kube-apiserver: Plinth's
// own plugins, initialized with Plinth's informers and with authz, the authorizer the generic
// initializer would hand out (WantsAuthorizer) in the recommended chain.
func (o *Options) standaloneAdmission(cfg *genericapiserver.RecommendedConfig, authz authorizer.Authorizer) (admission.Interface, error) {
	f, err := o.plinthInformers(cfg.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	// Without a kube-apiserver there are no ResourceQuota objects to enforce, so the
	// ResourceQuota plugin (and its kube client and informer) is left out.
	plugins := []admission.Interface{platformpolicy.New(), tenantcompute.New(), gitopstargets.New(), packtargets.New(), provisioners.New()}
	initializers := admission.PluginInitializers{plinthinitializer.New(f), authorizerInitializer{authz}}
	for _, plugin := range plugins {
		initializers.Initialize(plugin)
		if err := admission.ValidateInitialization(plugin); err != nil {
			return nil, err
		}
	}
	return admission.NewChainHandler(plugins...), nil
}

// authorizerInitializer gives plugins that want it the authorizer, as k8s.io/apiserver's
// generic initializer does; standalone mode has no generic initializer, which needs a kube
// client.
type authorizerInitializer struct{ authz authorizer.Authorizer }

// Initialize sets the authorizer of plugins that want one.
func (i authorizerInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(genericinitializer.WantsAuthorizer); ok {
		wants.SetAuthorizer(i.authz)
	}
}
