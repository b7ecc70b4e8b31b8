package kubernetes

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The builders below are shared by the Score runtime and the tenant-compute provider: both run
// containers as one Deployment with a Service in front, and each maps its own spec (a
// WorkloadPlan's projection, a TenantCompute) onto these neutral pieces.

// containerSpec is one container as the runtime or the provider describes it.
type containerSpec struct {
	name, image         string
	command, args       []string
	env                 []corev1.EnvVar
	ports               []corev1.ContainerPort
	mounts              []corev1.VolumeMount
	requests, limits    amounts
	liveness, readiness *probeSpec
}

// container builds a container; resource amounts that are not quantities are an error.
func container(c containerSpec) (corev1.Container, error) {
	out := corev1.Container{Name: c.name, Image: c.image, Command: c.command, Args: c.args, Env: c.env, Ports: c.ports, VolumeMounts: c.mounts,
		LivenessProbe: c.liveness.probe(), ReadinessProbe: c.readiness.probe()}
	var err error
	if out.Resources.Requests, err = c.requests.list(); err != nil {
		return corev1.Container{}, fmt.Errorf("container %s: requests: %w", c.name, err)
	}
	if out.Resources.Limits, err = c.limits.list(); err != nil {
		return corev1.Container{}, fmt.Errorf("container %s: limits: %w", c.name, err)
	}
	return out, nil
}

// amounts are resource quantities in Kubernetes notation ("250m", "128Mi"); empty ones are
// left out.
type amounts struct {
	cpu, memory, ephemeralStorage string
}

// list is the amounts as a ResourceList, nil when there are none.
func (a amounts) list() (corev1.ResourceList, error) {
	var out corev1.ResourceList
	for name, value := range map[corev1.ResourceName]string{corev1.ResourceCPU: a.cpu, corev1.ResourceMemory: a.memory, corev1.ResourceEphemeralStorage: a.ephemeralStorage} {
		if value == "" {
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not a quantity", name, value)
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[name] = q
	}
	return out, nil
}

// Probe kinds.
const (
	probeHTTP = "http"
	probeTCP  = "tcp"
	probeExec = "exec"
)

// probeSpec is a health check: an HTTP GET, a TCP connect or a command, and its timing.
// Zero timing fields are left to Kubernetes' defaults.
type probeSpec struct {
	kind        string
	httpPath    string
	httpHost    string
	httpScheme  string
	httpHeaders []corev1.HTTPHeader
	port        int32
	command     []string

	periodSeconds, timeoutSeconds, successThreshold, failureThreshold int32
}

func (p *probeSpec) probe() *corev1.Probe {
	if p == nil {
		return nil
	}
	out := &corev1.Probe{PeriodSeconds: p.periodSeconds, TimeoutSeconds: p.timeoutSeconds,
		SuccessThreshold: p.successThreshold, FailureThreshold: p.failureThreshold}
	switch p.kind {
	case probeHTTP:
		out.HTTPGet = &corev1.HTTPGetAction{Path: p.httpPath, Port: intstr.FromInt32(p.port), Host: p.httpHost,
			Scheme: corev1.URIScheme(p.httpScheme), HTTPHeaders: p.httpHeaders}
	case probeTCP:
		out.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(p.port)}
	case probeExec:
		out.Exec = &corev1.ExecAction{Command: p.command}
	default:
		return nil
	}
	return out
}

// protocol is a port protocol as Kubernetes spells it (TCP, UDP); empty stays empty, for
// Kubernetes to default.
func protocol(p string) corev1.Protocol { return corev1.Protocol(strings.ToUpper(p)) }

// containerPort is a port a container listens on.
func containerPort(name string, port int32, proto string) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: protocol(proto)}
}

// servicePort is a Service port that forwards to a container port.
func servicePort(name string, port, target int32, proto string) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(target), Protocol: protocol(proto)}
}

// deployment runs pod as replicas pods selected by selector; podLabels must include selector.
func deployment(meta metav1.ObjectMeta, selector, podLabels map[string]string, replicas int32, pod corev1.PodSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: pod},
		},
	}
}

// service exposes the pods selector selects on ports; an empty type is left to Kubernetes'
// default (ClusterIP).
func service(meta metav1.ObjectMeta, selector map[string]string, typ corev1.ServiceType, ports []corev1.ServicePort) *corev1.Service {
	return &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta,
		Spec: corev1.ServiceSpec{Type: typ, Selector: selector, Ports: ports}}
}
