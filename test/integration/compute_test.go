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
func TestTenantCompute(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) {
		c.ControllerArgs = append(c.ControllerArgs, "--cluster-probe-interval=2s", "--vm-poll-interval=500ms", "--compute-quota-resync-period=2s")
	})
	ctx := context.Background()
	clientFor := func(user string) *clientset.Clientset {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg)
	}
	alice, bob, carol, admin := clientFor("alice").ComputeV1alpha1(), clientFor("bob").ComputeV1alpha1(), clientFor("carol"), clientFor("admin")
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(adminCfg)

	waitTenant := func(c computeclient.ComputeV1alpha1Interface, ns, name string, timeout time.Duration, check func(tc *compute.TenantCompute) bool) *compute.TenantCompute {
		t.Helper()
		var tc *compute.TenantCompute
		waitForCondition(t, timeout, func() (bool, string) {
			var err error
			tc, err = c.TenantComputes(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return check(tc), fmt.Sprintf("phase %s state %s health %s retries %d conditions %+v provision %+v update %+v",
				tc.Status.Phase, tc.Status.State, tc.Status.Health, tc.Status.Retries, tc.Status.Conditions, tc.Status.ProvisionResult, tc.Status.UpdateResult)
		})
		return tc
	}
	phaseIs := func(phase compute.TenantComputePhase) func(*compute.TenantCompute) bool {
		return func(tc *compute.TenantCompute) bool {
			return tc.Status.Phase == phase && tc.Status.ObservedGeneration == tc.Generation
		}
	}
	change := func(ns, name string, mutate func(*compute.TenantCompute)) {
		t.Helper()
		tc, err := alice.TenantComputes(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mutate(tc)
		if _, err := alice.TenantComputes(ns).Update(ctx, tc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("plinth-controller registers its providers; every user can read them, only admins write them", func(t *testing.T) {
		for _, name := range []string{"kubernetes", "kubevirt"} {
			waitForCondition(t, 30*time.Second, func() (bool, string) {
				cp, err := bob.ComputeProviders().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return meta.IsStatusConditionTrue(cp.Status.Conditions, compute.ConditionProviderReady) && cp.Status.ConfigSchema != nil, fmt.Sprintf("%+v", cp.Status)
			})
		}
		_, err := bob.ComputeProviders().Create(ctx, &compute.ComputeProvider{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
			Spec: compute.ComputeProviderSpec{Controller: "example.com/mine"}}, metav1.CreateOptions{})
		expectForbidden(t, err, "bob registers a provider")
		cp, err := admin.ComputeV1alpha1().ComputeProviders().Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cp.Spec.Controller = "example.com/other"
		_, err = admin.ComputeV1alpha1().ComputeProviders().Update(ctx, cp, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.controller")
	})

	t.Run("every seed rule and a bad providerConfig are refused with the field path; nothing is stored", func(t *testing.T) {
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
		for name, c := range bad {
			tc := newTenant("bad", "bad")
			c.mutate(tc)
			_, err := alice.TenantComputes("team-a").Create(ctx, tc, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Errorf("%s: %v, want 422", name, err)
				continue
			}
			t.Run(name, func(t *testing.T) { expectInvalid(t, err, c.field) })
		}
		_, err := alice.TenantComputes("team-a").Create(ctx, func() *compute.TenantCompute {
			tc := newTenant("bad", "bad")
			tc.Spec.ProviderType = "ecs"
			return tc
		}(), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "kubernetes") {
			t.Errorf("an unknown provider's refusal should name the providers that exist: %v", err)
		}
		list, err := alice.TenantComputes("team-a").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("refused tenants were stored: %v %v", list, err)
		}
	})

	const ns = "team-a"
	t.Run("a tenant with two containers, ports, an http health check and a secret becomes Ready with endpoints", func(t *testing.T) {
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
		if _, err := alice.TenantComputes(ns).Create(ctx, tc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ready := waitTenant(alice, ns, "shop", 90*time.Second, phaseIs(compute.PhaseReady))
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
		d, err := kube.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		web := d.Spec.Template.Spec.Containers[0]
		if web.ReadinessProbe == nil || web.ReadinessProbe.HTTPGet == nil || web.ReadinessProbe.HTTPGet.Path != "/healthz" || web.ReadinessProbe.PeriodSeconds != 10 {
			t.Errorf("web probe %+v", web.ReadinessProbe)
		}
		var secretRef bool
		for _, e := range web.Env {
			if e.Name == "DB_PASSWORD" {
				secretRef = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "shop-db"
			}
		}
		if !secretRef {
			t.Errorf("DB_PASSWORD is not a secretKeyRef: %+v", web.Env)
		}
		if web.Resources.Requests.Cpu().Cmp(resource.MustParse("250m")) != 0 && d.Spec.Template.Spec.Containers[1].Resources.Limits.Cpu().Cmp(resource.MustParse("128m")) != 0 {
			t.Errorf("resources %+v / %+v", web.Resources, d.Spec.Template.Spec.Containers[1].Resources)
		}
		if _, err := kube.NetworkingV1().Ingresses("tenant-shop").Get(ctx, "shop", metav1.GetOptions{}); err != nil {
			t.Errorf("ingress: %v", err)
		}
		nsObj, err := kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{})
		if err != nil || nsObj.Labels[compute.LabelTenantID] != "shop" || nsObj.Labels["team"] != "" || nsObj.Labels["pod-security.kubernetes.io/enforce"] != "" {
			t.Errorf("tenant namespace %v %v, want the provider's labels and none of the tenant's", nsObj, err)
		}
		if d.Labels["team"] != "payments" {
			t.Errorf("deployment labels %v, want the tenant's", d.Labels)
		}
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "get", "tenantcomputes", "-n", ns)
		if err != nil {
			t.Fatal(err)
		}
		expectTable(t, out, []string{"NAME", "TENANT", "PROVIDER", "PHASE", "STATE", "HEALTH", "ENDPOINT", "AGE"}, []string{"shop", "shop", "kubernetes", "Ready", "running", "healthy"})
	})

	t.Run("alice, who edits team-a, may write the tenant's Secret in tenant-shop; bob may not", func(t *testing.T) {
		kubeFor := func(user string) kubernetes.Interface {
			cfg, err := p.ConfigFor(user)
			if err != nil {
				t.Fatal(err)
			}
			return kubernetes.NewForConfigOrDie(cfg)
		}
		aliceKube, bobKube := kubeFor("alice"), kubeFor("bob")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shop-db"}, StringData: map[string]string{"password": "s3cret"}}
		// The provider granted it before the tenant was Ready; kube-apiserver's RBAC cache may
		// see the RoleBinding a moment later.
		waitForCondition(t, 10*time.Second, func() (bool, string) {
			_, err := aliceKube.CoreV1().Secrets("tenant-shop").Create(ctx, secret, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
		})
		b, err := kube.RbacV1().RoleBindings("tenant-shop").Get(ctx, "plinth-tenant-secrets", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fmt.Sprint(b.Subjects), "{User rbac.authorization.k8s.io alice }") || strings.Contains(fmt.Sprint(b.Subjects), "bob") {
			t.Errorf("the secret writers of tenant-shop: %+v", b.Subjects)
		}
		_, err = bobKube.CoreV1().Secrets("tenant-shop").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bobs"}}, metav1.CreateOptions{})
		expectForbidden(t, err, "bob creates a Secret in tenant-shop")
		_, err = bobKube.CoreV1().Secrets("tenant-shop").Get(ctx, "shop-db", metav1.GetOptions{})
		expectForbidden(t, err, "bob reads alice's Secret")
		// Secrets only: the tenant's Deployment stays the provider's.
		err = aliceKube.AppsV1().Deployments("tenant-shop").Delete(ctx, "shop", metav1.DeleteOptions{})
		expectForbidden(t, err, "alice deletes the tenant's Deployment")
	})

	t.Run("an image change rolls the tenant and the UpdateResult lists it", func(t *testing.T) {
		change(ns, "shop", func(tc *compute.TenantCompute) { tc.Spec.Containers[0].Image = "nginx:1.28" })
		tc := waitTenant(alice, ns, "shop", 60*time.Second, func(tc *compute.TenantCompute) bool {
			return phaseIs(compute.PhaseReady)(tc) && tc.Status.UpdateResult != nil && tc.Status.UpdateResult.Status == compute.UpdateStatusSuccess
		})
		if changes := strings.Join(tc.Status.UpdateResult.Changes, "; "); !strings.Contains(changes, "nginx:1.28") {
			t.Errorf("changes %q do not name the new image", changes)
		}
		d, err := kube.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{})
		if err != nil || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
			t.Errorf("deployment image: %v", err)
		}
	})

	t.Run("an unchanged re-apply stores nothing; a reconcile request finds no_changes", func(t *testing.T) {
		before, err := alice.TenantComputes(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		after, err := alice.TenantComputes(ns).Update(ctx, before.DeepCopy(), metav1.UpdateOptions{})
		if err != nil || after.Generation != before.Generation || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("re-apply moved the object: %v", err)
		}
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "annotate", "--overwrite", "-n", ns, "tenantcompute/shop", compute.ReconcileRequestedAnnotation+"=1")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		tc := waitTenant(alice, ns, "shop", 30*time.Second, func(tc *compute.TenantCompute) bool { return tc.Status.LastHandledReconcileAt == "1" })
		if tc.Status.UpdateResult == nil || tc.Status.UpdateResult.Status != compute.UpdateStatusNoChanges || tc.Status.Phase != compute.PhaseReady {
			t.Errorf("after a reconcile request: phase %s update %+v", tc.Status.Phase, tc.Status.UpdateResult)
		}
	})

	t.Run("suspend stops the compute and keeps the object; resume starts it", func(t *testing.T) {
		change(ns, "shop", func(tc *compute.TenantCompute) { tc.Spec.Suspended = true })
		tc := waitTenant(alice, ns, "shop", 60*time.Second, phaseIs(compute.PhaseStopped))
		if tc.Status.State != compute.ComputeStateStopped {
			t.Errorf("suspended state %s", tc.Status.State)
		}
		if d, err := kube.AppsV1().Deployments("tenant-shop").Get(ctx, "shop", metav1.GetOptions{}); err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
			t.Errorf("suspended deployment: %v", err)
		}
		change(ns, "shop", func(tc *compute.TenantCompute) { tc.Spec.Suspended = false })
		waitTenant(alice, ns, "shop", 60*time.Second, func(tc *compute.TenantCompute) bool {
			return phaseIs(compute.PhaseReady)(tc) && tc.Status.State == compute.ComputeStateRunning
		})
	})

	t.Run("bob, tenant of team-b, cannot see alice's tenant", func(t *testing.T) {
		_, err := bob.TenantComputes(ns).Get(ctx, "shop", metav1.GetOptions{})
		expectForbidden(t, err, "bob gets team-a's tenant")
		_, err = bob.TenantComputes(ns).List(ctx, metav1.ListOptions{})
		expectForbidden(t, err, "bob lists team-a's tenants")
		if _, err := bob.TenantComputes("team-b").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("bob lists his own namespace: %v", err)
		}
	})

	t.Run("tenant IDs are unique across namespaces, also under 20 concurrent creates", func(t *testing.T) {
		_, err := bob.TenantComputes("team-b").Create(ctx, newTenant("shop", "shop"), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			t.Errorf("bob takes alice's tenant ID: %v, want 409", err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, refused := 0, 0
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := admin.ComputeV1alpha1().TenantComputes("team-b").Create(ctx, newTenant(fmt.Sprintf("race-%02d", i), "race"), metav1.CreateOptions{})
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
		list, err := admin.ComputeV1alpha1().TenantComputes("team-b").List(ctx, metav1.ListOptions{FieldSelector: "spec.tenantID=race"})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("stored with tenant ID race: %v %v", list, err)
		}
		// Deleting the holder frees the ID.
		if err := admin.ComputeV1alpha1().TenantComputes("team-b").Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			_, err := admin.ComputeV1alpha1().TenantComputes("team-b").Create(ctx, newTenant("race-again", "race"), metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
		if err := admin.ComputeV1alpha1().TenantComputes("team-b").Delete(ctx, "race-again", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ResourceQuota limits a namespace's tenants: count, cpu and memory; status.used is kept current", func(t *testing.T) {
		const qns = "team-b"
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			list, err := bob.TenantComputes(qns).List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == 0, fmt.Sprint(list, err)
		})
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"count/tenantcomputes.compute.plinth.dev": resource.MustParse("2"),
			"compute.plinth.dev/cpu":                  resource.MustParse("1000"),
			"compute.plinth.dev/memory":               resource.MustParse("1024"),
		}}}
		if _, err := kube.CoreV1().ResourceQuotas(qns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = kube.CoreV1().ResourceQuotas(qns).Delete(ctx, "compute", metav1.DeleteOptions{}) }()
		// The quota plugin refuses writes until the quota's status is computed.
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			q, err := kube.CoreV1().ResourceQuotas(qns).Get(ctx, "compute", metav1.GetOptions{})
			return err == nil && len(q.Status.Hard) == 3, fmt.Sprint(q.Status, err)
		})
		big := newTenant("big", "big")
		big.Spec.Resources.CPU = 600
		if _, err := bob.TenantComputes(qns).Create(ctx, big, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		second := newTenant("second", "second")
		second.Spec.Resources.CPU = 600
		_, err := bob.TenantComputes(qns).Create(ctx, second, metav1.CreateOptions{})
		if msg := expectForbidden(t, err, "a create over the cpu quota"); !strings.Contains(msg, "exceeded quota") || !strings.Contains(msg, "compute.plinth.dev/cpu") {
			t.Errorf("refusal %q", msg)
		}
		q, err := kube.CoreV1().ResourceQuotas(qns).Get(ctx, "compute", metav1.GetOptions{})
		if err != nil || q.Status.Used.Name("compute.plinth.dev/cpu", resource.DecimalSI).Value() != 600 {
			t.Errorf("quota used after one tenant: %+v %v", q.Status.Used, err)
		}
		// Raising a tenant's cpu above the quota is refused too. The controller is still writing
		// the new tenant (finalizer, status), so an update from a stale read can meet a 409
		// first: read again until the quota answers.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got, err := bob.TenantComputes(qns).Get(ctx, "big", metav1.GetOptions{})
			if err != nil {
				return err
			}
			got.Spec.Resources.CPU = 1200
			_, err = bob.TenantComputes(qns).Update(ctx, got, metav1.UpdateOptions{})
			return err
		})
		expectForbidden(t, err, "an update over the cpu quota")
		// Deleting frees the usage.
		if err := bob.TenantComputes(qns).Delete(ctx, "big", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForCondition(t, 90*time.Second, func() (bool, string) {
			q, err := kube.CoreV1().ResourceQuotas(qns).Get(ctx, "compute", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return q.Status.Used.Name("compute.plinth.dev/cpu", resource.DecimalSI).IsZero(), fmt.Sprint(q.Status.Used)
		})
		if _, err := bob.TenantComputes(qns).Create(ctx, second, metav1.CreateOptions{}); err != nil {
			t.Errorf("a create within the freed quota: %v", err)
		}
		_ = bob.TenantComputes(qns).Delete(ctx, "second", metav1.DeleteOptions{})
	})

	t.Run("placing compute on a Cluster needs the verb use on it: alice is refused, dana may", func(t *testing.T) {
		onLocal := func(tc *compute.TenantCompute) *compute.TenantCompute {
			tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"cluster":"` + localplatform.LocalCluster + `"}`)}
			return tc
		}
		const want = `spec.providerConfig.cluster: User alice may not place compute on Cluster local: the verb use on clusters.platform.plinth.dev is required.`
		_, err := alice.TenantComputes(ns).Create(ctx, onLocal(newTenant("placed", "placed")), metav1.CreateOptions{})
		if msg := expectForbidden(t, err, "alice creates a TenantCompute on Cluster local"); msg != "" && !strings.Contains(msg, want) {
			t.Errorf("refusal %q lacks %q", msg, want)
		}
		if _, err := alice.TenantComputes(ns).Get(ctx, "placed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after the refusal: %v, want NotFound", err)
		}
		_, err = alice.TenantComputes(ns).Patch(ctx, "shop", types.MergePatchType, []byte(`{"spec":{"providerConfig":{"cluster":"local"}}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		expectForbidden(t, err, "alice moves her tenant to Cluster local")
		dana := clientFor("dana").ComputeV1alpha1()
		if _, err := dana.TenantComputes(ns).Create(ctx, onLocal(newTenant("placed", "placed")), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("dana, a platform admin, creates a TenantCompute on Cluster local: %v", err)
		}
	})

	t.Run("a create refused after admission charged the quota (duplicate tenant ID) is given back", func(t *testing.T) {
		const qns = "team-b"
		cpuUsed := func(q *corev1.ResourceQuota) int64 {
			return q.Status.Used.Name("compute.plinth.dev/cpu", resource.DecimalSI).Value()
		}
		waitForCondition(t, 90*time.Second, func() (bool, string) {
			list, err := bob.TenantComputes(qns).List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == 0, fmt.Sprint(list, err)
		})
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute-charges"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"compute.plinth.dev/cpu": resource.MustParse("4000"),
		}}}
		if _, err := kube.CoreV1().ResourceQuotas(qns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = kube.CoreV1().ResourceQuotas(qns).Delete(ctx, quota.Name, metav1.DeleteOptions{}) }()
		var before int64
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			q, err := kube.CoreV1().ResourceQuotas(qns).Get(ctx, quota.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			_, counted := q.Status.Used["compute.plinth.dev/cpu"]
			before = cpuUsed(q)
			return counted, fmt.Sprint(q.Status)
		})
		// alice's tenant holds ID shop: bob's create passes admission, which charges the quota,
		// and is refused when stored.
		dup := newTenant("dup", "shop")
		dup.Spec.Resources.CPU = 750
		_, err := bob.TenantComputes(qns).Create(ctx, dup, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			t.Fatalf("a duplicate tenant ID: %v, want 409", err)
		}
		if q, err := kube.CoreV1().ResourceQuotas(qns).Get(ctx, quota.Name, metav1.GetOptions{}); err == nil {
			t.Logf("compute.plinth.dev/cpu used right after the refusal: %d (before: %d)", cpuUsed(q), before)
		}
		waitForCondition(t, 10*time.Second, func() (bool, string) {
			q, err := kube.CoreV1().ResourceQuotas(qns).Get(ctx, quota.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cpuUsed(q) == before, fmt.Sprintf("used %d, want %d", cpuUsed(q), before)
		})
	})

	t.Run("a failing provider retries with backoff, then Failed; a spec change starts again", func(t *testing.T) {
		// A registered cluster nobody answers on: every provider call fails, none permanently.
		kubeconfig, err := p.TargetKubeconfig("https://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.PlatformV1alpha1().Clusters().Create(ctx, &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"},
			Spec: platform.ClusterSpec{Kubeconfig: string(kubeconfig)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tc := newTenant("lost", "lost")
		tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"cluster":"nowhere"}`)}
		// Placed by a cluster admin: tenants may not use Clusters by default.
		if _, err := admin.ComputeV1alpha1().TenantComputes(ns).Create(ctx, tc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var retryTimes []time.Time
		failed := waitTenant(alice, ns, "lost", 120*time.Second, func(tc *compute.TenantCompute) bool {
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
		change(ns, "lost", func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = nil })
		waitTenant(alice, ns, "lost", 90*time.Second, phaseIs(compute.PhaseReady))
		if err := alice.TenantComputes(ns).Delete(ctx, "lost", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("archive destroys the compute and keeps the object; delete removes the namespace and the object", func(t *testing.T) {
		change(ns, "shop", func(tc *compute.TenantCompute) { tc.Spec.Archived = true })
		waitTenant(alice, ns, "shop", 60*time.Second, phaseIs(compute.PhaseArchived))
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			_, err := kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		change(ns, "shop", func(tc *compute.TenantCompute) { tc.Spec.Archived = false })
		waitTenant(alice, ns, "shop", 90*time.Second, phaseIs(compute.PhaseReady))
		if err := alice.TenantComputes(ns).Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForCondition(t, 90*time.Second, func() (bool, string) {
			_, err := alice.TenantComputes(ns).Get(ctx, "shop", metav1.GetOptions{})
			_, nsErr := kube.CoreV1().Namespaces().Get(ctx, "tenant-shop", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && apierrors.IsNotFound(nsErr), fmt.Sprint(err, nsErr)
		})
	})

	t.Run("the kubevirt provider's tenant waits for approval, carol approves, it runs", func(t *testing.T) {
		tc := &compute.TenantCompute{ObjectMeta: metav1.ObjectMeta{Name: "vmshop"}, Spec: compute.TenantComputeSpec{
			TenantID: "vmshop", ProviderType: "kubevirt",
			Containers: []compute.ContainerSpec{{Name: "web", Image: "nginx:1.27", Ports: []compute.PortMapping{{ContainerPort: 80, HostPort: 80, Protocol: "tcp", Name: "http"}}}},
			Resources:  compute.ResourceRequirements{CPU: 1000, Memory: 1024},
		}}
		if _, err := alice.TenantComputes(ns).Create(ctx, tc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waiting := waitTenant(alice, ns, "vmshop", 60*time.Second, func(tc *compute.TenantCompute) bool {
			return tc.Status.State == compute.ComputeStateStarting && strings.Contains(fmt.Sprint(tc.Status.Conditions), "tkt-")
		})
		var ticket string
		waitForCondition(t, 30*time.Second, func() (bool, string) {
			vms, err := carol.GovernanceV1alpha1().ManagedVMs(ns).List(ctx, metav1.ListOptions{LabelSelector: compute.LabelTenantID + "=vmshop"})
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
		if tk, err := carol.GovernanceV1alpha1().ApprovalTickets(ns).Get(ctx, ticket, metav1.GetOptions{}); err != nil ||
			tk.Spec.Requester != "alice" || tk.Spec.SubmittedBy != localplatform.ControllerUser {
			t.Errorf("the tenant's ticket: %+v %v, want requester alice submitted by plinth-controller", tk, err)
		}
		if _, err := carol.GovernanceV1alpha1().ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove, Cluster: "local", StorageClass: "standard"}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ready := waitTenant(alice, ns, "vmshop", 90*time.Second, phaseIs(compute.PhaseReady))
		if ready.Status.State != compute.ComputeStateRunning {
			t.Errorf("approved VM tenant state %s", ready.Status.State)
		}
	})

	t.Run("the README tour: alice applies the example with kubectl", func(t *testing.T) {
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "apply", "-n", ns, "-f", framework.RepoRoot()+"/artifacts/examples/tenantcompute.yaml")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		out, err = framework.Kubectl(p.Kubeconfig("alice"), "wait", "-n", ns, "tenantcompute/blog", "--for=jsonpath={.status.phase}=Ready", "--timeout=90s")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		out, err = framework.Kubectl(p.Kubeconfig("alice"), "get", "tcomp", "-n", ns, "blog")
		if err != nil || !strings.Contains(out, "http://blog.tenant-blog.svc") {
			t.Errorf("kubectl get tcomp: %v\n%s", err, out)
		}
		out, err = framework.Kubectl(p.Kubeconfig("alice"), "patch", "tcomp", "blog", "-n", ns, "--type", "merge", "-p", `{"spec":{"resources":{"cpu":64}}}`)
		if err == nil || !strings.Contains(out, "spec.resources.cpu: Invalid value: 64: must be at least 128 millicores") {
			t.Errorf("the tour's bad patch: %v\n%s", err, out)
		}
		example, err := os.ReadFile(framework.RepoRoot() + "/artifacts/examples/tenantcompute.yaml")
		if err != nil {
			t.Fatal(err)
		}
		out, err = framework.KubectlStdin(p.Kubeconfig("alice"), strings.Replace(string(example), "name: blog", "name: blog-copy", 1), "apply", "-n", ns, "-f", "-")
		if err == nil || !strings.Contains(out, "AlreadyExists") || !strings.Contains(out, `spec.tenantID: Duplicate value: "blog"`) {
			t.Errorf("the tour's copy with the same tenant ID: %v\n%s", err, out)
		}
		out, err = framework.Kubectl(p.Kubeconfig("alice"), "get", "computeproviders")
		if err != nil || !strings.Contains(out, "kubernetes") || !strings.Contains(out, "kubevirt") {
			t.Errorf("kubectl get computeproviders: %v\n%s", err, out)
		}
	})
}
