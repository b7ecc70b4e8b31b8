// Package kubectl is the delivery engine of Clusters with spec.gitOps.engine Kubectl:
// plinth-controller applies an artifact's manifests itself, as `kubectl apply --server-side`
// would, and prunes what a new version drops, keeping Flux's inventory in the target's status.
//
// Every object is applied with server-side apply as field manager plinth-gitops, forcing
// conflicts (the artifact owns what it declares), Namespaces first, CustomResourceDefinitions
// next and RBAC after them, so that what lives in or runs as them can be applied after; the
// objects of each of these ranks, and the rest, are applied concurrently. Each object
// carries the gitops.plinth.dev/artifact label (a hash of the OCIArtifact's namespace and
// name) and annotation (namespace/name): pruning and removal delete only objects that still
// carry this artifact's label, never one another artifact or a person took over since, nor
// one marked kustomize.toolkit.fluxcd.io/prune: disabled. The inventory is not the only
// memory of what was applied: among the kinds and namespaces the inventory and the new
// version name, objects carrying the label that the new version lacks are pruned too (a pass
// whose status write was lost applied them). Nor does it take over what it did
// not create: an object that exists on the target without this artifact's label refuses the
// version unless annotated gitops.plinth.dev/adopt: "true". A namespaced object needs a
// namespace, its own or the target's targetNamespace, as with Flux.
package kubectl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
	"github.com/plinth-dev/plinth/pkg/message"
)

// FieldManager is the server-side apply field manager of the objects OCIArtifacts apply.
const FieldManager = "plinth-gitops"

// Engine applies artifacts to Clusters with engine Kubectl.
type Engine struct {
	clients delivery.Clients
	// fieldManager is the server-side apply field manager of the applied objects.
	fieldManager string
	// owner is the kind of what delivers, for messages: OCIArtifact, or
	// InfrastructurePackInstance when a pack delivers through the engine.
	owner string
	// servedWait is how long a delivery waits for the kinds of its CustomResourceDefinitions
	// (crdServedWait; shorter in tests).
	servedWait time.Duration
}

var _ delivery.Engine = &Engine{}

// New returns the engine of Clusters with engine Kubectl for OCIArtifacts, reaching them
// through clients and applying as FieldManager.
func New(clients delivery.Clients) *Engine {
	return NewFor(clients, FieldManager, "OCIArtifact")
}

// NewFor returns the engine for another kind of owner (owner names it in messages), applying
// with its own field manager, so that drift detection can tell what that owner applied.
func NewFor(clients delivery.Clients, fieldManager, owner string) *Engine {
	return &Engine{clients: clients, fieldManager: fieldManager, owner: owner, servedWait: crdServedWait}
}

// FieldManager is the field manager the engine applies with.
func (e *Engine) FieldManager() string { return e.fieldManager }

// Deliver applies every object of art on the target and, when the target prunes, deletes
// what the previous inventory has and this one lacks, and what carries the artifact's label
// among the kinds and namespaces of both without being in this one (sweep). The status is Ready with art's revision
// and the new inventory once all of it succeeded.
//
// Before anything is applied, every object whose kind the target serves is placed (its
// namespace resolved) and read back from the target (see check); one the artifact may not
// apply (see mayApply), or of a kind the target does not serve and no CustomResourceDefinition
// of the artifact adds, refuses the whole version, with nothing applied. The whole version and
// not just that object: applying the rest would leave the target running a mix of two versions
// (a Deployment without the ConfigMap it mounts) under one reported revision, and Flux likewise
// applies nothing of a stage whose dry-run fails. Objects of kinds the target serves only once
// the artifact's CustomResourceDefinitions are applied are placed and checked before their
// rank is applied, once the target serves them (prepareServed).
//
// The ranks (see rank) are applied one after another, the objects of one rank by up to
// workers goroutines at a time: a 200-object chart is mostly objects of one rank, and applied
// one after another they take 200 round trips. The inventory lists the objects in apply order
// (applyOrder) whatever order the requests finished in. A failure while applying stops the
// delivery: no further object is started (those already in flight finish), no later rank is
// applied, and the message names the object that failed (the first in apply order, if several
// did). The inventory then keeps every object applied so far and everything of the previous
// one, so that a later delivery still prunes all of it.
func (e *Engine) Deliver(ctx context.Context, art delivery.Artifact, target delivery.Target) (gitopsv1alpha1.ArtifactTargetStatus, error) {
	cluster := target.Cluster.Name
	status := gitopsv1alpha1.ArtifactTargetStatus{Cluster: cluster, Engine: string(platformv1alpha1.GitOpsEngineKubectl)}
	var previous []gitopsv1alpha1.InventoryEntry
	if target.Previous != nil {
		previous = target.Previous.Inventory
		status.Revision = target.Previous.Revision
		status.LastHandledReconcileAt = target.Previous.LastHandledReconcileAt
	}
	if target.ReconcileRequest != "" {
		// Handled as Flux handles it: asked for and attempted, whatever the outcome.
		status.LastHandledReconcileAt = target.ReconcileRequest
	}
	fail := func(inventory []gitopsv1alpha1.InventoryEntry, err error) (gitopsv1alpha1.ArtifactTargetStatus, error) {
		status.Ready = false
		status.Inventory = inventory
		status.Message = message.Error(err)
		return status, err
	}
	client, mapper, err := e.clients.For(ctx, cluster)
	if err != nil {
		return fail(previous, err)
	}

	p := placer{client: client, mapper: mapper, cluster: cluster, targetNamespace: target.Spec.TargetNamespace,
		fieldManager: e.fieldManager, owner: e.owner,
		label:      delivery.ArtifactLabel(art.Namespace, art.Name),
		annotation: delivery.ArtifactAnnotation(art.Namespace, art.Name),
		previous:   ids(previous),
		flux:       map[string]string{fluxNameLabel: flux.ObjectName(art.Namespace, art.Name), fluxNamespaceLabel: flux.Namespace(target)},
		servedWait: e.servedWait}
	objects := applyOrder(art.Objects)
	placements := make([]*placement, len(objects))
	ownKinds := definedKinds(objects)
	var now []int
	for i, obj := range objects {
		pl, err := p.prepare(obj)
		if meta.IsNoMatchError(err) && ownKinds[obj.GroupVersionKind().GroupKind()] {
			continue // a kind of the artifact's own CustomResourceDefinitions: checked in its turn
		}
		if err != nil {
			return fail(previous, err)
		}
		placements[i], now = pl, append(now, i)
	}
	if err := p.check(ctx, placements, now); err != nil {
		return fail(previous, err)
	}

	// The ranks one after another, the objects of a rank at the same time. done and entries
	// are written by the goroutine of their index only and read between ranks.
	done := make([]bool, len(objects))
	entries := make([]gitopsv1alpha1.InventoryEntry, len(objects))
	appliedSoFar := func() []gitopsv1alpha1.InventoryEntry {
		var out []gitopsv1alpha1.InventoryEntry
		for i := range objects {
			if done[i] {
				out = append(out, entries[i])
			}
		}
		return out
	}
	for _, span := range rankSpans(objects) {
		var later []int
		for i := span[0]; i < span[1]; i++ {
			if placements[i] != nil {
				continue
			}
			if placements[i], err = p.prepareServed(ctx, objects[i]); err != nil {
				return fail(union(appliedSoFar(), previous), err)
			}
			later = append(later, i)
		}
		if err := p.check(ctx, placements, later); err != nil {
			return fail(union(appliedSoFar(), previous), err)
		}
		placed := placements[span[0]:span[1]]
		failed, err := forEach(len(placed), workers, func(n int) error {
			entry, err := placed[n].apply(ctx)
			if err == nil {
				entries[span[0]+n], done[span[0]+n] = entry, true
			}
			return err
		})
		if err != nil {
			return fail(union(appliedSoFar(), previous), fmt.Errorf("applying %s on cluster %s failed: %w", describe(placed[failed].obj), cluster, err))
		}
	}
	applied := appliedSoFar()
	status.Inventory = applied

	if prunes(target.Spec) {
		// The last inventory is not the only memory of what was applied: see sweep.
		lost, err := sweep(ctx, client, mapper, p.label, union(previous, applied), ids(applied), fluxObjects(art.Namespace, art.Name, target))
		if err != nil {
			return fail(union(applied, previous), fmt.Errorf("pruning on cluster %s failed: %w", cluster, err))
		}
		stale := deleteOrder(union(difference(previous, applied), lost))
		for i, entry := range stale {
			if err := deleteEntry(ctx, client, mapper, entry, p.label); err != nil {
				// What is not pruned yet stays in the inventory, for the next delivery.
				return fail(append(slices.Clone(applied), stale[i:]...),
					fmt.Errorf("pruning %s on cluster %s failed: %w", entryDescription(entry), cluster, err))
			}
		}
	}
	status.Ready = true
	status.Revision = art.Revision()
	status.Message = fmt.Sprintf("Applied revision %s: %d objects.", art.Revision(), len(applied))
	return status, nil
}

// Remove deletes the objects of the last inventory that still carry the artifact's label, and
// those of its kinds and namespaces that carry the label although no inventory has them, when
// the target prunes (the default); without prune, or with opts.Keep (another engine takes them
// over), what was applied stays. What is gone already needs nothing.
func (e *Engine) Remove(ctx context.Context, namespace, name string, target delivery.Target, last *gitopsv1alpha1.ArtifactTargetStatus,
	opts delivery.RemoveOptions) error {
	if opts.Keep || last == nil || len(last.Inventory) == 0 || !prunes(target.Spec) {
		return nil
	}
	cluster := target.Cluster.Name
	client, mapper, err := e.clients.For(ctx, cluster)
	if err != nil {
		return err
	}
	label := delivery.ArtifactLabel(namespace, name)
	// What a pass whose status was lost applied goes too: see sweep.
	lost, err := sweep(ctx, client, mapper, label, last.Inventory, nil, fluxObjects(namespace, name, target))
	if err != nil {
		return fmt.Errorf("removing the artifact from cluster %s failed: %w", cluster, err)
	}
	for _, entry := range deleteOrder(union(last.Inventory, lost)) {
		if err := deleteEntry(ctx, client, mapper, entry, label); err != nil {
			return fmt.Errorf("deleting %s on cluster %s failed: %w", entryDescription(entry), cluster, err)
		}
	}
	return nil
}

// Applied returns art's objects as Deliver applies them to target, in apply order: placed in
// their namespace and carrying the owner's label and annotation. A drift check compares the
// live objects with these; comparing with the manifests as written would report the label
// and the namespace as drift. An object of a kind the target does not serve (its
// CustomResourceDefinition went) is returned as written, with the target's targetNamespace if
// it has one: on the target it is missing either way.
func (e *Engine) Applied(ctx context.Context, art delivery.Artifact, target delivery.Target) ([]*unstructured.Unstructured, error) {
	client, mapper, err := e.clients.For(ctx, target.Cluster.Name)
	if err != nil {
		return nil, err
	}
	p := placer{client: client, mapper: mapper, cluster: target.Cluster.Name, targetNamespace: target.Spec.TargetNamespace,
		fieldManager: e.fieldManager, owner: e.owner,
		label:      delivery.ArtifactLabel(art.Namespace, art.Name),
		annotation: delivery.ArtifactAnnotation(art.Namespace, art.Name)}
	objects := applyOrder(art.Objects)
	out := make([]*unstructured.Unstructured, 0, len(objects))
	for _, obj := range objects {
		pl, err := p.prepare(obj)
		if meta.IsNoMatchError(err) {
			u := obj.DeepCopy()
			if target.Spec.TargetNamespace != "" && u.GetNamespace() != "" {
				u.SetNamespace(target.Spec.TargetNamespace)
			}
			out = append(out, u)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, pl.obj.Unstructured)
	}
	return out, nil
}

// prunes says whether the target deletes what a new version drops: spec.prune, true unless set.
func prunes(spec gitopsv1alpha1.ArtifactTarget) bool {
	return spec.Prune == nil || *spec.Prune
}

// placer places an artifact's objects on one target.
type placer struct {
	fieldManager    string
	owner           string
	client          dynamic.Interface
	mapper          meta.RESTMapper
	cluster         string
	targetNamespace string
	// label and annotation are the artifact's gitops.plinth.dev/artifact values.
	label, annotation string
	// previous holds the IDs of the target's last inventory: objects the artifact applied.
	previous map[string]bool
	// flux are the owner labels kustomize-controller puts on what the artifact's Kustomization
	// applied, while the Cluster used the Flux engine.
	flux map[string]string
	// servedWait is how long prepareServed waits for a kind to be served.
	servedWait time.Duration
}

// placement is an object of the artifact as it is applied on the target: with its namespace,
// label and annotation set, and the resource it is applied through.
type placement struct {
	fieldManager string
	obj          manifests.Object
	gvr          schema.GroupVersionResource
	resource     dynamic.ResourceInterface
	version      string
}

// prepareServed prepares obj, of a kind one of the artifact's CustomResourceDefinitions adds,
// once the target serves it: a CustomResourceDefinition just applied is served only once
// kube-apiserver established it and its discovery shows it, which takes from a few
// milliseconds to seconds (an API server that is one of several waits for the others first).
// It asks again every crdPoll (each time reading discovery again) until the kind is served or
// servedWait has passed, and then fails as prepare does, naming the object.
func (p *placer) prepareServed(ctx context.Context, obj manifests.Object) (*placement, error) {
	var pl *placement
	var last error
	err := wait.PollUntilContextTimeout(ctx, crdPoll, p.servedWait, true, func(context.Context) (bool, error) {
		var err error
		pl, err = p.prepare(obj)
		if meta.IsNoMatchError(err) {
			last = err
			return false, nil
		}
		return err == nil, err
	})
	if err != nil && last != nil && wait.Interrupted(err) {
		return nil, last
	}
	return pl, err
}

// crdPoll is how often prepareServed asks whether a kind is served yet.
const crdPoll = 200 * time.Millisecond

// crdServedWait is how long a delivery waits for the kinds of the CustomResourceDefinitions it
// applied to be served before it fails (and is retried with the controller's backoff).
const crdServedWait = 15 * time.Second

// definedKinds is the kinds the CustomResourceDefinitions among objs add.
func definedKinds(objs []manifests.Object) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		if gvk.Group != crdGroup || gvk.Kind != crdKind {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		if kind != "" {
			out[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	return out
}

// crdGroup and crdKind are CustomResourceDefinitions' group and kind.
const (
	crdGroup = "apiextensions.k8s.io"
	crdKind  = "CustomResourceDefinition"
)

// prepare makes obj the object that is applied: in its namespace (the target's
// targetNamespace, or its own; none for a cluster-scoped kind) and with the artifact's label
// and annotation, and finds the resource it is applied through.
func (p *placer) prepare(obj manifests.Object) (*placement, error) {
	u := obj.DeepCopy()
	gvk := u.GroupVersionKind()
	failed := func(err error) error {
		return fmt.Errorf("applying %s on cluster %s failed: %w", describe(obj), p.cluster, err)
	}
	mapping, err := p.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, failed(err)
	}
	var resource dynamic.ResourceInterface
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		// As Flux's kustomize-controller: spec.targetNamespace overrides the manifest's namespace
		// (kustomize's namespace transformer), and without it a namespaced object must name its
		// namespace. Flux applies such an object through controller-runtime without a namespace
		// segment in the URL, which the API server answers 404 ("namespace not specified",
		// fluxcd/pkg/ssa DryRunErr); it never falls back to a kubeconfig's default namespace.
		// So the Kubectl engine refuses it too, rather than apply it to "default" where the
		// same artifact on a Flux Cluster would fail.
		if p.targetNamespace != "" {
			u.SetNamespace(p.targetNamespace)
		}
		if u.GetNamespace() == "" {
			return nil, failed(fmt.Errorf("a namespaced %s needs metadata.namespace or the target's targetNamespace, as Flux requires", gvk.Kind))
		}
		resource = p.client.Resource(mapping.Resource).Namespace(u.GetNamespace())
	} else {
		// A namespace on a cluster-scoped object means nothing; the API server would refuse it.
		u.SetNamespace("")
		resource = p.client.Resource(mapping.Resource)
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[gitopsv1alpha1.LabelArtifact] = p.label
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[gitopsv1alpha1.AnnotationArtifact] = p.annotation
	u.SetAnnotations(annotations)
	return &placement{obj: manifests.Object{Unstructured: u, File: obj.File}, gvr: mapping.Resource, resource: resource, version: gvk.Version,
		fieldManager: p.fieldManager}, nil
}

// mayApply says whether the artifact may apply over live, the object of the same name on the
// target: one it created (its label, or in the last inventory, whose label someone may have
// edited since), one its Flux Kustomization applied (the Cluster switched from Flux to
// Kubectl, which hands the objects over), or one a person handed over with the adopt
// annotation. Anything else (a Namespace or a ConfigMap that was there first, another
// artifact's object) it must not take: with Force it would take the fields over, and a later
// version that drops the object would prune it.
func (p *placer) mayApply(live *unstructured.Unstructured, id string) bool {
	labels := live.GetLabels()
	return labels[gitopsv1alpha1.LabelArtifact] == p.label || p.previous[id] ||
		(labels[fluxNameLabel] == p.flux[fluxNameLabel] && labels[fluxNamespaceLabel] == p.flux[fluxNamespaceLabel]) ||
		live.GetAnnotations()[delivery.AnnotationAdopt] == "true"
}

// fluxNameLabel and fluxNamespaceLabel are kustomize-controller's owner labels on what a
// Kustomization applied (fluxcd/pkg/ssa ResourceManager.SetOwnerLabels): its name and namespace.
var (
	fluxNameLabel      = kustomizev1.GroupVersion.Group + "/name"
	fluxNamespaceLabel = kustomizev1.GroupVersion.Group + "/namespace"
)

// apply applies the placed object with server-side apply and returns its inventory entry.
func (pl *placement) apply(ctx context.Context) (gitopsv1alpha1.InventoryEntry, error) {
	u := pl.obj.Unstructured
	if _, err := pl.resource.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: pl.fieldManager, Force: true}); err != nil {
		return gitopsv1alpha1.InventoryEntry{}, err
	}
	return gitopsv1alpha1.InventoryEntry{ID: manifests.KeyOf(u).String(), Version: pl.version}, nil
}

// ids is the set of an inventory's IDs.
func ids(inventory []gitopsv1alpha1.InventoryEntry) map[string]bool {
	out := make(map[string]bool, len(inventory))
	for _, e := range inventory {
		out[e.ID] = true
	}
	return out
}

// deleteEntry deletes the object an inventory entry names if it still carries the artifact's
// label and does not opt out of pruning (PruneKey). An object or kind that is gone needs
// nothing.
func deleteEntry(ctx context.Context, client dynamic.Interface, mapper meta.RESTMapper, entry gitopsv1alpha1.InventoryEntry, label string) error {
	key, err := parseID(entry.ID)
	if err != nil {
		return err
	}
	mapping, err := mapper.RESTMapping(schema.GroupKind{Group: key.Group, Kind: key.Kind}, entry.Version)
	if meta.IsNoMatchError(err) {
		// The kind is no longer served (its CustomResourceDefinition went first): its
		// objects went with it.
		return nil
	}
	if err != nil {
		return err
	}
	var resource dynamic.ResourceInterface = client.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		resource = client.Resource(mapping.Resource).Namespace(key.Namespace)
	}
	current, err := resource.Get(ctx, key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if current.GetLabels()[gitopsv1alpha1.LabelArtifact] != label {
		return nil // taken over by another artifact or by hand: no longer this artifact's
	}
	if pruneDisabled(current) {
		return nil
	}
	uid := current.GetUID()
	propagation := metav1.DeletePropagationBackground
	err = resource.Delete(ctx, key.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &propagation})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or deleted and created again in between: either way not the object applied.
		return nil
	}
	return err
}

// PruneKey is Flux's per-object opt-out of garbage collection, kustomize.toolkit.fluxcd.io/prune:
// an object whose label or annotation of this key is "disabled" (in any case) is never
// pruned nor removed with its artifact. The Kubectl engine honours it as kustomize-controller
// does, so that the same marks keep an object on either engine.
var PruneKey = kustomizev1.GroupVersion.Group + "/prune"

// pruneDisabled says whether obj opted out of pruning, as fluxcd/pkg/ssa's AnyInMetadata reads
// kustomize-controller's exclusion.
func pruneDisabled(obj *unstructured.Unstructured) bool {
	return strings.EqualFold(obj.GetLabels()[PruneKey], kustomizev1.DisabledValue) ||
		strings.EqualFold(obj.GetAnnotations()[PruneKey], kustomizev1.DisabledValue)
}

// parseID reads an inventory ID, <namespace>_<name>_<group>_<kind>. None of the parts can hold
// '_' (namespaces, names and groups are DNS names, kinds are identifiers).
func parseID(id string) (manifests.Key, error) {
	parts := strings.Split(id, "_")
	if len(parts) != 4 || parts[1] == "" || parts[3] == "" {
		return manifests.Key{}, fmt.Errorf("inventory entry %q is not <namespace>_<name>_<group>_<kind>", id)
	}
	return manifests.Key{Namespace: parts[0], Name: parts[1], Group: parts[2], Kind: parts[3]}, nil
}

// rank orders kinds for applying: Namespaces, then CustomResourceDefinitions, then RBAC (the
// ServiceAccounts, roles and bindings that workloads run as), then the rest.
func rank(group, kind string) int {
	switch {
	case group == "" && kind == "Namespace":
		return 0
	case group == crdGroup && kind == crdKind:
		return 1
	case group == "" && kind == "ServiceAccount",
		group == "rbac.authorization.k8s.io" && (kind == "ClusterRole" || kind == "ClusterRoleBinding" || kind == "Role" || kind == "RoleBinding"):
		return 2
	default:
		return 3
	}
}

// applyOrder is the artifact's objects, Namespaces first, CustomResourceDefinitions next,
// then RBAC, otherwise in the artifact's order.
func applyOrder(objs []manifests.Object) []manifests.Object {
	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b manifests.Object) int {
		ga, gb := a.GroupVersionKind(), b.GroupVersionKind()
		return rank(ga.Group, ga.Kind) - rank(gb.Group, gb.Kind)
	})
	return ordered
}

// rankSpans splits objects in apply order into the runs of one rank each, as [start, end)
// index pairs: what Deliver applies at the same time.
func rankSpans(objs []manifests.Object) [][2]int {
	var spans [][2]int
	for i, obj := range objs {
		gvk := obj.GroupVersionKind()
		r := rank(gvk.Group, gvk.Kind)
		if i > 0 {
			prev := objs[i-1].GroupVersionKind()
			if rank(prev.Group, prev.Kind) == r {
				spans[len(spans)-1][1] = i + 1
				continue
			}
		}
		spans = append(spans, [2]int{i, i + 1})
	}
	return spans
}

// deleteOrder is the reverse of applyOrder for inventory entries: custom resources and
// everything in namespaces first, their CustomResourceDefinitions and Namespaces last.
func deleteOrder(entries []gitopsv1alpha1.InventoryEntry) []gitopsv1alpha1.InventoryEntry {
	ordered := slices.Clone(entries)
	slices.Reverse(ordered)
	slices.SortStableFunc(ordered, func(a, b gitopsv1alpha1.InventoryEntry) int {
		ka, _ := parseID(a.ID)
		kb, _ := parseID(b.ID)
		return rank(kb.Group, kb.Kind) - rank(ka.Group, ka.Kind)
	})
	return ordered
}

// difference is what old has and new lacks, by ID (a new version of the same object is the
// same object).
func difference(old, new []gitopsv1alpha1.InventoryEntry) []gitopsv1alpha1.InventoryEntry {
	keep := make(map[string]bool, len(new))
	for _, e := range new {
		keep[e.ID] = true
	}
	var out []gitopsv1alpha1.InventoryEntry
	for _, e := range old {
		if !keep[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

// union is a then what b adds, by ID.
func union(a, b []gitopsv1alpha1.InventoryEntry) []gitopsv1alpha1.InventoryEntry {
	return append(slices.Clone(a), difference(b, a)...)
}

// describe names an object for messages: its kind, namespace/name and the file it came from.
func describe(obj manifests.Object) string {
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	s := obj.GetKind() + " " + name
	if obj.File != "" {
		s += " (" + obj.File + ")"
	}
	return s
}

func entryDescription(entry gitopsv1alpha1.InventoryEntry) string {
	key, err := parseID(entry.ID)
	if err != nil {
		return entry.ID
	}
	name := key.Name
	if key.Namespace != "" {
		name = key.Namespace + "/" + name
	}
	return key.Kind + " " + name
}
