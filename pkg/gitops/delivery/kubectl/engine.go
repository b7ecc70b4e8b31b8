// Package kubectl is the delivery engine of Clusters with spec.gitOps.engine Kubectl:
// plinth-controller applies an artifact's manifests itself, as `kubectl apply --server-side`
// would, and prunes what a new version drops, keeping Flux's inventory in the target's status.
//
// Every object is applied with server-side apply as field manager plinth-gitops, forcing
// conflicts (the artifact owns what it declares), Namespaces first and
// CustomResourceDefinitions next so that what lives in them can be applied after. Each object
// carries the gitops.plinth.dev/artifact label (a hash of the OCIArtifact's namespace and
// name) and annotation (namespace/name): pruning and removal delete only objects that still
// carry this artifact's label, never one another artifact or a person took over since.
package kubectl

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

// FieldManager is the server-side apply field manager of the applied objects.
const FieldManager = "plinth-gitops"

// DefaultNamespace is where a namespaced object that names no namespace is applied when the
// target sets no targetNamespace, as kubectl's default context namespace.
const DefaultNamespace = metav1.NamespaceDefault

type engine struct {
	clients delivery.Clients
}

// New returns the engine of Clusters with engine Kubectl, reaching them through clients.
func New(clients delivery.Clients) delivery.Engine {
	return &engine{clients: clients}
}

// Deliver applies every object of art on the target and, when the target prunes, deletes
// what the previous inventory has and this one lacks. The status is Ready with art's revision
// and the new inventory once all of it succeeded. A failure stops at the object that failed,
// named in the message; the inventory then keeps everything applied so far and everything
// of the previous one, so that a later delivery still prunes all of it.
func (e *engine) Deliver(ctx context.Context, art delivery.Artifact, target delivery.Target) (gitopsv1alpha1.ArtifactTargetStatus, error) {
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
		status.Message = sentence(err.Error())
		return status, err
	}
	client, mapper, err := e.clients.For(ctx, cluster)
	if err != nil {
		return fail(previous, err)
	}

	var applied []gitopsv1alpha1.InventoryEntry
	label, annotation := delivery.ArtifactLabel(art.Namespace, art.Name), delivery.ArtifactAnnotation(art.Namespace, art.Name)
	for _, obj := range applyOrder(art.Objects) {
		entry, err := applyObject(ctx, client, mapper, obj, target.Spec.TargetNamespace, label, annotation)
		if err != nil {
			return fail(union(applied, previous), fmt.Errorf("applying %s on cluster %s failed: %w", describe(obj), cluster, err))
		}
		applied = append(applied, entry)
	}
	status.Inventory = applied

	if prunes(target.Spec) {
		stale := deleteOrder(difference(previous, applied))
		for i, entry := range stale {
			if err := deleteEntry(ctx, client, mapper, entry, label); err != nil {
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

// Remove deletes the objects of the last inventory that still carry the artifact's label, when
// the target prunes (the default); without prune, or with opts.Keep (another engine takes them
// over), what was applied stays. What is gone already needs nothing.
func (e *engine) Remove(ctx context.Context, namespace, name string, target delivery.Target, last *gitopsv1alpha1.ArtifactTargetStatus,
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
	for _, entry := range deleteOrder(last.Inventory) {
		if err := deleteEntry(ctx, client, mapper, entry, label); err != nil {
			return fmt.Errorf("deleting %s on cluster %s failed: %w", entryDescription(entry), cluster, err)
		}
	}
	return nil
}

// prunes says whether the target deletes what a new version drops: spec.prune, true unless set.
func prunes(spec gitopsv1alpha1.ArtifactTarget) bool {
	return spec.Prune == nil || *spec.Prune
}

// applyObject applies one object and returns its inventory entry.
func applyObject(ctx context.Context, client dynamic.Interface, mapper meta.RESTMapper, obj manifests.Object,
	targetNamespace, label, annotation string) (gitopsv1alpha1.InventoryEntry, error) {
	u := obj.DeepCopy()
	gvk := u.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gitopsv1alpha1.InventoryEntry{}, err
	}
	var resource dynamic.ResourceInterface
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		switch {
		case targetNamespace != "":
			u.SetNamespace(targetNamespace)
		case u.GetNamespace() == "":
			u.SetNamespace(DefaultNamespace)
		}
		resource = client.Resource(mapping.Resource).Namespace(u.GetNamespace())
	} else {
		// A namespace on a cluster-scoped object means nothing; the API server would refuse it.
		u.SetNamespace("")
		resource = client.Resource(mapping.Resource)
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[gitopsv1alpha1.LabelArtifact] = label
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[gitopsv1alpha1.AnnotationArtifact] = annotation
	u.SetAnnotations(annotations)
	if _, err := resource.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return gitopsv1alpha1.InventoryEntry{}, err
	}
	return gitopsv1alpha1.InventoryEntry{ID: manifests.KeyOf(u).String(), Version: gvk.Version}, nil
}

// deleteEntry deletes the object an inventory entry names if it still carries the artifact's
// label. An object or kind that is gone needs nothing.
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
	uid := current.GetUID()
	propagation := metav1.DeletePropagationBackground
	err = resource.Delete(ctx, key.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &propagation})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or deleted and created again in between: either way not the object applied.
		return nil
	}
	return err
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

// rank orders kinds for applying: Namespaces, then CustomResourceDefinitions, then the rest.
func rank(group, kind string) int {
	switch {
	case group == "" && kind == "Namespace":
		return 0
	case group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition":
		return 1
	default:
		return 2
	}
}

// applyOrder is the artifact's objects, Namespaces first and CustomResourceDefinitions next,
// otherwise in the artifact's order.
func applyOrder(objs []manifests.Object) []manifests.Object {
	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b manifests.Object) int {
		ga, gb := a.GroupVersionKind(), b.GroupVersionKind()
		return rank(ga.Group, ga.Kind) - rank(gb.Group, gb.Kind)
	})
	return ordered
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

// sentence makes s one sentence: a capital first letter and a final period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
