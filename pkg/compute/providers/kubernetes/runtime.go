package kubernetes

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"

	"github.com/score-spec/score-go/framework"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/compute"
)

// fieldManager applies the runtime's objects.
const fieldManager = "plinth-runtime-kubernetes"

// Runtime is the kubernetes runtime. Create it with New.
type Runtime struct {
	Client      kubernetes.Interface
	Deployments appslisters.DeploymentLister
	Services    corelisters.ServiceLister
	Secrets     corelisters.SecretLister
	applier     *applier
}

var (
	_ compute.Runtime  = &Runtime{}
	_ compute.Releaser = &Runtime{}
)

// New returns the kubernetes runtime reading live objects from the given listers.
func New(client kubernetes.Interface, deployments appslisters.DeploymentLister, services corelisters.ServiceLister, secrets corelisters.SecretLister) *Runtime {
	return &Runtime{Client: client, Deployments: deployments, Services: services, Secrets: secrets, applier: newApplier(fieldManager)}
}

// Name is the runtime class.
func (r *Runtime) Name() string { return ProviderName }

// Apply materializes the plan and reports the Deployment's availability.
func (r *Runtime) Apply(ctx context.Context, plan *v1b1.WorkloadPlan, bindings map[string]*v1b1.ResourceBinding) (compute.Status, error) {
	owner := metav1.OwnerReference{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "WorkloadPlan", Name: plan.Name, UID: plan.UID, Controller: ptr.To(true)}
	labels := map[string]string{"app.kubernetes.io/name": plan.Name, "app.kubernetes.io/managed-by": "plinth", v1b1.WorkloadLabel: plan.Spec.WorkloadRef.Name}
	meta := func(name string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: plan.Namespace, Labels: map[string]string{}, OwnerReferences: []metav1.OwnerReference{owner}}
		for k, v := range labels {
			m.Labels[k] = v
		}
		if md := plan.Spec.Metadata; md != nil {
			for k, v := range md.Labels {
				m.Labels[k] = v
			}
			m.Annotations = md.Annotations
		}
		return m
	}

	pod := corev1.PodSpec{}
	files := map[string][]byte{}
	names := sets.List(sets.KeySet(plan.Spec.Projection.Containers))
	for _, name := range names {
		c := plan.Spec.Projection.Containers[name]
		spec := containerSpec{name: name, image: c.Image, command: c.Command, args: c.Args,
			liveness: probe(c.LivenessProbe), readiness: probe(c.ReadinessProbe)}
		for _, e := range c.Env {
			env, err := envVar(e, bindings)
			if err != nil {
				return compute.Status{Reason: v1b1.ReasonProjectionError, Message: "A resource output the workload uses is missing."}, err
			}
			spec.env = append(spec.env, env)
		}
		for i, f := range c.Files {
			key := fmt.Sprintf("%s-%d", name, i)
			content, err := r.fileContent(plan.Namespace, f, bindings)
			if err != nil {
				return compute.Status{Reason: v1b1.ReasonProjectionError, Message: "A resource output the workload uses is missing."}, err
			}
			files[key] = content
			spec.mounts = append(spec.mounts, corev1.VolumeMount{Name: "files", MountPath: f.Target, SubPath: key, ReadOnly: true})
		}
		for _, v := range c.Volumes {
			volName := "vol-" + strings.ToLower(strings.ReplaceAll(v.Source, ".", "-"))
			if !hasVolume(pod.Volumes, volName) {
				pod.Volumes = append(pod.Volumes, corev1.Volume{Name: volName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			}
			spec.mounts = append(spec.mounts, corev1.VolumeMount{Name: volName, MountPath: v.Target, SubPath: v.Path, ReadOnly: v.ReadOnly})
		}
		if res := c.Resources; res != nil {
			spec.requests, spec.limits = scoreAmounts(res.Requests), scoreAmounts(res.Limits)
		}
		if svc := plan.Spec.Projection.Service; svc != nil && len(names) > 0 && name == names[0] {
			for _, portName := range sets.List(sets.KeySet(svc.Ports)) {
				p := svc.Ports[portName]
				spec.ports = append(spec.ports, containerPort(truncate(portName, 15), targetPort(p), p.Protocol))
			}
		}
		built, err := container(spec)
		if err != nil {
			return compute.Status{Reason: v1b1.ReasonProjectionError, Message: "A resource amount of the workload is not a quantity."}, err
		}
		pod.Containers = append(pod.Containers, built)
	}
	// Everything is built before anything is applied: one object of the plan's names that is
	// not the plan's leaves all of them untouched.
	var objects []metav1.Object
	if len(files) > 0 {
		objects = append(objects, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta(filesSecretName(plan)), Data: files})
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: filesSecretName(plan)}}})
	}
	selector := podSelector(plan)
	objects = append(objects, deployment(meta(plan.Name), selector, labels, 1, pod))
	if svc := plan.Spec.Projection.Service; svc != nil && len(svc.Ports) > 0 {
		var ports []corev1.ServicePort
		for _, portName := range sets.List(sets.KeySet(svc.Ports)) {
			p := svc.Ports[portName]
			ports = append(ports, servicePort(portName, p.Port, targetPort(p), p.Protocol))
		}
		m := meta(plan.Name)
		m.Annotations = svc.Annotations
		objects = append(objects, service(m, selector, "", ports))
	}
	for _, obj := range objects {
		if st, taken, err := r.taken(plan, obj); taken || err != nil {
			return st, err
		}
	}
	for _, obj := range objects {
		if err := r.apply(ctx, obj); err != nil {
			return compute.Status{}, err
		}
	}
	return r.status(plan)
}

// taken reports, with the status to report, whether an object of obj's name is there that the
// plan does not control. The runtime applies with Force and makes the plan the controller of
// what it applies, so applying over such an object would take it over, and the garbage
// collector would delete it with the workload: it was made by someone else (a person, another
// tool, another workload's binding), and is left as it is, the workload refused until it is
// gone or renamed. One controlled by an earlier plan of the same name (the workload was deleted
// and made again) goes with that plan: the workload waits for it.
//
// The caches hold every Deployment, Service and Secret, so what they lack is not there, but
// for an object made in the instant before the apply that the cache has not seen yet.
func (r *Runtime) taken(plan *v1b1.WorkloadPlan, obj metav1.Object) (compute.Status, bool, error) {
	resource, err := resourceOf(obj)
	if err != nil {
		return compute.Status{}, false, err
	}
	live, err := r.live(obj.GetNamespace(), resource, obj.GetName())
	if err != nil || live == nil || metav1.IsControlledBy(live, plan) {
		return compute.Status{}, false, err
	}
	if ref := metav1.GetControllerOfNoCopy(live); ref != nil && ref.APIVersion == v1b1.SchemeGroupVersion.String() &&
		ref.Kind == "WorkloadPlan" && ref.Name == plan.Name {
		return compute.Status{Reason: v1b1.ReasonRuntimeProvisioning, Message: "The workload is being materialized.", State: "Creating"}, true, nil
	}
	return compute.Status{Reason: v1b1.ReasonProjectionError,
		Message: fmt.Sprintf("%s %q already exists and is not managed by this workload.", kindOf(resource), obj.GetName())}, true, nil
}

// kindOf names the kind of a resource the runtime applies, for messages.
func kindOf(resource string) string {
	switch resource {
	case "deployments":
		return "Deployment"
	case "services":
		return "Service"
	case "secrets":
		return "Secret"
	}
	return resource
}

// podSelector selects the pods of the plan's Deployment, for the Deployment and the Service.
func podSelector(plan *v1b1.WorkloadPlan) map[string]string {
	return map[string]string{"app.kubernetes.io/name": plan.Name}
}

// filesSecretName names the Secret holding the plan's files.
func filesSecretName(plan *v1b1.WorkloadPlan) string { return plan.Name + "-files" }

// apply server-side applies a typed object, unless it is unchanged since this process last
// applied it (appliedCache).
func (r *Runtime) apply(ctx context.Context, obj metav1.Object) error {
	resource, err := resourceOf(obj)
	if err != nil {
		return err
	}
	live, err := r.live(obj.GetNamespace(), resource, obj.GetName())
	if err != nil {
		return err
	}
	_, err = r.applier.apply(ctx, r.Client, "", obj, live)
	return err
}

// live is the object as the cache has it, or nil when the cache has none (it is applied then).
func (r *Runtime) live(namespace, resource, name string) (metav1.Object, error) {
	var obj metav1.Object
	var err error
	switch resource {
	case "deployments":
		obj, err = r.Deployments.Deployments(namespace).Get(name)
	case "services":
		if r.Services == nil {
			return nil, nil
		}
		obj, err = r.Services.Services(namespace).Get(name)
	case "secrets":
		obj, err = r.Secrets.Secrets(namespace).Get(name)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// Release forgets what was applied for a plan that is gone; garbage collection removes the
// objects themselves.
func (r *Runtime) Release(namespace, name string) {
	r.applier.forget("", "deployments", namespace, name)
	r.applier.forget("", "services", namespace, name)
	r.applier.forget("", "secrets", namespace, name+"-files")
}

func (r *Runtime) status(plan *v1b1.WorkloadPlan) (compute.Status, error) {
	d, err := r.Deployments.Deployments(plan.Namespace).Get(plan.Name)
	if apierrors.IsNotFound(err) {
		return compute.Status{Reason: v1b1.ReasonRuntimeProvisioning, Message: "The workload is being materialized.", State: "Creating"}, nil
	}
	if err != nil {
		return compute.Status{}, err
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	details := map[string]string{"deployment": d.Name, "availableReplicas": fmt.Sprint(d.Status.AvailableReplicas), "replicas": fmt.Sprint(want)}
	state := fmt.Sprintf("%d/%d available", d.Status.AvailableReplicas, want)
	// One message for every step of RuntimeProvisioning (created, rolling out, starting): the
	// message goes into the plan's and the Workload's Ready conditions, and a new one per step
	// would be a status write of each and an event for no new reason. State and Details say
	// which step the Deployment is at.
	switch {
	case d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < want:
		return compute.Status{Reason: v1b1.ReasonRuntimeProvisioning, Message: "The workload is being materialized.", State: state, Details: details}, nil
	case d.Status.AvailableReplicas >= want:
		return compute.Status{Ready: true, Reason: v1b1.ReasonSucceeded, Message: "The workload is available.", State: state, Details: details}, nil
	case d.Status.AvailableReplicas > 0:
		return compute.Status{Reason: v1b1.ReasonRuntimeDegraded, Message: "Some instances of the workload are unavailable.", State: state, Details: details}, nil
	default:
		return compute.Status{Reason: v1b1.ReasonRuntimeProvisioning, Message: "The workload is being materialized.", State: state, Details: details}, nil
	}
}

// envVar maps a projected variable: a value, a secret output (secretKeyRef), or a plain output.
func envVar(e v1b1.EnvProjection, bindings map[string]*v1b1.ResourceBinding) (corev1.EnvVar, error) {
	if e.From == nil {
		return corev1.EnvVar{Name: e.Name, Value: ptr.Deref(e.Value, "")}, nil
	}
	b, ok := bindings[e.From.BindingKey]
	if !ok || b.Status.Outputs == nil {
		return corev1.EnvVar{}, fmt.Errorf("binding %q has no outputs", e.From.BindingKey)
	}
	if v, ok := b.Status.Outputs.Metadata[e.From.OutputKey]; ok {
		return corev1.EnvVar{Name: e.Name, Value: v}, nil
	}
	if ref, ok := b.Status.Outputs.Secrets[e.From.OutputKey]; ok {
		return corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key}}}, nil
	}
	if cred := b.Status.Outputs.Credentials; cred != nil && cred.SecretRef != nil {
		return corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: cred.SecretRef.Name}, Key: e.From.OutputKey}}}, nil
	}
	return corev1.EnvVar{}, fmt.Errorf("binding %q has no output %q", e.From.BindingKey, e.From.OutputKey)
}

// fileContent is a file's bytes: binary content decoded, text with the secret placeholders the
// plan left filled from the bindings' Secrets. Files live in a Secret for that reason. The plan
// keeps expandable text in Score's syntax, escapes and all: this is its one expansion, which
// fills the secret placeholders and turns $$ into $ (so $${HOME} is written as ${HOME}).
func (r *Runtime) fileContent(namespace string, f v1b1.ContainerFile, bindings map[string]*v1b1.ResourceBinding) ([]byte, error) {
	if f.BinaryContent != nil {
		return base64.StdEncoding.DecodeString(*f.BinaryContent)
	}
	if f.Source != nil {
		// A source path is relative to a Score file on someone's disk; the cluster has no copy.
		return nil, fmt.Errorf("file %s names a source path, which a cluster cannot read; inline it as content", f.Target)
	}
	content := ptr.Deref(f.Content, "")
	if f.NoExpand || !strings.Contains(content, "$") {
		return []byte(content), nil
	}
	out, err := framework.SubstituteString(content, func(ref string) (string, error) {
		parts := framework.SplitRefParts(ref)
		if len(parts) != 3 || parts[0] != "resources" {
			return "", fmt.Errorf("unexpected placeholder ${%s}", ref)
		}
		b, ok := bindings[parts[1]]
		if !ok || b.Status.Outputs == nil {
			return "", fmt.Errorf("resource %q has no secret outputs", parts[1])
		}
		secretName, key := "", parts[2]
		if ref, ok := b.Status.Outputs.Secrets[parts[2]]; ok {
			secretName, key = ref.Name, ref.Key
		} else if cred := b.Status.Outputs.Credentials; cred != nil && cred.SecretRef != nil {
			secretName = cred.SecretRef.Name
		} else {
			return "", fmt.Errorf("resource %q has no secret outputs", parts[1])
		}
		s, err := r.Secrets.Secrets(namespace).Get(secretName)
		if err != nil {
			return "", err
		}
		v, ok := s.Data[key]
		if !ok {
			return "", fmt.Errorf("resource %q has no output %q", parts[1], parts[2])
		}
		return string(v), nil
	})
	return []byte(out), err
}

// scoreAmounts are a Score container's requests or limits.
func scoreAmounts(a *v1b1.ResourceAmounts) amounts {
	if a == nil {
		return amounts{}
	}
	return amounts{cpu: a.CPU, memory: a.Memory}
}

// probe maps a Score probe; Score sets no timing, so Kubernetes' defaults apply.
func probe(p *v1b1.ContainerProbe) *probeSpec {
	switch {
	case p == nil:
		return nil
	case p.HTTPGet != nil:
		h := p.HTTPGet
		spec := &probeSpec{kind: probeHTTP, httpPath: h.Path, port: h.Port, httpHost: h.Host, httpScheme: h.Scheme}
		for _, hh := range h.HTTPHeaders {
			spec.httpHeaders = append(spec.httpHeaders, corev1.HTTPHeader{Name: hh.Name, Value: hh.Value})
		}
		return spec
	case p.Exec != nil:
		return &probeSpec{kind: probeExec, command: p.Exec.Command}
	}
	return nil
}

func targetPort(p v1b1.ServicePort) int32 {
	if p.TargetPort != 0 {
		return p.TargetPort
	}
	return p.Port
}

func hasVolume(vs []corev1.Volume, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
