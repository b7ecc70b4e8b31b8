// Package ociregistry is the controller that runs the OCI registries OCIRegistries describe,
// inside plinth-controller: one pkg/oci/registry Server (the code of registry:3) per object,
// listening on its spec.endpoint and storing in its data directory, where the data outlives
// the server, the object (unless spec.deleteDataOnDelete) and plinth-controller.
//
// A registry's phase goes NotProvisioned → Provisioning (starting) → Running once its /v2/
// answers. Every probe interval the controller asks /v2/ and checks that the data directory
// takes writes: a registry whose /v2/ does not answer is Error and keeps serving (pushes in
// progress go on); it is started again at the next probe once its server reports that it died,
// or after maxFailedProbes probes in a row went unanswered; a full disk is Error while the
// server keeps serving reads, and Running again once there is room. Deleting the object stops
// its server; stopping the controller (or losing leadership) stops them all, and the next
// leader starts them.
//
// In memory it keeps, besides its informer's cache and queue: the servers it runs, each with
// the configuration it was started with and how many probes in a row it left unanswered, and
// the OCIRegistry each of its status writes returned, until the cache shows it (loop.Written).
// A restart loses the servers (the next leader starts them again, on the same data) and the
// count of unanswered probes, which starts again at zero.
package ociregistry

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/apis/common/conditions"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/controllers/loop"
	"github.com/plinth-dev/plinth/pkg/controllers/statuswriter"
	"github.com/plinth-dev/plinth/pkg/controllers/transition"
	gitopsclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/gitops/v1alpha1"
	gitopsinformers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions/gitops/v1alpha1"
	gitopslisters "github.com/plinth-dev/plinth/pkg/generated/listers/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/message"
	"github.com/plinth-dev/plinth/pkg/oci/registry"
)

// Name names the controller in logs, metrics and events.
const Name = "ociregistry"

// DefaultProbeInterval is how often a registry is probed when Options leave it open.
const DefaultProbeInterval = 10 * time.Second

const (
	// startTimeout bounds a server's Start; answerTimeout, the wait for a started server's
	// first /v2/ answer; probeTimeout, one probe; stopTimeout, the requests in progress when a
	// server stops.
	startTimeout  = 10 * time.Second
	answerTimeout = 5 * time.Second
	probeTimeout  = 5 * time.Second
	stopTimeout   = 10 * time.Second
)

// maxFailedProbes is how many /v2/ probes in a row may go unanswered before a server that
// still serves (its Err is nil) is restarted. A restart aborts the pushes in progress, and one
// probe can time out only because the registry is busy (a large push, a slow disk); three in a
// row, a probe interval apart, mean a server that is stuck.
const maxFailedProbes = 3

// FieldManager names the controller in an OCIRegistry's managedFields.
const FieldManager = "plinth-ociregistry"

// Server is what the controller needs of a registry server (*registry.Server).
type Server interface {
	Start(ctx context.Context) error
	Ready(ctx context.Context) error
	Stop(ctx context.Context) error
	Err() error
	CheckStorage() error
}

// Options tune the controller.
type Options struct {
	// DataRoots are the absolute directories a spec.dataPath must be inside
	// (--registry-data-roots).
	DataRoots []string
	// VolumeDir is the absolute directory volumes are created in: spec.volumeName, or
	// <namespace>-<name> for a registry that names no storage (--registry-volume-dir).
	// Required.
	VolumeDir string
	// ProbeInterval is how often each registry's /v2/ and storage are checked; zero means
	// DefaultProbeInterval.
	ProbeInterval time.Duration
}

// Controller runs OCIRegistries.
type Controller struct {
	*loop.Loop
	client    gitopsclient.OCIRegistriesGetter
	writer    *statuswriter.Writer[*gitopsv1alpha1.OCIRegistry]
	written   *loop.Written[*gitopsv1alpha1.OCIRegistry]
	lister    gitopslisters.OCIRegistryLister
	dataRoots []string
	volumeDir string
	probe     time.Duration
	// newServer builds a server; tests replace it to fail storage checks.
	newServer func(registry.Config) (Server, error)
	now       func() time.Time

	mu      sync.Mutex
	servers map[cache.ObjectName]*instance
}

// instance is one running server and what it was started with.
type instance struct {
	server Server
	config registry.Config
	// failedProbes counts the /v2/ probes in a row that went unanswered. Only the reconcile of
	// the instance's key touches it, and the queue runs one reconcile per key at a time.
	failedProbes int
}

// NewController returns the controller. It reads OCIRegistries, and is woken when one is added
// or deleted or its generation or deletion timestamp changes; each registry is also probed
// every probe interval.
func NewController(client gitopsclient.GitopsV1alpha1Interface, recorder events.EventRecorder,
	registries gitopsinformers.OCIRegistryInformer, opts Options) (*Controller, error) {
	if !filepath.IsAbs(opts.VolumeDir) {
		return nil, fmt.Errorf("%s: the volume directory %q is not an absolute path", Name, opts.VolumeDir)
	}
	c := &Controller{
		client: client, lister: registries.Lister(), written: &loop.Written[*gitopsv1alpha1.OCIRegistry]{},
		volumeDir: filepath.Clean(opts.VolumeDir), probe: opts.ProbeInterval,
		newServer: func(cfg registry.Config) (Server, error) { return registry.New(cfg) },
		now:       time.Now,
		servers:   map[cache.ObjectName]*instance{},
	}
	c.writer = &statuswriter.Writer[*gitopsv1alpha1.OCIRegistry]{
		FieldManager: FieldManager,
		Reasons:      gitopsv1alpha1.Reasons,
		Conditions:   func(reg *gitopsv1alpha1.OCIRegistry) []metav1.Condition { return reg.Status.Conditions },
		Update: func(ctx context.Context, reg *gitopsv1alpha1.OCIRegistry, opts metav1.UpdateOptions) (*gitopsv1alpha1.OCIRegistry, error) {
			return client.OCIRegistries(reg.Namespace).UpdateStatus(ctx, reg, opts)
		},
		Events:  transition.New(recorder, gitopsv1alpha1.Reasons),
		Rules:   []transition.Rule{{Condition: gitopsv1alpha1.ConditionReady, Action: "Reconcile"}},
		Written: c.written,
	}
	for _, root := range opts.DataRoots {
		if !filepath.IsAbs(root) {
			return nil, fmt.Errorf("%s: the data root %q is not an absolute path", Name, root)
		}
		c.dataRoots = append(c.dataRoots, filepath.Clean(root))
	}
	if c.probe <= 0 {
		c.probe = DefaultProbeInterval
	}
	c.Loop = loop.New(Name, c.reconcile, registries.Informer())
	if err := c.WatchGenerations(registries.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles until ctx ends, then stops every registry server: a process that stops
// leading must leave the ports to the next leader.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.stopAll(klog.FromContext(ctx))
	return c.Loop.Run(ctx, workers)
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.lister.OCIRegistries(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.stop(ctx, key) // gone without the finalizer (removed by hand): nothing else to do
		c.written.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	reg := c.written.Fresher(key, cached)
	if reg.DeletionTimestamp != nil {
		return c.finalize(ctx, key, reg)
	}
	if !slices.Contains(reg.Finalizers, gitopsv1alpha1.RegistryFinalizer) {
		// Before the server starts, so that a deletion always stops it.
		updated := reg.DeepCopy()
		updated.Finalizers = append(updated.Finalizers, gitopsv1alpha1.RegistryFinalizer)
		stored, err := c.client.OCIRegistries(reg.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
		if err != nil {
			return err
		}
		c.written.Record(key, reg, stored)
		reg = stored
	}
	// Probed again every interval whatever happens now: a registry that failed is started
	// again, a refused one is looked at again once another registry frees its storage.
	defer c.EnqueueAfter(key, c.probe)

	cfg, reason, err := c.configFor(key, reg)
	if err != nil {
		c.stop(ctx, key)
		_, werr := c.writeStatus(ctx, reg, c.status(reg, cfg, gitopsv1alpha1.RegistryPhaseError, reason, err))
		return werr
	}
	inst := c.instance(key)
	if inst != nil && inst.config != cfg {
		c.stop(ctx, key)
		inst = nil
	}
	if inst == nil {
		if reg, err = c.writeStatus(ctx, reg, c.status(reg, cfg, gitopsv1alpha1.RegistryPhaseProvisioning, gitopsv1alpha1.ReasonProvisioning, nil)); err != nil {
			return err
		}
		if err := c.start(ctx, key, cfg); err != nil {
			_, werr := c.writeStatus(ctx, reg, c.status(reg, cfg, gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonProvisionFailed, err))
			return werr
		}
		inst = c.instance(key)
	}
	phase, reason, err := c.check(ctx, key, inst)
	_, werr := c.writeStatus(ctx, reg, c.status(reg, cfg, phase, reason, err))
	return werr
}

// configFor is the server configuration of reg, or why there is none (reason and error).
func (c *Controller) configFor(key cache.ObjectName, reg *gitopsv1alpha1.OCIRegistry) (registry.Config, string, error) {
	endpoint := reg.Spec.Endpoint
	if endpoint == "" && reg.Spec.Port != 0 {
		endpoint = fmt.Sprintf("localhost:%d", reg.Spec.Port)
	}
	if !strings.HasPrefix(endpoint, "localhost:") {
		return registry.Config{}, gitopsv1alpha1.ReasonSpecInvalid, fmt.Errorf("the endpoint %q is not localhost:<port>", endpoint)
	}
	path, err := c.storagePath(reg)
	if err != nil {
		return registry.Config{Endpoint: endpoint}, gitopsv1alpha1.ReasonRefused, err
	}
	cfg := registry.Config{Endpoint: endpoint, DataDir: path}
	if other, ok := c.storageUser(key, path); ok {
		return cfg, gitopsv1alpha1.ReasonRefused, fmt.Errorf("its storage %s is in use by OCIRegistry %s", path, other)
	}
	return cfg, "", nil
}

// storageUser is the other registry whose server stores in path, if any: two servers writing
// one directory would each cache what the other changes.
func (c *Controller) storageUser(key cache.ObjectName, path string) (cache.ObjectName, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for other, inst := range c.servers {
		if other != key && inst.config.DataDir == path {
			return other, true
		}
	}
	return cache.ObjectName{}, false
}

// start starts a server and waits until its /v2/ answers.
func (c *Controller) start(ctx context.Context, key cache.ObjectName, cfg registry.Config) error {
	srv, err := c.newServer(cfg)
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := srv.Start(startCtx); err != nil {
		_ = srv.Stop(startCtx)
		return err
	}
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, answerTimeout, true, func(ctx context.Context) (bool, error) {
		lastErr = srv.Ready(ctx)
		return lastErr == nil, nil
	}); err != nil {
		c.stopServer(ctx, srv)
		return fmt.Errorf("the registry did not answer within %s: %w", answerTimeout, cmpErr(lastErr, err))
	}
	c.mu.Lock()
	c.servers[key] = &instance{server: srv, config: cfg}
	c.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Registry started", "endpoint", cfg.Endpoint, "dataDir", cfg.DataDir)
	return nil
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// check probes a running server: a server that stopped serving (its Err) is stopped at once,
// and started again at the next reconcile; one whose /v2/ does not answer is Error but keeps
// serving until maxFailedProbes probes in a row went unanswered, then it is stopped too; a data
// directory that takes no writes makes the registry Error while it keeps serving what it has.
func (c *Controller) check(ctx context.Context, key cache.ObjectName, inst *instance) (gitopsv1alpha1.RegistryPhase, string, error) {
	logger := klog.FromContext(ctx)
	if err := inst.server.Err(); err != nil {
		logger.Info("Registry stopped serving; it is started again at the next probe", "endpoint", inst.config.Endpoint, "err", err)
		c.stop(ctx, key)
		return gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonNotRunning, err
	}
	probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
	err := inst.server.Ready(probeCtx)
	cancel()
	if err != nil {
		inst.failedProbes++
		if inst.failedProbes >= maxFailedProbes {
			logger.Info("Registry did not answer several probes in a row; it is started again at the next probe",
				"endpoint", inst.config.Endpoint, "probes", inst.failedProbes, "err", err)
			c.stop(ctx, key)
			return gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonNotRunning,
				fmt.Errorf("%w; %d probes in a row went unanswered, so the registry is started again", err, inst.failedProbes)
		}
		logger.Info("Registry did not answer a probe; it keeps serving", "endpoint", inst.config.Endpoint, "probes", inst.failedProbes, "err", err)
		return gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonNotRunning,
			fmt.Errorf("%w; it keeps serving, and is started again if %d probes in a row go unanswered", err, maxFailedProbes)
	}
	inst.failedProbes = 0
	if err := inst.server.CheckStorage(); err != nil {
		return gitopsv1alpha1.RegistryPhaseError, gitopsv1alpha1.ReasonCheckFailed, err
	}
	return gitopsv1alpha1.RegistryPhaseRunning, gitopsv1alpha1.ReasonRunning, nil
}

// status is reg with its status in phase, the Ready condition's reason and, for Error, the
// failure as lastError.
func (c *Controller) status(reg *gitopsv1alpha1.OCIRegistry, cfg registry.Config, phase gitopsv1alpha1.RegistryPhase, reason string, failure error) *gitopsv1alpha1.OCIRegistry {
	out := reg.DeepCopy()
	st := &out.Status
	st.Phase, st.ObservedGeneration, st.LastError = phase, reg.Generation, ""
	st.URL, st.StoragePath = "", cfg.DataDir
	if cfg.Endpoint != "" {
		st.URL = "http://" + cfg.Endpoint
	}
	var msg string
	switch phase {
	case gitopsv1alpha1.RegistryPhaseRunning:
		msg = fmt.Sprintf("The registry answers on %s/v2/ and stores its data in %s.", st.URL, cfg.DataDir)
	case gitopsv1alpha1.RegistryPhaseProvisioning:
		msg = fmt.Sprintf("The registry is starting on %s.", cfg.Endpoint)
	default:
		st.LastError = failure.Error()
		msg = message.Error(failure)
	}
	conditions.SetAt(&st.Conditions, reg.Generation, metav1.NewTime(c.now()), gitopsv1alpha1.ConditionReady,
		conditions.Status(phase == gitopsv1alpha1.RegistryPhaseRunning), reason, msg)
	return out
}

// writeStatus writes the status computed for reg when it differs from the stored one (a probe
// that finds nothing new writes nothing) and returns the object as stored.
func (c *Controller) writeStatus(ctx context.Context, reg, computed *gitopsv1alpha1.OCIRegistry) (*gitopsv1alpha1.OCIRegistry, error) {
	stored, _, err := c.writer.Write(ctx, reg, computed)
	if err != nil {
		return nil, err
	}
	if reg.Status.Phase != stored.Status.Phase {
		klog.FromContext(ctx).V(2).Info("Phase changed", "from", reg.Status.Phase, "to", stored.Status.Phase)
	}
	return stored, nil
}

// finalize stops the registry, removes its data when spec.deleteDataOnDelete says so, and lets
// the object go.
func (c *Controller) finalize(ctx context.Context, key cache.ObjectName, reg *gitopsv1alpha1.OCIRegistry) error {
	if !slices.Contains(reg.Finalizers, gitopsv1alpha1.RegistryFinalizer) {
		return nil
	}
	c.stop(ctx, key)
	if reg.Spec.DeleteDataOnDelete {
		// Only a path this controller accepted, and not while another registry serves it.
		if path, err := c.storagePath(reg); err == nil {
			if other, inUse := c.storageUser(key, path); inUse {
				klog.FromContext(ctx).Info("Data kept: another registry serves it", "dataDir", path, "registry", other)
			} else if err := removeData(path); err != nil {
				return err
			} else {
				klog.FromContext(ctx).V(2).Info("Registry data removed", "dataDir", path)
			}
		}
	}
	updated := reg.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool { return f == gitopsv1alpha1.RegistryFinalizer })
	if _, err := c.client.OCIRegistries(reg.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func (c *Controller) instance(key cache.ObjectName) *instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[key]
}

// stop stops key's server, if it runs.
func (c *Controller) stop(ctx context.Context, key cache.ObjectName) {
	c.mu.Lock()
	inst, ok := c.servers[key]
	delete(c.servers, key)
	c.mu.Unlock()
	if ok {
		c.stopServer(ctx, inst.server)
		klog.FromContext(ctx).V(2).Info("Registry stopped", "endpoint", inst.config.Endpoint)
	}
}

func (c *Controller) stopServer(ctx context.Context, srv Server) {
	// Its own deadline, not the reconcile's: a stop must finish even when the caller is done.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	if err := srv.Stop(stopCtx); err != nil {
		klog.FromContext(ctx).Error(err, "Stopping a registry")
	}
}

// stopAll stops every server, at once.
func (c *Controller) stopAll(logger klog.Logger) {
	c.mu.Lock()
	servers := c.servers
	c.servers = map[cache.ObjectName]*instance{}
	c.mu.Unlock()
	ctx := klog.NewContext(context.Background(), logger)
	var stopping sync.WaitGroup
	for _, inst := range servers {
		stopping.Go(func() { c.stopServer(ctx, inst.server) })
	}
	stopping.Wait()
	if len(servers) > 0 {
		logger.Info("Registries stopped", "count", len(servers))
	}
}
