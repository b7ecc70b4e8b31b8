package kubernetes

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// The changes an Update reports compare the live objects with the ones the provider is about
// to apply, field by field, in the tenant's terms. The provider writes every field it compares
// in full (probes with all their timings, requests and limits, protocols), so the defaults the
// API server fills in do not show up as changes.

// deploymentChanges lists how want differs from the live Deployment.
func deploymentChanges(live, want *appsv1.Deployment) []string {
	if live == nil {
		return []string{fmt.Sprintf("deployment %s/%s created", want.Namespace, want.Name)}
	}
	var out []string
	if l, w := ptr.Deref(live.Spec.Replicas, 1), ptr.Deref(want.Spec.Replicas, 1); l != w {
		out = append(out, fmt.Sprintf("replicas %d → %d", l, w))
	}
	lives := map[string]corev1.Container{}
	for _, c := range live.Spec.Template.Spec.Containers {
		lives[c.Name] = c
	}
	wanted := map[string]bool{}
	for _, w := range want.Spec.Template.Spec.Containers {
		wanted[w.Name] = true
		l, ok := lives[w.Name]
		if !ok {
			out = append(out, fmt.Sprintf("container %s added", w.Name))
			continue
		}
		out = append(out, containerChanges(l, w)...)
	}
	for _, l := range live.Spec.Template.Spec.Containers {
		if !wanted[l.Name] {
			out = append(out, fmt.Sprintf("container %s removed", l.Name))
		}
	}
	if !apiequality.Semantic.DeepEqual(live.Spec.Template.Labels, want.Spec.Template.Labels) {
		out = append(out, "labels")
	}
	return out
}

// containerChanges lists how one container differs: the image with its old and new value,
// anything else by name.
func containerChanges(live, want corev1.Container) []string {
	var out []string
	if live.Image != want.Image {
		out = append(out, fmt.Sprintf("container %s: image %s → %s", want.Name, live.Image, want.Image))
	}
	for _, f := range []struct {
		what       string
		live, want interface{}
	}{
		{"command", live.Command, want.Command},
		{"args", live.Args, want.Args},
		{"env", live.Env, want.Env},
		{"ports", live.Ports, want.Ports},
		{"resources", live.Resources, want.Resources},
		{"health check", []*corev1.Probe{live.ReadinessProbe, live.LivenessProbe}, []*corev1.Probe{want.ReadinessProbe, want.LivenessProbe}},
	} {
		if !apiequality.Semantic.DeepEqual(f.live, f.want) {
			out = append(out, fmt.Sprintf("container %s: %s", want.Name, f.what))
		}
	}
	return out
}

// serviceChanges lists how want differs from the live Service; want is not nil.
func serviceChanges(live, want *corev1.Service) []string {
	if live == nil {
		return []string{fmt.Sprintf("service %s/%s created", want.Namespace, want.Name)}
	}
	var out []string
	if l, w := serviceType(live), serviceType(want); l != w {
		out = append(out, fmt.Sprintf("service type %s → %s", l, w))
	}
	if !apiequality.Semantic.DeepEqual(portsOf(live), portsOf(want)) {
		out = append(out, "service ports")
	}
	return out
}

func serviceType(s *corev1.Service) corev1.ServiceType {
	if s.Spec.Type == "" {
		return corev1.ServiceTypeClusterIP
	}
	return s.Spec.Type
}

// portsOf is a Service's ports without what the cluster assigns (node ports).
func portsOf(s *corev1.Service) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(s.Spec.Ports))
	for i, p := range s.Spec.Ports {
		out[i] = corev1.ServicePort{Name: p.Name, Port: p.Port, TargetPort: p.TargetPort, Protocol: p.Protocol}
	}
	return out
}

// ingressChanges lists how want differs from the live Ingress; want is not nil.
func ingressChanges(live, want *networkingv1.Ingress) []string {
	if live == nil {
		return []string{fmt.Sprintf("ingress %s/%s created for %s", want.Namespace, want.Name, ingressHost(want))}
	}
	var out []string
	if l, w := ingressHost(live), ingressHost(want); l != w {
		out = append(out, fmt.Sprintf("ingress host %s → %s", l, w))
	}
	if l, w := ingressPort(live), ingressPort(want); l != w {
		out = append(out, fmt.Sprintf("ingress port %d → %d", l, w))
	}
	if len(out) == 0 && !apiequality.Semantic.DeepEqual(live.Spec.Rules, want.Spec.Rules) {
		out = append(out, "ingress rules")
	}
	return out
}

// ingressHost is the host of the provider's one-rule Ingress.
func ingressHost(i *networkingv1.Ingress) string {
	if len(i.Spec.Rules) == 0 {
		return ""
	}
	return i.Spec.Rules[0].Host
}

// ingressPort is the Service port the provider's one-rule Ingress routes to.
func ingressPort(i *networkingv1.Ingress) int32 {
	if len(i.Spec.Rules) == 0 || i.Spec.Rules[0].HTTP == nil || len(i.Spec.Rules[0].HTTP.Paths) == 0 {
		return 0
	}
	if b := i.Spec.Rules[0].HTTP.Paths[0].Backend.Service; b != nil {
		return b.Port.Number
	}
	return 0
}
