package benchfloor

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var testRelabel = Relabel{Prefixes: [][2]string{{"compute.plinth.dev/", "floor.bench.plinth.dev/"}, {"score.dev/", "floor.dev/"}}, ManagedBy: "floor0"}

// plinthLabels are labels as Plinth's runtimes and provisioners set them.
func plinthLabels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "bench-0001", managedByLabel: "plinth", "score.dev/workload": "bench-0001",
		"workload.score.dev/web": "x", "compute.plinth.dev/tenant-id": "t1"}
}

// served is meta as kube-apiserver returns it for an object Plinth made: with everything the
// server sets, an owner reference to Plinth's object and a finalizer.
func served(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "team-a", Name: name, Labels: plinthLabels(), UID: "1234", ResourceVersion: "42", Generation: 2,
		CreationTimestamp: metav1.Now(), ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "plinth-controller"}},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "score.dev/v1b1", Kind: "WorkloadPlan", Name: "bench-0001", UID: "99", Controller: ptr.To(true)}},
		Finalizers:      []string{"example.com/keep"},
		Annotations:     map[string]string{"deployment.kubernetes.io/revision": "1", "example.com/kept": "yes"}}
}

// serverFields are what no floor body may carry: Plinth's label keys and value, and what the
// server sets.
var serverFields = []string{"compute.plinth.dev", `"score.dev/`, `.score.dev/`, `"plinth"`, "status", "uid", "resourceVersion", "generation",
	"managedFields", "creationTimestamp", "ownerReferences", "finalizers", "WorkloadPlan", "clusterIP", "nodePort",
	"deployment.kubernetes.io/revision", `"team-a"`, "10.0.3.4", "loadBalancer"}

func TestConvertKeepsTheSpecAndLeavesOutWhatTheServerSetsAndPlinthsLabels(t *testing.T) {
	selector := map[string]string{"score.dev/workload": "bench-0001"}
	floorSelector := map[string]string{"floor.dev/workload": "bench-0001"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/bench:1"}}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: plinthLabels()}, Spec: podSpec}
	for _, tc := range []struct {
		in       runtime.Object
		resource string
		check    func(t *testing.T, body []byte)
	}{
		{&appsv1.Deployment{ObjectMeta: served("d"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: template},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, AvailableReplicas: 1}}, "deployments",
			func(t *testing.T, body []byte) {
				var d appsv1.Deployment
				mustUnmarshal(t, body, &d)
				if d.Kind != "Deployment" || d.APIVersion != "apps/v1" || !apiequality.Semantic.DeepEqual(d.Spec.Template.Spec, podSpec) ||
					!apiequality.Semantic.DeepEqual(d.Spec.Selector.MatchLabels, floorSelector) || d.Spec.Template.Labels["floor.dev/workload"] != "bench-0001" {
					t.Errorf("deployment %+v", d)
				}
			}},
		{&appsv1.StatefulSet{ObjectMeta: served("s"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector}, Template: template,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: plinthLabels()},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}}},
			Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}}, "statefulsets",
			func(t *testing.T, body []byte) {
				var s appsv1.StatefulSet
				mustUnmarshal(t, body, &s)
				if s.Kind != "StatefulSet" || !apiequality.Semantic.DeepEqual(s.Spec.Selector.MatchLabels, floorSelector) ||
					len(s.Spec.VolumeClaimTemplates) != 1 || s.Spec.VolumeClaimTemplates[0].Name != "data" {
					t.Errorf("statefulset %+v", s)
				}
			}},
		{&corev1.Service{ObjectMeta: served("svc"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.3.4",
			ClusterIPs: []string{"10.0.3.4"}, Selector: selector,
			Ports: []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP, NodePort: 30001}}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}}}, "services",
			func(t *testing.T, body []byte) {
				var s corev1.Service
				mustUnmarshal(t, body, &s)
				want := []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
				if s.Kind != "Service" || !apiequality.Semantic.DeepEqual(s.Spec.Ports, want) || !apiequality.Semantic.DeepEqual(s.Spec.Selector, floorSelector) {
					t.Errorf("service %+v", s)
				}
			}},
		{&corev1.Secret{ObjectMeta: served("files"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"config": []byte("a=1")}}, "secrets",
			func(t *testing.T, body []byte) {
				var s corev1.Secret
				mustUnmarshal(t, body, &s)
				if s.Kind != "Secret" || s.Type != corev1.SecretTypeOpaque || string(s.Data["config"]) != "a=1" {
					t.Errorf("secret %+v", s)
				}
			}},
		{&corev1.ConfigMap{ObjectMeta: served("cm"), Data: map[string]string{"k": "v"}}, "configmaps",
			func(t *testing.T, body []byte) {
				var c corev1.ConfigMap
				mustUnmarshal(t, body, &c)
				if c.Kind != "ConfigMap" || c.Data["k"] != "v" {
					t.Errorf("configmap %+v", c)
				}
			}},
		{&networkingv1.Ingress{ObjectMeta: served("route"), Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"),
			Rules: []networkingv1.IngressRule{{Host: "bench.example.com"}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "1.2.3.4"}}}}},
			"ingresses",
			func(t *testing.T, body []byte) {
				var i networkingv1.Ingress
				mustUnmarshal(t, body, &i)
				if i.Kind != "Ingress" || i.APIVersion != "networking.k8s.io/v1" || len(i.Spec.Rules) != 1 || i.Spec.Rules[0].Host != "bench.example.com" {
					t.Errorf("ingress %+v", i)
				}
			}},
	} {
		before := tc.in.DeepCopyObject()
		obj, err := Convert(tc.in, "floor-team-a", testRelabel)
		if err != nil {
			t.Errorf("%T: %v", tc.in, err)
			continue
		}
		if !apiequality.Semantic.DeepEqual(before, tc.in) {
			t.Errorf("%T: Convert changed its input", tc.in)
		}
		if obj.Resource != tc.resource || obj.Namespace != "floor-team-a" || obj.Name != tc.in.(metav1.Object).GetName() {
			t.Errorf("%T: object %s %s/%s", tc.in, obj.Resource, obj.Namespace, obj.Name)
		}
		body := string(obj.Body)
		for _, field := range serverFields {
			if strings.Contains(body, field) {
				t.Errorf("%s body has %s: %s", obj.Resource, field, body)
			}
		}
		var m metav1.PartialObjectMetadata
		mustUnmarshal(t, obj.Body, &m)
		// As many labels, the same annotations but the server's: the same metadata bytes.
		if len(m.Labels) != len(plinthLabels()) || m.Labels["floor.dev/workload"] != "bench-0001" || m.Labels[managedByLabel] != "floor0" ||
			m.Labels["workload.floor.dev/web"] != "x" || m.Labels["floor.bench.plinth.dev/tenant-id"] != "t1" ||
			!apiequality.Semantic.DeepEqual(m.Annotations, map[string]string{"example.com/kept": "yes"}) {
			t.Errorf("%s metadata %+v", obj.Resource, m.ObjectMeta)
		}
		tc.check(t, obj.Body)
	}
}

func TestConvertRenamesANamespace(t *testing.T) {
	m := served("team-a")
	m.Namespace = ""
	m.Labels[corev1.LabelMetadataName] = "team-a"
	obj, err := Convert(&corev1.Namespace{ObjectMeta: m, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}, "floor-team-a", testRelabel)
	if err != nil {
		t.Fatal(err)
	}
	var ns corev1.Namespace
	mustUnmarshal(t, obj.Body, &ns)
	if obj.Resource != "namespaces" || obj.Name != "floor-team-a" || obj.Namespace != "" || ns.Name != "floor-team-a" || ns.Kind != "Namespace" ||
		ns.Labels[corev1.LabelMetadataName] != "" || strings.Contains(string(obj.Body), "Active") {
		t.Errorf("namespace %+v from %s", obj, obj.Body)
	}
}

func TestConvertRefusesWhatTheFloorCannotApply(t *testing.T) {
	for name, tc := range map[string]struct {
		in        runtime.Object
		namespace string
		want      string
	}{
		"an unexpected kind":         {&rbacv1.Role{ObjectMeta: served("r")}, "floor-team-a", "cannot apply a *v1.Role"},
		"a pod":                      {&corev1.Pod{ObjectMeta: served("p")}, "floor-team-a", "cannot apply a *v1.Pod"},
		"a service account token":    {&corev1.Secret{ObjectMeta: served("tok"), Type: corev1.SecretTypeServiceAccountToken}, "floor-team-a", "service account token"},
		"no namespace for the floor": {&appsv1.Deployment{ObjectMeta: served("d")}, "", "no namespace"},
	} {
		_, err := Convert(tc.in, tc.namespace, testRelabel)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.want)
		}
	}
}

func TestRelabel(t *testing.T) {
	got := testRelabel.Labels(map[string]string{"score.dev/workload": "w", "workload.score.dev/db": "b", "app": "x",
		managedByLabel: "plinth", "compute.plinth.dev/name": "n"})
	want := map[string]string{"floor.dev/workload": "w", "workload.floor.dev/db": "b", "app": "x", managedByLabel: "floor0", "floor.bench.plinth.dev/name": "n"}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if testRelabel.Labels(nil) != nil {
		t.Error("nil labels became a map")
	}
	if other := testRelabel.Labels(map[string]string{managedByLabel: "helm"}); other[managedByLabel] != "helm" {
		t.Errorf("another manager was renamed: %v", other)
	}
}

func TestApplyRefusesAnUnknownResource(t *testing.T) {
	if err := Apply(t.Context(), nil, Object{Resource: "roles", Namespace: "floor-team-a", Name: "r"}); err == nil || !strings.Contains(err.Error(), "cannot apply roles") {
		t.Errorf("error %v", err)
	}
}

func TestAvailable(t *testing.T) {
	ready := func() *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue},
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}}
	}
	if !Available(ready()) {
		t.Error("a rolled-out, available Deployment is not available")
	}
	for name, mutate := range map[string]func(*appsv1.Deployment){
		"spec not observed":      func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 1 },
		"not every replica":      func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 },
		"an old replica left":    func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 },
		"a surplus replica":      func(d *appsv1.Deployment) { d.Status.Replicas = 3 },
		"Available False":        func(d *appsv1.Deployment) { d.Status.Conditions[1].Status = corev1.ConditionFalse },
		"no Available condition": func(d *appsv1.Deployment) { d.Status.Conditions = d.Status.Conditions[:1] },
	} {
		d := ready()
		mutate(d)
		if Available(d) {
			t.Errorf("%s: available", name)
		}
	}
}

func TestStatefulSetReady(t *testing.T) {
	ready := func() *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdatedReplicas: 2, ReadyReplicas: 2}}
	}
	if !StatefulSetReady(ready()) {
		t.Error("a rolled-out, ready StatefulSet is not ready")
	}
	for name, mutate := range map[string]func(*appsv1.StatefulSet){
		"spec not observed":   func(s *appsv1.StatefulSet) { s.Status.ObservedGeneration = 1 },
		"not every replica":   func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 1 },
		"an old replica left": func(s *appsv1.StatefulSet) { s.Status.UpdatedReplicas = 1 },
	} {
		s := ready()
		mutate(s)
		if StatefulSetReady(s) {
			t.Errorf("%s: ready", name)
		}
	}
}

func mustUnmarshal(t *testing.T, data []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}
