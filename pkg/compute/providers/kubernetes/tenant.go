package kubernetes

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
)

// tenant is what the provider makes for one TenantCompute on its target cluster: the
// namespace, the Deployment, a Service when a container has ports, and an Ingress when the
// tenant has a DNS name and a TCP port to route it to.
type tenant struct {
	namespace  *corev1.Namespace
	deployment *appsv1.Deployment
	service    *corev1.Service
	ingress    *networkingv1.Ingress
}

// Defaults of a health check's thresholds, Kubernetes' own: a probe is written with every
// field set, so that the live object, which the API server defaults, compares equal to it.
const (
	defaultHealthyThreshold   = 1
	defaultUnhealthyThreshold = 3
)

// maxTenantIDLength keeps namespace tenant-<tenantID> a DNS label.
const maxTenantIDLength = validation.DNS1123LabelMaxLength - len("tenant-")

// objectName names the tenant's Deployment, Service and Ingress in its namespace: the tenant
// ID, or tenant-<tenantID> when the ID starts with a digit (a Service name must start with a
// letter).
func objectName(tenantID string) string {
	if len(validation.IsDNS1035Label(tenantID)) == 0 {
		return tenantID
	}
	return v1alpha1.TenantNamespace(tenantID)
}

// tenantLabels go on the tenant's own objects, its Deployment, pods, Service and Ingress: the
// tenant's labels, then the provider's (ownLabels), which a tenant label cannot override.
func tenantLabels(tc *v1alpha1.TenantCompute) map[string]string {
	labels := map[string]string{}
	for k, v := range tc.Spec.Labels {
		labels[k] = v
	}
	for k, v := range ownLabels(tc) {
		labels[k] = v
	}
	return labels
}

// ownLabels are the provider's labels, the only ones on what it makes for the tenant that is
// not the tenant's to label: the namespace and the Role and RoleBinding of its Secrets. A
// namespace's labels are what NetworkPolicy namespaceSelectors, policy engines and meshes
// match (and exempt) namespaces by, so a label the tenant chose there would let it pass for
// another team's namespace or a system one. The compute.plinth.dev labels are how the
// provider's informers find its objects and how a change wakes the TenantCompute.
func ownLabels(tc *v1alpha1.TenantCompute) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":             objectName(tc.Spec.TenantID),
		"app.kubernetes.io/managed-by":       "plinth",
		v1alpha1.LabelTenantID:               tc.Spec.TenantID,
		v1alpha1.LabelTenantComputeNamespace: tc.Namespace,
		v1alpha1.LabelTenantComputeName:      tc.Name,
	}
}

// selectorOf selects a tenant's pods. It never changes (a Deployment's selector is immutable)
// and the namespace holds one tenant, so the tenant ID is enough.
func selectorOf(tenantID string) map[string]string {
	return map[string]string{v1alpha1.LabelTenantID: tenantID}
}

// ownedBy reports whether an object the provider finds carries the labels it gives the
// objects of this TenantCompute: the provider never takes over, nor deletes, a namespace it
// did not make.
func ownedBy(obj metav1.Object, tc *v1alpha1.TenantCompute) bool {
	l := obj.GetLabels()
	return l[v1alpha1.LabelTenantID] == tc.Spec.TenantID && l[v1alpha1.LabelTenantComputeNamespace] == tc.Namespace &&
		l[v1alpha1.LabelTenantComputeName] == tc.Name
}

// build maps a TenantCompute onto the objects the provider applies. Its errors are permanent:
// they are in the spec, which only a change fixes.
func build(tc *v1alpha1.TenantCompute, cfg providerConfig) (*tenant, error) {
	if err := checkNames(tc); err != nil {
		return nil, err
	}
	namespace, name := v1alpha1.TenantNamespace(tc.Spec.TenantID), objectName(tc.Spec.TenantID)
	labels := tenantLabels(tc)
	meta := func(namespace, name string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{}}
		for k, v := range labels {
			m.Labels[k] = v
		}
		return m
	}
	// The namespace carries the provider's labels only (see ownLabels).
	namespaceMeta := metav1.ObjectMeta{Name: namespace, Labels: ownLabels(tc)}

	env, err := tenantEnv(tc)
	if err != nil {
		return nil, err
	}
	shares := resourceShares(tc)
	pod := corev1.PodSpec{
		// Tenant containers have no business with the API of the cluster they run on.
		AutomountServiceAccountToken: ptr.To(false),
	}
	ports := servicePorts(tc)
	for i, c := range tc.Spec.Containers {
		spec := containerSpec{name: c.Name, image: c.Image, command: c.Command, args: c.Args, requests: shares[i], limits: shares[i]}
		for _, k := range sets.List(sets.KeySet(c.Env)) {
			spec.env = append(spec.env, corev1.EnvVar{Name: k, Value: c.Env[k]})
		}
		spec.env = mergeEnv(spec.env, env)
		for _, p := range ports {
			if p.container == i {
				spec.ports = append(spec.ports, containerPort(p.containerPortName, p.target, p.protocol))
			}
		}
		if hc := c.HealthCheck; hc != nil {
			readiness, err := healthProbe(fmt.Sprintf("spec.containers[%d].healthCheck", i), hc, c.Ports)
			if err != nil {
				return nil, err
			}
			// Kubernetes requires a liveness probe's successThreshold to be 1; the tenant's
			// healthyThreshold governs readiness, which is what decides that the container
			// serves. Liveness restarts a container that fails unhealthyThreshold checks in a
			// row, as the seed's providers replace an unhealthy container.
			liveness := *readiness
			liveness.successThreshold = 1
			spec.readiness, spec.liveness = readiness, &liveness
		}
		built, err := container(spec)
		if err != nil {
			return nil, errkind.Stalledf("spec.containers[%d]: %v", i, err)
		}
		pod.Containers = append(pod.Containers, built)
	}

	replicas := cfg.Replicas
	if tc.Spec.Suspended {
		replicas = 0
	}
	out := &tenant{
		namespace:  &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: namespaceMeta},
		deployment: deployment(meta(namespace, name), selectorOf(tc.Spec.TenantID), labels, replicas, pod),
	}
	if len(ports) > 0 {
		typ := corev1.ServiceTypeClusterIP
		if tc.Spec.Networking.PublicIP {
			typ = corev1.ServiceTypeLoadBalancer
		}
		var sp []corev1.ServicePort
		for _, p := range ports {
			sp = append(sp, servicePort(p.name, p.port, p.target, p.protocol))
		}
		out.service = service(meta(namespace, name), selectorOf(tc.Spec.TenantID), typ, sp)
	}
	if host := hostOf(tc); host != "" && out.service != nil {
		for _, p := range out.service.Spec.Ports {
			if p.Protocol != corev1.ProtocolTCP {
				continue
			}
			out.ingress = ingress(meta(namespace, name), host, name, p.Port)
			break
		}
	}
	return out, nil
}

// checkNames refuses what this provider cannot name: a tenant ID that does not fit in a
// namespace name, a TenantCompute name or a label that does not fit in a label.
func checkNames(tc *v1alpha1.TenantCompute) error {
	if errs := validation.IsDNS1123Label(v1alpha1.TenantNamespace(tc.Spec.TenantID)); len(errs) > 0 || len(tc.Spec.TenantID) > maxTenantIDLength {
		return errkind.Stalledf("spec.tenantID: the kubernetes provider runs a tenant in namespace tenant-<tenantID>, so the ID must be at most %d characters and start and end with a letter or digit", maxTenantIDLength)
	}
	if len(validation.IsValidLabelValue(tc.Name)) > 0 {
		return errkind.Stalledf("metadata.name: the kubernetes provider labels what it creates with the TenantCompute's name, which must then be at most %d characters", validation.LabelValueMaxLength)
	}
	for _, k := range sets.List(sets.KeySet(tc.Spec.Labels)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return errkind.Stalledf("spec.labels: %q is not a label key: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(tc.Spec.Labels[k]); len(errs) > 0 {
			return errkind.Stalledf("spec.labels[%s]: not a label value: %s", k, strings.Join(errs, "; "))
		}
	}
	return nil
}

// tenantEnv is the variables spec.secrets injects into every container: references to keys of
// Secrets in the tenant's namespace, never their values.
//
// A Pod can only read Secrets of its own namespace and cluster, and the provider copies no
// secret value, so a kubernetes-secret reference names a Secret in namespace tenant-<tenantID>
// on the target cluster, which the people who may edit the TenantCompute's namespace may write
// there on the cluster Plinth serves (secretAccess); on a registered Cluster its admins put it
// there. Until it
// exists the kubelet holds the container back, and GetStatus reports the tenant starting and
// waiting for that Secret; once it exists the pods start without the provider doing anything.
// The provider itself never reads Secrets.
func tenantEnv(tc *v1alpha1.TenantCompute) ([]corev1.EnvVar, error) {
	var env []corev1.EnvVar
	for i, s := range tc.Spec.Secrets {
		if s.Source != v1alpha1.SecretSourceKubernetes {
			return nil, errkind.Stalledf("spec.secrets[%d].source: the kubernetes provider reads only %s, not %q", i, v1alpha1.SecretSourceKubernetes, s.Source)
		}
		env = append(env, corev1.EnvVar{Name: secretEnvVar(s), ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: s.Key}}})
	}
	return env, nil
}

// secretEnvVar is the variable a secret is injected as: envVar, or the key in upper case with
// '-' and '.' as '_'.
func secretEnvVar(s v1alpha1.SecretReference) string {
	if s.EnvVar != "" {
		return s.EnvVar
	}
	return strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(s.Key))
}

// mergeEnv is a container's variables and the secret ones, sorted by name; a secret variable
// replaces a plain one of the same name (the tenant named the secret for it).
func mergeEnv(plain, secret []corev1.EnvVar) []corev1.EnvVar {
	byName := map[string]corev1.EnvVar{}
	for _, e := range plain {
		byName[e.Name] = e
	}
	for _, e := range secret {
		byName[e.Name] = e
	}
	var out []corev1.EnvVar
	for _, name := range sets.List(sets.KeySet(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// healthProbe maps a health check one-to-one: interval → periodSeconds, timeout →
// timeoutSeconds, healthyThreshold → successThreshold, unhealthyThreshold →
// failureThreshold. An http or tcp check without a port checks the container's first port.
func healthProbe(path string, hc *v1alpha1.HealthCheckConfig, ports []v1alpha1.PortMapping) (*probeSpec, error) {
	p := &probeSpec{periodSeconds: hc.IntervalSeconds, timeoutSeconds: hc.TimeoutSeconds,
		successThreshold: hc.HealthyThreshold, failureThreshold: hc.UnhealthyThreshold, port: hc.Port}
	if p.successThreshold == 0 {
		p.successThreshold = defaultHealthyThreshold
	}
	if p.failureThreshold == 0 {
		p.failureThreshold = defaultUnhealthyThreshold
	}
	switch hc.Type {
	case v1alpha1.HealthCheckHTTP, v1alpha1.HealthCheckTCP:
		if p.port == 0 {
			if len(ports) == 0 {
				return nil, errkind.Stalledf("%s.port: a %s check needs a port, and the container declares none", path, hc.Type)
			}
			p.port = ports[0].ContainerPort
		}
		p.kind = probeTCP
		if hc.Type == v1alpha1.HealthCheckHTTP {
			p.kind, p.httpPath, p.httpScheme = probeHTTP, hc.HTTPPath, string(corev1.URISchemeHTTP)
			if p.httpPath == "" {
				p.httpPath = "/"
			}
		}
	case v1alpha1.HealthCheckExec:
		if len(hc.Command) == 0 {
			return nil, errkind.Stalledf("%s.command: an exec check needs a command", path)
		}
		p.kind, p.command = probeExec, hc.Command
	default:
		return nil, errkind.Stalledf("%s.type: the kubernetes provider runs http, tcp and exec checks, not %q", path, hc.Type)
	}
	return p, nil
}

// resourceShares are each container's requests and limits (equal: the tenant gets what it
// asked for, no more and no less). A container with its own resources gets those; the others
// share what is left of the tenant's resources equally. CPU is in millicores ("128m"), memory
// and storage in megabytes read as mebibytes ("128Mi"), the unit Kubernetes and Docker mean
// by a megabyte of memory; storage is ephemeral storage.
func resourceShares(tc *v1alpha1.TenantCompute) []amounts {
	left := tc.Spec.Resources
	var sharing int32
	for _, c := range tc.Spec.Containers {
		if r := c.Resources; r != nil {
			left.CPU, left.Memory, left.Storage = left.CPU-r.CPU, left.Memory-r.Memory, left.Storage-r.Storage
		} else {
			sharing++
		}
	}
	share := v1alpha1.ResourceRequirements{}
	if sharing > 0 {
		share = v1alpha1.ResourceRequirements{CPU: max(left.CPU, 0) / sharing, Memory: max(left.Memory, 0) / sharing, Storage: max(left.Storage, 0) / sharing}
	}
	out := make([]amounts, len(tc.Spec.Containers))
	for i, c := range tc.Spec.Containers {
		r := share
		if c.Resources != nil {
			r = *c.Resources
		}
		out[i] = amounts{cpu: quantity(r.CPU, "m"), memory: quantity(r.Memory, "Mi"), ephemeralStorage: quantity(r.Storage, "Mi")}
	}
	return out
}

// quantity is a positive amount with its unit; nothing is left out (no request, no limit).
func quantity(v int32, unit string) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprint(v) + unit
}

// tenantPort is one port of the tenant's Service and the container port behind it.
type tenantPort struct {
	container         int
	name              string
	containerPortName string
	port, target      int32
	protocol          string
}

// servicePorts are the tenant's ports in container and port order: the Service port is the
// hostPort (or the containerPort), the target the containerPort. A port is named as the tenant
// named it when that is a valid, unused name, else <protocol>-<port>. A second mapping of a
// port and protocol the Service already has is left out (one Service port cannot lead to two
// containers).
func servicePorts(tc *v1alpha1.TenantCompute) []tenantPort {
	var out []tenantPort
	names, taken := sets.New[string](), sets.New[string]()
	for i, c := range tc.Spec.Containers {
		for _, p := range c.Ports {
			port := p.HostPort
			if port == 0 {
				port = p.ContainerPort
			}
			proto := strings.ToLower(p.Protocol)
			if proto == "" {
				proto = v1alpha1.ProtocolTCP
			}
			key := fmt.Sprintf("%s/%d", proto, port)
			if taken.Has(key) {
				continue
			}
			taken.Insert(key)
			tp := tenantPort{container: i, port: port, target: p.ContainerPort, protocol: proto}
			tp.name = p.Name
			if tp.name == "" || names.Has(tp.name) || len(validation.IsDNS1123Label(tp.name)) > 0 {
				tp.name = fmt.Sprintf("%s-%d", proto, port)
			}
			names.Insert(tp.name)
			// A container port name is an IANA service name (at most 15 characters, a letter
			// somewhere); the Service targets the number, so an unfit name is just left out.
			if len(validation.IsValidPortName(tp.name)) == 0 {
				tp.containerPortName = tp.name
			}
			out = append(out, tp)
		}
	}
	return out
}

// hostOf is the tenant's DNS name, hostname.domain (either alone when the other is empty).
func hostOf(tc *v1alpha1.TenantCompute) string {
	dns := tc.Spec.Networking.DNS
	if dns == nil {
		return ""
	}
	var parts []string
	for _, p := range []string{dns.Hostname, dns.Domain} {
		if p = strings.Trim(p, "."); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ".")
}

// ingress routes host to a port of the tenant's Service.
func ingress(meta metav1.ObjectMeta, host, serviceName string, port int32) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: meta,
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: serviceName, Port: networkingv1.ServiceBackendPort{Number: port}}},
			}}}},
		}}},
	}
}
