package tenantcompute

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
	computev1alpha1 "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

const kubernetesSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
    "cluster": {"type": "string"},
    "tier": {"type": "string", "enum": ["small", "large"]},
    "placement": {
      "type": "object",
      "required": ["zone"],
      "properties": {"zone": {"type": "string"}}
    }
  }
}`

func provider(name string, ready bool, mutate func(*computev1alpha1.ComputeProvider)) *computev1alpha1.ComputeProvider {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	p := &computev1alpha1.ComputeProvider{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: computev1alpha1.ComputeProviderStatus{
			SupportedSecretSources: []string{computev1alpha1.SecretSourceKubernetes},
			SupportedHealthChecks:  []string{computev1alpha1.HealthCheckHTTP, computev1alpha1.HealthCheckTCP, computev1alpha1.HealthCheckExec},
			PublicIP:               true,
			Conditions:             []metav1.Condition{{Type: computev1alpha1.ConditionProviderReady, Status: status, Reason: "Test"}},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func withSchema(schema string) func(*computev1alpha1.ComputeProvider) {
	return func(p *computev1alpha1.ComputeProvider) {
		p.Status.ConfigSchema = &common.RawObject{Raw: []byte(schema)}
	}
}

// newPlugin serves providers from an informer's indexer, as the server's informer would; the
// indexer takes later changes.
func newPlugin(t *testing.T, providers ...*computev1alpha1.ComputeProvider) (*Plugin, cache.Indexer) {
	t.Helper()
	f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	p := New()
	p.SetPlinthInformerFactory(f)
	p.SetAuthorizer(allowAll)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	indexer := f.Compute().V1alpha1().ComputeProviders().Informer().GetIndexer()
	for _, cp := range providers {
		if err := indexer.Add(cp); err != nil {
			t.Fatal(err)
		}
	}
	// The indexer is filled by hand: nothing lists, so the informer never counts as synced.
	p.SetReadyFunc(func() bool { return true })
	return p, indexer
}

func tenant(mutate func(*compute.TenantCompute)) *compute.TenantCompute {
	tc := &compute.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"},
		Spec: compute.TenantComputeSpec{
			TenantID:     "shop",
			ProviderType: "kubernetes",
			Containers: []compute.ContainerSpec{
				{Name: "web", Image: "nginx:1.27", HealthCheck: &compute.HealthCheckConfig{Type: "http", HTTPPath: "/", Port: 80, IntervalSeconds: 10, TimeoutSeconds: 2}},
				{Name: "worker", Image: "busybox:1.36"},
			},
			Resources: compute.ResourceRequirements{CPU: 250, Memory: 256},
			Secrets:   []compute.SecretReference{{Name: "db", Source: "kubernetes-secret", Key: "password"}},
		},
	}
	if mutate != nil {
		mutate(tc)
	}
	return tc
}

func config(raw string) *common.RawObject { return &common.RawObject{Raw: []byte(raw)} }

// allowAll lets every user use every Cluster.
var allowAll = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
})

func attrs(tc, old *compute.TenantCompute, op admission.Operation, subresource string) admission.Attributes {
	return attrsAs("alice", tc, old, op, subresource)
}

func attrsAs(userName string, tc, old *compute.TenantCompute, op admission.Operation, subresource string) admission.Attributes {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	return admission.NewAttributesRecord(tc, oldObj, compute.Kind("TenantCompute").WithVersion(""), tc.Namespace, tc.Name,
		compute.Resource("tenantcomputes").WithVersion(""), subresource, op, nil, false, &user.DefaultInfo{Name: userName})
}

// causes are the refusal's field paths and messages, "path: message" each; it fails the test
// unless err is 422 Invalid.
func causes(t *testing.T, err error) []string {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want 422 Invalid", err)
	}
	var out []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

// expectCauses fails the test unless got has as many causes as want, each starting with one
// of want's.
func expectCauses(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("causes %q, want %d like %q", got, len(want), want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("no cause %q in %q", w, got)
		}
	}
}

func TestRules(t *testing.T) {
	providers := []*computev1alpha1.ComputeProvider{
		provider("kubernetes", true, withSchema(kubernetesSchema)),
		provider("kubevirt", true, func(p *computev1alpha1.ComputeProvider) {
			p.Status.PublicIP = false
			p.Status.SupportedHealthChecks = []string{"tcp"}
			p.Status.SupportedSecretSources = nil
		}),
		provider("ecs", false, nil),
	}
	cases := []struct {
		name   string
		mutate func(*compute.TenantCompute)
		// want holds, per expected cause, its field path and a part of its message.
		want []string
	}{
		{name: "ready provider, no config", mutate: nil},
		{name: "valid config", mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderConfig = config(`{"replicas": 3, "cluster": "east", "tier": "small", "placement": {"zone": "a"}}`)
		}},
		{name: "provider without schema takes any config", mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderType = "kubevirt"
			tc.Spec.Containers[0].HealthCheck.Type = "tcp"
			tc.Spec.Secrets = nil
			tc.Spec.ProviderConfig = config(`{"anything": [1, 2]}`)
		}},
		{name: "unknown provider", mutate: func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "docker" },
			want: []string{`spec.providerType: Unsupported value: "docker": supported values: "kubernetes", "kubevirt"`}},
		{name: "provider not ready", mutate: func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "ecs" },
			want: []string{`spec.providerType: Unsupported value: "ecs": supported values: "kubernetes", "kubevirt"`}},
		{name: "wrong type", mutate: func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = config(`{"replicas": "three"}`) },
			want: []string{`spec.providerConfig.replicas: Invalid value: "string": must be of type integer`}},
		{name: "out of range", mutate: func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = config(`{"replicas": 11}`) },
			want: []string{`spec.providerConfig.replicas: Invalid value: 11: should be less than or equal to 10`}},
		{name: "not in enum", mutate: func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = config(`{"tier": "huge"}`) },
			want: []string{`spec.providerConfig.tier: Unsupported value: "huge": supported values: "small", "large"`}},
		{name: "nested required", mutate: func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = config(`{"placement": {}}`) },
			want: []string{`spec.providerConfig.placement.zone: Required value`}},
		{name: "unknown field refused by additionalProperties false", mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderConfig = config(`{"replicas": 2, "replica": 2}`)
		}, want: []string{`spec.providerConfig.replica: Forbidden`}},
		{name: "unsupported secret source", mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Secrets = append(tc.Spec.Secrets, compute.SecretReference{Name: "api", Source: "vault", Key: "token"})
		}, want: []string{`spec.secrets[1].source: Unsupported value: "vault": supported values: "kubernetes-secret"`}},
		{name: "provider with no secret sources", mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderType = "kubevirt"
			tc.Spec.Containers[0].HealthCheck.Type = "tcp"
		}, want: []string{`spec.secrets[0].source: Unsupported value: "kubernetes-secret"`}},
		{name: "unsupported health check", mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderType = "kubevirt"
			tc.Spec.Secrets = nil
		}, want: []string{`spec.containers[0].healthCheck.type: Unsupported value: "http": supported values: "tcp"`}},
		{name: "public IP where supported", mutate: func(tc *compute.TenantCompute) { tc.Spec.Networking.PublicIP = true }},
		{name: "public IP where not supported", mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderType = "kubevirt"
			tc.Spec.Containers[0].HealthCheck.Type = "tcp"
			tc.Spec.Secrets = nil
			tc.Spec.Networking.PublicIP = true
		}, want: []string{`spec.networking.publicIP: Forbidden: ComputeProvider "kubevirt" offers no public IPs`}},
		{name: "every problem at once", mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderConfig = config(`{"replicas": 0, "extra": true}`)
			tc.Spec.Secrets[0].Source = "vault"
		}, want: []string{
			`spec.providerConfig.extra: Forbidden`,
			`spec.providerConfig.replicas: Invalid value: 0: should be greater than or equal to 1`,
			`spec.secrets[0].source: Unsupported value: "vault"`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, providers...)
			err := p.Validate(context.Background(), attrs(tenant(tc.mutate), nil, admission.Create, ""), nil)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			expectCauses(t, causes(t, err), tc.want)
		})
	}
}

func TestNoReadyProvider(t *testing.T) {
	p, _ := newPlugin(t, provider("ecs", false, nil))
	got := causes(t, p.Validate(context.Background(), attrs(tenant(nil), nil, admission.Create, ""), nil))
	if len(got) != 1 || got[0] != `spec.providerType: Invalid value: "kubernetes": no ComputeProvider is Ready` {
		t.Errorf("causes %q", got)
	}
}

// A provider's schema that cannot be used refuses the tenant (nothing would pass it) without
// crashing on it: kube-openapi panics on $ref.
func TestUnusableSchema(t *testing.T) {
	for name, schema := range map[string]string{
		"not JSON":   `{"type": `,
		"ref":        `{"type": "object", "properties": {"a": {"$ref": "#/definitions/x"}}}`,
		"nested ref": `{"type": "object", "properties": {"a": {"type": "array", "items": {"allOf": [{"$ref": "#/x"}]}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := newPlugin(t, provider("kubernetes", true, withSchema(schema)))
			got := causes(t, p.Validate(context.Background(), attrs(tenant(func(tc *compute.TenantCompute) {
				tc.Spec.ProviderConfig = config(`{"a": [1]}`)
			}), nil, admission.Create, ""), nil))
			if len(got) != 1 || !strings.HasPrefix(got[0], `spec.providerConfig: Internal error: ComputeProvider "kubernetes" publishes a configSchema that cannot be used`) {
				t.Errorf("causes %q", got)
			}
		})
	}
}

// An absent providerConfig is an empty object: the schema's required fields are required.
func TestAbsentConfigMeetsRequired(t *testing.T) {
	p, _ := newPlugin(t, provider("kubernetes", true, withSchema(`{"type": "object", "required": ["cluster"], "properties": {"cluster": {"type": "string"}}}`)))
	got := causes(t, p.Validate(context.Background(), attrs(tenant(nil), nil, admission.Create, ""), nil))
	if len(got) != 1 || got[0] != "spec.providerConfig.cluster: Required value" {
		t.Errorf("causes %q", got)
	}
}

// The compiled schema follows the provider: a new schema is used as soon as it is published.
func TestSchemaChangeIsFollowed(t *testing.T) {
	p, indexer := newPlugin(t, provider("kubernetes", true, withSchema(`{"type": "object", "properties": {"replicas": {"type": "integer"}}}`)))
	tc := tenant(func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = config(`{"replicas": 20}`) })
	if err := p.Validate(context.Background(), attrs(tc, nil, admission.Create, ""), nil); err != nil {
		t.Fatalf("first schema: %v", err)
	}
	if err := indexer.Update(provider("kubernetes", true, withSchema(`{"type": "object", "properties": {"replicas": {"type": "integer", "maximum": 5}}}`))); err != nil {
		t.Fatal(err)
	}
	got := causes(t, p.Validate(context.Background(), attrs(tc, nil, admission.Create, ""), nil))
	if len(got) != 1 || !strings.HasPrefix(got[0], "spec.providerConfig.replicas: Invalid value: 20") {
		t.Errorf("causes %q", got)
	}
}

// An update is judged only in what it changes that the provider judges.
func TestUpdates(t *testing.T) {
	notReady := []*computev1alpha1.ComputeProvider{provider("kubernetes", false, nil), provider("kubevirt", true, nil)}
	// The provider is Ready but has since tightened its schema and dropped what the tenant
	// uses: exec health checks, the kubernetes-secret source and public IPs.
	narrowed := []*computev1alpha1.ComputeProvider{provider("kubernetes", true, func(p *computev1alpha1.ComputeProvider) {
		withSchema(`{"type": "object", "additionalProperties": false, "properties": {"replicas": {"type": "integer", "maximum": 5}, "tier": {"type": "string"}}}`)(p)
		p.Status.SupportedSecretSources = []string{"vault"}
		p.Status.SupportedHealthChecks = []string{computev1alpha1.HealthCheckTCP}
		p.Status.PublicIP = false
	}), provider("kubevirt", true, nil)}
	// old was accepted before the provider changed.
	old := tenant(func(tc *compute.TenantCompute) {
		tc.Spec.ProviderConfig = config(`{"replicas": 20}`)
		tc.Spec.Networking.PublicIP = true
	})
	cases := []struct {
		name        string
		providers   []*computev1alpha1.ComputeProvider
		subresource string
		// before changes old, mutate the update.
		before, mutate func(*compute.TenantCompute)
		// want holds, per expected cause, the start of "path: message"; none means the
		// update passes.
		want []string
	}{
		{name: "metadata only, provider not Ready", providers: notReady, mutate: func(tc *compute.TenantCompute) {
			tc.Finalizers = []string{computev1alpha1.Finalizer}
		}},
		{name: "status, provider not Ready", providers: notReady, subresource: "status", mutate: func(tc *compute.TenantCompute) {
			tc.Status.Phase = compute.PhaseReady
		}},
		{name: "suspend, provider not Ready", providers: notReady, mutate: func(tc *compute.TenantCompute) { tc.Spec.Suspended = true }},
		{name: "archive, provider not Ready", providers: notReady, mutate: func(tc *compute.TenantCompute) { tc.Spec.Archived = true }},
		{name: "image and resources, provider not Ready", providers: notReady, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Containers[0].Image = "nginx:1.28"
			tc.Spec.Resources.CPU = 500
		}},
		{name: "config change, provider not Ready", providers: notReady, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderConfig = config(`{"replicas": 2}`)
		}, want: []string{`spec.providerType: Unsupported value: "kubernetes": supported values: "kubevirt"`}},
		{name: "new secret, provider not Ready", providers: notReady, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Secrets = append(tc.Spec.Secrets, compute.SecretReference{Name: "api", Source: "kubernetes-secret", Key: "token"})
		}, want: []string{`spec.providerType: Unsupported value: "kubernetes"`}},
		{name: "suspend under a tightened schema", providers: narrowed, mutate: func(tc *compute.TenantCompute) { tc.Spec.Suspended = true }},
		{name: "archive under a tightened schema", providers: narrowed, mutate: func(tc *compute.TenantCompute) { tc.Spec.Archived = true }},
		{name: "the same config formatted otherwise", providers: narrowed, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderConfig = config("{ \"replicas\" : 20.0 }")
			tc.Spec.Suspended = true
		}},
		{name: "config change under a tightened schema", providers: narrowed, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.ProviderConfig = config(`{"replicas": 20, "tier": "small"}`)
		}, want: []string{"spec.providerConfig.replicas: Invalid value: 20: should be less than or equal to 5"}},
		{name: "image change keeps an http check the provider dropped", providers: narrowed, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Containers[0].Image = "nginx:1.28"
		}},
		{name: "a new health-check type is judged", providers: narrowed, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Containers[1].HealthCheck = &compute.HealthCheckConfig{Type: "exec", Command: []string{"true"}, IntervalSeconds: 10, TimeoutSeconds: 2}
		}, want: []string{`spec.containers[1].healthCheck.type: Unsupported value: "exec": supported values: "tcp"`}},
		{name: "a container's changed health-check type is judged", providers: narrowed, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Containers[0].HealthCheck.Type = "exec"
		}, want: []string{`spec.containers[0].healthCheck.type: Unsupported value: "exec"`}},
		{name: "a kept secret source the provider dropped", providers: narrowed, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Secrets[0].Key = "pass"
			tc.Spec.Secrets = append(tc.Spec.Secrets, compute.SecretReference{Name: "api", Source: "vault", Key: "token"})
		}},
		{name: "a new secret source is judged", providers: narrowed, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Secrets = append(tc.Spec.Secrets, compute.SecretReference{Name: "api", Source: "kubernetes-secret", Key: "token"})
		}, want: []string{`spec.secrets[1].source: Unsupported value: "kubernetes-secret": supported values: "vault"`}},
		{name: "a public IP kept", providers: narrowed, mutate: func(tc *compute.TenantCompute) {
			tc.Spec.Networking.DNS = &compute.DNSConfig{Hostname: "shop", Domain: "example.com"}
		}},
		{name: "a public IP turned on is judged", providers: narrowed,
			before: func(tc *compute.TenantCompute) { tc.Spec.Networking.PublicIP = false },
			mutate: func(tc *compute.TenantCompute) { tc.Spec.Networking.PublicIP = true },
			want:   []string{`spec.networking.publicIP: Forbidden: ComputeProvider "kubernetes" offers no public IPs`}},
		{name: "a public IP turned off", providers: narrowed, mutate: func(tc *compute.TenantCompute) { tc.Spec.Networking.PublicIP = false }},
		// providerType is immutable (validation refuses the change); were it changed, the
		// new provider would judge everything.
		{name: "a change of provider is judged in full", providers: narrowed,
			before: func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "kubevirt" },
			mutate: func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "kubernetes" },
			want: []string{
				"spec.providerConfig.replicas: Invalid value: 20",
				`spec.secrets[0].source: Unsupported value: "kubernetes-secret"`,
				`spec.containers[0].healthCheck.type: Unsupported value: "http"`,
				"spec.networking.publicIP: Forbidden",
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _ := newPlugin(t, c.providers...)
			before := old.DeepCopy()
			if c.before != nil {
				c.before(before)
			}
			updated := before.DeepCopy()
			c.mutate(updated)
			err := p.Validate(context.Background(), attrs(updated, before, admission.Update, c.subresource), nil)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			expectCauses(t, causes(t, err), c.want)
		})
	}
}

func TestOtherResourcesPass(t *testing.T) {
	p, _ := newPlugin(t)
	tc := tenant(nil)
	a := admission.NewAttributesRecord(tc, nil, compute.Kind("ComputeProvider").WithVersion(""), "", "x",
		compute.Resource("computeproviders").WithVersion(""), "", admission.Create, nil, false, &user.DefaultInfo{Name: "alice"})
	if err := p.Validate(context.Background(), a, nil); err != nil {
		t.Errorf("a ComputeProvider write was judged: %v", err)
	}
}

// The plugin reads the factory's informer and answers only once its cache has synced.
func TestReadsTheInformer(t *testing.T) {
	t.Run("synced", func(t *testing.T) {
		t.Parallel()
		client := fake.NewSimpleClientset(provider("kubernetes", true, withSchema(kubernetesSchema)))
		f := informers.NewSharedInformerFactory(client, 0)
		p := New()
		p.SetPlinthInformerFactory(f)
		stop := make(chan struct{})
		defer close(stop)
		f.Start(stop)
		f.WaitForCacheSync(stop)
		if err := p.Validate(context.Background(), attrs(tenant(nil), nil, admission.Create, ""), nil); err != nil {
			t.Errorf("refused: %v", err)
		}
		bad := tenant(func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = config(`{"replicas": 0}`) })
		causes(t, p.Validate(context.Background(), attrs(bad, nil, admission.Create, ""), nil))
	})
	t.Run("never synced", func(t *testing.T) {
		t.Parallel()
		f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
		p := New()
		p.SetPlinthInformerFactory(f)
		// Not started: admission waits its 10 s for readiness, then refuses.
		err := p.Validate(context.Background(), attrs(tenant(nil), nil, admission.Create, ""), nil)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready") {
			t.Errorf("before the provider cache syncs: %v, want 403 not yet ready", err)
		}
	})
}

func TestValidateInitialization(t *testing.T) {
	if err := New().ValidateInitialization(); err == nil {
		t.Error("a plugin without the informer factory passed initialization")
	}
	noAuthorizer := New()
	noAuthorizer.SetPlinthInformerFactory(informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0))
	if err := noAuthorizer.ValidateInitialization(); err == nil {
		t.Error("a plugin without an authorizer passed initialization")
	}
}
