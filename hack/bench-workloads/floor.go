package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/plinth-dev/plinth/internal/benchfloor"
	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	plinthscheme "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/scheme"
)

const (
	// workloadNamespace holds the benchmark's Workloads and what Plinth makes for them;
	// floorNamespace holds the floor's copies.
	workloadNamespace = "team-a"
	floorNamespace    = "floor-" + workloadNamespace
	managedByLabel    = "app.kubernetes.io/managed-by"
	// floorManagedBy replaces "plinth" in the floor's managed-by label: as long, so that
	// every object's labels keep their size; the floor run waits on it.
	floorManagedBy = "floor0"
)

// relabel gives the floor's objects Plinth's labels under other keys of the same length
// (score.dev/workload → floor.dev/workload, workload.score.dev/... → workload.floor.dev/...).
// plinth-controller's Deployment, StatefulSet, Service and Secret informers see every
// namespace, but its handlers map an object to a WorkloadPlan or ResourceBinding by owner
// reference (which the floor's have none of) and the kubevirt runtime's by its own labels; the
// tenant provider's informers select compute.plinth.dev/tenant-id, which no Workload object has.
var relabel = benchfloor.Relabel{Prefixes: [][2]string{{"score.dev/", "floor.dev/"}}, ManagedBy: floorManagedBy}

// plinthGroups are the API groups whose objects own what Plinth makes for a Workload.
var plinthGroups = map[string]bool{v1b1.SchemeGroupVersion.Group: true}

// madeByPlinth says whether Plinth made obj for a Workload: it is owned by a Plinth object
// (a WorkloadPlan or ResourceBinding), or it carries Plinth's managed-by label and no other
// controller made it (Kubernetes' controllers copy the label onto ReplicaSets, Pods and
// EndpointSlices, which they own).
func madeByPlinth(obj metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && plinthGroups[gv.Group] {
			return true
		}
	}
	if obj.GetLabels()[managedByLabel] != "plinth" {
		return false
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return false
		}
	}
	return true
}

// floorSet is what the floor applies: the objects, sorted so that what a pod mounts or a
// route names (Secrets, ConfigMaps, Services) comes before the workloads, and the count of
// each kind.
type floorSet struct {
	objects []benchfloor.Object
	kinds   map[string]int // resource → count
}

// applyOrder is the floor's order of resources; others (none today) go last.
var applyOrder = map[string]int{"secrets": 0, "configmaps": 1, "services": 2, "statefulsets": 3, "deployments": 4, "ingresses": 5}

// toFloor converts the objects Plinth made (as listed, unstructured) into the floor's, in
// namespace floorNamespace. A kind the floor cannot apply is an error naming it.
func toFloor(items []unstructured.Unstructured) (floorSet, error) {
	set := floorSet{kinds: map[string]int{}}
	for i := range items {
		u := &items[i]
		gvk := u.GroupVersionKind()
		typed, err := scheme.Scheme.New(gvk)
		if err != nil {
			return floorSet{}, fmt.Errorf("%s %s/%s: the floor cannot apply a %s", gvk.Kind, u.GetNamespace(), u.GetName(), gvk)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			return floorSet{}, fmt.Errorf("%s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
		obj, err := benchfloor.Convert(typed, floorNamespace, relabel)
		if err != nil {
			return floorSet{}, fmt.Errorf("%s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
		if obj.Resource == "namespaces" {
			return floorSet{}, fmt.Errorf("namespace %s: the floor makes its own namespace", u.GetName())
		}
		set.objects = append(set.objects, obj)
		set.kinds[obj.Resource]++
	}
	sort.SliceStable(set.objects, func(i, j int) bool {
		a, b := set.objects[i], set.objects[j]
		if applyOrder[a.Resource] != applyOrder[b.Resource] {
			return applyOrder[a.Resource] < applyOrder[b.Resource]
		}
		return a.Name < b.Name
	})
	return set, nil
}

// kindsString is "deployments=1000 secrets=1 services=1000", sorted by resource.
func (s floorSet) kindsString() string {
	var parts []string
	for r, n := range s.kinds {
		parts = append(parts, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// madeByKubernetes are resources that Kubernetes' controllers make with a copy of their
// owner's labels but no owner reference: the endpoints controller's Endpoints of a Service.
var madeByKubernetes = map[schema.GroupResource]bool{{Resource: "endpoints"}: true}

// capture lists every namespaced kind kube-apiserver serves itself in namespace (not Plinth's
// own, which plinth-apiserver serves through the aggregator) and keeps what madeByPlinth:
// whatever kinds Plinth made, the floor gets them all, or refuses the run.
func capture(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, namespace string) ([]unstructured.Unstructured, error) {
	lists, err := kube.Discovery().ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range list.APIResources {
			if !captured(gv, r) {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(namespace).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", gv.WithResource(r.Name), err)
			}
			for _, item := range items.Items {
				if madeByPlinth(&item) {
					out = append(out, item)
				}
			}
		}
	}
	return out, nil
}

// captured says whether capture lists resource r of gv: a listable resource that
// kube-apiserver serves itself (not a subresource, not a group of Plinth's) and that no
// Kubernetes controller makes with copied labels. (Plinth's scheme registers the core group
// too, for its meta types.)
func captured(gv schema.GroupVersion, r metav1.APIResource) bool {
	return !strings.Contains(r.Name, "/") && hasVerb(r.Verbs, "list") && !(gv.Group != "" && plinthscheme.Scheme.IsGroupRegistered(gv.Group)) &&
		!madeByKubernetes[gv.WithResource(r.Name).GroupResource()]
}

func hasVerb(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// makeFloorNamespace applies the floor's namespace, before the floor run and its readings:
// team-a existed before the Plinth run too, with what Kubernetes adds to a new namespace.
func makeFloorNamespace(ctx context.Context, kube kubernetes.Interface) error {
	ns, err := benchfloor.Convert(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace}}, floorNamespace, relabel)
	if err != nil {
		return err
	}
	return benchfloor.Apply(ctx, kube, ns)
}

// floorRun applies the floor's objects with clients parallel clients into the floor's
// namespace (makeFloorNamespace) and returns the time until every Deployment is Available and
// every StatefulSet ready.
func floorRun(ctx context.Context, kube kubernetes.Interface, set floorSet, clients int) (time.Duration, error) {
	groups := make([][]benchfloor.Object, len(set.objects))
	for i, obj := range set.objects {
		groups[i] = []benchfloor.Object{obj}
	}
	start := time.Now()
	if err := benchfloor.ApplyAll(ctx, kube, groups, clients); err != nil {
		return 0, err
	}
	selector := managedByLabel + "=" + floorManagedBy
	if n := set.kinds["statefulsets"]; n > 0 {
		src := benchharness.SourceOf(kube.AppsV1().StatefulSets(floorNamespace), selector)
		if err := benchharness.WaitReady[*appsv1.StatefulSet](ctx, src, n, benchfloor.StatefulSetReady); err != nil {
			return 0, fmt.Errorf("floor StatefulSets: %w after %s", err, time.Since(start).Round(time.Second))
		}
	}
	src := benchharness.SourceOf(kube.AppsV1().Deployments(floorNamespace), selector)
	if err := benchharness.WaitReady[*appsv1.Deployment](ctx, src, set.kinds["deployments"], benchfloor.Available); err != nil {
		return 0, fmt.Errorf("floor Deployments: %w after %s", err, time.Since(start).Round(time.Second))
	}
	return time.Since(start), nil
}
