package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// plinthMeta is an object's meta as the kubernetes runtime leaves it in team-a, served: owned
// by its WorkloadPlan, with Plinth's labels and what the server sets.
func plinthMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: workloadNamespace, Name: name, UID: "u1", ResourceVersion: "7", Generation: 1, CreationTimestamp: metav1.Now(),
		Labels:          map[string]string{"app.kubernetes.io/name": name, managedByLabel: "plinth", "score.dev/workload": name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "score.dev/v1b1", Kind: "WorkloadPlan", Name: name, UID: "p1", Controller: ptr.To(true)}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "plinth-controller"}}}
}

// listed is obj as the dynamic client lists it.
func listed(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u
}

func TestToFloorTakesEveryKindPlinthMadeIntoTheFloorsNamespace(t *testing.T) {
	selector := map[string]string{"score.dev/workload": "bench-0000"}
	items := []unstructured.Unstructured{
		listed(t, &appsv1.Deployment{ObjectMeta: plinthMeta("bench-0000"), Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector}}}, Status: appsv1.DeploymentStatus{AvailableReplicas: 1}},
			appsv1.SchemeGroupVersion.WithKind("Deployment")),
		listed(t, &corev1.Service{ObjectMeta: plinthMeta("bench-0000"), Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.9", Selector: selector}},
			corev1.SchemeGroupVersion.WithKind("Service")),
		listed(t, &corev1.Secret{ObjectMeta: plinthMeta("bench-0000-files"), Data: map[string][]byte{"f": []byte("x")}}, corev1.SchemeGroupVersion.WithKind("Secret")),
		listed(t, &networkingv1.Ingress{ObjectMeta: plinthMeta("bench-0000-dns")}, networkingv1.SchemeGroupVersion.WithKind("Ingress")),
		listed(t, &appsv1.Deployment{ObjectMeta: plinthMeta("bench-0001"), Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}}},
			appsv1.SchemeGroupVersion.WithKind("Deployment")),
	}
	set, err := toFloor(items)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.kindsString(); got != "deployments=2 ingresses=1 secrets=1 services=1" {
		t.Errorf("kinds %s", got)
	}
	var order []string
	for _, o := range set.objects {
		order = append(order, o.Resource+"/"+o.Name)
		if o.Namespace != floorNamespace {
			t.Errorf("%s %s is in %q", o.Resource, o.Name, o.Namespace)
		}
		for _, field := range []string{"ownerReferences", "WorkloadPlan", `"plinth"`, "score.dev", "managedFields", "resourceVersion", "status", "10.0.0.9", `"team-a"`} {
			if strings.Contains(string(o.Body), field) {
				t.Errorf("%s %s body has %s: %s", o.Resource, o.Name, field, o.Body)
			}
		}
		if !strings.Contains(string(o.Body), `"`+managedByLabel+`":"`+floorManagedBy+`"`) {
			t.Errorf("%s %s body has not the floor's managed-by: %s", o.Resource, o.Name, o.Body)
		}
	}
	want := "secrets/bench-0000-files services/bench-0000 deployments/bench-0000 deployments/bench-0001 ingresses/bench-0000-dns"
	if strings.Join(order, " ") != want {
		t.Errorf("order %v, want %s", order, want)
	}
	if items[0].GetNamespace() != workloadNamespace || len(items[0].GetOwnerReferences()) != 1 {
		t.Error("toFloor changed what was listed")
	}
}

func TestToFloorRefusesAKindItCannotApply(t *testing.T) {
	for name, tc := range map[string]struct {
		item unstructured.Unstructured
		want string
	}{
		"a kind of no known group": {func() unstructured.Unstructured {
			u := unstructured.Unstructured{Object: map[string]any{}}
			u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
			u.SetName("w")
			u.SetNamespace(workloadNamespace)
			return u
		}(), "Widget team-a/w: the floor cannot apply a example.com/v1, Kind=Widget"},
		"a known kind the floor does not apply": {listed(t, &corev1.PersistentVolumeClaim{ObjectMeta: plinthMeta("data")},
			corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")), "PersistentVolumeClaim team-a/data: the floor cannot apply a *v1.PersistentVolumeClaim"},
		"a namespace": {listed(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{managedByLabel: "plinth"}}},
			corev1.SchemeGroupVersion.WithKind("Namespace")), "namespace team-b: the floor makes its own namespace"},
		"a service account token": {listed(t, &corev1.Secret{ObjectMeta: plinthMeta("tok"), Type: corev1.SecretTypeServiceAccountToken},
			corev1.SchemeGroupVersion.WithKind("Secret")), "service account token"},
	} {
		_, err := toFloor([]unstructured.Unstructured{tc.item})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

func TestMadeByPlinth(t *testing.T) {
	owned := func(apiVersion, kind string, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "x", Controller: ptr.To(controller)}}
	}
	plinthLabels := map[string]string{managedByLabel: "plinth", "score.dev/workload": "w"}
	for name, tc := range map[string]struct {
		obj  metav1.Object
		want bool
	}{
		"the runtime's Deployment":                    {&appsv1.Deployment{ObjectMeta: plinthMeta("w")}, true},
		"a binding's Secret, owned without the label": {&corev1.Secret{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("score.dev/v1b1", "ResourceBinding", false)}}, true},
		"the shared state Secret, labeled, unowned":   {&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: plinthLabels}}, true},
		"a ReplicaSet copying the template's labels": {&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Labels: plinthLabels,
			OwnerReferences: owned("apps/v1", "Deployment", true)}}, false},
		"an EndpointSlice copying the Service's labels": {&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: plinthLabels,
			OwnerReferences: owned("v1", "Service", true)}}, false},
		"someone else's ConfigMap":   {&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}}, false},
		"another manager's Secret":   {&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{managedByLabel: "helm"}}}, false},
		"the floor's own Deployment": {&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{managedByLabel: floorManagedBy}}}, false},
	} {
		if got := madeByPlinth(tc.obj); got != tc.want {
			t.Errorf("%s: madeByPlinth = %v, want %v", name, got, tc.want)
		}
	}
}

func TestCapturedListsKubernetesOwnResourcesOnly(t *testing.T) {
	list := metav1.Verbs{"get", "list", "watch"}
	for _, tc := range []struct {
		gv   schema.GroupVersion
		r    metav1.APIResource
		want bool
	}{
		{appsv1.SchemeGroupVersion, metav1.APIResource{Name: "deployments", Verbs: list}, true},
		{corev1.SchemeGroupVersion, metav1.APIResource{Name: "secrets", Verbs: list}, true},
		{networkingv1.SchemeGroupVersion, metav1.APIResource{Name: "ingresses", Verbs: list}, true},
		{appsv1.SchemeGroupVersion, metav1.APIResource{Name: "deployments/status", Verbs: list}, false},
		{corev1.SchemeGroupVersion, metav1.APIResource{Name: "bindings", Verbs: metav1.Verbs{"create"}}, false},
		{corev1.SchemeGroupVersion, metav1.APIResource{Name: "endpoints", Verbs: list}, false},
		{schema.GroupVersion{Group: "score.dev", Version: "v1b1"}, metav1.APIResource{Name: "workloadplans", Verbs: list}, false},
		{schema.GroupVersion{Group: "compute.plinth.dev", Version: "v1alpha1"}, metav1.APIResource{Name: "tenantcomputes", Verbs: list}, false},
	} {
		if got := captured(tc.gv, tc.r); got != tc.want {
			t.Errorf("%s %s: captured = %v, want %v", tc.gv, tc.r.Name, got, tc.want)
		}
	}
}
