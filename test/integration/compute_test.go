package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/common"
	compute "github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	computeclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/compute/v1alpha1"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// newTenant is a TenantCompute of the kubernetes provider with one web container.
func newTenant(name, tenantID string) *compute.TenantCompute {
	return &compute.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: compute.TenantComputeSpec{
			TenantID:     tenantID,
			ProviderType: "kubernetes",
			Containers: []compute.ContainerSpec{{Name: "web", Image: "nginx:1.27",
				Ports: []compute.PortMapping{{ContainerPort: 8080, HostPort: 80, Protocol: "tcp", Name: "http"}}}},
			Resources: compute.ResourceRequirements{CPU: 250, Memory: 256},
		},
	}
}

// TestTenantCompute follows tenants through the kubernetes provider on the local platform's
// own cluster (kwok nodes run the pods) and the kubevirt provider's governed VM: validation of
// every seed rule and of providerConfig at admission, a tenant becoming Ready with endpoints
// and per-container status, an image change, a reconcile request that finds nothing to do,
// suspend and resume, archive, delete, a failing provider's backoff, tenant IDs unique under
// concurrent creates, ResourceQuota, and who may see what.
//
// The parts share one platform, which takes long to start, and nothing else: each creates the
// tenants, quotas and clusters it needs under names of its own and removes what would be in
// another part's way, so a part that fails hides none of the others, and any part runs alone
// (-run 'TestTenantCompute/<part>').
func TestTenantCompute(t *testing.T) {
	e := startComputePlatform(t)
	for _, part := range []struct {
		name string
		run  func(t *testing.T, e *computePlatform)
	}{
		{"plinth-controller registers its providers; every user can read them, only admins write them", testProvidersRegistered},
		{"every seed rule and a bad providerConfig are refused with the field path; nothing is stored", testSeedRulesRefused},
		{"a tenant with two containers, ports, an http health check and a secret becomes Ready with endpoints", testTenantBecomesReady},
		{"alice, who edits team-a, may write the tenant's Secret in its namespace; bob may not", testTenantSecrets},
		{"an image change rolls the tenant and the UpdateResult lists it", testImageChange},
		{"an unchanged re-apply stores nothing; a reconcile request finds no_changes", testReconcileRequest},
		{"suspend stops the compute and keeps the object; resume starts it", testSuspendResume},
		{"bob, tenant of team-b, cannot see alice's tenant", testTenantsAreNamespaced},
		{"tenant IDs are unique across namespaces, also under 20 concurrent creates", testTenantIDsUnique},
		{"ResourceQuota limits a namespace's tenants: count, cpu and memory; status.used is kept current", testResourceQuota},
		{"placing compute on a Cluster needs the verb use on it: alice is refused, dana may", testPlacementNeedsUse},
		{"a create refused after admission charged the quota (duplicate tenant ID) is given back", testRefusedChargeGivenBack},
		{"a failing provider retries with backoff, then Failed; a spec change starts again", testFailingProvider},
		{"archive destroys the compute and keeps the object; delete removes the namespace and the object", testArchiveAndDelete},
		{"the kubevirt provider's tenant waits for approval, carol approves, it runs", testKubeVirtTenant},
		{"the README tour: alice applies the example with kubectl", testReadmeTour},
	} {
		t.Run(part.name, func(t *testing.T) { part.run(t, e) })
	}
}

// computePlatform is the local platform TestTenantCompute's parts share, with the clients of
// its users.
type computePlatform struct {
	p   *localplatform.Platform
	ctx context.Context
	// alice edits team-a, bob team-b; carol approves tickets; admin is a cluster admin.
	alice, bob   computeclient.ComputeV1alpha1Interface
	carol, admin *clientset.Clientset
	kube         kubernetes.Interface
}

// tenantNS is the namespace of alice's tenants.
const tenantNS = "team-a"

func startComputePlatform(t *testing.T) *computePlatform {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=2s", "--vm-poll-interval=500ms", "--compute-quota-resync-period=2s")
	})
	e := &computePlatform{p: p, ctx: context.Background()}
	e.alice, e.bob = e.clientFor(t, "alice").ComputeV1alpha1(), e.clientFor(t, "bob").ComputeV1alpha1()
	e.carol, e.admin = e.clientFor(t, "carol"), e.clientFor(t, "admin")
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	e.kube = kubernetes.NewForConfigOrDie(adminCfg)
	return e
}

func (e *computePlatform) clientFor(t *testing.T, user string) *clientset.Clientset {
	t.Helper()
	cfg, err := e.p.ConfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	return clientset.NewForConfigOrDie(cfg)
}

func (e *computePlatform) kubeFor(t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	cfg, err := e.p.ConfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// waitTenant waits until check holds for a tenant and returns it as it then was.
func (e *computePlatform) waitTenant(t *testing.T, c computeclient.ComputeV1alpha1Interface, namespace, name string, timeout time.Duration,
	check func(tc *compute.TenantCompute) bool) *compute.TenantCompute {
	t.Helper()
	var tc *compute.TenantCompute
	waitForCondition(t, timeout, func() (bool, string) {
		var err error
		tc, err = c.TenantComputes(namespace).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return check(tc), fmt.Sprintf("phase %s state %s health %s retries %d conditions %+v provision %+v update %+v",
			tc.Status.Phase, tc.Status.State, tc.Status.Health, tc.Status.Retries, tc.Status.Conditions, tc.Status.ProvisionResult, tc.Status.UpdateResult)
	})
	return tc
}

// phaseIs holds for a tenant in phase at its current generation.
func phaseIs(phase compute.TenantComputePhase) func(*compute.TenantCompute) bool {
	return func(tc *compute.TenantCompute) bool {
		return tc.Status.Phase == phase && tc.Status.ObservedGeneration == tc.Generation
	}
}

// change edits one of alice's tenants as she would.
func (e *computePlatform) change(t *testing.T, name string, mutate func(*compute.TenantCompute)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tc, err := e.alice.TenantComputes(tenantNS).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(tc)
		_, err = e.alice.TenantComputes(tenantNS).Update(e.ctx, tc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// create stores a tenant through c and deletes it when the part ends, if it is still there.
func (e *computePlatform) create(t *testing.T, c computeclient.ComputeV1alpha1Interface, namespace string, tc *compute.TenantCompute) {
	t.Helper()
	if _, err := c.TenantComputes(namespace).Create(e.ctx, tc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.deleteAtEnd(t, namespace, tc.Name)
}

// deleteAtEnd deletes tenants when the part ends, whether it passed or not.
func (e *computePlatform) deleteAtEnd(t *testing.T, namespace string, names ...string) {
	t.Cleanup(func() {
		for _, name := range names {
			_ = e.admin.ComputeV1alpha1().TenantComputes(namespace).Delete(e.ctx, name, metav1.DeleteOptions{})
		}
	})
}

// readyTenant is a new tenant of alice's, with one web container, once it is Ready.
func (e *computePlatform) readyTenant(t *testing.T, name string) *compute.TenantCompute {
	t.Helper()
	e.create(t, e.alice, tenantNS, newTenant(name, name))
	return e.waitTenant(t, e.alice, tenantNS, name, 90*time.Second, phaseIs(compute.PhaseReady))
}

// noTenantsIn waits until a namespace holds no tenant: those of parts before are deleted once
// their provider has destroyed their compute.
func (e *computePlatform) noTenantsIn(t *testing.T, namespace string) {
	t.Helper()
	waitForCondition(t, 90*time.Second, func() (bool, string) {
		list, err := e.admin.ComputeV1alpha1().TenantComputes(namespace).List(e.ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, fmt.Sprint(list, err)
	})
}

func testProvidersRegistered(t *testing.T, e *computePlatform) {
	for _, name := range []string{"kubernetes", "kubevirt"} {
		waitForCondition(t, 30*time.Second, func() (bool, string) {
			cp, err := e.bob.ComputeProviders().Get(e.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return meta.IsStatusConditionTrue(cp.Status.Conditions, compute.ConditionProviderReady) && cp.Status.ConfigSchema != nil, fmt.Sprintf("%+v", cp.Status)
		})
	}
	_, err := e.bob.ComputeProviders().Create(e.ctx, &compute.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
		Spec: compute.ComputeProviderSpec{Controller: "example.com/mine"}}, metav1.CreateOptions{})
	expectForbidden(t, err, "bob registers a provider")
	cp, err := e.admin.ComputeV1alpha1().ComputeProviders().Get(e.ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cp.Spec.Controller = "example.com/other"
	_, err = e.admin.ComputeV1alpha1().ComputeProviders().Update(e.ctx, cp, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.controller")
}

func testSeedRulesRefused(t *testing.T, e *computePlatform) {
	bad := map[string]struct {
		mutate func(*compute.TenantCompute)
		field  string
	}{
		"tenantID pattern":       {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "Shop_1" }, "spec.tenantID"},
		"tenantID empty":         {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "" }, "spec.tenantID"},
		"providerType empty":     {func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "" }, "spec.providerType"},
		"providerType unknown":   {func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "ecs" }, "spec.providerType"},
		"no containers":          {func(tc *compute.TenantCompute) { tc.Spec.Containers = nil }, "spec.containers"},
		"container name pattern": {func(tc *compute.TenantCompute) { tc.Spec.Containers[0].Name = "Web" }, "spec.containers[0].name"},
		"duplicate container": {func(tc *compute.TenantCompute) {
			tc.Spec.Containers = append(tc.Spec.Containers, tc.Spec.Containers[0])
		}, "spec.containers[1].name"},
		"image reference":  {func(tc *compute.TenantCompute) { tc.Spec.Containers[0].Image = "nginx:not a tag" }, "spec.containers[0].image"},
		"port 0":           {func(tc *compute.TenantCompute) { tc.Spec.Containers[0].Ports[0].ContainerPort = 0 }, "spec.containers[0].ports[0].containerPort"},
		"port 70000":       {func(tc *compute.TenantCompute) { tc.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, "spec.containers[0].ports[0].containerPort"},
		"protocol":         {func(tc *compute.TenantCompute) { tc.Spec.Containers[0].Ports[0].Protocol = "sctp" }, "spec.containers[0].ports[0].protocol"},
		"cpu below 128":    {func(tc *compute.TenantCompute) { tc.Spec.Resources.CPU = 100 }, "spec.resources.cpu"},
		"memory below 128": {func(tc *compute.TenantCompute) { tc.Spec.Resources.Memory = 64 }, "spec.resources.memory"},
		"health check type": {func(tc *compute.TenantCompute) {
			tc.Spec.Containers[0].HealthCheck = &compute.HealthCheckConfig{Type: "grpc", Port: 8080, IntervalSeconds: 10, TimeoutSeconds: 2}
		}, "spec.containers[0].healthCheck.type"},
		"interval below 5": {func(tc *compute.TenantCompute) {
			tc.Spec.Containers[0].HealthCheck = &compute.HealthCheckConfig{Type: "tcp", Port: 8080, IntervalSeconds: 4, TimeoutSeconds: 2}
		}, "spec.containers[0].healthCheck.intervalSeconds"},
		"timeout below 1": {func(tc *compute.TenantCompute) {
			tc.Spec.Containers[0].HealthCheck = &compute.HealthCheckConfig{Type: "tcp", Port: 8080, IntervalSeconds: 10}
		}, "spec.containers[0].healthCheck.timeoutSeconds"},
		"timeout not below interval": {func(tc *compute.TenantCompute) {
			tc.Spec.Containers[0].HealthCheck = &compute.HealthCheckConfig{Type: "tcp", Port: 8080, IntervalSeconds: 10, TimeoutSeconds: 10}
		}, "spec.containers[0].healthCheck.timeoutSeconds"},
		"providerConfig type": {func(tc *compute.TenantCompute) {
			tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"replicas":"two"}`)}
		}, "spec.providerConfig.replicas"},
		"providerConfig unknown": {func(tc *compute.TenantCompute) {
			tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"flavour":"large"}`)}
		}, "spec.providerConfig.flavour"},
		"unsupported secret source": {func(tc *compute.TenantCompute) {
			tc.Spec.Secrets = []compute.SecretReference{{Name: "db", Source: "aws-secrets-manager", Key: "password"}}
		}, "spec.secrets[0].source"},
	}
	e.deleteAtEnd(t, tenantNS, "bad")
	for name, c := range bad {
		tc := newTenant("bad", "bad")
		c.mutate(tc)
		_, err := e.alice.TenantComputes(tenantNS).Create(e.ctx, tc, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want 422", name, err)
			continue
		}
		t.Run(name, func(t *testing.T) { expectInvalid(t, err, c.field) })
	}
	_, err := e.alice.TenantComputes(tenantNS).Create(e.ctx, func() *compute.TenantCompute {
		tc := newTenant("bad", "bad")
		tc.Spec.ProviderType = "ecs"
		return tc
	}(), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "kubernetes") {
		t.Errorf("an unknown provider's refusal should name the providers that exist: %v", err)
	}
	if _, err := e.alice.TenantComputes(tenantNS).Get(e.ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused tenant was stored: %v, want NotFound", err)
	}
}

func testTenantBecomesReady(t *testing.T, e *computePlatform) {
	tc := newTenant("shop", "shop")
	tc.Spec.Containers[0].HealthCheck = &compute.HealthCheckConfig{Type: "http", HTTPPath: "/healthz", Port: 8080,
		IntervalSeconds: 10, TimeoutSeconds: 2, HealthyThreshold: 1, UnhealthyThreshold: 3}
	tc.Spec.Containers[0].Env = map[string]string{"MODE": "production"}
	tc.Spec.Containers = append(tc.Spec.Containers, compute.ContainerSpec{Name: "worker", Image: "busybox:1.36",
		Command: []string{"sh", "-c"}, Args: []string{"sleep 3600"}, Resources: &compute.ResourceRequirements{CPU: 128, Memory: 128}})
	tc.Spec.Secrets = []compute.SecretReference{{Name: "shop-db", Source: compute.SecretSourceKubernetes, Key: "password", EnvVar: "DB_PASSWORD"}}
	tc.Spec.Networking.DNS = &compute.DNSConfig{Hostname: "shop", Domain: "tenants.example.com"}
	// Labels a tenant sets go on its own objects, never on its namespace, whose labels
	// NetworkPolicy namespaceSelectors and policy exemptions go by.
	tc.Spec.Labels = map[string]string{"team": "payments", "pod-security.kubernetes.io/enforce": "privileged"}
	e.create(t, e.alice, tenantNS, tc)
	ready := e.waitTenant(t, e.alice, tenantNS, "shop", 90*time.Second, phaseIs(compute.PhaseReady))
	if ready.Status.State != compute.ComputeStateRunning || ready.Status.Health != compute.HealthStatusHealthy {
		t.Errorf("state %s health %s", ready.Status.State, ready.Status.Health)
	}
	if len(ready.Status.Containers) != 2 || !ready.Status.Containers[0].Ready || !ready.Status.Containers[1].Ready {
		t.Errorf("containers %+v", ready.Status.Containers)
	}
	if pr := ready.Status.ProvisionResult; pr == nil || pr.Status != compute.ProvisionStatusSuccess || len(pr.Endpoints) == 0 || pr.ProvisionedAt == nil {
		t.Errorf("provision result %+v", pr)
	} else {
		urls := fmt.Sprint(pr.Endpoints)
		if !strings.Contains(urls, "shop.tenants.example.com") || !strings.Contains(urls, ".tenant-shop.svc") {
			t.Errorf("endpoints %s lack the ingress host or the service", urls)
		}
	}
	for _, c := range []string{compute.ConditionProvisioned, compute.ConditionHealthy, compute.ConditionReady} {
		if !meta.IsStatusConditionTrue(ready.Status.Conditions, c) {
			t.Errorf("condition %s not True: %+v", c, ready.Status.Conditions)
		}
	}
	d, err := e.kube.AppsV1().Deployments("tenant-shop").Get(e.ctx, "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web := d.Spec.Template.Spec.Containers[0]
	if web.ReadinessProbe == nil || web.ReadinessProbe.HTTPGet == nil || web.ReadinessProbe.HTTPGet.Path != "/healthz" || web.ReadinessProbe.PeriodSeconds != 10 {
		t.Errorf("web probe %+v", web.ReadinessProbe)
	}
	var secretRef bool
	for _, env := range web.Env {
		if env.Name == "DB_PASSWORD" {
			secretRef = env.Value == "" && env.ValueFrom != nil && env.ValueFrom.SecretKeyRef != nil && env.ValueFrom.SecretKeyRef.Name == "shop-db"
		}
	}
	if !secretRef {
		t.Errorf("DB_PASSWORD is not a secretKeyRef: %+v", web.Env)
	}
	if web.Resources.Requests.Cpu().Cmp(resource.MustParse("250m")) != 0 && d.Spec.Template.Spec.Containers[1].Resources.Limits.Cpu().Cmp(resource.MustParse("128m")) != 0 {
		t.Errorf("resources %+v / %+v", web.Resources, d.Spec.Template.Spec.Containers[1].Resources)
	}
	if _, err := e.kube.NetworkingV1().Ingresses("tenant-shop").Get(e.ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("ingress: %v", err)
	}
	nsObj, err := e.kube.CoreV1().Namespaces().Get(e.ctx, "tenant-shop", metav1.GetOptions{})
	if err != nil || nsObj.Labels[compute.LabelTenantID] != "shop" || nsObj.Labels["team"] != "" || nsObj.Labels["pod-security.kubernetes.io/enforce"] != "" {
		t.Errorf("tenant namespace %v %v, want the provider's labels and none of the tenant's", nsObj, err)
	}
	if d.Labels["team"] != "payments" {
		t.Errorf("deployment labels %v, want the tenant's", d.Labels)
	}
	out, err := framework.Kubectl(e.p.Kubeconfig("alice"), "get", "tenantcomputes", "-n", tenantNS, "shop")
	if err != nil {
		t.Fatal(err)
	}
	expectTable(t, out, []string{"NAME", "TENANT", "PROVIDER", "PHASE", "STATE", "HEALTH", "ENDPOINT", "AGE"}, []string{"shop", "shop", "kubernetes", "Ready", "running", "healthy"})
}

func testTenantSecrets(t *testing.T, e *computePlatform) {
	e.readyTenant(t, "vault")
	aliceKube, bobKube := e.kubeFor(t, "alice"), e.kubeFor(t, "bob")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vault-db"}, StringData: map[string]string{"password": "s3cret"}}
	// The provider granted it before the tenant was Ready; kube-apiserver's RBAC cache may
	// see the RoleBinding a moment later.
	waitForCondition(t, 10*time.Second, func() (bool, string) {
		_, err := aliceKube.CoreV1().Secrets("tenant-vault").Create(e.ctx, secret, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	b, err := e.kube.RbacV1().RoleBindings("tenant-vault").Get(e.ctx, "plinth-tenant-secrets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(b.Subjects), "{User rbac.authorization.k8s.io alice }") || strings.Contains(fmt.Sprint(b.Subjects), "bob") {
		t.Errorf("the secret writers of tenant-vault: %+v", b.Subjects)
	}
	_, err = bobKube.CoreV1().Secrets("tenant-vault").Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bobs"}}, metav1.CreateOptions{})
	expectForbidden(t, err, "bob creates a Secret in tenant-vault")
	_, err = bobKube.CoreV1().Secrets("tenant-vault").Get(e.ctx, "vault-db", metav1.GetOptions{})
	expectForbidden(t, err, "bob reads alice's Secret")
	// Secrets only: the tenant's Deployment stays the provider's.
	err = aliceKube.AppsV1().Deployments("tenant-vault").Delete(e.ctx, "vault", metav1.DeleteOptions{})
	expectForbidden(t, err, "alice deletes the tenant's Deployment")
}

func testImageChange(t *testing.T, e *computePlatform) {
	e.readyTenant(t, "roll")
	e.change(t, "roll", func(tc *compute.TenantCompute) { tc.Spec.Containers[0].Image = "nginx:1.28" })
	tc := e.waitTenant(t, e.alice, tenantNS, "roll", 60*time.Second, func(tc *compute.TenantCompute) bool {
		return phaseIs(compute.PhaseReady)(tc) && tc.Status.UpdateResult != nil && tc.Status.UpdateResult.Status == compute.UpdateStatusSuccess
	})
	if changes := strings.Join(tc.Status.UpdateResult.Changes, "; "); !strings.Contains(changes, "nginx:1.28") {
		t.Errorf("changes %q do not name the new image", changes)
	}
	d, err := e.kube.AppsV1().Deployments("tenant-roll").Get(e.ctx, "roll", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
		t.Errorf("deployment image: %v", err)
	}
}

func testReconcileRequest(t *testing.T, e *computePlatform) {
	e.readyTenant(t, "resync")
	// Read again on a conflict: the controller may still write the status of the new tenant.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		before, err := e.alice.TenantComputes(tenantNS).Get(e.ctx, "resync", metav1.GetOptions{})
		if err != nil {
			return err
		}
		after, err := e.alice.TenantComputes(tenantNS).Update(e.ctx, before.DeepCopy(), metav1.UpdateOptions{})
		if err == nil && (after.Generation != before.Generation || after.ResourceVersion != before.ResourceVersion) {
			t.Errorf("re-apply moved the object from generation %d, resourceVersion %s to %d, %s",
				before.Generation, before.ResourceVersion, after.Generation, after.ResourceVersion)
		}
		return err
	})
	if err != nil {
		t.Errorf("re-apply: %v", err)
	}
	out, err := framework.Kubectl(e.p.Kubeconfig("alice"), "annotate", "--overwrite", "-n", tenantNS, "tenantcompute/resync", compute.ReconcileRequestedAnnotation+"=1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tc := e.waitTenant(t, e.alice, tenantNS, "resync", 30*time.Second, func(tc *compute.TenantCompute) bool { return tc.Status.LastHandledReconcileAt == "1" })
	if tc.Status.UpdateResult == nil || tc.Status.UpdateResult.Status != compute.UpdateStatusNoChanges || tc.Status.Phase != compute.PhaseReady {
		t.Errorf("after a reconcile request: phase %s update %+v", tc.Status.Phase, tc.Status.UpdateResult)
	}
}

func testSuspendResume(t *testing.T, e *computePlatform) {
	e.readyTenant(t, "pause")
	e.change(t, "pause", func(tc *compute.TenantCompute) { tc.Spec.Suspended = true })
	tc := e.waitTenant(t, e.alice, tenantNS, "pause", 60*time.Second, phaseIs(compute.PhaseStopped))
	if tc.Status.State != compute.ComputeStateStopped {
		t.Errorf("suspended state %s", tc.Status.State)
	}
	if d, err := e.kube.AppsV1().Deployments("tenant-pause").Get(e.ctx, "pause", metav1.GetOptions{}); err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
		t.Errorf("suspended deployment: %v", err)
	}
	e.change(t, "pause", func(tc *compute.TenantCompute) { tc.Spec.Suspended = false })
	e.waitTenant(t, e.alice, tenantNS, "pause", 60*time.Second, func(tc *compute.TenantCompute) bool {
		return phaseIs(compute.PhaseReady)(tc) && tc.Status.State == compute.ComputeStateRunning
	})
}

func testTenantsAreNamespaced(t *testing.T, e *computePlatform) {
	e.create(t, e.alice, tenantNS, newTenant("private", "private"))
	_, err := e.bob.TenantComputes(tenantNS).Get(e.ctx, "private", metav1.GetOptions{})
	expectForbidden(t, err, "bob gets team-a's tenant")
	_, err = e.bob.TenantComputes(tenantNS).List(e.ctx, metav1.ListOptions{})
	expectForbidden(t, err, "bob lists team-a's tenants")
	if _, err := e.bob.TenantComputes("team-b").List(e.ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("bob lists his own namespace: %v", err)
	}
}

func testTenantIDsUnique(t *testing.T, e *computePlatform) {
	e.create(t, e.alice, tenantNS, newTenant("holder", "taken"))
	e.deleteAtEnd(t, "team-b", "taker")
	_, err := e.bob.TenantComputes("team-b").Create(e.ctx, newTenant("taker", "taken"), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
		t.Errorf("bob takes alice's tenant ID: %v, want 409", err)
	}
	racers := make([]string, 20)
	for i := range racers {
		racers[i] = fmt.Sprintf("race-%02d", i)
	}
	e.deleteAtEnd(t, "team-b", append(racers, "race-again")...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, refused := 0, 0
	for i, name := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.admin.ComputeV1alpha1().TenantComputes("team-b").Create(e.ctx, newTenant(name, "race"), metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
				refused++
			default:
				t.Errorf("create %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || refused != 19 {
		t.Errorf("20 concurrent creates of one tenant ID: %d won, %d refused with 409", won, refused)
	}
	list, err := e.admin.ComputeV1alpha1().TenantComputes("team-b").List(e.ctx, metav1.ListOptions{FieldSelector: "spec.tenantID=race"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("stored with tenant ID race: %v %v", list, err)
	}
	// Deleting the holder frees the ID.
	if err := e.admin.ComputeV1alpha1().TenantComputes("team-b").Delete(e.ctx, list.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, 60*time.Second, func() (bool, string) {
		_, err := e.admin.ComputeV1alpha1().TenantComputes("team-b").Create(e.ctx, newTenant("race-again", "race"), metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// quotaOf creates a ResourceQuota in team-b, deleted when the part ends, and waits until the
// compute quota controller has counted it.
func (e *computePlatform) quotaOf(t *testing.T, name string, hard corev1.ResourceList) {
	t.Helper()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if _, err := e.kube.CoreV1().ResourceQuotas("team-b").Create(e.ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.kube.CoreV1().ResourceQuotas("team-b").Delete(e.ctx, name, metav1.DeleteOptions{}) })
	// The quota plugin refuses writes until the quota's status is computed.
	waitForCondition(t, 60*time.Second, func() (bool, string) {
		q, err := e.kube.CoreV1().ResourceQuotas("team-b").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for r := range hard {
			if _, counted := q.Status.Used[r]; !counted {
				return false, fmt.Sprint(q.Status)
			}
		}
		return len(q.Status.Hard) == len(hard), fmt.Sprint(q.Status)
	})
}

// cpuUsed is the compute.plinth.dev/cpu a quota of team-b says is used.
func (e *computePlatform) cpuUsed(t *testing.T, quota string) (int64, string) {
	t.Helper()
	q, err := e.kube.CoreV1().ResourceQuotas("team-b").Get(e.ctx, quota, metav1.GetOptions{})
	if err != nil {
		return -1, err.Error()
	}
	return q.Status.Used.Name("compute.plinth.dev/cpu", resource.DecimalSI).Value(), fmt.Sprint(q.Status.Used)
}

func testResourceQuota(t *testing.T, e *computePlatform) {
	const qns = "team-b"
	e.noTenantsIn(t, qns)
	e.quotaOf(t, "compute", corev1.ResourceList{
		"count/tenantcomputes.compute.plinth.dev": resource.MustParse("2"),
		"compute.plinth.dev/cpu":                  resource.MustParse("1000"),
		"compute.plinth.dev/memory":               resource.MustParse("1024"),
	})
	big := newTenant("big", "big")
	big.Spec.Resources.CPU = 600
	e.create(t, e.bob, qns, big)
	second := newTenant("second", "second")
	second.Spec.Resources.CPU = 600
	e.deleteAtEnd(t, qns, "second")
	_, err := e.bob.TenantComputes(qns).Create(e.ctx, second, metav1.CreateOptions{})
	if msg := expectForbidden(t, err, "a create over the cpu quota"); !strings.Contains(msg, "exceeded quota") || !strings.Contains(msg, "compute.plinth.dev/cpu") {
		t.Errorf("refusal %q", msg)
	}
	if used, status := e.cpuUsed(t, "compute"); used != 600 {
		t.Errorf("quota used after one tenant: %s", status)
	}
	// Raising a tenant's cpu above the quota is refused too. The controller is still writing
	// the new tenant (finalizer, status), so an update from a stale read can meet a 409
	// first: read again until the quota answers.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := e.bob.TenantComputes(qns).Get(e.ctx, "big", metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Spec.Resources.CPU = 1200
		_, err = e.bob.TenantComputes(qns).Update(e.ctx, got, metav1.UpdateOptions{})
		return err
	})
	expectForbidden(t, err, "an update over the cpu quota")
	// Deleting frees the usage.
	if err := e.bob.TenantComputes(qns).Delete(e.ctx, "big", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, 90*time.Second, func() (bool, string) {
		used, status := e.cpuUsed(t, "compute")
		return used == 0, status
	})
	if _, err := e.bob.TenantComputes(qns).Create(e.ctx, second, metav1.CreateOptions{}); err != nil {
		t.Errorf("a create within the freed quota: %v", err)
	}
}

func testPlacementNeedsUse(t *testing.T, e *computePlatform) {
	onLocal := func(tc *compute.TenantCompute) *compute.TenantCompute {
		tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"cluster":"` + localplatform.LocalCluster + `"}`)}
		return tc
	}
	e.deleteAtEnd(t, tenantNS, "placed")
	const want = `spec.providerConfig.cluster: User alice may not place compute on Cluster local: the verb use on clusters.platform.plinth.dev is required.`
	_, err := e.alice.TenantComputes(tenantNS).Create(e.ctx, onLocal(newTenant("placed", "placed")), metav1.CreateOptions{})
	if msg := expectForbidden(t, err, "alice creates a TenantCompute on Cluster local"); msg != "" && !strings.Contains(msg, want) {
		t.Errorf("refusal %q lacks %q", msg, want)
	}
	if _, err := e.alice.TenantComputes(tenantNS).Get(e.ctx, "placed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the refusal: %v, want NotFound", err)
	}
	e.create(t, e.alice, tenantNS, newTenant("homebound", "homebound"))
	_, err = e.alice.TenantComputes(tenantNS).Patch(e.ctx, "homebound", types.MergePatchType, []byte(`{"spec":{"providerConfig":{"cluster":"local"}}}`),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	expectForbidden(t, err, "alice moves her tenant to Cluster local")
	dana := e.clientFor(t, "dana").ComputeV1alpha1()
	if _, err := dana.TenantComputes(tenantNS).Create(e.ctx, onLocal(newTenant("placed", "placed")), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("dana, a platform admin, creates a TenantCompute on Cluster local: %v", err)
	}
}

func testRefusedChargeGivenBack(t *testing.T, e *computePlatform) {
	const qns = "team-b"
	// alice's tenant holds ID kept: bob's create passes admission, which charges the quota,
	// and is refused when stored.
	e.create(t, e.alice, tenantNS, newTenant("keeper", "kept"))
	e.noTenantsIn(t, qns)
	e.quotaOf(t, "compute-charges", corev1.ResourceList{"compute.plinth.dev/cpu": resource.MustParse("4000")})
	before, _ := e.cpuUsed(t, "compute-charges")
	dup := newTenant("dup", "kept")
	dup.Spec.Resources.CPU = 750
	e.deleteAtEnd(t, qns, "dup")
	_, err := e.bob.TenantComputes(qns).Create(e.ctx, dup, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
		t.Fatalf("a duplicate tenant ID: %v, want 409", err)
	}
	if used, _ := e.cpuUsed(t, "compute-charges"); used >= 0 {
		t.Logf("compute.plinth.dev/cpu used right after the refusal: %d (before: %d)", used, before)
	}
	waitForCondition(t, 10*time.Second, func() (bool, string) {
		used, status := e.cpuUsed(t, "compute-charges")
		return used == before, fmt.Sprintf("used %s, want %d", status, before)
	})
}

func testFailingProvider(t *testing.T, e *computePlatform) {
	// A registered cluster nobody answers on: every provider call fails, none permanently.
	kubeconfig, err := e.p.TargetKubeconfig("https://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.PlatformV1alpha1().Clusters().Create(e.ctx, &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"},
		Spec: platform.ClusterSpec{Kubeconfig: string(kubeconfig)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tc := newTenant("lost", "lost")
	tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"cluster":"nowhere"}`)}
	// Placed by a cluster admin: tenants may not use Clusters by default.
	e.create(t, e.admin.ComputeV1alpha1(), tenantNS, tc)
	var retryTimes []time.Time
	failed := e.waitTenant(t, e.alice, tenantNS, "lost", 120*time.Second, func(tc *compute.TenantCompute) bool {
		if tc.Status.NextRetryTime != nil && (len(retryTimes) == 0 || !retryTimes[len(retryTimes)-1].Equal(tc.Status.NextRetryTime.Time)) {
			retryTimes = append(retryTimes, tc.Status.NextRetryTime.Time)
		}
		return tc.Status.Phase == compute.PhaseFailed
	})
	if failed.Status.Retries != 5 || failed.Status.ProvisionResult == nil || failed.Status.ProvisionResult.Status != compute.ProvisionStatusFailed {
		t.Errorf("failed after %d retries, provision %+v", failed.Status.Retries, failed.Status.ProvisionResult)
	}
	if len(retryTimes) < 3 {
		t.Errorf("saw %d retry times, want the backoff to show", len(retryTimes))
	}
	e.change(t, "lost", func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = nil })
	e.waitTenant(t, e.alice, tenantNS, "lost", 90*time.Second, phaseIs(compute.PhaseReady))
}

func testArchiveAndDelete(t *testing.T, e *computePlatform) {
	e.readyTenant(t, "attic")
	e.change(t, "attic", func(tc *compute.TenantCompute) { tc.Spec.Archived = true })
	e.waitTenant(t, e.alice, tenantNS, "attic", 60*time.Second, phaseIs(compute.PhaseArchived))
	waitForCondition(t, 60*time.Second, func() (bool, string) {
		_, err := e.kube.CoreV1().Namespaces().Get(e.ctx, "tenant-attic", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	e.change(t, "attic", func(tc *compute.TenantCompute) { tc.Spec.Archived = false })
	e.waitTenant(t, e.alice, tenantNS, "attic", 90*time.Second, phaseIs(compute.PhaseReady))
	if err := e.alice.TenantComputes(tenantNS).Delete(e.ctx, "attic", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, 90*time.Second, func() (bool, string) {
		_, err := e.alice.TenantComputes(tenantNS).Get(e.ctx, "attic", metav1.GetOptions{})
		_, nsErr := e.kube.CoreV1().Namespaces().Get(e.ctx, "tenant-attic", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(nsErr), fmt.Sprint(err, nsErr)
	})
}

func testKubeVirtTenant(t *testing.T, e *computePlatform) {
	e.create(t, e.alice, tenantNS, &compute.TenantCompute{ObjectMeta: metav1.ObjectMeta{Name: "vmshop"}, Spec: compute.TenantComputeSpec{
		TenantID: "vmshop", ProviderType: "kubevirt",
		Containers: []compute.ContainerSpec{{Name: "web", Image: "nginx:1.27", Ports: []compute.PortMapping{{ContainerPort: 80, HostPort: 80, Protocol: "tcp", Name: "http"}}}},
		Resources:  compute.ResourceRequirements{CPU: 1000, Memory: 1024},
	}})
	waiting := e.waitTenant(t, e.alice, tenantNS, "vmshop", 60*time.Second, func(tc *compute.TenantCompute) bool {
		return tc.Status.State == compute.ComputeStateStarting && strings.Contains(fmt.Sprint(tc.Status.Conditions), "tkt-")
	})
	var ticket string
	waitForCondition(t, 30*time.Second, func() (bool, string) {
		vms, err := e.carol.GovernanceV1alpha1().ManagedVMs(tenantNS).List(e.ctx, metav1.ListOptions{LabelSelector: compute.LabelTenantID + "=vmshop"})
		if err != nil || len(vms.Items) != 1 || vms.Items[0].Status.PendingApproval == nil {
			return false, fmt.Sprint(vms, err)
		}
		ticket = vms.Items[0].Status.PendingApproval.Ticket
		return true, ""
	})
	if !strings.Contains(fmt.Sprint(waiting.Status.Conditions), ticket) {
		t.Errorf("the waiting tenant's status does not name ticket %s: %+v", ticket, waiting.Status.Conditions)
	}
	// alice created the TenantCompute: the ticket is hers, submitted by plinth-controller.
	if tk, err := e.carol.GovernanceV1alpha1().ApprovalTickets(tenantNS).Get(e.ctx, ticket, metav1.GetOptions{}); err != nil ||
		tk.Spec.Requester != "alice" || tk.Spec.SubmittedBy != localplatform.ControllerUser {
		t.Errorf("the tenant's ticket: %+v %v, want requester alice submitted by plinth-controller", tk, err)
	}
	if _, err := e.carol.GovernanceV1alpha1().ApprovalTickets(tenantNS).Decide(e.ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove, Cluster: "local", StorageClass: "standard"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := e.waitTenant(t, e.alice, tenantNS, "vmshop", 90*time.Second, phaseIs(compute.PhaseReady))
	if ready.Status.State != compute.ComputeStateRunning {
		t.Errorf("approved VM tenant state %s", ready.Status.State)
	}
}

func testReadmeTour(t *testing.T, e *computePlatform) {
	e.deleteAtEnd(t, tenantNS, "blog")
	alice := e.p.Kubeconfig("alice")
	out, err := framework.Kubectl(alice, "apply", "-n", tenantNS, "-f", framework.RepoRoot()+"/artifacts/examples/tenantcompute.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = framework.Kubectl(alice, "wait", "-n", tenantNS, "tenantcompute/blog", "--for=jsonpath={.status.phase}=Ready", "--timeout=90s")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = framework.Kubectl(alice, "get", "tcomp", "-n", tenantNS, "blog")
	if err != nil || !strings.Contains(out, "http://blog.tenant-blog.svc") {
		t.Errorf("kubectl get tcomp: %v\n%s", err, out)
	}
	out, err = framework.Kubectl(alice, "patch", "tcomp", "blog", "-n", tenantNS, "--type", "merge", "-p", `{"spec":{"resources":{"cpu":64}}}`)
	if err == nil || !strings.Contains(out, "spec.resources.cpu: Invalid value: 64: must be at least 128 millicores") {
		t.Errorf("the tour's bad patch: %v\n%s", err, out)
	}
	example, err := os.ReadFile(framework.RepoRoot() + "/artifacts/examples/tenantcompute.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err = framework.KubectlStdin(alice, strings.Replace(string(example), "name: blog", "name: blog-copy", 1), "apply", "-n", tenantNS, "-f", "-")
	if err == nil || !strings.Contains(out, "AlreadyExists") || !strings.Contains(out, `spec.tenantID: Duplicate value: "blog"`) {
		t.Errorf("the tour's copy with the same tenant ID: %v\n%s", err, out)
	}
	out, err = framework.Kubectl(alice, "get", "computeproviders")
	if err != nil || !strings.Contains(out, "kubernetes") || !strings.Contains(out, "kubevirt") {
		t.Errorf("kubectl get computeproviders: %v\n%s", err, out)
	}
}
