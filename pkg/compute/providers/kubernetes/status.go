package kubernetes

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/compute"
)

// Keys of the status metadata GetStatus reports.
const (
	// metadataCluster is the Cluster the tenant runs on; absent for the cluster Plinth serves.
	metadataCluster = "cluster"
	// metadataNamespace is the tenant's namespace. Its presence also tells a later Update or
	// Destroy that the tenant ran where metadataCluster says (see previousCluster).
	metadataNamespace         = "namespace"
	metadataDeployment        = "deployment"
	metadataReplicas          = "replicas"
	metadataAvailableReplicas = "availableReplicas"
)

// failingReasons are the reasons a container waits for that need a change before it can
// start: the compute has failed.
var failingReasons = sets.New("CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName")

// reasonConfigError is why the kubelet holds back a container whose variables reference a
// Secret or key that does not exist (yet).
const reasonConfigError = "CreateContainerConfigError"

// Container states, the seed's (running, stopped, failed) and starting while one is created.
const (
	containerRunning  = "running"
	containerStopped  = "stopped"
	containerStarting = "starting"
	containerFailed   = "failed"
)

// GetStatus reports the tenant's Deployment and pods in the seed's terms (see observe), the
// endpoints its Service and Ingress offer, and where it runs.
func (p *Provider) GetStatus(ctx context.Context, tc *v1alpha1.TenantCompute) (*compute.ComputeStatus, error) {
	cfg, err := parseConfig(tc)
	if err != nil {
		return nil, err
	}
	t, err := p.target(ctx, cfg.Cluster)
	if err != nil {
		return nil, err
	}
	namespace, name := v1alpha1.TenantNamespace(tc.Spec.TenantID), objectName(tc.Spec.TenantID)
	ns, err := t.read.namespace(ctx, namespace)
	if err != nil {
		return nil, err
	}
	d, err := t.read.deployment(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	if d != nil {
		if pods, err = t.read.pods(ctx, namespace, labels.SelectorFromSet(selectorOf(tc.Spec.TenantID))); err != nil {
			return nil, err
		}
	}
	svc, err := t.read.service(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	ing, err := t.read.ingress(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	st := observe(tc, ns, d, pods)
	st.Endpoints = endpoints(svc, ing)
	st.Metadata = map[string]string{metadataNamespace: namespace, metadataDeployment: name}
	if t.cluster != "" {
		st.Metadata[metadataCluster] = t.cluster
	}
	if d != nil {
		st.Metadata[metadataReplicas] = fmt.Sprint(ptr.Deref(d.Spec.Replicas, 1))
		st.Metadata[metadataAvailableReplicas] = fmt.Sprint(d.Status.AvailableReplicas)
	}
	return st, nil
}

// observe maps the tenant's namespace, Deployment and pods to the seed's state and health:
//   - stopping while the namespace is being deleted, unknown without a Deployment;
//   - with no replicas wanted: stopped once no pod is left, stopping until then;
//   - failed when a container cannot start without a change (CrashLoopBackOff,
//     ImagePullBackOff, ErrImagePull, InvalidImageName) or the rollout exceeded its progress
//     deadline;
//   - starting while a container waits for a Secret it references, while the Deployment rolls
//     out and until every wanted replica is available; running then.
//
// Health is healthy when every pod is ready, unhealthy when a running pod is not, unknown
// before pods run. Pods being deleted count only towards stopping.
func observe(tc *v1alpha1.TenantCompute, ns *corev1.Namespace, d *appsv1.Deployment, pods []*corev1.Pod) *compute.ComputeStatus {
	namespace := v1alpha1.TenantNamespace(tc.Spec.TenantID)
	switch {
	case ns != nil && ns.DeletionTimestamp != nil:
		return &compute.ComputeStatus{State: v1alpha1.ComputeStateStopping, Health: v1alpha1.HealthStatusUnknown,
			Message: fmt.Sprintf("Namespace %s is being deleted.", namespace)}
	case d == nil:
		return &compute.ComputeStatus{State: v1alpha1.ComputeStateUnknown, Health: v1alpha1.HealthStatusUnknown,
			Message: fmt.Sprintf("Deployment %s/%s does not exist.", namespace, objectName(tc.Spec.TenantID))}
	}
	var present, serving []*corev1.Pod // not finished; not finished nor being deleted
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		present = append(present, pod)
		if pod.DeletionTimestamp == nil {
			serving = append(serving, pod)
		}
	}
	wanted := ptr.Deref(d.Spec.Replicas, 1)
	st := &compute.ComputeStatus{Containers: containerStatuses(tc, serving, wanted), Health: health(serving)}
	available := d.Status.AvailableReplicas
	switch {
	case wanted == 0 && len(present) == 0:
		st.State, st.Message = v1alpha1.ComputeStateStopped, "The tenant is suspended; nothing runs."
	case wanted == 0:
		st.State, st.Message = v1alpha1.ComputeStateStopping, fmt.Sprintf("The tenant is suspended; %d pods are stopping.", len(present))
	case failing(serving) != "":
		st.State, st.Message = v1alpha1.ComputeStateFailed, failing(serving)
	case progressDeadlineExceeded(d):
		st.State, st.Message = v1alpha1.ComputeStateFailed, "The rollout made no progress within the Deployment's deadline."
	case waitingForSecret(tc, serving) != "":
		st.State, st.Message = v1alpha1.ComputeStateStarting, waitingForSecret(tc, serving)
	case rolledOut(d) && available >= wanted:
		st.State, st.Message = v1alpha1.ComputeStateRunning, fmt.Sprintf("%d of %d replicas available.", available, wanted)
	default:
		st.State, st.Message = v1alpha1.ComputeStateStarting, fmt.Sprintf("Rolling out: %d of %d replicas available.", available, wanted)
	}
	return st
}

// rolledOut reports whether the Deployment controller has acted on the current spec and every
// replica runs it.
func rolledOut(d *appsv1.Deployment) bool {
	wanted := ptr.Deref(d.Spec.Replicas, 1)
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == wanted && d.Status.Replicas == wanted
}

func progressDeadlineExceeded(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return true
		}
	}
	return false
}

// failing is a sentence naming the first container that cannot start without a change, or "".
func failing(pods []*corev1.Pod) string {
	for _, pod := range pods {
		for _, s := range pod.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && failingReasons.Has(w.Reason) {
				return fmt.Sprintf("Container %s cannot start: %s.", s.Name, w.Reason)
			}
		}
	}
	return ""
}

// waitingForSecret is a sentence naming the Secret a container waits for, or "". The kubelet
// says "secret "db" not found" for a missing Secret and "couldn't find key password in Secret
// tenant-x/db" for a missing key.
func waitingForSecret(tc *v1alpha1.TenantCompute, pods []*corev1.Pod) string {
	namespace := v1alpha1.TenantNamespace(tc.Spec.TenantID)
	for _, pod := range pods {
		for _, s := range pod.Status.ContainerStatuses {
			w := s.State.Waiting
			if w == nil || w.Reason != reasonConfigError {
				continue
			}
			for _, ref := range tc.Spec.Secrets {
				missing := strings.Contains(w.Message, fmt.Sprintf("%q not found", ref.Name)) && strings.Contains(strings.ToLower(w.Message), "secret")
				if missing || strings.Contains(w.Message, fmt.Sprintf("key %s in Secret %s/%s", ref.Key, namespace, ref.Name)) {
					return fmt.Sprintf("Waiting for Secret %s/%s key %s.", namespace, ref.Name, ref.Key)
				}
			}
			return fmt.Sprintf("Container %s waits for its configuration: %s.", s.Name, strings.TrimRight(w.Message, "."))
		}
	}
	return ""
}

// health is healthy when every pod is ready, unhealthy when a running pod is not, unknown
// before pods run.
func health(pods []*corev1.Pod) v1alpha1.HealthStatus {
	if len(pods) == 0 {
		return v1alpha1.HealthStatusUnknown
	}
	ready := 0
	for _, pod := range pods {
		switch {
		case podReady(pod):
			ready++
		case pod.Status.Phase == corev1.PodRunning:
			return v1alpha1.HealthStatusUnhealthy
		}
	}
	if ready == len(pods) {
		return v1alpha1.HealthStatusHealthy
	}
	return v1alpha1.HealthStatusUnknown
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerRank orders container states from best to worst; a container's state across the
// tenant's pods is the worst one.
var containerRank = map[string]int{containerRunning: 0, containerStopped: 1, containerStarting: 2, containerFailed: 3}

// containerStatuses reports each of the tenant's containers across its pods: the worst state,
// ready when ready in every pod, the restarts of all pods, and the message of the worst.
func containerStatuses(tc *v1alpha1.TenantCompute, pods []*corev1.Pod, wanted int32) []v1alpha1.ContainerStatus {
	var out []v1alpha1.ContainerStatus
	for _, c := range tc.Spec.Containers {
		cs := v1alpha1.ContainerStatus{Name: c.Name, State: containerStarting}
		if len(pods) == 0 {
			if wanted == 0 {
				cs.State = containerStopped
			}
			out = append(out, cs)
			continue
		}
		cs.State, cs.Ready = containerRunning, true
		for _, pod := range pods {
			state, ready, restarts, message := containerIn(pod, c.Name)
			cs.Ready = cs.Ready && ready
			cs.RestartCount += restarts
			if containerRank[state] > containerRank[cs.State] || (cs.Message == "" && state == cs.State) {
				cs.State, cs.Message = state, message
			}
		}
		out = append(out, cs)
	}
	return out
}

// containerIn is one container's state in one pod.
func containerIn(pod *corev1.Pod, name string) (state string, ready bool, restarts int32, message string) {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != name {
			continue
		}
		switch {
		case s.State.Running != nil:
			return containerRunning, s.Ready, s.RestartCount, ""
		case s.State.Waiting != nil:
			w := s.State.Waiting
			state := containerStarting
			if failingReasons.Has(w.Reason) {
				state = containerFailed
			}
			return state, false, s.RestartCount, joinReason(w.Reason, w.Message)
		case s.State.Terminated != nil:
			t := s.State.Terminated
			if t.ExitCode == 0 {
				return containerStopped, false, s.RestartCount, joinReason(t.Reason, t.Message)
			}
			return containerFailed, false, s.RestartCount, joinReason(fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode), t.Message)
		}
		return containerStarting, false, s.RestartCount, ""
	}
	// No status yet: the pod is not scheduled or its containers are not created.
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return containerStarting, false, 0, joinReason(c.Reason, c.Message)
		}
	}
	return containerStarting, false, 0, ""
}

func joinReason(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}

// endpoints are where the tenant is reached: the Ingress's host first (the name the tenant
// chose), then each Service port. A Service port is http when named http or web or on port 80
// or 8080, https when named https or on port 443, else tcp or udp; its address is the
// LoadBalancer's once one is assigned, else the Service's cluster DNS name.
func endpoints(svc *corev1.Service, ing *networkingv1.Ingress) []v1alpha1.Endpoint {
	var out []v1alpha1.Endpoint
	if ing != nil {
		if host := ingressHost(ing); host != "" {
			out = append(out, v1alpha1.Endpoint{Type: "http", Address: host, Port: 80, URL: "http://" + host + "/"})
		}
	}
	if svc == nil {
		return out
	}
	address := svc.Name + "." + svc.Namespace + ".svc"
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, lb := range svc.Status.LoadBalancer.Ingress {
			if lb.IP != "" {
				address = lb.IP
				break
			}
			if lb.Hostname != "" {
				address = lb.Hostname
				break
			}
		}
	}
	for _, p := range svc.Spec.Ports {
		e := v1alpha1.Endpoint{Type: endpointType(p), Address: address, Port: p.Port}
		switch {
		case e.Type == "http" && p.Port == 80, e.Type == "https" && p.Port == 443:
			e.URL = e.Type + "://" + address + "/"
		case e.Type == "http" || e.Type == "https":
			e.URL = fmt.Sprintf("%s://%s:%d/", e.Type, address, p.Port)
		}
		out = append(out, e)
	}
	return out
}

func endpointType(p corev1.ServicePort) string {
	switch {
	case p.Protocol == corev1.ProtocolUDP:
		return "udp"
	case p.Name == "https" || p.Port == 443:
		return "https"
	case p.Name == "http" || p.Name == "web" || p.Port == 80 || p.Port == 8080:
		return "http"
	}
	return "tcp"
}
