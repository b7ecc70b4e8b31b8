package main

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plinth-dev/plinth/internal/benchfloor"
)

// The floor's objects carry the provider's labels under another domain, so that
// plinth-controller's tenant informers (filtered on compute.plinth.dev/tenant-id) never see
// them and no TenantCompute is woken, while every object keeps as many labels, selectors and
// bytes as the provider's.
const (
	plinthLabelPrefix = "compute.plinth.dev/"
	floorLabelPrefix  = "floor.bench.plinth.dev/"
	// floorTenantLabel is the provider's tenant-id label as the floor carries it: the floor
	// run watches its Deployments with it.
	floorTenantLabel = floorLabelPrefix + "tenant-id"
	managedByLabel   = "app.kubernetes.io/managed-by"
	// tenantNamespacePrefix is the provider's namespace prefix; floorNamespacePrefix replaces it.
	tenantNamespacePrefix = "tenant-"
	floorNamespacePrefix  = "floor-"
)

// relabel renames the provider's labels (compute.plinth.dev/* → floor.bench.plinth.dev/*,
// managed-by plinth → bench-floor) and keeps the others.
var relabel = benchfloor.Relabel{Prefixes: [][2]string{{plinthLabelPrefix, floorLabelPrefix}}, ManagedBy: "bench-floor"}

// floorTenant is what the floor applies for one tenant, in order: its namespace, then its
// Deployments and Services. Each is a server-side apply body.
type floorTenant struct {
	namespace string
	objects   []benchfloor.Object
}

// captured is what the provider made for the TenantComputes, as listed from kube-apiserver.
type captured struct {
	namespaces  []corev1.Namespace
	deployments []appsv1.Deployment
	services    []corev1.Service
}

// floorTenants turns the provider's objects into the floor's (benchfloor.Convert): the same
// specs in namespace floor-<tenantID> instead of tenant-<tenantID>, with the provider's labels
// renamed (see floorLabelPrefix). Every namespace must hold a Deployment; tenants are sorted
// by namespace.
func floorTenants(c captured) ([]floorTenant, error) {
	byNamespace := map[string]*floorTenant{}
	for i := range c.namespaces {
		ns := &c.namespaces[i]
		floor, err := floorNamespace(ns.Name)
		if err != nil {
			return nil, err
		}
		obj, err := benchfloor.Convert(ns, floor, relabel)
		if err != nil {
			return nil, err
		}
		byNamespace[ns.Name] = &floorTenant{namespace: floor, objects: []benchfloor.Object{obj}}
	}
	// add converts one object into the floor tenant of its namespace.
	add := func(namespace, resource, name string, in runtime.Object) error {
		t, ok := byNamespace[namespace]
		if !ok {
			return fmt.Errorf("%s %s/%s is in a namespace the provider did not label", resource, namespace, name)
		}
		obj, err := benchfloor.Convert(in, t.namespace, relabel)
		if err != nil {
			return err
		}
		t.objects = append(t.objects, obj)
		return nil
	}
	for i := range c.deployments {
		d := &c.deployments[i]
		if err := add(d.Namespace, "deployments", d.Name, d); err != nil {
			return nil, err
		}
	}
	for i := range c.services {
		s := &c.services[i]
		if err := add(s.Namespace, "services", s.Name, s); err != nil {
			return nil, err
		}
	}
	var out []floorTenant
	for namespace, t := range byNamespace {
		if !hasDeployment(t) {
			return nil, fmt.Errorf("namespace %s holds no Deployment", namespace)
		}
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].namespace < out[j].namespace })
	return out, nil
}

func hasDeployment(t *floorTenant) bool {
	for _, o := range t.objects {
		if o.Resource == "deployments" {
			return true
		}
	}
	return false
}

// floorNamespace is the floor's namespace for the provider's tenant-<tenantID>.
func floorNamespace(namespace string) (string, error) {
	id, ok := strings.CutPrefix(namespace, tenantNamespacePrefix)
	if !ok || id == "" {
		return "", fmt.Errorf("namespace %s is not the provider's %s<tenantID>", namespace, tenantNamespacePrefix)
	}
	return floorNamespacePrefix + id, nil
}
