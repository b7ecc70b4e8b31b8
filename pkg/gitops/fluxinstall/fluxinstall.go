// Package fluxinstall produces the objects that install Flux's source-controller and
// kustomize-controller on a cluster, as Flux's own release manifests install them: their
// CustomResourceDefinitions, read from a directory plinth-controller ships (the layout
// hack/build-tools.sh writes, <dir>/<controller>/*.yaml and a VERSION file), and the
// namespace, service accounts, cluster-admin binding, Deployments and source-controller's
// Service, which are written here. It only builds objects; applying them is the caller's job.
package fluxinstall

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
)

// Version is the Flux controllers' version the install runs: the tag of both images, and the
// version the shipped CRDs must be of.
const Version = "v1.9.6"

// Namespace is where the controllers run, as in Flux's own install, and where OCIArtifacts'
// Flux objects go by default.
const Namespace = gitopsv1alpha1.DefaultFluxNamespace

// Labels of every installed object.
const (
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelComponent = "app.kubernetes.io/component"
	LabelVersion   = "app.kubernetes.io/version"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value: objects carrying it were installed by
	// plinth-controller and are the only ones it updates.
	ManagedBy = "plinth"
)

// Controllers are the Flux controllers installed, in the order their objects are listed.
var Controllers = []string{"source-controller", "kustomize-controller"}

// images are the controllers' images, tagged Version: the tag is how a cluster's Flux version
// is read back from its Deployments.
var images = map[string]string{
	"source-controller":    "ghcr.io/fluxcd/source-controller:" + Version,
	"kustomize-controller": "ghcr.io/fluxcd/kustomize-controller:" + Version,
}

// Resources of the installed objects.
var (
	CRDs                = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	Namespaces          = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ServiceAccounts     = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	Services            = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	ClusterRoleBindings = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	Deployments         = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// Object is one object of the install and the resource it is written to.
type Object struct {
	Resource schema.GroupVersionResource
	*unstructured.Unstructured
}

// Manifests are the CRDs read from the manifests directory, per controller.
type Manifests struct {
	crds []Object
}

// Load reads each controller's CRDs from dir/<controller>/*.yaml and checks dir/<controller>/VERSION
// is Version: CRDs of another release than the images would serve a schema the controllers do
// not expect. Every file must hold one named CustomResourceDefinition.
func Load(dir string) (*Manifests, error) {
	if dir == "" {
		return nil, fmt.Errorf("no Flux manifests directory is set")
	}
	m := &Manifests{}
	for _, controller := range Controllers {
		sub := filepath.Join(dir, controller)
		version, err := os.ReadFile(filepath.Join(sub, "VERSION"))
		if err != nil {
			return nil, fmt.Errorf("reading the version of %s's CRDs: %w", controller, err)
		}
		if v := strings.TrimSpace(string(version)); v != Version {
			return nil, fmt.Errorf("%s's CRDs under %s are of version %q, not %s", controller, sub, v, Version)
		}
		files, err := filepath.Glob(filepath.Join(sub, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s has no CRDs (*.yaml files)", sub)
		}
		sort.Strings(files)
		for _, f := range files {
			crd, err := ReadCRD(f)
			if err != nil {
				return nil, err
			}
			setLabels(crd, controller)
			m.crds = append(m.crds, Object{Resource: CRDs, Unstructured: crd})
		}
	}
	return m, nil
}

// ReadCRD reads one CustomResourceDefinition from a file, as build-tools.sh copies them out of
// Flux's modules; anything else is an error.
func ReadCRD(file string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if crd.GetAPIVersion() != "apiextensions.k8s.io/v1" || crd.GetKind() != "CustomResourceDefinition" || crd.GetName() == "" {
		return nil, fmt.Errorf("%s is not a named apiextensions.k8s.io/v1 CustomResourceDefinition", file)
	}
	return crd, nil
}

// CRDs are the CustomResourceDefinitions, each controller's in file order. Each call returns
// copies.
func (m *Manifests) CRDs() []Object {
	out := make([]Object, len(m.crds))
	for i, o := range m.crds {
		out[i] = Object{Resource: o.Resource, Unstructured: o.DeepCopy()}
	}
	return out
}

// Workloads are the objects that run the controllers, in the order they can be created: the
// namespace, a ServiceAccount per controller, the ClusterRoleBinding, source-controller's
// Service and the Deployments. The Deployments need the CRDs served: a Flux controller exits
// when a kind it watches is not.
func Workloads() []Object {
	out := []Object{object(Namespaces, &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: Namespace},
	}, "")}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		// Flux's install binds its controllers to cluster-admin: kustomize-controller applies
		// whatever the artifacts hold.
		ObjectMeta: metav1.ObjectMeta{Name: "plinth-flux-controllers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
	}
	for _, controller := range Controllers {
		out = append(out, object(ServiceAccounts, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: controller},
		}, controller))
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: Namespace, Name: controller})
	}
	out = append(out, object(ClusterRoleBindings, binding, ""))
	out = append(out, object(Services, &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "source-controller"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app": "source-controller"},
			// kustomize-controller fetches artifacts from the URL source-controller advertises,
			// source-controller.<namespace>.svc.cluster.local. on port 80.
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}, "source-controller"))
	for _, controller := range Controllers {
		out = append(out, object(Deployments, deployment(controller), controller))
	}
	return out
}

// Ports of the controllers' containers, Flux's defaults.
const (
	storagePort = 9090
	metricsPort = 8080
	healthPort  = 9440
)

// deployment is a controller's Deployment, as Flux's release manifests write it without the
// notification-controller's events address (Plinth installs no notification-controller).
func deployment(controller string) *appsv1.Deployment {
	args := []string{"--watch-all-namespaces", "--log-level=info", "--log-encoding=json", "--enable-leader-election"}
	ports := []corev1.ContainerPort{
		{Name: "http-prom", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP},
		{Name: "healthz", ContainerPort: healthPort, Protocol: corev1.ProtocolTCP},
	}
	mounts := []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	volumes := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	env := []corev1.EnvVar{{Name: "RUNTIME_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}
	readiness := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("healthz")}}}
	if controller == "source-controller" {
		args = append(args, "--storage-path=/data", "--storage-adv-addr=source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local.")
		ports = append([]corev1.ContainerPort{{Name: "http", ContainerPort: storagePort, Protocol: corev1.ProtocolTCP}}, ports...)
		mounts = append([]corev1.VolumeMount{{Name: "data", MountPath: "/data"}}, mounts...)
		volumes = append([]corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, volumes...)
		// Sigstore's root CA cache goes to the writable /tmp, as in Flux's install.
		env = append(env, corev1.EnvVar{Name: "TUF_ROOT", Value: "/tmp/.sigstore"})
		// Ready once the artifact server answers: kustomize-controller fetches from it.
		readiness = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}
	}
	selector := map[string]string{"app": controller}
	podLabels := labelsFor(controller)
	podLabels["app"] = controller
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: controller},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// One leader at a time either way; Recreate does not run two pods on one emptyDir's
			// worth of artifacts during a rollout, as in Flux's install.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            controller,
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1337)},
					Containers: []corev1.Container{{
						Name:            "manager",
						Image:           images[controller],
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            args,
						Env:             env,
						Ports:           ports,
						ReadinessProbe:  readiness,
						LivenessProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("healthz")}}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							RunAsNonRoot:             ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
						VolumeMounts: mounts,
					}},
					Volumes: volumes,
				},
			},
		},
	}
}

// object converts a typed object to unstructured and labels it; the conversion of these
// fixed, valid objects cannot fail.
func object(res schema.GroupVersionResource, obj runtime.Object, component string) Object {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("converting %T: %v", obj, err))
	}
	u := &unstructured.Unstructured{Object: content}
	// Typed objects carry an empty creationTimestamp and status, which an apply would claim.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	delete(u.Object, "status")
	setLabels(u, component)
	return Object{Resource: res, Unstructured: u}
}

// setLabels adds the install's labels to an object, keeping those it has.
func setLabels(u *unstructured.Unstructured, component string) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range labelsFor(component) {
		l[k] = v
	}
	u.SetLabels(l)
}

// labelsFor are the install's labels of a component's objects; shared objects name none.
func labelsFor(component string) map[string]string {
	l := map[string]string{LabelPartOf: "flux", LabelVersion: Version, LabelManagedBy: ManagedBy}
	if component != "" {
		l[LabelComponent] = component
	}
	return l
}

// Managed says whether an object on a cluster was installed by plinth-controller: only those
// are updated, so a Flux installed otherwise is never changed.
func Managed(u *unstructured.Unstructured) bool {
	return u.GetLabels()[LabelManagedBy] == ManagedBy
}
