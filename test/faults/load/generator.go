package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	compute "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	infra "github.com/plinth-dev/plinth/pkg/apis/infrastructure/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
)

// ImageRepository is the repository of every generated Workload's image; the tag is "r<Seq>".
const ImageRepository = "registry.example.com/faults"

// System is the System the generated ManagedVMs belong to.
const System = "faults"

// Config is what the generator writes, as whom, and how fast.
type Config struct {
	// Tenant writes Workloads and requests ManagedVMs (a tenant of Namespace); Approver
	// approves the requests. Their clients should time out within seconds, so that a request
	// to a dead component fails instead of waiting for it.
	Tenant, Approver clientset.Interface
	Namespace        string
	// Workloads and TenantComputes are how many of each are created and then updated
	// round-robin.
	Workloads, TenantComputes int
	// Admin (a platform admin) creates Packs InfrastructureClusterPacks in PackNamespace,
	// delivering to Cluster into PackTargetNamespace, and moves each to a new version in turn
	// every PackInterval.
	Admin                              clientset.Interface
	Packs                              int
	PackNamespace, PackTargetNamespace string
	PackInterval                       time.Duration
	// VMs is how many ManagedVMs are requested and approved in all, spread over Services
	// SystemServices of System; VMsPerRun is how many each Run requests at most (zero: all).
	VMs, Services, VMsPerRun int
	// Cluster is where approved VMs are placed.
	Cluster string
	// Interval is the pause after each Workload write and each push; VMInterval after each VM
	// request or approval.
	Interval, VMInterval time.Duration
	// RegistryEndpoint, when set, is a registry (localhost:<port>) the generator pushes small
	// artifacts to, to Repository with tags 1.0.<n>, with the credential registryauth.Local
	// holds for it.
	RegistryEndpoint, Repository string
	// RequestTimeout bounds each push.
	RequestTimeout time.Duration
	// Recorder receives every acknowledged write and every failure.
	Recorder *Recorder
}

// WorkloadName is the name of generated Workload i.
func WorkloadName(i int) string { return fmt.Sprintf("w-%03d", i) }

// VMName is the name of generated ManagedVM i.
func VMName(i int) string { return fmt.Sprintf("vm-%03d", i) }

// ServiceName is the name of generated SystemService i.
func ServiceName(i int) string { return fmt.Sprintf("svc-%d", i) }

// Image is a generated Workload's image holding seq.
func Image(seq int64) string { return ImageRepository + ":r" + strconv.FormatInt(seq, 10) }

// ImageSeq is the seq an image made by Image holds; false for any other image.
func ImageSeq(image string) (int64, bool) {
	tag, ok := strings.CutPrefix(image, ImageRepository+":r")
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseInt(tag, 10, 64)
	return seq, err == nil && seq > 0
}

// Setup creates the System and SystemServices the VMs need, retrying for up to a minute (the
// platform may just have started); existing ones are kept.
func Setup(ctx context.Context, cfg Config) error {
	sys := &gov.System{ObjectMeta: metav1.ObjectMeta{Name: System}}
	if err := retryCreate(ctx, func() error {
		_, err := cfg.Tenant.GovernanceV1alpha1().Systems(cfg.Namespace).Create(ctx, sys, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating System %s: %w", System, err)
	}
	for i := 0; i < cfg.Services; i++ {
		svc := &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: ServiceName(i)}, Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: System}}}
		if err := retryCreate(ctx, func() error {
			_, err := cfg.Tenant.GovernanceV1alpha1().SystemServices(cfg.Namespace).Create(ctx, svc, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating SystemService %s: %w", svc.Name, err)
		}
	}
	return nil
}

func retryCreate(ctx context.Context, create func() error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = create()
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// Generator writes the configured load. Its streams keep their state between runs, so a
// test can run it, stop it to let the platform settle, and run it again.
type Generator struct {
	workloads *objects
	computes  *objects
	packs     *objects
	vms       *vms
	tags      *tags
}

// New returns a Generator of cfg's load.
func New(cfg Config) *Generator {
	g := &Generator{}
	if cfg.Workloads > 0 {
		g.workloads = newWorkloads(cfg)
	}
	if cfg.TenantComputes > 0 {
		g.computes = newComputes(cfg)
	}
	if cfg.Packs > 0 {
		g.packs = newPacks(cfg)
	}
	if cfg.VMs > 0 && cfg.Services > 0 {
		g.vms = &vms{cfg: cfg}
	}
	if cfg.RegistryEndpoint != "" {
		g.tags = &tags{cfg: cfg}
	}
	return g
}

// Run writes until ctx ends: one stream creates the Workloads and then updates their images
// round-robin, one does the same with TenantComputes, one delivers new pack versions, one
// requests the ManagedVMs and approves each request, one pushes artifacts to
// the registry. It returns when every stream has stopped.
func (g *Generator) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if g.workloads != nil {
		wg.Go(func() { g.workloads.run(ctx) })
	}
	if g.computes != nil {
		wg.Go(func() { g.computes.run(ctx) })
	}
	if g.packs != nil {
		wg.Go(func() { g.packs.run(ctx) })
	}
	if g.vms != nil {
		wg.Go(func() { g.vms.run(ctx, g.vms.requested+g.vms.perRun()) })
	}
	if g.tags != nil {
		wg.Go(func() { g.tags.run(ctx) })
	}
	wg.Wait()
}

// Drain approves every request still pending, as an approver would once the load stops, and
// returns once none is pending or ctx ends; the requests left pending are the error.
func (g *Generator) Drain(ctx context.Context) error {
	if g.vms == nil {
		return nil
	}
	for len(g.vms.pending) > 0 {
		g.vms.approve(ctx)
		if len(g.vms.pending) > 0 && !pause(ctx, g.vms.cfg.VMInterval) {
			return fmt.Errorf("%d ManagedVM requests are still pending approval", len(g.vms.pending))
		}
	}
	return nil
}

// code is the HTTP status of an API error, or 0 for an error without one.
func code(err error) int32 {
	if status, ok := err.(apierrors.APIStatus); ok || errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// pause waits for the interval; false once ctx has ended.
func pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// objects is the state of a stream that creates count objects of one kind and then writes
// the next seq into each in turn: the Workload stream and the TenantCompute stream.
type objects struct {
	cfg       Config
	kind      string
	namespace string
	count     int
	name      func(i int) string
	// interval is the pause after each write.
	interval time.Duration
	// create creates object i with seq and patch writes seq into it; both return the
	// resourceVersion of the answer.
	create, patch func(ctx context.Context, i int, seq int64) (string, error)
	created       []bool
	// next is the seq the next write of each object carries: it only grows, also past
	// failed writes (which may have landed), so the content of an object never goes back.
	next []int64
}

func newObjects(cfg Config, kind, namespace string, count int, interval time.Duration, name func(int) string, create, patch func(context.Context, int, int64) (string, error)) *objects {
	o := &objects{cfg: cfg, kind: kind, namespace: namespace, count: count, interval: interval, name: name, create: create, patch: patch,
		created: make([]bool, count), next: make([]int64, count)}
	for i := range o.next {
		o.next[i] = 1
	}
	return o
}

// newWorkloads is the Workload stream: the seq is the tag of the one container's image.
func newWorkloads(cfg Config) *objects {
	client := cfg.Tenant.ScoreV1b1().Workloads(cfg.Namespace)
	return newObjects(cfg, KindWorkload, cfg.Namespace, cfg.Workloads, cfg.Interval, WorkloadName,
		func(ctx context.Context, i int, seq int64) (string, error) {
			obj, err := client.Create(ctx, &v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: WorkloadName(i)},
				Spec: v1b1.WorkloadSpec{Containers: map[string]v1b1.Container{"main": {Image: Image(seq)}}}}, metav1.CreateOptions{})
			if err != nil {
				return "", err
			}
			return obj.ResourceVersion, nil
		},
		func(ctx context.Context, i int, seq int64) (string, error) {
			// A merge patch carries no resourceVersion: the controller's status writes cannot
			// make it conflict.
			patch := fmt.Sprintf(`{"spec":{"containers":{"main":{"image":%q}}}}`, Image(seq))
			obj, err := client.Patch(ctx, WorkloadName(i), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if err != nil {
				return "", err
			}
			return obj.ResourceVersion, nil
		})
}

// TenantID is the tenant ID of generated TenantCompute i; its objects live in namespace
// tenant-<id>.
func TenantID(i int) string { return fmt.Sprintf("faults-%03d", i) }

// ComputeName is the name of generated TenantCompute i.
func ComputeName(i int) string { return fmt.Sprintf("tc-%03d", i) }

// computeContainers is a generated TenantCompute's one container, running Image(seq).
func computeContainers(seq int64) []compute.ContainerSpec {
	return []compute.ContainerSpec{{Name: "web", Image: Image(seq),
		Ports: []compute.PortMapping{{ContainerPort: 8080, HostPort: 80, Protocol: "tcp", Name: "http"}}}}
}

// newComputes is the TenantCompute stream (kubernetes provider): the seq is the tag of the
// one container's image.
func newComputes(cfg Config) *objects {
	client := cfg.Tenant.ComputeV1alpha1().TenantComputes(cfg.Namespace)
	return newObjects(cfg, KindTenantCompute, cfg.Namespace, cfg.TenantComputes, cfg.Interval, ComputeName,
		func(ctx context.Context, i int, seq int64) (string, error) {
			obj, err := client.Create(ctx, &compute.TenantCompute{ObjectMeta: metav1.ObjectMeta{Name: ComputeName(i)},
				Spec: compute.TenantComputeSpec{TenantID: TenantID(i), ProviderType: "kubernetes", Containers: computeContainers(seq),
					Resources: compute.ResourceRequirements{CPU: 250, Memory: 256}}}, metav1.CreateOptions{})
			if err != nil {
				return "", err
			}
			return obj.ResourceVersion, nil
		},
		func(ctx context.Context, i int, seq int64) (string, error) {
			// A merge patch replaces the list of containers whole.
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": computeContainers(seq)}})
			if err != nil {
				return "", err
			}
			obj, err := client.Patch(ctx, ComputeName(i), types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				return "", err
			}
			return obj.ResourceVersion, nil
		})
}

func (o *objects) run(ctx context.Context) {
	for i := 0; ; i = (i + 1) % o.count {
		o.write(ctx, i)
		if !pause(ctx, o.interval) {
			return
		}
	}
}

// write creates object i, or writes the next seq into it once it exists.
func (o *objects) write(ctx context.Context, i int) {
	name := o.name(i)
	key := Key{o.kind, o.namespace, name}
	seq := o.next[i]
	o.next[i]++
	verb, write := VerbUpdate, o.patch
	if !o.created[i] {
		verb, write = VerbCreate, o.create
	}
	sent := time.Now()
	rv, err := write(ctx, i, seq)
	if verb == VerbCreate && apierrors.IsAlreadyExists(err) {
		// An earlier create whose answer was lost did land: from now on, update.
		o.created[i] = true
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			o.cfg.Recorder.Fail(Failure{Key: key, Verb: verb, Sent: sent, At: time.Now(), Err: err.Error(), Code: code(err)})
		}
		return
	}
	o.created[i] = true
	o.cfg.Recorder.Ack(Write{Key: key, Verb: verb, ResourceVersion: rv, Seq: seq, At: time.Now()})
}

// PackName is the name of generated InfrastructureClusterPack i.
func PackName(i int) string { return fmt.Sprintf("faults-%d", i) }

// PackVersion is the version of a generated pack holding seq.
func PackVersion(seq int64) string { return "v1.0." + strconv.FormatInt(seq, 10) }

// PackSeq is the seq a version made by PackVersion holds; false for any other version.
func PackSeq(version string) (int64, bool) {
	n, ok := strings.CutPrefix(version, "v1.0.")
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	return seq, err == nil && seq > 0
}

// PackConfigMap is the one object a generated pack delivers: a ConfigMap named after the
// pack in its target namespace, whose data.seq is the pack's seq.
func PackConfigMap(pack string, seq int64) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"seq":"%d"}}`, pack, seq)
}

// packSpec is a generated pack's spec at seq.
func packSpec(cfg Config, i int, seq int64) infra.InfrastructureClusterPackSpec {
	return infra.InfrastructureClusterPackSpec{Version: PackVersion(seq), TargetClusters: []string{cfg.Cluster}, TargetNamespace: cfg.PackTargetNamespace,
		Manifests: []common.RawObject{{Raw: PackConfigMap(PackName(i), seq)}}}
}

// newPacks is the pack delivery stream: raw packs to cfg.Cluster whose version and delivered
// ConfigMap carry the seq; each new version is a new delivery.
func newPacks(cfg Config) *objects {
	client := cfg.Admin.InfrastructureV1alpha1().InfrastructureClusterPacks(cfg.PackNamespace)
	return newObjects(cfg, KindPack, cfg.PackNamespace, cfg.Packs, cfg.PackInterval, PackName,
		func(ctx context.Context, i int, seq int64) (string, error) {
			obj, err := client.Create(ctx, &infra.InfrastructureClusterPack{ObjectMeta: metav1.ObjectMeta{Name: PackName(i)}, Spec: packSpec(cfg, i, seq)}, metav1.CreateOptions{})
			if err != nil {
				return "", err
			}
			return obj.ResourceVersion, nil
		},
		func(ctx context.Context, i int, seq int64) (string, error) {
			spec := packSpec(cfg, i, seq)
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"version": spec.Version, "manifests": spec.Manifests}})
			if err != nil {
				return "", err
			}
			obj, err := client.Patch(ctx, PackName(i), types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				return "", err
			}
			return obj.ResourceVersion, nil
		})
}

// vms is the ManagedVM stream's state.
type vms struct {
	cfg       Config
	requested int   // how many have been requested (acknowledged or found existing)
	pending   []int // requested VMs whose approval has not been acknowledged or seen
	turn      bool
}

// perRun is how many VMs one Run requests at most.
func (v *vms) perRun() int {
	if v.cfg.VMsPerRun > 0 {
		return v.cfg.VMsPerRun
	}
	return v.cfg.VMs
}

// run alternates requesting the next VM and approving the oldest pending request, until
// upTo (and at most cfg.VMs) are requested; then it approves what is pending and idles.
func (v *vms) run(ctx context.Context, upTo int) {
	upTo = min(upTo, v.cfg.VMs)
	for {
		v.turn = !v.turn
		switch {
		case len(v.pending) > 0 && (v.turn || v.requested >= upTo):
			v.approve(ctx)
		case v.requested < upTo:
			v.request(ctx)
		}
		if !pause(ctx, v.cfg.VMInterval) {
			return
		}
	}
}

func (v *vms) request(ctx context.Context) {
	i := v.requested
	name := VMName(i)
	key := Key{KindManagedVM, v.cfg.Namespace, name}
	disk := resource.MustParse("10Gi")
	vm := &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gov.ManagedVMSpec{
		SystemServiceRef: gov.LocalObjectReference{Name: ServiceName(i % v.cfg.Services)},
		InstanceType:     "u1.small", DiskSize: &disk, Image: "quay.io/containerdisks/fedora:40", Reason: "fault test load",
	}}
	obj, err := v.cfg.Tenant.GovernanceV1alpha1().ManagedVMs(v.cfg.Namespace).Create(ctx, vm, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// An earlier request whose answer was lost did land.
		v.requested++
		v.pending = append(v.pending, i)
	case err != nil:
		if ctx.Err() == nil {
			v.cfg.Recorder.Fail(Failure{Key: key, Verb: VerbCreate, At: time.Now(), Err: err.Error(), Code: code(err)})
		}
	default:
		v.requested++
		v.pending = append(v.pending, i)
		v.cfg.Recorder.Ack(Write{Key: key, Verb: VerbCreate, ResourceVersion: obj.ResourceVersion, Seq: 1, At: time.Now()})
	}
}

// approve approves the oldest pending request through its ticket's approval subresource.
func (v *vms) approve(ctx context.Context) {
	i := v.pending[0]
	name := VMName(i)
	key := Key{KindManagedVM, v.cfg.Namespace, name}
	fail := func(err error) {
		if ctx.Err() == nil {
			v.cfg.Recorder.Fail(Failure{Key: key, Verb: VerbApprove, At: time.Now(), Err: err.Error(), Code: code(err)})
		}
	}
	vm, err := v.cfg.Tenant.GovernanceV1alpha1().ManagedVMs(v.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		fail(err)
		return
	}
	if vm.Status.PendingApproval == nil {
		if vm.Status.ApprovedRevision > 0 {
			// An earlier approval whose answer was lost did land.
			v.pending = v.pending[1:]
		}
		// Otherwise the request is not processed yet: ask again later.
		return
	}
	decision := &gov.TicketDecision{Decision: gov.DecisionApprove, Cluster: v.cfg.Cluster}
	ticket, err := v.cfg.Approver.GovernanceV1alpha1().ApprovalTickets(v.cfg.Namespace).Decide(ctx, vm.Status.PendingApproval.Ticket, decision, metav1.CreateOptions{})
	if err != nil {
		fail(err)
		return
	}
	v.pending = v.pending[1:]
	v.cfg.Recorder.Ack(Write{Key: key, Verb: VerbApprove, ResourceVersion: ticket.ResourceVersion, Seq: 2, At: time.Now()})
}

// tags is the push stream's state.
type tags struct {
	cfg  Config
	next int64
}

// TagName is the tag of push seq.
func TagName(seq int64) string { return "1.0." + strconv.FormatInt(seq, 10) }

func (p *tags) run(ctx context.Context) {
	for {
		p.push(ctx)
		if !pause(ctx, p.cfg.Interval) {
			return
		}
	}
}

// push pushes the next tag, an artifact with one manifest naming its seq.
func (p *tags) push(ctx context.Context) {
	p.next++
	seq, tag := p.next, TagName(p.next)
	key := Key{KindTag, p.cfg.Repository, tag}
	files := map[string][]byte{"configmap.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: faults\ndata:\n  seq: %q\n", tag)}
	pushCtx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	digest, err := artifact.Push(pushCtx, p.cfg.RegistryEndpoint, p.cfg.Repository, tag, files, artifact.Metadata{Source: "plinth.dev/faults", Revision: tag})
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Recorder.Fail(Failure{Key: key, Verb: VerbPush, At: time.Now(), Err: err.Error()})
		}
		return
	}
	p.cfg.Recorder.Ack(Write{Key: key, Verb: VerbPush, ResourceVersion: digest, Seq: seq, At: time.Now()})
}
