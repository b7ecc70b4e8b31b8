package main

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/internal/benchfloor"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

// providerLabels are the labels the kubernetes provider gives a tenant's objects.
func providerLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name": "bench-0001", "app.kubernetes.io/managed-by": "plinth",
		v1alpha1.LabelTenantID: "bench-0001", v1alpha1.LabelTenantComputeNamespace: "team-a", v1alpha1.LabelTenantComputeName: "bench-0001",
	}
}

// served is meta as kube-apiserver returns it: with everything the server sets.
func served(namespace, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels, UID: "1234", ResourceVersion: "42", Generation: 2,
		CreationTimestamp: metav1.Now(), ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "plinth-provider-kubernetes"}}}
}

func capturedTenant() captured {
	nsLabels := providerLabels()
	nsLabels[corev1.LabelMetadataName] = "tenant-bench-0001"
	podSpec := corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{
		Name: "web", Image: "registry.example.com/bench:1",
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("128m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("128m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 10, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: 3},
	}}}
	d := appsv1.Deployment{
		ObjectMeta: served("tenant-bench-0001", "bench-0001", providerLabels()),
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelTenantID: "bench-0001"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: providerLabels()}, Spec: podSpec}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, AvailableReplicas: 1},
	}
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1", "example.com/kept": "yes"}
	s := corev1.Service{
		ObjectMeta: served("tenant-bench-0001", "bench-0001", providerLabels()),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.3.4", ClusterIPs: []string{"10.0.3.4"},
			Selector: map[string]string{v1alpha1.LabelTenantID: "bench-0001"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP, NodePort: 30001}}},
	}
	return captured{
		namespaces:  []corev1.Namespace{{ObjectMeta: served("", "tenant-bench-0001", nsLabels), Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}},
		deployments: []appsv1.Deployment{d},
		services:    []corev1.Service{s},
	}
}

func TestFloorTenantsAreTheProvidersObjectsWithoutServerFieldsOrPlinthLabels(t *testing.T) {
	in := capturedTenant()
	tenants, err := floorTenants(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(tenants) != 1 || tenants[0].namespace != "floor-bench-0001" || len(tenants[0].objects) != 3 {
		t.Fatalf("got %+v, want one tenant in floor-bench-0001 with three objects", tenants)
	}
	objs := tenants[0].objects
	for i, want := range []benchfloor.Object{{Resource: "namespaces", Name: "floor-bench-0001"},
		{Resource: "deployments", Namespace: "floor-bench-0001", Name: "bench-0001"},
		{Resource: "services", Namespace: "floor-bench-0001", Name: "bench-0001"}} {
		if got := objs[i]; got.Resource != want.Resource || got.Namespace != want.Namespace || got.Name != want.Name {
			t.Errorf("object %d is %s %s/%s, want %s %s/%s", i, got.Resource, got.Namespace, got.Name, want.Resource, want.Namespace, want.Name)
		}
	}
	for _, o := range objs {
		body := string(o.Body)
		for _, server := range []string{"compute.plinth.dev", `"plinth"`, "status", "uid", "resourceVersion", "generation", "managedFields",
			"creationTimestamp", "clusterIP", "nodePort", "deployment.kubernetes.io/revision", corev1.LabelMetadataName, "tenant-bench-0001"} {
			if strings.Contains(body, server) {
				t.Errorf("%s body has %s: %s", o.Resource, server, body)
			}
		}
	}

	var ns corev1.Namespace
	mustUnmarshal(t, objs[0].Body, &ns)
	if ns.APIVersion != "v1" || ns.Kind != "Namespace" || ns.Labels[floorTenantLabel] != "bench-0001" || ns.Labels[managedByLabel] != "bench-floor" {
		t.Errorf("namespace %+v", ns)
	}

	var d appsv1.Deployment
	mustUnmarshal(t, objs[1].Body, &d)
	if d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
		t.Errorf("deployment type %s %s", d.APIVersion, d.Kind)
	}
	if !apiequality.Semantic.DeepEqual(d.Spec.Template.Spec, in.deployments[0].Spec.Template.Spec) || *d.Spec.Replicas != 1 {
		t.Errorf("the pod spec changed:\n%+v\nwant\n%+v", d.Spec.Template.Spec, in.deployments[0].Spec.Template.Spec)
	}
	if d.Annotations["example.com/kept"] != "yes" {
		t.Errorf("a client annotation was dropped: %v", d.Annotations)
	}
	wantSelector := map[string]string{floorTenantLabel: "bench-0001"}
	if !apiequality.Semantic.DeepEqual(d.Spec.Selector.MatchLabels, wantSelector) || d.Spec.Template.Labels[floorTenantLabel] != "bench-0001" ||
		len(d.Spec.Template.Labels) != len(providerLabels()) || len(d.Labels) != len(providerLabels()) {
		t.Errorf("selector %v, template labels %v, labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels, d.Labels)
	}

	var s corev1.Service
	mustUnmarshal(t, objs[2].Body, &s)
	wantPorts := []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
	if s.Kind != "Service" || s.Spec.Type != corev1.ServiceTypeClusterIP || !apiequality.Semantic.DeepEqual(s.Spec.Ports, wantPorts) ||
		!apiequality.Semantic.DeepEqual(s.Spec.Selector, wantSelector) {
		t.Errorf("service %+v", s)
	}

	// The captured objects are left as they were.
	if in.services[0].Spec.ClusterIP != "10.0.3.4" || in.deployments[0].Spec.Selector.MatchLabels[v1alpha1.LabelTenantID] != "bench-0001" {
		t.Error("floorTenants changed its input")
	}
}

func TestFloorTenantsRefusesWhatIsNotOneTenantPerNamespace(t *testing.T) {
	for name, mutate := range map[string]func(*captured){
		"a Deployment outside the provider's namespaces": func(c *captured) { c.deployments[0].Namespace = "tenant-other" },
		"a Service outside the provider's namespaces":    func(c *captured) { c.services[0].Namespace = "tenant-other" },
		"a namespace without a Deployment":               func(c *captured) { c.deployments = nil },
		"a namespace not named tenant-<tenantID>":        func(c *captured) { c.namespaces[0].Name = "team-a" },
		"an empty tenant ID":                             func(c *captured) { c.namespaces[0].Name = "tenant-" },
	} {
		c := capturedTenant()
		mutate(&c)
		if _, err := floorTenants(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestTenantPassesTheProvidersRules(t *testing.T) {
	tc := tenant(7)
	if tc.Name != "bench-0007" || tc.Spec.TenantID != "bench-0007" || tc.Spec.Resources.CPU != 128 || tc.Spec.Resources.Memory != 128 {
		t.Errorf("tenant(7) = %+v", tc)
	}
	hc := tc.Spec.Containers[0].HealthCheck
	if len(tc.Spec.Containers) != 1 || len(tc.Spec.Containers[0].Ports) != 1 || hc == nil || hc.Type != v1alpha1.HealthCheckHTTP ||
		hc.TimeoutSeconds >= hc.IntervalSeconds || hc.IntervalSeconds < 5 {
		t.Errorf("container %+v", tc.Spec.Containers)
	}
}

func mustUnmarshal(t *testing.T, data []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}
