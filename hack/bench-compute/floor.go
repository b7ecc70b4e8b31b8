package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// serverAnnotations and serverLabels are set by the API server or Kubernetes' controllers,
// not by whoever applies the object.
var (
	serverAnnotations = map[string]bool{"deployment.kubernetes.io/revision": true}
	serverLabels      = map[string]bool{corev1.LabelMetadataName: true}
)

// floorTenant is what the floor applies for one tenant, in order: its namespace, then its
// Deployments and Services. Each is a server-side apply body.
type floorTenant struct {
	namespace string
	objects   []floorObject
}

// floorObject is one apply body and where it goes.
type floorObject struct {
	resource, namespace, name string
	body                      []byte
}

// captured is what the provider made for the TenantComputes, as listed from kube-apiserver.
type captured struct {
	namespaces  []corev1.Namespace
	deployments []appsv1.Deployment
	services    []corev1.Service
}

// floorTenants turns the provider's objects into the floor's: the same specs in namespace
// floor-<tenantID> instead of tenant-<tenantID>, stripped of what the server sets or
// allocates (status, uid, resourceVersion, managed fields, a Service's cluster IPs and node
// ports, a Deployment's revision), with the provider's labels renamed (see floorLabelPrefix).
// Every namespace must hold a Deployment; tenants are sorted by namespace.
func floorTenants(c captured) ([]floorTenant, error) {
	byNamespace := map[string]*floorTenant{}
	for i := range c.namespaces {
		ns := &c.namespaces[i]
		floor, err := floorNamespace(ns.Name)
		if err != nil {
			return nil, err
		}
		body, err := applyBody(&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: floorMeta(ns.ObjectMeta, "", floor),
		})
		if err != nil {
			return nil, err
		}
		byNamespace[ns.Name] = &floorTenant{namespace: floor, objects: []floorObject{{resource: "namespaces", name: floor, body: body}}}
	}
	add := func(namespace, resource, name string, obj any) error {
		t, ok := byNamespace[namespace]
		if !ok {
			return fmt.Errorf("%s %s/%s is in a namespace the provider did not label", resource, namespace, name)
		}
		body, err := applyBody(obj)
		if err != nil {
			return err
		}
		t.objects = append(t.objects, floorObject{resource: resource, namespace: t.namespace, name: name, body: body})
		return nil
	}
	for i := range c.deployments {
		d := &c.deployments[i]
		floor, err := floorNamespace(d.Namespace)
		if err != nil {
			return nil, err
		}
		spec := *d.Spec.DeepCopy()
		if spec.Selector != nil {
			spec.Selector.MatchLabels = relabel(spec.Selector.MatchLabels)
		}
		spec.Template.Labels = relabel(spec.Template.Labels)
		out := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: floorMeta(d.ObjectMeta, floor, d.Name), Spec: spec}
		if err := add(d.Namespace, "deployments", d.Name, out); err != nil {
			return nil, err
		}
	}
	for i := range c.services {
		s := &c.services[i]
		floor, err := floorNamespace(s.Namespace)
		if err != nil {
			return nil, err
		}
		spec := *s.Spec.DeepCopy()
		spec.ClusterIP, spec.ClusterIPs, spec.HealthCheckNodePort = "", nil, 0
		for j := range spec.Ports {
			spec.Ports[j].NodePort = 0
		}
		spec.Selector = relabel(spec.Selector)
		out := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: floorMeta(s.ObjectMeta, floor, s.Name), Spec: spec}
		if err := add(s.Namespace, "services", s.Name, out); err != nil {
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
		if o.resource == "deployments" {
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

// floorMeta keeps an object's labels (renamed) and annotations under the floor's namespace and
// name; everything the server sets is left out.
func floorMeta(m metav1.ObjectMeta, namespace, name string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: relabel(m.Labels)}
	for k := range serverLabels {
		delete(out.Labels, k)
	}
	for k, v := range m.Annotations {
		if serverAnnotations[k] {
			continue
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out
}

// relabel renames the provider's labels (compute.plinth.dev/* → floor.bench.plinth.dev/*,
// managed-by plinth → bench-floor) and keeps the others.
func relabel(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if rest, ok := strings.CutPrefix(k, plinthLabelPrefix); ok {
			k = floorLabelPrefix + rest
		}
		if k == managedByLabel && v == "plinth" {
			v = "bench-floor"
		}
		out[k] = v
	}
	return out
}

// applyBody is an object as a server-side apply sends it; the empty status is dropped.
func applyBody(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return json.Marshal(m)
}
