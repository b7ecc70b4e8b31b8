package kubectl

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery"
	"github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
	"github.com/plinth-dev/plinth/pkg/gitops/manifests"
)

// sweep finds what the artifact applied on the target that no inventory remembers: the
// inventory is written to the artifact's status only after a delivery, so a pass whose status
// write was lost (a conflict, a crash) leaves objects that carry the artifact's label but are
// in no inventory, and a later version that drops them would never prune them.
//
// It lists, with the artifact's label as selector, every kind of entries (the last inventory
// and the new objects): cluster-wide for cluster-scoped kinds, and in each namespace of
// entries for namespaced ones. What it finds that keep lacks (the objects of the new
// version), and that is not the target's own Flux OCIRepository or Kustomization (which carry
// the label too, and are the Flux engine's to hand over), is returned as inventory entries,
// to be pruned with the same rules as the inventory's (deleteEntry). A kind no longer served
// has nothing to find. Objects of kinds neither the last inventory nor the new version has,
// or in other namespaces, stay unknown: listing every kind of the cluster would cost a
// discovery and a list per kind on every delivery.
func sweep(ctx context.Context, client dynamic.Interface, mapper meta.RESTMapper, label string, entries []gitopsv1alpha1.InventoryEntry,
	keep map[string]bool, exclude map[string]bool) ([]gitopsv1alpha1.InventoryEntry, error) {
	type kind struct {
		gk      schema.GroupKind
		version string
	}
	var kinds []kind
	seenKinds := map[schema.GroupKind]bool{}
	var namespaces []string
	for _, e := range entries {
		key, err := parseID(e.ID)
		if err != nil {
			return nil, err
		}
		gk := schema.GroupKind{Group: key.Group, Kind: key.Kind}
		if !seenKinds[gk] {
			seenKinds[gk] = true
			kinds = append(kinds, kind{gk: gk, version: e.Version})
		}
		if key.Namespace != "" && !slices.Contains(namespaces, key.Namespace) {
			namespaces = append(namespaces, key.Namespace)
		}
	}
	slices.Sort(namespaces)

	selector := labels.SelectorFromSet(labels.Set{gitopsv1alpha1.LabelArtifact: label}).String()
	var found []gitopsv1alpha1.InventoryEntry
	seen := map[string]bool{}
	for _, k := range kinds {
		mapping, err := mapper.RESTMapping(k.gk, k.version)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		scopes := []string{metav1.NamespaceNone}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			scopes = namespaces
		}
		for _, ns := range scopes {
			list, err := client.Resource(mapping.Resource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				where := ""
				if ns != "" {
					where = " in namespace " + ns
				}
				return nil, fmt.Errorf("listing the %s objects of the artifact%s failed: %w", k.gk.Kind, where, err)
			}
			for _, item := range list.Items {
				id := manifests.Key{Group: k.gk.Group, Kind: k.gk.Kind, Namespace: item.GetNamespace(), Name: item.GetName()}.String()
				if keep[id] || exclude[id] || seen[id] {
					continue
				}
				seen[id] = true
				found = append(found, gitopsv1alpha1.InventoryEntry{ID: id, Version: mapping.GroupVersionKind.Version})
			}
		}
	}
	return found, nil
}

// fluxObjects are the IDs of the OCIRepository and the Kustomization the Flux engine creates
// for the artifact namespace/name on target: they carry the artifact's label, but only the
// Flux engine may remove them (with prune off, when the Cluster switches engines), never a
// sweep: deleting a Kustomization that prunes would have Flux delete everything it applied.
func fluxObjects(namespace, name string, target delivery.Target) map[string]bool {
	objName, objNamespace := flux.ObjectName(namespace, name), flux.Namespace(target)
	return map[string]bool{
		manifests.Key{Group: sourcev1.GroupVersion.Group, Kind: sourcev1.OCIRepositoryKind, Namespace: objNamespace, Name: objName}.String():       true,
		manifests.Key{Group: kustomizev1.GroupVersion.Group, Kind: kustomizev1.KustomizationKind, Namespace: objNamespace, Name: objName}.String(): true,
	}
}
