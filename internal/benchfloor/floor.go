// Package benchfloor makes "the floor" of a controller benchmark: the Kubernetes objects
// Plinth made, as captured from kube-apiserver, turned into server-side apply bodies that
// carry the same specs, labels, annotations and data, but nothing the server sets and nothing
// plinth-controller acts on (no owner references, Plinth's label keys renamed), applied straight
// to kube-apiserver by parallel clients and waited on until every Deployment is Available.
// hack/bench-compute and hack/bench-workloads compare Plinth's time to Ready with it.
package benchfloor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/internal/benchharness"
)

// FieldManager applies the floor's objects.
const FieldManager = "bench-floor"

// managedByLabel is the label whose value "plinth" Relabel.ManagedBy replaces.
const managedByLabel = "app.kubernetes.io/managed-by"

// serverAnnotations and serverLabels are set by the API server or Kubernetes' controllers,
// not by whoever applies the object.
var (
	serverAnnotations = map[string]bool{"deployment.kubernetes.io/revision": true}
	serverLabels      = map[string]bool{corev1.LabelMetadataName: true}
)

// Object is one server-side apply body and where it goes. Resource is the plural resource
// name of a kind Convert knows ("deployments", "services", ...).
type Object struct {
	Resource, Namespace, Name string
	Body                      []byte
}

// Relabel renames Plinth's label keys so that no informer or handler of plinth-controller
// that selects or maps by them sees the floor's objects.
type Relabel struct {
	// Prefixes are pairs of a Plinth label key prefix (or any part of a key, such as
	// "score.dev/" in "workload.score.dev/x") and what replaces it, applied in order, the first
	// that matches only.
	Prefixes [][2]string
	// ManagedBy replaces the value "plinth" of app.kubernetes.io/managed-by.
	ManagedBy string
}

// Labels renames the keys Prefixes name and the managed-by value, and keeps the others; nil
// stays nil.
func (r Relabel) Labels(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		for _, p := range r.Prefixes {
			if strings.Contains(k, p[0]) {
				k = strings.Replace(k, p[0], p[1], 1)
				break
			}
		}
		if k == managedByLabel && v == "plinth" && r.ManagedBy != "" {
			v = r.ManagedBy
		}
		out[k] = v
	}
	return out
}

// meta keeps an object's labels (renamed) and annotations under the floor's namespace and
// name; everything the server sets, owner references and finalizers are left out.
func (r Relabel) meta(m metav1.ObjectMeta, namespace string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: namespace, Labels: r.Labels(m.Labels)}
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

// selector renames the labels of a label selector; nil stays nil.
func (r Relabel) selector(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := s.DeepCopy()
	out.MatchLabels = r.Labels(s.MatchLabels)
	return out
}

// Convert is the floor's apply body for one object as kube-apiserver served it: a Namespace
// (renamed to namespace), or a Deployment, StatefulSet, Service, Secret, ConfigMap or Ingress
// (moved into namespace). Status, owner references, finalizers and every field the server sets
// or allocates (uid, resourceVersion, generation, creation time, managed fields, a Service's
// cluster IPs and node ports, a Deployment's revision) are left out; labels and selectors are
// renamed by r. Any other kind is refused. obj is not changed.
func Convert(obj runtime.Object, namespace string, r Relabel) (Object, error) {
	if namespace == "" {
		return Object{}, fmt.Errorf("no namespace for the floor's %T", obj)
	}
	var out runtime.Object
	var o Object
	switch in := obj.(type) {
	case *corev1.Namespace:
		m := r.meta(in.ObjectMeta, "")
		m.Name = namespace
		out = &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: m}
		return body(out, Object{Resource: "namespaces", Name: namespace})
	case *appsv1.Deployment:
		spec := *in.Spec.DeepCopy()
		spec.Selector = r.selector(in.Spec.Selector)
		spec.Template.Labels = r.Labels(in.Spec.Template.Labels)
		out = &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: r.meta(in.ObjectMeta, namespace), Spec: spec}
		o = Object{Resource: "deployments", Name: in.Name}
	case *appsv1.StatefulSet:
		spec := *in.Spec.DeepCopy()
		spec.Selector = r.selector(in.Spec.Selector)
		spec.Template.Labels = r.Labels(in.Spec.Template.Labels)
		for i := range spec.VolumeClaimTemplates {
			t := &spec.VolumeClaimTemplates[i]
			t.ObjectMeta = r.meta(t.ObjectMeta, "")
			t.Status = corev1.PersistentVolumeClaimStatus{}
		}
		out = &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: r.meta(in.ObjectMeta, namespace), Spec: spec}
		o = Object{Resource: "statefulsets", Name: in.Name}
	case *corev1.Service:
		spec := *in.Spec.DeepCopy()
		spec.ClusterIP, spec.ClusterIPs, spec.HealthCheckNodePort = "", nil, 0
		for i := range spec.Ports {
			spec.Ports[i].NodePort = 0
		}
		spec.Selector = r.Labels(in.Spec.Selector)
		out = &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: r.meta(in.ObjectMeta, namespace), Spec: spec}
		o = Object{Resource: "services", Name: in.Name}
	case *corev1.Secret:
		if in.Type == corev1.SecretTypeServiceAccountToken {
			return Object{}, fmt.Errorf("secret %s/%s is a service account token, which the server fills", in.Namespace, in.Name)
		}
		out = &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: r.meta(in.ObjectMeta, namespace),
			Immutable: in.Immutable, Type: in.Type, Data: in.Data}
		o = Object{Resource: "secrets", Name: in.Name}
	case *corev1.ConfigMap:
		out = &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: r.meta(in.ObjectMeta, namespace),
			Immutable: in.Immutable, Data: in.Data, BinaryData: in.BinaryData}
		o = Object{Resource: "configmaps", Name: in.Name}
	case *networkingv1.Ingress:
		out = &networkingv1.Ingress{TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
			ObjectMeta: r.meta(in.ObjectMeta, namespace), Spec: *in.Spec.DeepCopy()}
		o = Object{Resource: "ingresses", Name: in.Name}
	default:
		return Object{}, fmt.Errorf("the floor cannot apply a %T: only Namespaces, Deployments, StatefulSets, Services, Secrets, ConfigMaps and Ingresses", obj)
	}
	o.Namespace = namespace
	return body(out, o)
}

// body fills o.Body with obj as a server-side apply sends it: the empty status and creation
// time the typed object marshals are dropped, also a StatefulSet's claim templates' status.
func body(obj runtime.Object, o Object) (Object, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return Object{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return Object{}, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if spec, ok := m["spec"].(map[string]any); ok {
		if claims, ok := spec["volumeClaimTemplates"].([]any); ok {
			for _, c := range claims {
				if c, ok := c.(map[string]any); ok {
					delete(c, "status")
				}
			}
		}
	}
	if o.Body, err = json.Marshal(m); err != nil {
		return Object{}, err
	}
	return o, nil
}

// Apply server-side applies one floor object, forcing ownership as Plinth's appliers do.
func Apply(ctx context.Context, kube kubernetes.Interface, obj Object) error {
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}
	var err error
	switch obj.Resource {
	case "namespaces":
		_, err = kube.CoreV1().Namespaces().Patch(ctx, obj.Name, types.ApplyPatchType, obj.Body, opts)
	case "deployments":
		_, err = kube.AppsV1().Deployments(obj.Namespace).Patch(ctx, obj.Name, types.ApplyPatchType, obj.Body, opts)
	case "statefulsets":
		_, err = kube.AppsV1().StatefulSets(obj.Namespace).Patch(ctx, obj.Name, types.ApplyPatchType, obj.Body, opts)
	case "services":
		_, err = kube.CoreV1().Services(obj.Namespace).Patch(ctx, obj.Name, types.ApplyPatchType, obj.Body, opts)
	case "secrets":
		_, err = kube.CoreV1().Secrets(obj.Namespace).Patch(ctx, obj.Name, types.ApplyPatchType, obj.Body, opts)
	case "configmaps":
		_, err = kube.CoreV1().ConfigMaps(obj.Namespace).Patch(ctx, obj.Name, types.ApplyPatchType, obj.Body, opts)
	case "ingresses":
		_, err = kube.NetworkingV1().Ingresses(obj.Namespace).Patch(ctx, obj.Name, types.ApplyPatchType, obj.Body, opts)
	default:
		err = fmt.Errorf("the floor cannot apply %s", obj.Resource)
	}
	if err != nil {
		return fmt.Errorf("applying %s %s/%s: %w", obj.Resource, obj.Namespace, obj.Name, err)
	}
	return nil
}

// ApplyAll applies the groups with clients parallel clients, each group by one client in its
// order (a namespace before what goes into it); the first error stops every client.
func ApplyAll(ctx context.Context, kube kubernetes.Interface, groups [][]Object, clients int) error {
	return benchharness.Parallel(ctx, len(groups), clients, func(ctx context.Context, i int) error {
		for _, obj := range groups[i] {
			if err := Apply(ctx, kube, obj); err != nil {
				return err
			}
		}
		return nil
	})
}

// Available is the floor's Ready: the Deployment controller has acted on the current spec,
// every wanted replica runs it and is available, and the Available condition is True; what
// the kubernetes runtime and provider require before they report a workload running.
func Available(d *appsv1.Deployment) bool {
	wanted := ptr.Deref(d.Spec.Replicas, 1)
	if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != wanted || d.Status.Replicas != wanted || d.Status.AvailableReplicas < wanted {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// StatefulSetReady says the StatefulSet controller has acted on the current spec and every
// wanted replica is updated and ready.
func StatefulSetReady(s *appsv1.StatefulSet) bool {
	wanted := ptr.Deref(s.Spec.Replicas, 1)
	return s.Status.ObservedGeneration >= s.Generation && s.Status.UpdatedReplicas == wanted && s.Status.ReadyReplicas >= wanted
}
