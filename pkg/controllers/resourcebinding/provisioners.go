package resourcebinding

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	scorelisters "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
)

// Result is what a provisioner reports for a binding.
type Result struct {
	// Ready is true when the resource can be used (phase Bound).
	Ready bool
	// Values are the non-secret outputs; SecretName, if set, holds the secret outputs.
	Values     map[string]string
	SecretName string
	// Secrets are secret outputs that are keys of Secrets of their own (encodeSecretRef).
	Secrets map[string]v1b1.SecretKeyReference
	// Message is one neutral sentence for the binding's conditions.
	Message string
}

// Provisioner provisions one resource type in the binding's namespace. Provision is
// idempotent: it is called on every reconcile and converges on what exists.
type Provisioner interface {
	Provision(ctx context.Context, b *v1b1.ResourceBinding) (Result, error)
}

// Env is what provisioners need from the cluster.
type Env struct {
	Client       kubernetes.Interface
	Secrets      corelisters.SecretLister
	Services     corelisters.ServiceLister
	StatefulSets appslisters.StatefulSetLister
	// DNSDomain is the domain dns resources get hosts in.
	DNSDomain string
	// IngressClassName is the class of the Ingresses routes create; empty means the
	// cluster's default class.
	IngressClassName string
	// Dynamic and Mapper apply the manifests of template provisioners.
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// Workloads give template provisioners the source workload's metadata and the
	// namespace's services.
	Workloads scorelisters.WorkloadLister
	// Ingresses are the cluster's Ingresses as the informer has them: a route whose Ingress
	// is still the one it applied applies nothing. Nil: every route reconcile applies.
	Ingresses networkinglisters.IngressLister
}

// Builtins returns the built-in provisioners by resource type, with the output keys score-k8s
// users expect.
func Builtins(env Env) map[string]Provisioner {
	return map[string]Provisioner{
		"postgres": &datastore{env: env, image: "postgres:16-alpine", port: 5432, database: true,
			dataEnv: func(s string) []corev1.EnvVar {
				return []corev1.EnvVar{secretEnv("POSTGRES_USER", s, "username"), secretEnv("POSTGRES_PASSWORD", s, "password"), {Name: "POSTGRES_DB", Value: "app"}}
			}},
		"mysql": &datastore{env: env, image: "mysql:8.4", port: 3306, database: true,
			dataEnv: func(s string) []corev1.EnvVar {
				return []corev1.EnvVar{secretEnv("MYSQL_USER", s, "username"), secretEnv("MYSQL_PASSWORD", s, "password"),
					secretEnv("MYSQL_ROOT_PASSWORD", s, "password"), {Name: "MYSQL_DATABASE", Value: "app"}}
			}},
		"redis": &datastore{env: env, image: "redis:7-alpine", port: 6379, fixedUser: "default",
			args:    []string{"--requirepass", "$(REDIS_PASSWORD)"},
			dataEnv: func(s string) []corev1.EnvVar { return []corev1.EnvVar{secretEnv("REDIS_PASSWORD", s, "password")} }},
		"volume": staticProvisioner(func(b *v1b1.ResourceBinding) (map[string]string, error) {
			return map[string]string{"source": b.Name}, nil
		}),
		"dns": staticProvisioner(func(b *v1b1.ResourceBinding) (map[string]string, error) {
			return map[string]string{"host": DNSHost(b.Namespace, b.Name, env.DNSDomain)}, nil
		}),
		"route":        &route{env: env},
		"service-port": staticProvisioner(servicePortOutputs),
	}
}

// DNSHost is the host a dns resource gets: one DNS label under domain, so a wildcard record or
// certificate for the domain covers it, made of the binding's name, its namespace and a hash of
// the two. Binding names repeat across namespaces (web-dns in every team's), and joining the two
// names alone is ambiguous (binding a-b in namespace c and binding a in namespace b-c), so the
// hash is what keeps one namespace from getting, and then routing, another's host; the names are
// there for people to read, cut when the label would pass 63 characters. It is stable: the same
// binding in the same namespace always gets the same host.
func DNSHost(namespace, binding, domain string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + binding))
	// 64 bits: where names are cut, the rest of a long binding name is anyone's to vary, and
	// finding a second name with the same short hash must stay out of reach.
	hash := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:8]))
	readable := binding + "-" + namespace
	if limit := validation.DNS1123LabelMaxLength - 1 - len(hash); len(readable) > limit {
		readable = strings.TrimRight(readable[:limit], "-")
	}
	return readable + "-" + hash + "." + domain
}

// staticProvisioner is a type whose outputs are derived from the binding alone.
type staticProvisioner func(b *v1b1.ResourceBinding) (map[string]string, error)

func (f staticProvisioner) Provision(_ context.Context, b *v1b1.ResourceBinding) (Result, error) {
	values, err := f(b)
	if err != nil {
		return Result{}, err
	}
	return Result{Ready: true, Values: values, Message: "The resource is bound."}, nil
}

// servicePortOutputs names a port of a workload's service, as score-k8s does: params port
// (required) and workload (default: the workload that declares the resource).
func servicePortOutputs(b *v1b1.ResourceBinding) (map[string]string, error) {
	params, err := bindingParams(b)
	if err != nil {
		return nil, err
	}
	port, err := portParam(params["port"])
	if err != nil {
		return nil, paramError("port", `The service-port param "port" must be a port number from 1 to 65535.`)
	}
	workload, _ := params["workload"].(string)
	if workload == "" {
		workload = b.Spec.WorkloadRef.Name
	}
	if errs := validation.IsDNS1035Label(workload); len(errs) > 0 {
		return nil, paramError("workload", fmt.Sprintf("The service-port param \"workload\" (%q) is not a valid workload name.", workload))
	}
	return map[string]string{"hostname": workload + "." + b.Namespace + ".svc", "port": strconv.Itoa(int(port))}, nil
}

// datastore runs a single-replica StatefulSet with a Service and generated credentials.
type datastore struct {
	env       Env
	image     string
	port      int32
	database  bool
	fixedUser string
	args      []string
	dataEnv   func(secret string) []corev1.EnvVar
}

func (d *datastore) Provision(ctx context.Context, b *v1b1.ResourceBinding) (Result, error) {
	owner := ownerRef(b)
	name := b.Name
	labels := map[string]string{"app.kubernetes.io/managed-by": "plinth", "score.dev/resource-binding": b.Name}
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: b.Namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}}
	}

	// The Secret's keys become the workload's secret outputs, so only a Secret made for this
	// binding is ever used: one of the same name made by anyone else is neither read nor
	// changed (a workload named after it would otherwise receive all of its keys).
	secret, err := d.env.Secrets.Secrets(b.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		username := d.fixedUser
		if username == "" {
			username = "app"
		}
		secret = &corev1.Secret{ObjectMeta: meta(), StringData: map[string]string{"username": username, "password": randomPassword()}}
		secret, err = d.env.Client.CoreV1().Secrets(b.Namespace).Create(ctx, secret, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Ours from a reconcile the cache has not seen yet, or someone else's: look.
			secret, err = d.env.Client.CoreV1().Secrets(b.Namespace).Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return Result{}, err
	}
	if ours, err := ownObject("Secret", secret, b); !ours || err != nil {
		return Result{Message: "The resource is being provisioned."}, err
	}

	svc, err := d.env.Services.Services(b.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		svc = &corev1.Service{
			ObjectMeta: meta(),
			Spec: corev1.ServiceSpec{
				Selector: labels,
				Ports:    []corev1.ServicePort{{Name: "main", Port: d.port, TargetPort: intstr.FromInt32(d.port)}},
			},
		}
		svc, err = d.env.Client.CoreV1().Services(b.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			svc, err = d.env.Client.CoreV1().Services(b.Namespace).Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return Result{}, err
	}
	// The workload sends its password to the host the Service names: a Service of someone
	// else's would receive it.
	if ours, err := ownObject("Service", svc, b); !ours || err != nil {
		return Result{Message: "The resource is being provisioned."}, err
	}

	sts, err := d.env.StatefulSets.StatefulSets(b.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		sts = &appsv1.StatefulSet{
			ObjectMeta: meta(),
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To[int32](1),
				ServiceName: name,
				Selector:    &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "main", Image: d.image, Args: d.args, Env: d.dataEnv(name),
						Ports: []corev1.ContainerPort{{ContainerPort: d.port, Name: "main"}},
					}}},
				},
			},
		}
		sts, err = d.env.Client.AppsV1().StatefulSets(b.Namespace).Create(ctx, sts, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			sts, err = d.env.Client.AppsV1().StatefulSets(b.Namespace).Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return Result{}, err
	}
	// Its readiness is the binding's.
	if ours, err := ownObject("StatefulSet", sts, b); !ours || err != nil {
		return Result{Message: "The resource is being provisioned."}, err
	}

	values := map[string]string{"host": name + "." + b.Namespace + ".svc", "port": strconv.Itoa(int(d.port))}
	if d.database {
		values["name"], values["database"] = "app", "app"
	}
	result := Result{Values: values, SecretName: name}
	if sts.Status.ReadyReplicas >= 1 {
		result.Ready, result.Message = true, "The resource is provisioned and ready."
	} else {
		result.Message = "The resource is being provisioned."
	}
	return result, nil
}

// ForeignObjectError is an object in a provisioner's way: one of a name the provisioner gives
// the binding's own objects (a database's Secret, Service or StatefulSet, a route's Ingress, an
// object of a template's manifests) that exists and was not made for the binding. It is left as
// it is, unread: using it would publish its keys or route to it, and taking it over (applies
// are forced) would let the garbage collector delete it with the binding. It is returned
// marked errkind.Stalled (foreignObject): the binding goes Failed until the object is renamed
// or removed, or the resource is.
type ForeignObjectError struct {
	// Kind and Name name the object.
	Kind, Name string
	// Resource is the resource's name in the workload.
	Resource string
}

func (e *ForeignObjectError) Error() string {
	return fmt.Sprintf("%s %q already exists and was not created for resource %q.", e.Kind, e.Name, e.Resource)
}

// foreignObject is the Stalled error of an object in the binding's way.
func foreignObject(kind, name string, b *v1b1.ResourceBinding) error {
	return errkind.Stalled(&ForeignObjectError{Kind: kind, Name: name, Resource: resourceName(b)})
}

// resourceName is the binding's resource's name in its workload, for messages.
func resourceName(b *v1b1.ResourceBinding) string {
	if b.Spec.ResourceKey != "" {
		return b.Spec.ResourceKey
	}
	return b.Name
}

// ownObject says whether obj, found under a name the binding's provisioner gives its objects, is
// the binding's own: controlled by the binding, by UID. The provisioner made it, in this process
// or before a restart, so it is used as it is. An object controlled by an earlier binding of the
// same name is on its way out with that binding (the garbage collector deletes what a deleted
// binding owned): false, no error, and the binding waits. Anything else is in the way: a
// ForeignObjectError.
func ownObject(kind string, obj metav1.Object, b *v1b1.ResourceBinding) (bool, error) {
	ref := metav1.GetControllerOf(obj)
	switch {
	case ref != nil && ref.UID == b.UID:
		return true, nil
	case ref != nil && ref.APIVersion == v1b1.SchemeGroupVersion.String() && ref.Kind == "ResourceBinding" && ref.Name == b.Name:
		return false, nil
	}
	return false, foreignObject(kind, obj.GetName(), b)
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func ownerRef(b *v1b1.ResourceBinding) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "ResourceBinding", Name: b.Name, UID: b.UID, Controller: ptr.To(true)}
}

func randomPassword() string {
	buf := make([]byte, 18)
	if _, err := rand.Read(buf); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(buf)
}
