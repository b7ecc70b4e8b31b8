package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
	"github.com/plinth-dev/plinth/pkg/credentials"
	"github.com/plinth-dev/plinth/pkg/errkind"
)

// ProviderName is the kubernetes provider's name: the runtime class of the Score runtime and
// the providerType of the tenant-compute provider.
const ProviderName = "kubernetes"

// providerFieldManager applies the tenant-compute provider's objects.
const providerFieldManager = "plinth-provider-kubernetes"

// Provider is the kubernetes tenant-compute provider. A TenantCompute becomes, in namespace
// tenant-<tenantID> on the target cluster (providerConfig.cluster, by default the cluster
// Plinth serves):
//   - the namespace, created by the provider and deleted by Destroy;
//   - a Deployment of the tenant's containers, providerConfig.replicas copies (none while
//     suspended), with probes from each healthCheck, requests and limits from resources and
//     variables from env and secrets;
//   - a Service for the containers' ports, of type LoadBalancer when networking.publicIP;
//   - an Ingress for networking.dns, routing hostname.domain to the Service's first TCP port;
//   - on the cluster Plinth serves only, a Role and a RoleBinding plinth-tenant-secrets that
//     let the subjects of the RoleBindings to ClusterRole admin or edit in the TenantCompute's
//     namespace write the Secrets of namespace tenant-<tenantID> (see secretAccess).
//
// Everything carries the compute.plinth.dev labels of the tenant and its TenantCompute. Pods
// cannot reference objects in another namespace or cluster, so nothing is owned by the
// TenantCompute: plinth-controller's finalizer has Destroy remove the namespace instead.
//
// Secrets (source kubernetes-secret) are referenced where the pods run: a Secret of that name
// in namespace tenant-<tenantID> on the target cluster. See tenantEnv. The editors of the
// TenantCompute's namespace may write it there on the cluster Plinth serves; the RoleBinding
// follows them on every Provision and Update, so someone who becomes an editor gets access at
// the tenant's next resync or reconcile request, and someone who stops being one loses it
// then. On a registered Cluster nothing is granted: its identities are not the ones of the
// cluster Plinth serves, so the Cluster's own admins put the Secret there.
//
// Create it with NewProvider.
type Provider struct {
	local     *target
	clusters  credentials.Provider
	newClient func(*rest.Config) (kubernetes.Interface, error)
	applier   *applier
	informers []cache.SharedIndexInformer
}

var (
	_ compute.Provider = &Provider{}
	_ compute.Notifier = &Provider{}
)

// NewProvider returns the kubernetes tenant-compute provider. local is the cluster Plinth
// serves. localInformers is a shared informer factory on local filtered to objects with the
// compute.plinth.dev/tenant-id label; the provider reads its Deployments, Services, Pods,
// Ingresses, Namespaces and Roles from it (registering them, so call this before the factory
// starts). roleBindings is an informer on all the RoleBindings of local, not label-filtered:
// the provider reads the editors of a TenantCompute's namespace from it, and its own
// RoleBindings. Those informers are what Informers returns. localInformers and roleBindings
// are given together; when either is nil the provider reads local with direct requests.
// clusters gives the REST configs of registered Clusters for providerConfig.cluster; when it
// is nil only the local cluster is allowed.
func NewProvider(local kubernetes.Interface, localInformers informers.SharedInformerFactory, roleBindings rbacinformers.RoleBindingInformer,
	clusters credentials.Provider) *Provider {
	p := &Provider{clusters: clusters, newClient: newClientset, applier: newApplier(providerFieldManager)}
	p.local = &target{client: local, read: clientReader{local}}
	if localInformers != nil && roleBindings != nil {
		p.local.read, p.local.direct = newListerReader(localInformers, roleBindings), clientReader{local}
		p.informers = []cache.SharedIndexInformer{
			localInformers.Core().V1().Namespaces().Informer(),
			localInformers.Apps().V1().Deployments().Informer(),
			localInformers.Core().V1().Services().Informer(),
			localInformers.Core().V1().Pods().Informer(),
			localInformers.Networking().V1().Ingresses().Informer(),
			localInformers.Rbac().V1().Roles().Informer(),
			// Waited for like the others: a reconcile before it synced would find no editors
			// and take their access away until the next one.
			roleBindings.Informer(),
		}
	}
	return p
}

// TenantSelector is the label selector the informer factory given to NewProvider must filter
// on: everything the provider makes carries the tenant-id label.
const TenantSelector = v1alpha1.LabelTenantID

// Name is "kubernetes".
func (p *Provider) Name() string { return ProviderName }

// Descriptor is what the kubernetes provider publishes in its ComputeProvider.
func (p *Provider) Descriptor() compute.Descriptor {
	return compute.Descriptor{
		Description: "Runs the tenant's containers as a Deployment, with a Service for its ports and an Ingress for its DNS name, " +
			"in namespace tenant-<tenantID> on the cluster Plinth serves or on the registered Cluster providerConfig.cluster names.",
		ConfigSchema:   configSchema,
		ConfigDefaults: configDefaults,
		SecretSources:  []string{v1alpha1.SecretSourceKubernetes},
		HealthChecks:   []string{v1alpha1.HealthCheckHTTP, v1alpha1.HealthCheckTCP, v1alpha1.HealthCheckExec},
		PublicIP:       true,
	}
}

// Validate checks what only this provider judges: the providerConfig (its cluster must be
// registered), that the tenant ID, name and labels fit the names and labels it makes, and that
// every health check and secret can be run and resolved. Every error it returns is permanent.
func (p *Provider) Validate(ctx context.Context, tc *v1alpha1.TenantCompute) error {
	cfg, err := parseConfig(tc)
	if err != nil {
		return err
	}
	if _, err := build(tc, cfg); err != nil {
		return err
	}
	_, err = p.target(ctx, cfg.Cluster)
	return err
}

// Provision creates the tenant's compute, or finds it created; see Provider. It reports
// success once everything is applied (GetStatus follows the rollout), and in_progress while
// the tenant's namespace from an earlier Destroy is still being deleted.
func (p *Provider) Provision(ctx context.Context, tc *v1alpha1.TenantCompute) (*v1alpha1.ProvisionResult, error) {
	out, err := p.converge(ctx, tc)
	if err != nil {
		return nil, err
	}
	if out.waiting != "" {
		return &v1alpha1.ProvisionResult{Status: v1alpha1.ProvisionStatusInProgress, Message: out.waiting}, nil
	}
	return &v1alpha1.ProvisionResult{Status: v1alpha1.ProvisionStatusSuccess, ResourceIDs: out.resourceIDs(),
		Endpoints: endpoints(out.want.service, out.want.ingress), Message: out.where()}, nil
}

// Update brings the compute to the spec and lists what it changed, in the tenant's terms
// ("container web: image nginx:1.27 → nginx:1.28", "replicas 1 → 2", "service ports"); it
// reports no_changes when the live objects already matched.
func (p *Provider) Update(ctx context.Context, tc *v1alpha1.TenantCompute) (*v1alpha1.UpdateResult, error) {
	out, err := p.converge(ctx, tc)
	if err != nil {
		return nil, err
	}
	switch {
	case out.waiting != "":
		return &v1alpha1.UpdateResult{Status: v1alpha1.UpdateStatusInProgress, Changes: out.changes, Message: out.waiting}, nil
	case len(out.changes) == 0:
		return &v1alpha1.UpdateResult{Status: v1alpha1.UpdateStatusNoChanges, Message: "The compute already matches the spec."}, nil
	}
	return &v1alpha1.UpdateResult{Status: v1alpha1.UpdateStatusSuccess, Changes: out.changes, Message: out.where()}, nil
}

// outcome is what converge did.
type outcome struct {
	target  *target
	want    *tenant
	changes []string
	// waiting says why nothing could be applied yet (the namespace is being deleted).
	waiting string
}

// resourceIDs name what the tenant runs as, for ProvisionResult.resourceIDs.
func (o *outcome) resourceIDs() map[string]string {
	ids := map[string]string{"namespace": o.want.namespace.Name, "deployment": o.want.deployment.Namespace + "/" + o.want.deployment.Name}
	if o.want.service != nil {
		ids["service"] = o.want.service.Namespace + "/" + o.want.service.Name
	}
	if o.want.ingress != nil {
		ids["ingress"] = o.want.ingress.Namespace + "/" + o.want.ingress.Name
	}
	if o.target.cluster != "" {
		ids["cluster"] = o.target.cluster
	}
	return ids
}

// where is one sentence saying where the tenant runs.
func (o *outcome) where() string {
	if o.target.cluster == "" {
		return fmt.Sprintf("The tenant runs in namespace %s on the cluster Plinth serves.", o.want.namespace.Name)
	}
	return fmt.Sprintf("The tenant runs in namespace %s on cluster %s.", o.want.namespace.Name, o.target.cluster)
}

// converge applies the tenant's objects on its target cluster, deletes the Service and Ingress
// it no longer needs, and removes the tenant from the cluster it ran on before when
// providerConfig.cluster changed. Objects unchanged since this process applied them are not
// applied again.
func (p *Provider) converge(ctx context.Context, tc *v1alpha1.TenantCompute) (*outcome, error) {
	cfg, err := parseConfig(tc)
	if err != nil {
		return nil, err
	}
	want, err := build(tc, cfg)
	if err != nil {
		return nil, err
	}
	t, err := p.target(ctx, cfg.Cluster)
	if err != nil {
		return nil, err
	}
	out := &outcome{target: t, want: want}
	ns := want.namespace.Name

	liveNS, err := t.read.namespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	// fresh: the namespace is made by this pass, so nothing of anyone else's is in it yet.
	fresh := false
	if liveNS == nil {
		// Not in the reader (the informers see only labelled namespaces): create it. A
		// namespace that exists after all fails the create, and createNamespace reads it.
		var created bool
		if liveNS, created, err = createNamespace(ctx, t, tc, ns); err != nil {
			return nil, err
		}
		if created {
			fresh = true
			out.changes = append(out.changes, fmt.Sprintf("namespace %s created", ns))
		}
	}
	// Deletion first: a namespace still being deleted for an earlier TenantCompute with this
	// tenant ID (whose Destroy returned before it was gone, or which was deleted outside
	// Plinth) is one to wait for, not someone else's.
	switch {
	case liveNS.DeletionTimestamp != nil:
		out.waiting = fmt.Sprintf("Waiting for namespace %s, which is being deleted, to be gone.", ns)
		return out, nil
	case !ownedBy(liveNS, tc):
		return nil, errkind.Stalledf("namespace %s already exists and was not made by the kubernetes provider for this TenantCompute", ns)
	}

	// What changes is read from the caches first, in order; the requests that make the
	// changes depend on nothing but the namespace, so they are sent at once: a first
	// provision waits for the longest of them (the Role, then its RoleBinding), not for
	// all of them one after the other.
	steps := []func() error{func() error { return p.apply(ctx, t, want.namespace, liveObject(liveNS)) }}
	if t.cluster == "" {
		steps = append(steps, func() error { return p.grantSecrets(ctx, t, tc, fresh) })
	}
	// Nothing is applied over an object of the tenant's names that the provider did not make
	// for this TenantCompute (claimed): the tenant's namespace is its own, but whoever else may
	// write in it (the cluster's admins) may have put one there.
	liveD, err := claimed(t, tc, fresh, "deployment", func(r reader) (*appsv1.Deployment, error) { return r.deployment(ctx, ns, want.deployment.Name) })
	if err != nil {
		return nil, err
	}
	out.changes = append(out.changes, deploymentChanges(liveD, want.deployment)...)
	steps = append(steps, func() error { return p.apply(ctx, t, want.deployment, liveObject(liveD)) })

	readService := func(r reader) (*corev1.Service, error) { return r.service(ctx, ns, want.deployment.Name) }
	liveS, err := readService(t.read)
	if want.service != nil {
		liveS, err = claimed(t, tc, fresh, "service", readService)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case want.service != nil:
		out.changes = append(out.changes, serviceChanges(liveS, want.service)...)
		steps = append(steps, func() error { return p.apply(ctx, t, want.service, liveObject(liveS)) })
	case liveS != nil && ownedBy(liveS, tc):
		out.changes = append(out.changes, fmt.Sprintf("service %s/%s removed", ns, liveS.Name))
		steps = append(steps, func() error { return p.remove(ctx, t, "services", liveS) })
	}

	readIngress := func(r reader) (*networkingv1.Ingress, error) { return r.ingress(ctx, ns, want.deployment.Name) }
	liveI, err := readIngress(t.read)
	if want.ingress != nil {
		liveI, err = claimed(t, tc, fresh, "ingress", readIngress)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case want.ingress != nil:
		out.changes = append(out.changes, ingressChanges(liveI, want.ingress)...)
		steps = append(steps, func() error { return p.apply(ctx, t, want.ingress, liveObject(liveI)) })
	case liveI != nil && ownedBy(liveI, tc):
		out.changes = append(out.changes, fmt.Sprintf("ingress %s/%s removed", ns, liveI.Name))
		steps = append(steps, func() error { return p.remove(ctx, t, "ingresses", liveI) })
	}
	if err := concurrently(steps...); err != nil {
		return nil, err
	}

	if previous, known := previousCluster(tc); known && previous != t.cluster {
		// Once its deletion is sent, the old namespace goes on its own: the move is done.
		if err := p.destroyOn(ctx, previous, tc); err != nil && !errkind.IsWaiting(err) {
			return nil, err
		}
		out.changes = append(out.changes, fmt.Sprintf("cluster %s → %s", clusterName(previous), clusterName(t.cluster)))
	}
	return out, nil
}

// createNamespace creates the tenant's namespace, or reads the one someone created since it
// was found absent; created says which. It creates rather than applies: a server-side apply
// with Force would take over a namespace another made in between, while a create fails on it
// and the caller checks the labels of what is there. The namespace is created with the labels
// that make it the TenantCompute's only (see ownedBy), which never change while it exists; the
// apply that follows sets the rest, so that the tenant's own labels are owned by the apply
// alone and one the tenant drops is removed.
func createNamespace(ctx context.Context, t *target, tc *v1alpha1.TenantCompute, name string) (*corev1.Namespace, bool, error) {
	namespaces := t.client.CoreV1().Namespaces()
	claim := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		v1alpha1.LabelTenantID:               tc.Spec.TenantID,
		v1alpha1.LabelTenantComputeNamespace: tc.Namespace,
		v1alpha1.LabelTenantComputeName:      tc.Name,
	}}}
	created, err := namespaces.Create(ctx, claim, metav1.CreateOptions{FieldManager: providerFieldManager})
	if err == nil {
		return created, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, err
	}
	live, err := found(namespaces.Get(ctx, name, metav1.GetOptions{}))
	if err != nil {
		return nil, false, err
	}
	if live == nil {
		// Created and deleted again meanwhile: the retry starts over.
		return nil, false, fmt.Errorf("namespace %s was created and deleted by someone else while the provider created it", name)
	}
	return live, false, nil
}

// claimed is the live object of one of the tenant's names that the provider is about to
// apply: as t's reader has it, or, when a label-filtered cache has none and the namespace was
// not made by this pass, as the cluster has it. The provider applies with Force, so applying
// over an object it did not make for tc would take it over; such an object is a permanent
// error naming it, and is left as it is.
func claimed[T any, PT interface {
	*T
	metav1.Object
}](t *target, tc *v1alpha1.TenantCompute, fresh bool, kind string, read func(reader) (PT, error)) (PT, error) {
	live, err := read(t.read)
	if err == nil && live == nil && t.direct != nil && !fresh {
		live, err = read(t.direct)
	}
	if err != nil {
		return nil, err
	}
	if live != nil && !ownedBy(live, tc) {
		return nil, errkind.Stalledf("%s %s/%s already exists and was not made by the kubernetes provider for this TenantCompute", kind, live.GetNamespace(), live.GetName())
	}
	return live, nil
}

// grantSecrets applies the Role and RoleBinding that let the editors of tc's namespace write
// the tenant's Secrets (see secretAccess). It is not a change of the tenant's compute, so it
// is not listed in an UpdateResult: a RoleBinding added in the TenantCompute's namespace would
// otherwise turn a resync into an update the tenant never asked for.
func (p *Provider) grantSecrets(ctx context.Context, t *target, tc *v1alpha1.TenantCompute, fresh bool) error {
	bindings, err := t.read.roleBindings(ctx, tc.Namespace)
	if err != nil {
		return err
	}
	role, binding := secretAccess(tc, bindings)
	liveRole, err := claimed(t, tc, fresh, "role", func(r reader) (*rbacv1.Role, error) { return r.role(ctx, role.Namespace, role.Name) })
	if err != nil {
		return err
	}
	// The Role first: the RoleBinding's subjects are granted what it holds when they get it.
	if err := p.apply(ctx, t, role, liveObject(liveRole)); err != nil {
		return err
	}
	liveBinding, err := claimed(t, tc, fresh, "rolebinding", func(r reader) (*rbacv1.RoleBinding, error) {
		return r.roleBinding(ctx, binding.Namespace, binding.Name)
	})
	if err != nil {
		return err
	}
	return p.apply(ctx, t, binding, liveObject(liveBinding))
}

// apply applies one object on t; live is the object as t's reader has it (see liveObject).
func (p *Provider) apply(ctx context.Context, t *target, obj, live metav1.Object) error {
	_, err := p.applier.apply(ctx, t.client, t.cluster, obj, live)
	return err
}

// remove deletes an object the tenant no longer needs.
func (p *Provider) remove(ctx context.Context, t *target, resource string, obj metav1.Object) error {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(obj.GetUID())}}
	var err error
	switch resource {
	case "services":
		err = t.client.CoreV1().Services(obj.GetNamespace()).Delete(ctx, obj.GetName(), opts)
	case "ingresses":
		err = t.client.NetworkingV1().Ingresses(obj.GetNamespace()).Delete(ctx, obj.GetName(), opts)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	p.applier.forget(t.cluster, resource, obj.GetNamespace(), obj.GetName())
	return nil
}

// Destroy deletes the tenant's namespace, and with it everything in it, on its target cluster
// (and on the cluster it ran on before, if providerConfig.cluster changed since). Until the
// namespace is gone it returns an errkind.Waiting error: the tenant ID, which
// names the namespace, is released with the TenantCompute, and a new TenantCompute with that
// ID would otherwise find the old namespace in the way. A namespace that is gone or not the
// provider's for this TenantCompute leaves nothing to do; so does a Cluster that is no longer
// registered, which Plinth cannot reach.
func (p *Provider) Destroy(ctx context.Context, tc *v1alpha1.TenantCompute) error {
	clusters := map[string]bool{}
	if cfg, err := parseConfig(tc); err == nil {
		clusters[cfg.Cluster] = true
	}
	if previous, known := previousCluster(tc); known {
		clusters[previous] = true
	}
	var waiting error
	for _, cluster := range sets.List(sets.KeySet(clusters)) {
		err := p.destroyOn(ctx, cluster, tc)
		switch {
		case errkind.IsWaiting(err):
			// The other cluster's deletion is sent too before this one is waited for.
			if waiting == nil {
				waiting = err
			}
		case err != nil:
			return err
		}
	}
	return waiting
}

// destroyOn deletes the tenant's namespace on one cluster; see Destroy.
func (p *Provider) destroyOn(ctx context.Context, cluster string, tc *v1alpha1.TenantCompute) error {
	t, err := p.target(ctx, cluster)
	if unserved := (*unservedCluster)(nil); errors.As(err, &unserved) {
		return nil
	}
	if err != nil {
		return err
	}
	ns := v1alpha1.TenantNamespace(tc.Spec.TenantID)
	live, err := t.read.namespace(ctx, ns)
	if err == nil && live == nil {
		// An informer may not have seen a namespace created a moment ago: only the cluster
		// says that it is gone.
		live, err = found(t.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}))
	}
	if err != nil {
		return err
	}
	p.forgetTenant(t, tc)
	if live == nil || !ownedBy(live, tc) {
		return nil
	}
	if live.DeletionTimestamp == nil {
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(live.UID)}}
		err := t.client.CoreV1().Namespaces().Delete(ctx, ns, opts)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	// The namespace's delete event wakes the TenantCompute (see TenantFor); the controller
	// also looks again after its poll interval.
	if t.cluster == "" {
		return errkind.Waitingf(compute.RecheckAfter, "namespace %s is being deleted", ns)
	}
	return errkind.Waitingf(compute.RecheckAfter, "namespace %s on cluster %s is being deleted", ns, t.cluster)
}

// forgetTenant drops what was applied to the tenant's objects on t, which go with its
// namespace.
func (p *Provider) forgetTenant(t *target, tc *v1alpha1.TenantCompute) {
	ns, name := v1alpha1.TenantNamespace(tc.Spec.TenantID), objectName(tc.Spec.TenantID)
	p.applier.forget(t.cluster, "namespaces", "", ns)
	for _, resource := range []string{"deployments", "services", "ingresses"} {
		p.applier.forget(t.cluster, resource, ns, name)
	}
	for _, resource := range []string{"roles", "rolebindings"} {
		p.applier.forget(t.cluster, resource, ns, secretWriters)
	}
}

// previousCluster is the cluster the tenant ran on when its status was last reported: the
// status metadata names the namespace, and the cluster unless it is the one Plinth serves.
func previousCluster(tc *v1alpha1.TenantCompute) (string, bool) {
	md := tc.Status.Metadata
	if _, ok := md[metadataNamespace]; !ok {
		return "", false
	}
	return md[metadataCluster], true
}

// clusterName names a cluster in a change.
func clusterName(cluster string) string {
	if cluster == "" {
		return "(the cluster Plinth serves)"
	}
	return cluster
}

// Informers are the label-filtered informers the provider reads the cluster Plinth serves
// from; nil when NewProvider got no factory.
func (p *Provider) Informers() []cache.SharedIndexInformer { return p.informers }

// TenantFor names the TenantCompute an object the provider made belongs to, from its
// compute.plinth.dev labels.
func (p *Provider) TenantFor(obj interface{}) (cache.ObjectName, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return cache.ObjectName{}, false
	}
	namespace, name := m.GetLabels()[v1alpha1.LabelTenantComputeNamespace], m.GetLabels()[v1alpha1.LabelTenantComputeName]
	if namespace == "" || name == "" {
		return cache.ObjectName{}, false
	}
	return cache.NewObjectName(namespace, name), true
}

// liveObject is a reader's result as the applier takes it: a nil interface when the reader
// has none (a nil *Deployment in a metav1.Object is not a nil interface).
func liveObject[T any, PT interface {
	*T
	metav1.Object
}](obj PT) metav1.Object {
	if obj == nil {
		return nil
	}
	return obj
}

// concurrently runs the steps at once and returns the first step's error, in their order.
func concurrently(steps ...func() error) error {
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Go(func() { errs[i] = step() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
