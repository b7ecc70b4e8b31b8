package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v5"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/errkind"
)

// tenantCompute is a tenant with every part the provider maps: two containers, env, a secret,
// ports with a public IP, a DNS name, an http health check and resources.
func tenantCompute(mutate ...func(*v1alpha1.TenantCompute)) *v1alpha1.TenantCompute {
	tc := &v1alpha1.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "shop", Generation: 1},
		Spec: v1alpha1.TenantComputeSpec{
			TenantID:     "shop",
			ProviderType: ProviderName,
			Containers: []v1alpha1.ContainerSpec{
				{
					Name: "web", Image: "nginx:1.27", Command: []string{"nginx"}, Args: []string{"-g", "daemon off;"},
					Env:   map[string]string{"MODE": "prod", "LOG": "info"},
					Ports: []v1alpha1.PortMapping{{ContainerPort: 8080, HostPort: 80, Protocol: "tcp", Name: "http"}},
					HealthCheck: &v1alpha1.HealthCheckConfig{Type: "http", HTTPPath: "/healthz", Port: 8080,
						IntervalSeconds: 10, TimeoutSeconds: 2, HealthyThreshold: 2, UnhealthyThreshold: 4},
				},
				{Name: "worker", Image: "busybox:1.36", Resources: &v1alpha1.ResourceRequirements{CPU: 200, Memory: 128}},
			},
			Resources:  v1alpha1.ResourceRequirements{CPU: 700, Memory: 384, Storage: 1024},
			Networking: v1alpha1.NetworkConfig{PublicIP: true, DNS: &v1alpha1.DNSConfig{Hostname: "shop", Domain: "tenants.example.com"}},
			Secrets:    []v1alpha1.SecretReference{{Name: "db", Source: v1alpha1.SecretSourceKubernetes, Key: "password", EnvVar: "DB_PASSWORD"}},
			Labels:     map[string]string{"team": "a"},
		},
	}
	for _, m := range mutate {
		m(tc)
	}
	return tc
}

func withConfig(raw string) func(*v1alpha1.TenantCompute) {
	return func(tc *v1alpha1.TenantCompute) { tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(raw)} }
}

// fixture is a provider on a fake local cluster, read through a label-filtered informer
// factory and an informer on all RoleBindings, as plinth-controller wires it.
type fixture struct {
	kube     *kubefake.Clientset
	factory  kubeinformers.SharedInformerFactory
	provider *Provider
}

func newFixture(t *testing.T, clusters *fakeClusters, objects ...runtime.Object) *fixture {
	t.Helper()
	kube := kubefake.NewClientset(objects...)
	factory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = TenantSelector
	}))
	all := kubeinformers.NewSharedInformerFactory(kube, 0)
	roleBindings := all.Rbac().V1().RoleBindings()
	p := NewProvider(kube, factory, roleBindings, nil)
	if clusters != nil {
		p = NewProvider(kube, factory, roleBindings, clusters)
		p.newClient = clusters.client
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, f := range []kubeinformers.SharedInformerFactory{factory, all} {
		f.Start(ctx.Done())
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				t.Fatalf("cache of %v did not sync", typ)
			}
		}
	}
	kube.ClearActions()
	return &fixture{kube: kube, factory: factory, provider: p}
}

// caughtUp waits until the informers hold what the fake cluster holds for the tenant, then
// forgets every request so far.
func (f *fixture) caughtUp(t *testing.T, tc *v1alpha1.TenantCompute) {
	t.Helper()
	ctx := context.Background()
	ns, name := v1alpha1.TenantNamespace(tc.Spec.TenantID), objectName(tc.Spec.TenantID)
	read := f.provider.local.read
	direct := clientReader{f.kube}
	same := func(a, b metav1.Object) bool {
		if liveA, liveB := a == nil, b == nil; liveA || liveB {
			return liveA == liveB
		}
		// The fake cluster keeps no resourceVersions: compare the objects.
		return reflect.DeepEqual(untyped(t, a), untyped(t, b))
	}
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, pair := range [][2]func() (metav1.Object, error){
			{func() (metav1.Object, error) { return asObject(read.namespace(ctx, ns)) }, func() (metav1.Object, error) { return asObject(direct.namespace(ctx, ns)) }},
			{func() (metav1.Object, error) { return asObject(read.deployment(ctx, ns, name)) }, func() (metav1.Object, error) { return asObject(direct.deployment(ctx, ns, name)) }},
			{func() (metav1.Object, error) { return asObject(read.service(ctx, ns, name)) }, func() (metav1.Object, error) { return asObject(direct.service(ctx, ns, name)) }},
			{func() (metav1.Object, error) { return asObject(read.ingress(ctx, ns, name)) }, func() (metav1.Object, error) { return asObject(direct.ingress(ctx, ns, name)) }},
			{func() (metav1.Object, error) { return asObject(read.role(ctx, ns, secretWriters)) }, func() (metav1.Object, error) { return asObject(direct.role(ctx, ns, secretWriters)) }},
			{func() (metav1.Object, error) { return asObject(read.roleBinding(ctx, ns, secretWriters)) }, func() (metav1.Object, error) {
				return asObject(direct.roleBinding(ctx, ns, secretWriters))
			}},
		} {
			a, err := pair[0]()
			if err != nil {
				return false, err
			}
			b, err := pair[1]()
			if err != nil {
				return false, err
			}
			if !same(a, b) {
				return false, nil
			}
		}
		// The RoleBindings of the TenantCompute's namespace, whose editors write its Secrets.
		cached, err := read.roleBindings(ctx, tc.Namespace)
		if err != nil {
			return false, err
		}
		live, err := direct.roleBindings(ctx, tc.Namespace)
		if err != nil || len(cached) != len(live) {
			return false, err
		}
		slices.SortFunc(cached, func(a, b *rbacv1.RoleBinding) int { return strings.Compare(a.Name, b.Name) })
		slices.SortFunc(live, func(a, b *rbacv1.RoleBinding) int { return strings.Compare(a.Name, b.Name) })
		for i := range live {
			if !same(cached[i], live[i]) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("informers did not catch up: %v", err)
	}
	f.kube.ClearActions()
}

// untyped is an object as JSON fields without its kind, which only some reads fill in.
func untyped(t *testing.T, obj metav1.Object) map[string]interface{} {
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]interface{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	delete(out, "kind")
	delete(out, "apiVersion")
	return out
}

func asObject[T any, PT interface {
	*T
	metav1.Object
}](obj PT, err error) (metav1.Object, error) {
	return liveObject(obj), err
}

// writes are the requests that changed something.
func writes(c *kubefake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// fakeClusters registers named clusters, each a fake clientset.
type fakeClusters struct {
	clusters map[string]*kubefake.Clientset
	err      error
}

func (f *fakeClusters) GetRESTConfig(_ context.Context, name string) (*rest.Config, error) {
	if f.err != nil {
		return nil, f.err
	}
	if _, ok := f.clusters[name]; !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "platform.plinth.dev", Resource: "clusters"}, name)
	}
	return &rest.Config{Host: name}, nil
}

func (f *fakeClusters) Type() string { return "fake" }

func (f *fakeClusters) client(cfg *rest.Config) (kubernetes.Interface, error) {
	return f.clusters[cfg.Host], nil
}

func provision(t *testing.T, p *Provider, tc *v1alpha1.TenantCompute) *v1alpha1.ProvisionResult {
	t.Helper()
	if err := p.Validate(context.Background(), tc); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	res, err := p.Provision(context.Background(), tc)
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	return res
}

func TestProvisionBuildsTheTenant(t *testing.T) {
	f := newFixture(t, nil)
	tc := tenantCompute()
	res := provision(t, f.provider, tc)
	ctx := context.Background()

	wantLabels := map[string]string{"team": "a", "app.kubernetes.io/name": "shop", "app.kubernetes.io/managed-by": "plinth",
		v1alpha1.LabelTenantID: "shop", v1alpha1.LabelTenantComputeNamespace: "team-a", v1alpha1.LabelTenantComputeName: "shop"}
	ns, err := f.kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The tenant's label "team" is on its objects, not on the namespace.
	wantNamespaceLabels := map[string]string{"app.kubernetes.io/name": "shop", "app.kubernetes.io/managed-by": "plinth",
		v1alpha1.LabelTenantID: "shop", v1alpha1.LabelTenantComputeNamespace: "team-a", v1alpha1.LabelTenantComputeName: "shop"}
	if diff := cmp.Diff(wantNamespaceLabels, ns.Labels); diff != "" {
		t.Errorf("namespace labels (-want +got):\n%s", diff)
	}

	d, err := f.kube.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantLabels, d.Labels); diff != "" {
		t.Errorf("deployment labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantLabels, d.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if got := ptr.Deref(d.Spec.Replicas, -1); got != 1 {
		t.Errorf("replicas = %d, want the default 1", got)
	}
	if diff := cmp.Diff(map[string]string{v1alpha1.LabelTenantID: "shop"}, d.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if ptr.Deref(d.Spec.Template.Spec.AutomountServiceAccountToken, true) {
		t.Error("tenant pods get a service account token")
	}
	readiness := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
		PeriodSeconds: 10, TimeoutSeconds: 2, SuccessThreshold: 2, FailureThreshold: 4,
	}
	liveness := readiness.DeepCopy()
	liveness.SuccessThreshold = 1
	secretVar := corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}
	quantities := func(cpu, memory, storage string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			corev1.ResourceEphemeralStorage: resource.MustParse(storage)}
	}
	wantContainers := []corev1.Container{
		{
			Name: "web", Image: "nginx:1.27", Command: []string{"nginx"}, Args: []string{"-g", "daemon off;"},
			// Sorted by name, the secret among them.
			Env:   []corev1.EnvVar{secretVar, {Name: "LOG", Value: "info"}, {Name: "MODE", Value: "prod"}},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			// The tenant's 700m, 384Mi and 1024Mi less the worker's own 200m and 128Mi.
			Resources:      corev1.ResourceRequirements{Requests: quantities("500m", "256Mi", "1024Mi"), Limits: quantities("500m", "256Mi", "1024Mi")},
			ReadinessProbe: readiness, LivenessProbe: liveness,
		},
		{
			Name: "worker", Image: "busybox:1.36", Env: []corev1.EnvVar{secretVar},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		},
	}
	if diff := cmp.Diff(wantContainers, d.Spec.Template.Spec.Containers, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}

	svc, err := f.kube.CoreV1().Services("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("service type = %s, want LoadBalancer for publicIP", svc.Spec.Type)
	}
	wantPorts := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" {
		t.Errorf("service ports (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{v1alpha1.LabelTenantID: "shop"}, svc.Spec.Selector); diff != "" {
		t.Errorf("service selector (-want +got):\n%s", diff)
	}

	ing, err := f.kube.NetworkingV1().Ingresses("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRules := []networkingv1.IngressRule{{Host: "shop.tenants.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
		HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
			Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "shop", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}
	if diff := cmp.Diff(wantRules, ing.Spec.Rules); diff != "" {
		t.Errorf("ingress rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantLabels, ing.Labels); diff != "" {
		t.Errorf("ingress labels (-want +got):\n%s", diff)
	}

	want := &v1alpha1.ProvisionResult{
		Status: v1alpha1.ProvisionStatusSuccess,
		ResourceIDs: map[string]string{"namespace": "tenant-shop", "deployment": "tenant-shop/shop", "service": "tenant-shop/shop",
			"ingress": "tenant-shop/shop"},
		Endpoints: []v1alpha1.Endpoint{
			{Type: "http", Address: "shop.tenants.example.com", Port: 80, URL: "http://shop.tenants.example.com/"},
			{Type: "http", Address: "shop.tenant-shop.svc", Port: 80, URL: "http://shop.tenant-shop.svc/"},
		},
		Message: "The tenant runs in namespace tenant-shop on the cluster Plinth serves.",
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("provision result (-want +got):\n%s", diff)
	}
}

func TestHealthChecks(t *testing.T) {
	ports := []v1alpha1.PortMapping{{ContainerPort: 9000, Protocol: "tcp"}}
	for name, tc := range map[string]struct {
		check *v1alpha1.HealthCheckConfig
		ports []v1alpha1.PortMapping
		want  *corev1.Probe
		err   string
	}{
		"tcp": {
			check: &v1alpha1.HealthCheckConfig{Type: "tcp", Port: 9000, IntervalSeconds: 5, TimeoutSeconds: 1},
			want: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}},
				PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
		},
		"exec": {
			check: &v1alpha1.HealthCheckConfig{Type: "exec", Command: []string{"pg_isready"}, IntervalSeconds: 30, TimeoutSeconds: 5, HealthyThreshold: 3, UnhealthyThreshold: 2},
			want: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready"}}},
				PeriodSeconds: 30, TimeoutSeconds: 5, SuccessThreshold: 3, FailureThreshold: 2},
		},
		"http without a port or path checks / on the first port": {
			check: &v1alpha1.HealthCheckConfig{Type: "http", IntervalSeconds: 5, TimeoutSeconds: 1},
			ports: ports,
			want: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(9000), Scheme: corev1.URISchemeHTTP}},
				PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
		},
		"http without any port": {
			check: &v1alpha1.HealthCheckConfig{Type: "http", IntervalSeconds: 5, TimeoutSeconds: 1},
			err:   "spec.containers[0].healthCheck.port: a http check needs a port, and the container declares none",
		},
		"exec without a command": {
			check: &v1alpha1.HealthCheckConfig{Type: "exec", IntervalSeconds: 5, TimeoutSeconds: 1},
			err:   "spec.containers[0].healthCheck.command: an exec check needs a command",
		},
		"grpc": {
			check: &v1alpha1.HealthCheckConfig{Type: "grpc", IntervalSeconds: 5, TimeoutSeconds: 1},
			err:   `spec.containers[0].healthCheck.type: the kubernetes provider runs http, tcp and exec checks, not "grpc"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			ten, err := build(tenantCompute(func(c *v1alpha1.TenantCompute) {
				c.Spec.Containers = []v1alpha1.ContainerSpec{{Name: "db", Image: "postgres:17", Ports: tc.ports, HealthCheck: tc.check}}
			}), providerConfig{Replicas: 1})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !errkind.IsStalled(err) {
					t.Fatalf("error = %v, want the permanent %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := ten.deployment.Spec.Template.Spec.Containers[0]
			if diff := cmp.Diff(tc.want, c.ReadinessProbe); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
			liveness := tc.want.DeepCopy()
			liveness.SuccessThreshold = 1 // Kubernetes allows nothing else
			if diff := cmp.Diff(liveness, c.LivenessProbe); diff != "" {
				t.Errorf("liveness (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPortsAndResources(t *testing.T) {
	tc := tenantCompute(func(tc *v1alpha1.TenantCompute) {
		tc.Spec.Networking = v1alpha1.NetworkConfig{DNS: &v1alpha1.DNSConfig{Hostname: "dns"}}
		tc.Spec.Resources = v1alpha1.ResourceRequirements{CPU: 1000, Memory: 512}
		tc.Spec.Containers = []v1alpha1.ContainerSpec{
			{Name: "dns", Image: "coredns:1.12", Ports: []v1alpha1.PortMapping{
				{ContainerPort: 5353, HostPort: 53, Protocol: "udp", Name: "dns"},
				{ContainerPort: 5353, HostPort: 53, Protocol: "tcp", Name: "dns"}, // name taken: tcp-53
			}},
			{Name: "metrics", Image: "exporter:1", Ports: []v1alpha1.PortMapping{
				{ContainerPort: 9100, Protocol: "tcp", Name: "Prometheus_Metrics"}, // not a DNS label: tcp-9100
				{ContainerPort: 9200, HostPort: 53, Protocol: "tcp"},               // tcp/53 taken: left out
			}},
		}
	})
	ten, err := build(tc, providerConfig{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantPorts := []corev1.ServicePort{
		{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(5353), Protocol: corev1.ProtocolUDP},
		{Name: "tcp-53", Port: 53, TargetPort: intstr.FromInt32(5353), Protocol: corev1.ProtocolTCP},
		{Name: "tcp-9100", Port: 9100, TargetPort: intstr.FromInt32(9100), Protocol: corev1.ProtocolTCP},
	}
	if diff := cmp.Diff(wantPorts, ten.service.Spec.Ports); diff != "" {
		t.Errorf("service ports (-want +got):\n%s", diff)
	}
	if ten.service.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("service type = %s without publicIP", ten.service.Spec.Type)
	}
	containers := ten.deployment.Spec.Template.Spec.Containers
	if diff := cmp.Diff([]corev1.ContainerPort{
		{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		{Name: "tcp-53", ContainerPort: 5353, Protocol: corev1.ProtocolTCP},
	}, containers[0].Ports); diff != "" {
		t.Errorf("dns container ports (-want +got):\n%s", diff)
	}
	// The Ingress goes to the first TCP port, not the first port.
	if ten.ingress == nil || ten.ingress.Spec.Rules[0].Host != "dns" ||
		ten.ingress.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number != 53 {
		t.Errorf("ingress = %+v, want host dns to tcp port 53", ten.ingress)
	}
	// Neither container has its own resources: they share the tenant's equally.
	for _, c := range containers {
		if got := c.Resources.Limits.Cpu().String(); got != "500m" {
			t.Errorf("%s: cpu limit %s, want 500m", c.Name, got)
		}
		if got := c.Resources.Requests.Memory().String(); got != "256Mi" {
			t.Errorf("%s: memory request %s, want 256Mi", c.Name, got)
		}
		if _, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
			t.Errorf("%s: an ephemeral-storage limit the tenant did not ask for", c.Name)
		}
	}

	// No ports: no Service and no Ingress, even with a DNS name.
	tc.Spec.Containers = []v1alpha1.ContainerSpec{{Name: "batch", Image: "busybox:1.36"}}
	if ten, err = build(tc, providerConfig{Replicas: 1}); err != nil || ten.service != nil || ten.ingress != nil {
		t.Errorf("without ports: service %v, ingress %v, err %v", ten.service, ten.ingress, err)
	}
}

func TestProvisionIsIdempotent(t *testing.T) {
	f := newFixture(t, nil)
	tc := tenantCompute()
	first := provision(t, f.provider, tc)
	f.caughtUp(t, tc)
	second := provision(t, f.provider, tc)
	if got := f.kube.Actions(); len(got) != 0 {
		t.Errorf("the second Provision sent %d requests, want none: %v", len(got), got)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("the second Provision reports otherwise (-first +second):\n%s", diff)
	}
}

func TestUpdate(t *testing.T) {
	f := newFixture(t, nil)
	tc := tenantCompute()
	provision(t, f.provider, tc)
	f.caughtUp(t, tc)
	ctx := context.Background()

	update := func(tc *v1alpha1.TenantCompute, wantStatus v1alpha1.UpdateStatus, wantChanges ...string) {
		t.Helper()
		res, err := f.provider.Update(ctx, tc)
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		if res.Status != wantStatus || !slices.Equal(res.Changes, wantChanges) {
			t.Errorf("Update = %s %q, want %s %q", res.Status, res.Changes, wantStatus, wantChanges)
		}
		f.caughtUp(t, tc)
	}

	update(tc, v1alpha1.UpdateStatusNoChanges)
	if got := writes(f.kube); len(got) != 0 {
		t.Errorf("an unchanged Update wrote %v", got)
	}

	tc.Spec.Containers[0].Image = "nginx:1.28"
	update(tc, v1alpha1.UpdateStatusSuccess, "container web: image nginx:1.27 → nginx:1.28")
	update(tc, v1alpha1.UpdateStatusNoChanges)

	tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"replicas": 2}`)}
	tc.Spec.Containers[0].Env["LOG"] = "debug"
	tc.Spec.Containers[0].Ports[0].HostPort = 8080
	update(tc, v1alpha1.UpdateStatusSuccess, "replicas 1 → 2", "container web: env", "service ports", "ingress port 80 → 8080")

	tc.Spec.Networking = v1alpha1.NetworkConfig{}
	update(tc, v1alpha1.UpdateStatusSuccess, "service type LoadBalancer → ClusterIP", "ingress tenant-shop/shop removed")
	if _, err := f.kube.NetworkingV1().Ingresses("tenant-shop").Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Ingress is still there: %v", err)
	}

	tc.Spec.Suspended = true
	update(tc, v1alpha1.UpdateStatusSuccess, "replicas 2 → 0")
	d, err := f.kube.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(d.Spec.Replicas, -1); got != 0 {
		t.Errorf("suspended: replicas %d, want 0", got)
	}

	// Someone else's edit is undone and reported.
	d.Spec.Template.Spec.Containers[0].Image = "evil:latest"
	if _, err := f.kube.AppsV1().Deployments("tenant-shop").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.caughtUp(t, tc)
	update(tc, v1alpha1.UpdateStatusSuccess, "container web: image evil:latest → nginx:1.28")
}

// A Deployment as the API server returns it has defaults the provider did not write; they are
// not changes.
func TestServerDefaultsAreNoChanges(t *testing.T) {
	ten, err := build(tenantCompute(), providerConfig{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	live := ten.deployment.DeepCopy()
	live.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	live.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	live.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	live.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
	for i := range live.Spec.Template.Spec.Containers {
		c := &live.Spec.Template.Spec.Containers[i]
		c.TerminationMessagePath, c.ImagePullPolicy = "/dev/termination-log", corev1.PullIfNotPresent
	}
	if got := deploymentChanges(live, ten.deployment); len(got) != 0 {
		t.Errorf("changes %q", got)
	}
	liveSvc := ten.service.DeepCopy()
	liveSvc.Spec.Ports[0].NodePort = 31000
	liveSvc.Spec.ClusterIP = "10.0.0.7"
	if got := serviceChanges(liveSvc, ten.service); len(got) != 0 {
		t.Errorf("service changes %q", got)
	}
}

func TestDestroy(t *testing.T) {
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-other"}}
	f := newFixture(t, nil, foreign)
	ctx := context.Background()
	tc := tenantCompute()
	provision(t, f.provider, tc)
	f.caughtUp(t, tc)

	// In progress until the namespace is gone: the tenant ID is released with the
	// TenantCompute, and a new one with that ID would find the namespace in its way.
	if err := f.provider.Destroy(ctx, tc); !errkind.IsWaiting(err) || err.Error() != "namespace tenant-shop is being deleted" {
		t.Fatalf("Destroy = %v, want in progress", err)
	}
	if _, err := f.kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace tenant-shop after Destroy: %v", err)
	}
	f.caughtUp(t, tc)
	if err := f.provider.Destroy(ctx, tc); err != nil {
		t.Errorf("Destroy of a tenant that is gone: %v", err)
	}

	// A namespace the provider did not make is neither taken over nor deleted.
	other := tenantCompute(func(tc *v1alpha1.TenantCompute) { tc.Name, tc.Spec.TenantID = "other", "other" })
	if _, err := f.provider.Provision(ctx, other); !errkind.IsStalled(err) ||
		err.Error() != "namespace tenant-other already exists and was not made by the kubernetes provider for this TenantCompute" {
		t.Errorf("Provision into someone else's namespace: %v", err)
	}
	if err := f.provider.Destroy(ctx, other); err != nil {
		t.Errorf("Destroy: %v", err)
	}
	if _, err := f.kube.CoreV1().Namespaces().Get(ctx, "tenant-other", metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's namespace is gone: %v", err)
	}
}

// A namespace that a cluster is still deleting (its finalizers run) keeps Destroy in progress
// without a second delete; on a named cluster the message names the cluster.
func TestDestroyWaitsForTheNamespace(t *testing.T) {
	tc := tenantCompute(withConfig(`{"cluster": "edge"}`))
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-shop", Labels: tenantLabels(tc),
		DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"kubernetes"}}}
	local, edge := terminating.DeepCopy(), terminating.DeepCopy()
	edgeCluster := kubefake.NewClientset(edge)
	f := newFixture(t, &fakeClusters{clusters: map[string]*kubefake.Clientset{"edge": edgeCluster}}, local)
	ctx := context.Background()

	err := f.provider.Destroy(ctx, tc)
	if !errkind.IsWaiting(err) || err.Error() != "namespace tenant-shop on cluster edge is being deleted" {
		t.Errorf("Destroy = %v, want in progress on edge", err)
	}
	// Moved from the cluster Plinth serves: both are waited for.
	tc.Status.Metadata = map[string]string{metadataNamespace: "tenant-shop"}
	err = f.provider.Destroy(ctx, tc)
	if !errkind.IsWaiting(err) {
		t.Errorf("Destroy after a move = %v, want in progress", err)
	}
	for name, c := range map[string]*kubefake.Clientset{"local": f.kube, "edge": edgeCluster} {
		if got := writes(c); len(got) != 0 {
			t.Errorf("%s: wrote %v to a namespace being deleted", name, got)
		}
	}

	// A namespace the informer has not seen yet is read from the cluster, and deleted.
	fresh := tenantCompute()
	f2 := newFixture(t, nil)
	if _, err := f2.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-shop",
		Labels: tenantLabels(fresh)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f2.provider.local.read = emptyReader{f2.provider.local.read}
	if err := f2.provider.Destroy(ctx, fresh); !errkind.IsWaiting(err) {
		t.Errorf("Destroy of a namespace the cache has not seen = %v, want in progress", err)
	}
	if _, err := f2.kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace the cache had not seen is still there: %v", err)
	}
}

// emptyReader is a reader whose cache has no namespace yet.
type emptyReader struct{ reader }

func (emptyReader) namespace(context.Context, string) (*corev1.Namespace, error) { return nil, nil }

func TestProvisionWaitsForATerminatingNamespace(t *testing.T) {
	tc := tenantCompute()
	// Also when it was made for an earlier TenantCompute with this tenant ID: being deleted, it
	// is on its way out, not someone else's to refuse.
	predecessor := tenantCompute(func(tc *v1alpha1.TenantCompute) { tc.Namespace, tc.Name = "team-b", "old-shop" })
	for name, labels := range map[string]map[string]string{"this TenantCompute's": tenantLabels(tc), "a predecessor's": tenantLabels(predecessor)} {
		t.Run(name, func(t *testing.T) {
			terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-shop", Labels: labels,
				DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"kubernetes"}}}
			f := newFixture(t, nil, terminating)
			res, err := f.provider.Provision(context.Background(), tc)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != v1alpha1.ProvisionStatusInProgress || res.Message != "Waiting for namespace tenant-shop, which is being deleted, to be gone." {
				t.Errorf("Provision = %+v", res)
			}
			if got := writes(f.kube); len(got) != 0 {
				t.Errorf("wrote %v into a namespace being deleted", got)
			}
		})
	}
}

// A tenant's labels never reach its namespace: labels there are what NetworkPolicy
// namespaceSelectors, Pod Security admission, meshes and policy engines select and exempt
// namespaces by. They stay on the tenant's own objects.
func TestTenantLabelsStayOffTheNamespace(t *testing.T) {
	hostile := map[string]string{
		"team":                               "payments", // another team's NetworkPolicy namespaceSelector
		"pod-security.kubernetes.io/enforce": "privileged",
		"istio-injection":                    "disabled",
		"kubernetes.io/metadata.name":        "kube-system",
	}
	tc := tenantCompute(func(tc *v1alpha1.TenantCompute) { tc.Spec.Labels = hostile })
	built, err := build(tc, providerConfig{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ownLabels(tc), built.namespace.Labels); diff != "" {
		t.Errorf("built namespace labels (-want +got):\n%s", diff)
	}
	if len(built.namespace.Annotations) != 0 {
		t.Errorf("built namespace annotations %v, want none", built.namespace.Annotations)
	}

	f := newFixture(t, nil)
	provision(t, f.provider, tc)
	ctx := context.Background()
	ns, err := f.kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range hostile {
		if v, ok := ns.Labels[k]; ok {
			t.Errorf("namespace label %s=%s, want the tenant's labels kept off the namespace", k, v)
		}
	}
	if !ownedBy(ns, tc) || ns.Labels["app.kubernetes.io/managed-by"] != "plinth" {
		t.Errorf("namespace labels %v, want the provider's", ns.Labels)
	}
	role, err := f.kube.RbacV1().Roles("tenant-shop").Get(ctx, secretWriters, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ownLabels(tc), role.Labels); diff != "" {
		t.Errorf("secret writers' Role labels (-want +got):\n%s", diff)
	}
	// The tenant's own objects carry them.
	d, err := f.kube.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Labels["team"] != "payments" || d.Spec.Template.Labels["team"] != "payments" {
		t.Errorf("deployment labels %v, pod labels %v, want the tenant's", d.Labels, d.Spec.Template.Labels)
	}
}

// A namespace an earlier version of the provider applied with the tenant's labels loses them
// at the next apply: the provider's field manager dropped them from what it applies. The
// create sets only the labels that make the namespace the TenantCompute's, so they are never
// the create's to keep.
func TestNamespaceLosesTheTenantLabelsAppliedBefore(t *testing.T) {
	tc := tenantCompute()
	earlier := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-shop", Labels: tenantLabels(tc)}}
	f := newFixture(t, nil)
	ctx := context.Background()
	data, err := json.Marshal(earlier)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.kube.CoreV1().Namespaces().Patch(ctx, "tenant-shop", types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: providerFieldManager, Force: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	f.caughtUp(t, tc)
	if _, err := f.provider.Update(ctx, tc); err != nil {
		t.Fatal(err)
	}
	ns, err := f.kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ns.Labels["team"]; ok || !ownedBy(ns, tc) {
		t.Errorf("namespace labels %v, want the tenant's label gone and the ownership labels kept", ns.Labels)
	}

	// A first provision creates the namespace, then applies it.
	f = newFixture(t, nil)
	provision(t, f.provider, tc)
	if got := writes(f.kube); !slices.Contains(got, "create namespaces") || slices.Index(got, "create namespaces") > slices.Index(got, "patch namespaces") {
		t.Errorf("Provision wrote %v, want the namespace created, then applied", got)
	}
}

// The namespace is created, not applied: one someone else creates between the provider's read
// and its write is refused, never taken over; one this TenantCompute's own earlier pass created
// is used.
func TestNamespaceCreatedMeanwhile(t *testing.T) {
	tc := tenantCompute()
	for name, c := range map[string]struct {
		// meanwhile is the namespace created just before the provider's create, nil for none.
		meanwhile *corev1.Namespace
		err       string
		// retry is true for an error that is not permanent.
		retry bool
	}{
		"someone else's": {meanwhile: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-shop", Labels: map[string]string{"team": "c"}}},
			err: "namespace tenant-shop already exists and was not made by the kubernetes provider for this TenantCompute"},
		"this TenantCompute's":      {meanwhile: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-shop", Labels: tenantLabels(tc)}}},
		"created and deleted again": {err: "namespace tenant-shop was created and deleted by someone else while the provider created it", retry: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			ctx := context.Background()
			f.kube.PrependReactor("create", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
				if c.meanwhile != nil {
					if err := f.kube.Tracker().Add(c.meanwhile); err != nil {
						t.Fatal(err)
					}
				}
				return true, nil, apierrors.NewAlreadyExists(corev1.Resource("namespaces"), "tenant-shop")
			})
			res, err := f.provider.Provision(ctx, tc)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("Provision: %v", err)
			case c.err == "":
				if res.Status != v1alpha1.ProvisionStatusSuccess {
					t.Errorf("Provision = %+v", res)
				}
				return
			case err == nil || err.Error() != c.err || errkind.IsStalled(err) == c.retry:
				t.Fatalf("Provision = %v, want %q (retried: %v)", err, c.err, c.retry)
			}
			if got := writes(f.kube); !slices.Equal(got, []string{"create namespaces"}) {
				t.Errorf("wrote %v, want only the refused create", got)
			}
			if c.meanwhile != nil {
				live, err := f.kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{})
				if err != nil || !reflect.DeepEqual(live.Labels, c.meanwhile.Labels) {
					t.Errorf("someone else's namespace was changed: %v, %v", live, err)
				}
			}
		})
	}
}

func TestBadConfigIsPermanent(t *testing.T) {
	clusters := &fakeClusters{clusters: map[string]*kubefake.Clientset{"edge": kubefake.NewClientset()}}
	for name, tc := range map[string]struct {
		config   string
		clusters *fakeClusters
		err      string
	}{
		"unknown cluster":    {`{"cluster": "mars"}`, clusters, `spec.providerConfig.cluster: cluster "mars" is not registered`},
		"no clusters at all": {`{"cluster": "edge"}`, nil, `spec.providerConfig.cluster: this plinth-controller runs tenants only on the cluster Plinth serves, not on cluster "edge"`},
		"unknown field":      {`{"serviceType": "NodePort"}`, nil, `spec.providerConfig: unknown field "serviceType"`},
		// encoding/json alone would read it as the cluster, which admission did not check.
		"cluster in another case": {`{"Cluster": "edge"}`, clusters, `spec.providerConfig: unknown field "Cluster"`},
		"not an object":           {`["edge"]`, nil, `spec.providerConfig: must be an object`},
		"replicas of a string":    {`{"replicas": "2"}`, nil, `spec.providerConfig: field replicas has the wrong type`},
		"no replicas":             {`{"replicas": 0}`, nil, `spec.providerConfig.replicas: must be between 1 and 100`},
		"too many replicas":       {`{"replicas": 101}`, nil, `spec.providerConfig.replicas: must be between 1 and 100`},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.clusters)
			ten := tenantCompute(withConfig(tc.config))
			ctx := context.Background()
			for verb, err := range map[string]error{
				"Validate":  f.provider.Validate(ctx, ten),
				"Provision": second(f.provider.Provision(ctx, ten)),
				"Update":    second(f.provider.Update(ctx, ten)),
				"GetStatus": second(f.provider.GetStatus(ctx, ten)),
			} {
				if !errkind.IsStalled(err) || err.Error() != tc.err {
					t.Errorf("%s: %v, want the permanent %q", verb, err, tc.err)
				}
			}
			if got := writes(f.kube); len(got) != 0 {
				t.Errorf("wrote %v", got)
			}
		})
	}

	// A failure to read a registered cluster's credentials is worth retrying.
	f := newFixture(t, &fakeClusters{err: errors.New("reading the credentials of cluster edge failed")})
	if err := f.provider.Validate(context.Background(), tenantCompute(withConfig(`{"cluster": "edge"}`))); err == nil || errkind.IsStalled(err) {
		t.Errorf("credentials unavailable: %v, want a retryable error", err)
	}
}

func second[T any](_ T, err error) error { return err }

func TestValidateRefusesWhatItCannotName(t *testing.T) {
	f := newFixture(t, nil)
	for name, tc := range map[string]struct {
		mutate func(*v1alpha1.TenantCompute)
		err    string
	}{
		"tenant ID ending in a dash": {func(tc *v1alpha1.TenantCompute) { tc.Spec.TenantID = "shop-" },
			"spec.tenantID: the kubernetes provider runs a tenant in namespace tenant-<tenantID>, so the ID must be at most 56 characters and start and end with a letter or digit"},
		"tenant ID too long": {func(tc *v1alpha1.TenantCompute) { tc.Spec.TenantID = strings.Repeat("a", 57) },
			"spec.tenantID: the kubernetes provider runs a tenant in namespace tenant-<tenantID>, so the ID must be at most 56 characters and start and end with a letter or digit"},
		"name longer than a label value": {func(tc *v1alpha1.TenantCompute) { tc.Name = strings.Repeat("a", 64) },
			"metadata.name: the kubernetes provider labels what it creates with the TenantCompute's name, which must then be at most 63 characters"},
		"label key": {func(tc *v1alpha1.TenantCompute) { tc.Spec.Labels = map[string]string{"a b": "c"} }, `spec.labels: "a b" is not a label key`},
		"secret source": {func(tc *v1alpha1.TenantCompute) { tc.Spec.Secrets[0].Source = "aws-secrets-manager" },
			`spec.secrets[0].source: the kubernetes provider reads only kubernetes-secret, not "aws-secrets-manager"`},
	} {
		t.Run(name, func(t *testing.T) {
			err := f.provider.Validate(context.Background(), tenantCompute(tc.mutate))
			if !errkind.IsStalled(err) || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("Validate = %v, want the permanent %q", err, tc.err)
			}
		})
	}
	// A tenant ID starting with a digit is fine; its objects are named tenant-<tenantID>.
	ten, err := build(tenantCompute(func(tc *v1alpha1.TenantCompute) { tc.Spec.TenantID = "42" }), providerConfig{Replicas: 1})
	if err != nil || ten.service.Name != "tenant-42" || ten.deployment.Name != "tenant-42" || ten.deployment.Namespace != "tenant-42" {
		t.Errorf("tenant 42: %v", err)
	}
}

func TestNamedCluster(t *testing.T) {
	edge := kubefake.NewClientset()
	clusters := &fakeClusters{clusters: map[string]*kubefake.Clientset{"edge": edge}}
	f := newFixture(t, clusters)
	ctx := context.Background()
	tc := tenantCompute(withConfig(`{"cluster": "edge", "replicas": 3}`))
	res := provision(t, f.provider, tc)
	if res.ResourceIDs["cluster"] != "edge" || res.Message != "The tenant runs in namespace tenant-shop on cluster edge." {
		t.Errorf("provision result %+v", res)
	}
	if got := writes(f.kube); len(got) != 0 {
		t.Errorf("wrote %v on the local cluster", got)
	}
	d, err := edge.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(d.Spec.Replicas, -1); got != 3 {
		t.Errorf("replicas %d, want 3", got)
	}

	// Read with direct requests: what was applied is there at once, and not applied again.
	edge.ClearActions()
	if res, err := f.provider.Update(ctx, tc); err != nil || res.Status != v1alpha1.UpdateStatusNoChanges {
		t.Errorf("Update = %+v, %v", res, err)
	}
	if got := writes(edge); len(got) != 0 {
		t.Errorf("an unchanged Update wrote %v", got)
	}
	st, err := f.provider.GetStatus(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	if st.Metadata[metadataCluster] != "edge" || st.Metadata[metadataReplicas] != "3" {
		t.Errorf("metadata %v", st.Metadata)
	}

	// Moving the tenant home: it is set up on the local cluster and removed from edge.
	tc.Status.Metadata = st.Metadata
	tc.Spec.ProviderConfig = nil
	res2, err := f.provider.Update(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res2.Changes, "cluster edge → (the cluster Plinth serves)") {
		t.Errorf("changes %q", res2.Changes)
	}
	if _, err := edge.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the tenant is still on edge: %v", err)
	}
	if _, err := f.kube.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("the tenant is not on the local cluster: %v", err)
	}

	// A Cluster that is no longer registered leaves nothing Plinth can reach to destroy.
	delete(clusters.clusters, "edge")
	if err := f.provider.Destroy(ctx, tenantCompute(withConfig(`{"cluster": "edge"}`))); err != nil {
		t.Errorf("Destroy on a cluster that is gone: %v", err)
	}
}

func TestGetStatus(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	tc := tenantCompute()
	st, err := f.provider.GetStatus(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != v1alpha1.ComputeStateUnknown || st.Health != v1alpha1.HealthStatusUnknown {
		t.Errorf("before Provision: %s/%s", st.State, st.Health)
	}
	provision(t, f.provider, tc)
	// The cluster assigns the LoadBalancer an address.
	svc, err := f.kube.CoreV1().Services("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
	if _, err := f.kube.CoreV1().Services("tenant-shop").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.caughtUp(t, tc)
	st, err = f.provider.GetStatus(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	wantEndpoints := []v1alpha1.Endpoint{
		{Type: "http", Address: "shop.tenants.example.com", Port: 80, URL: "http://shop.tenants.example.com/"},
		{Type: "http", Address: "203.0.113.7", Port: 80, URL: "http://203.0.113.7/"},
	}
	if diff := cmp.Diff(wantEndpoints, st.Endpoints); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	wantMetadata := map[string]string{"namespace": "tenant-shop", "deployment": "shop", "replicas": "1", "availableReplicas": "0"}
	if diff := cmp.Diff(wantMetadata, st.Metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if st.State != v1alpha1.ComputeStateStarting {
		t.Errorf("state %s before any pod, want starting", st.State)
	}
	if got := f.kube.Actions(); len(got) != 0 {
		t.Errorf("GetStatus on the local cluster sent requests: %v", got)
	}
}

func TestEndpoints(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-x", Name: "x"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "web", Port: 8080, Protocol: corev1.ProtocolTCP},
		{Name: "tls", Port: 443, Protocol: corev1.ProtocolTCP},
		{Name: "https", Port: 8443, Protocol: corev1.ProtocolTCP},
		{Name: "db", Port: 5432, Protocol: corev1.ProtocolTCP},
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
	}}}
	want := []v1alpha1.Endpoint{
		{Type: "http", Address: "x.tenant-x.svc", Port: 8080, URL: "http://x.tenant-x.svc:8080/"},
		{Type: "https", Address: "x.tenant-x.svc", Port: 443, URL: "https://x.tenant-x.svc/"},
		{Type: "https", Address: "x.tenant-x.svc", Port: 8443, URL: "https://x.tenant-x.svc:8443/"},
		{Type: "tcp", Address: "x.tenant-x.svc", Port: 5432},
		{Type: "udp", Address: "x.tenant-x.svc", Port: 53},
	}
	if diff := cmp.Diff(want, endpoints(svc, nil)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A LoadBalancer without an address yet is reached inside the cluster; with a hostname, there.
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	if got := endpoints(svc, nil)[0].Address; got != "x.tenant-x.svc" {
		t.Errorf("unassigned LoadBalancer: %s", got)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}
	if got := endpoints(svc, nil)[0].URL; got != "http://lb.example.com:8080/" {
		t.Errorf("LoadBalancer hostname: %s", got)
	}
}

// pod is a tenant pod in a phase, with its containers' states.
func pod(phase corev1.PodPhase, ready bool, containers ...corev1.ContainerStatus) *corev1.Pod {
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: containers}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func running(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func waiting(name, reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func TestObserve(t *testing.T) {
	tc := tenantCompute()
	deploy := func(replicas, available int32, mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: replicas, UpdatedReplicas: replicas, AvailableReplicas: available}}
		for _, m := range mutate {
			m(d)
		}
		return d
	}
	healthy := pod(corev1.PodRunning, true, running("web", true, 0), running("worker", true, 1))
	deleting := pod(corev1.PodRunning, false, running("web", false, 0), running("worker", false, 0))
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	for name, c := range map[string]struct {
		ns         *corev1.Namespace
		d          *appsv1.Deployment
		pods       []*corev1.Pod
		state      v1alpha1.ComputeState
		health     v1alpha1.HealthStatus
		message    string
		containers []v1alpha1.ContainerStatus
	}{
		"no deployment": {state: v1alpha1.ComputeStateUnknown, health: v1alpha1.HealthStatusUnknown, message: "Deployment tenant-shop/shop does not exist."},
		"namespace being deleted": {ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.Now())}}, d: deploy(1, 1),
			state: v1alpha1.ComputeStateStopping, health: v1alpha1.HealthStatusUnknown, message: "Namespace tenant-shop is being deleted."},
		"running": {d: deploy(2, 2), pods: []*corev1.Pod{healthy, healthy},
			state: v1alpha1.ComputeStateRunning, health: v1alpha1.HealthStatusHealthy, message: "2 of 2 replicas available.",
			containers: []v1alpha1.ContainerStatus{{Name: "web", State: "running", Ready: true}, {Name: "worker", State: "running", Ready: true, RestartCount: 2}}},
		"no pods yet": {d: deploy(1, 0),
			state: v1alpha1.ComputeStateStarting, health: v1alpha1.HealthStatusUnknown, message: "Rolling out: 0 of 1 replicas available.",
			containers: []v1alpha1.ContainerStatus{{Name: "web", State: "starting"}, {Name: "worker", State: "starting"}}},
		"unschedulable": {d: deploy(1, 0), pods: []*corev1.Pod{{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu."}}}}},
			state: v1alpha1.ComputeStateStarting, health: v1alpha1.HealthStatusUnknown, message: "Rolling out: 0 of 1 replicas available.",
			containers: []v1alpha1.ContainerStatus{
				{Name: "web", State: "starting", Message: "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."},
				{Name: "worker", State: "starting", Message: "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."}}},
		"rolling out a new spec": {d: deploy(1, 1, func(d *appsv1.Deployment) { d.Generation = 3 }), pods: []*corev1.Pod{healthy},
			state: v1alpha1.ComputeStateStarting, health: v1alpha1.HealthStatusHealthy, message: "Rolling out: 1 of 1 replicas available."},
		"surge pod of a rollout": {d: deploy(1, 1, func(d *appsv1.Deployment) { d.Status.Replicas = 2 }),
			pods:  []*corev1.Pod{healthy, pod(corev1.PodRunning, false, running("web", false, 0), running("worker", true, 0))},
			state: v1alpha1.ComputeStateStarting, health: v1alpha1.HealthStatusUnhealthy, message: "Rolling out: 1 of 1 replicas available."},
		"running but not ready": {d: deploy(1, 0), pods: []*corev1.Pod{pod(corev1.PodRunning, false, running("web", false, 0), running("worker", true, 0))},
			state: v1alpha1.ComputeStateStarting, health: v1alpha1.HealthStatusUnhealthy, message: "Rolling out: 0 of 1 replicas available.",
			containers: []v1alpha1.ContainerStatus{{Name: "web", State: "running"}, {Name: "worker", State: "running", Ready: true}}},
		"crash loop": {d: deploy(1, 0), pods: []*corev1.Pod{pod(corev1.PodRunning, false,
			waiting("web", "CrashLoopBackOff", "back-off 40s restarting failed container"), running("worker", true, 0))},
			state: v1alpha1.ComputeStateFailed, health: v1alpha1.HealthStatusUnhealthy, message: "Container web cannot start: CrashLoopBackOff.",
			containers: []v1alpha1.ContainerStatus{{Name: "web", State: "failed", Message: "CrashLoopBackOff: back-off 40s restarting failed container"},
				{Name: "worker", State: "running", Ready: true}}},
		"image pull": {d: deploy(1, 0), pods: []*corev1.Pod{pod(corev1.PodPending, false, waiting("web", "ImagePullBackOff", ""), waiting("worker", "ErrImagePull", ""))},
			state: v1alpha1.ComputeStateFailed, health: v1alpha1.HealthStatusUnknown, message: "Container web cannot start: ImagePullBackOff."},
		"progress deadline": {d: deploy(1, 0, func(d *appsv1.Deployment) {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
		}), state: v1alpha1.ComputeStateFailed, health: v1alpha1.HealthStatusUnknown, message: "The rollout made no progress within the Deployment's deadline."},
		"missing secret": {d: deploy(1, 0), pods: []*corev1.Pod{pod(corev1.PodPending, false,
			waiting("web", "CreateContainerConfigError", `secret "db" not found`), waiting("worker", "CreateContainerConfigError", `secret "db" not found`))},
			state: v1alpha1.ComputeStateStarting, health: v1alpha1.HealthStatusUnknown, message: "Waiting for Secret tenant-shop/db key password."},
		"missing secret key": {d: deploy(1, 0), pods: []*corev1.Pod{pod(corev1.PodPending, false,
			waiting("web", "CreateContainerConfigError", "couldn't find key password in Secret tenant-shop/db"), running("worker", false, 0))},
			state: v1alpha1.ComputeStateStarting, health: v1alpha1.HealthStatusUnknown, message: "Waiting for Secret tenant-shop/db key password."},
		"suspended": {d: deploy(0, 0), state: v1alpha1.ComputeStateStopped, health: v1alpha1.HealthStatusUnknown, message: "The tenant is suspended; nothing runs.",
			containers: []v1alpha1.ContainerStatus{{Name: "web", State: "stopped"}, {Name: "worker", State: "stopped"}}},
		"suspending": {d: deploy(0, 0), pods: []*corev1.Pod{deleting},
			state: v1alpha1.ComputeStateStopping, health: v1alpha1.HealthStatusUnknown, message: "The tenant is suspended; 1 pods are stopping."},
		"finished pods do not count": {d: deploy(0, 0), pods: []*corev1.Pod{pod(corev1.PodFailed, false)},
			state: v1alpha1.ComputeStateStopped, health: v1alpha1.HealthStatusUnknown, message: "The tenant is suspended; nothing runs."},
		"exited container": {d: deploy(1, 0), pods: []*corev1.Pod{pod(corev1.PodRunning, false,
			corev1.ContainerStatus{Name: "web", RestartCount: 3, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}},
			running("worker", true, 0))},
			state: v1alpha1.ComputeStateStarting, health: v1alpha1.HealthStatusUnhealthy, message: "Rolling out: 0 of 1 replicas available.",
			containers: []v1alpha1.ContainerStatus{{Name: "web", State: "failed", RestartCount: 3, Message: "OOMKilled (exit code 137)"},
				{Name: "worker", State: "running", Ready: true}}},
	} {
		t.Run(name, func(t *testing.T) {
			st := observe(tc, c.ns, c.d, c.pods)
			if st.State != c.state || st.Health != c.health || st.Message != c.message {
				t.Errorf("observe = %s/%s %q, want %s/%s %q", st.State, st.Health, st.Message, c.state, c.health, c.message)
			}
			if c.containers != nil {
				if diff := cmp.Diff(c.containers, st.Containers); diff != "" {
					t.Errorf("containers (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestNotifier(t *testing.T) {
	f := newFixture(t, nil)
	if got := len(f.provider.Informers()); got != 7 {
		t.Errorf("%d informers, want namespaces, deployments, services, pods, ingresses, roles and rolebindings", got)
	}
	labelled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tenantLabels(tenantCompute())}}
	for name, c := range map[string]struct {
		obj  interface{}
		want cache.ObjectName
		ok   bool
	}{
		"labelled":    {labelled, cache.NewObjectName("team-a", "shop"), true},
		"tombstone":   {cache.DeletedFinalStateUnknown{Key: "tenant-shop/x", Obj: labelled}, cache.NewObjectName("team-a", "shop"), true},
		"unlabelled":  {&corev1.Pod{}, cache.ObjectName{}, false},
		"not objects": {"tenant-shop/x", cache.ObjectName{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := f.provider.TenantFor(c.obj)
			if got != c.want || ok != c.ok {
				t.Errorf("TenantFor = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
		})
	}
	if NewProvider(kubefake.NewClientset(), nil, nil, nil).Informers() != nil {
		t.Error("a provider without a factory has informers")
	}
}

func TestDescriptor(t *testing.T) {
	d := NewProvider(kubefake.NewClientset(), nil, nil, nil).Descriptor()
	if !slices.Equal(d.SecretSources, []string{"kubernetes-secret"}) || !slices.Equal(d.HealthChecks, []string{"http", "tcp", "exec"}) || !d.PublicIP {
		t.Errorf("descriptor %+v", d)
	}
	schema := compileSchema(t, d.ConfigSchema)
	for doc, valid := range map[string]bool{
		string(d.ConfigDefaults):                  true,
		`{}`:                                      true,
		`{"cluster": "edge", "replicas": 100}`:    true,
		`{"replicas": 0}`:                         false,
		`{"replicas": 101}`:                       false,
		`{"replicas": 1.5}`:                       false,
		`{"cluster": ""}`:                         false,
		`{"serviceType": "LoadBalancer"}`:         false,
		`{"cluster": "edge", "unknown": "field"}`: false,
	} {
		if err := schema(doc); (err == nil) != valid {
			t.Errorf("%s: valid = %v, want %v (%v)", doc, err == nil, valid, err)
		}
	}
}

// compileSchema compiles a JSON Schema and returns a validator of JSON documents.
func compileSchema(t *testing.T, raw []byte) func(doc string) error {
	t.Helper()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("config.json", strings.NewReader(string(raw))); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("config.json")
	if err != nil {
		t.Fatal(err)
	}
	return func(doc string) error {
		var v interface{}
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			return err
		}
		return schema.Validate(v)
	}
}
