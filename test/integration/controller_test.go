package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/controllers/resourcebinding"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	scoreclient "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/typed/score/v1b1"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

const shopWorkload = `apiVersion: score.dev/v1b1
kind: Workload
metadata:
  name: shop
spec:
  containers:
    main:
      image: registry.example.com/shop:1.4
      variables:
        DB_HOST: ${resources.db.host}
        DB_PASSWORD: ${resources.db.password}
        DB_URL: postgres://${resources.db.username}:${resources.db.password}@${resources.db.host}:${resources.db.port}/app
        CACHE: ${resources.cache.host}:${resources.cache.port}
        SHELL_HOME: $${HOME}
      files:
      - target: /etc/shop/config.yaml
        content: |
          name: ${metadata.name}
          cache: ${resources.cache.host}
          home: $${HOME}
          literal: $${resources.db.password}
  resources:
    db: {type: postgres}
    cache: {type: redis}
  service:
    ports:
      web: {port: 80, targetPort: 8080}
`

// TestController runs the local platform with plinth-controller and kwok nodes: Workloads
// become Ready through bindings, plans and Deployments, status follows the seed's vocabulary,
// and deletion removes everything the workload owns.
func TestController(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(adminCfg)
	plinth := clientset.NewForConfigOrDie(adminCfg).ScoreV1b1()
	const ns = "team-a"
	alice := func(stdin string, args ...string) string {
		t.Helper()
		out, err := framework.KubectlStdin(p.Kubeconfig("alice"), stdin, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	start := time.Now()
	alice(shopWorkload, "apply", "--server-side", "-f", "-")
	t.Run("a workload with postgres, redis and ports becomes Ready", func(t *testing.T) {
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/shop", "-n", ns, "--timeout=120s")
		if err != nil {
			t.Fatalf("kubectl wait: %v\n%s", err, out)
		}
		t.Logf("apply to Ready: %s", time.Since(start).Round(100*time.Millisecond))
		w, err := plinth.Workloads(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w.Status.Endpoint == nil || *w.Status.Endpoint != "http://shop.team-a.svc" {
			t.Errorf("endpoint = %v", w.Status.Endpoint)
		}
		for _, c := range []string{"InputsValid", "BindingsReady", "RuntimeReady", "Ready"} {
			cond := meta.FindStatusCondition(w.Status.Conditions, c)
			if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != "Succeeded" {
				t.Errorf("condition %s = %+v", c, cond)
			}
		}
		if len(w.Status.Bindings) != 2 || w.Status.Bindings[0].Phase != v1b1.BindingPhaseBound || !w.Status.Bindings[1].OutputsAvailable {
			t.Errorf("bindings = %+v", w.Status.Bindings)
		}
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
				env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			default:
				env[e.Name] = e.Value
			}
		}
		for name, want := range map[string]string{
			"DB_HOST":                   "shop-db.team-a.svc",
			"DB_PASSWORD":               "secret:shop-db/password",
			"PLINTH_SECRET_DB_PASSWORD": "secret:shop-db/password",
			"PLINTH_SECRET_DB_USERNAME": "secret:shop-db/username",
			"DB_URL":                    "postgres://$(PLINTH_SECRET_DB_USERNAME):$(PLINTH_SECRET_DB_PASSWORD)@shop-db.team-a.svc:5432/app",
			"CACHE":                     "shop-cache.team-a.svc:6379",
			// Kubernetes' syntax, in which the kubelet gives the container ${HOME}.
			"SHELL_HOME": "$${HOME}",
		} {
			if env[name] != want {
				t.Errorf("env %s = %q, want %q", name, env[name], want)
			}
		}
		files, err := kube.CoreV1().Secrets(ns).Get(ctx, "shop-files", metav1.GetOptions{})
		// Score's escapes are undone once: ${HOME} and the placeholder's text are written as
		// such, not refused as unknown or filled with the password.
		if err != nil || !strings.Contains(string(files.Data["main-0"]), "cache: shop-cache.team-a.svc\nhome: ${HOME}\nliteral: ${resources.db.password}\n") {
			t.Errorf("files secret: %v %v", err, files)
		}
		if _, err := kube.CoreV1().Services(ns).Get(ctx, "shop", metav1.GetOptions{}); err != nil {
			t.Errorf("service: %v", err)
		}
		// No credential in plain text in the API: not in the plan, not in the workload status.
		plan, err := plinth.WorkloadPlans(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secret, _ := kube.CoreV1().Secrets(ns).Get(ctx, "shop-db", metav1.GetOptions{})
		password := string(secret.Data["password"])
		if password == "" || strings.Contains(fmt.Sprint(plan), password) || strings.Contains(fmt.Sprint(w), password) {
			t.Errorf("the database password appears in the plan or the workload")
		}
		if plan.Spec.WorkloadRef.Generation != w.Generation || plan.Status.Phase != v1b1.PlanPhaseProjected {
			t.Errorf("plan generation %d phase %s", plan.Spec.WorkloadRef.Generation, plan.Status.Phase)
		}
	})

	t.Run("editing the workload rolls the deployment", func(t *testing.T) {
		alice(strings.Replace(shopWorkload, "shop:1.4", "shop:1.5", 1), "apply", "--server-side", "-f", "-")
		waitForCondition(t, 60*time.Second, func() (bool, string) {
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			img := d.Spec.Template.Spec.Containers[0].Image
			return img == "registry.example.com/shop:1.5", img
		})
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/shop", "-n", ns, "--timeout=60s")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		w, _ := plinth.Workloads(ns).Get(ctx, "shop", metav1.GetOptions{})
		if w.Generation != 2 || w.Status.ObservedGeneration != 2 {
			t.Errorf("generation %d observed %d", w.Generation, w.Status.ObservedGeneration)
		}
	})

	t.Run("an unknown resource type stays BindingPending", func(t *testing.T) {
		alice(`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: queue-user}
spec:
  containers: {main: {image: registry.example.com/worker:1, variables: {Q: "${resources.q.url}"}}}
  resources: {q: {type: carrier-pigeon}}
`, "apply", "-f", "-")
		waitForWorkload(t, plinth, ns, "queue-user", 60*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, "BindingsReady")
			return c != nil && c.Reason == "BindingPending" && len(w.Status.Bindings) == 1 &&
				strings.Contains(w.Status.Bindings[0].Message, `"carrier-pigeon"`), fmt.Sprint(w.Status)
		})
	})

	t.Run("a Secret named like a database binding but made by someone else is not used", func(t *testing.T) {
		// Someone else's Secret, named as workload spy's resource db would name its own.
		if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spy-db"},
			Data: map[string][]byte{"password": []byte("not-spys"), "api-token": []byte("not-spys-either")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		alice(`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: spy}
spec:
  containers: {main: {image: registry.example.com/spy:1, variables: {TOKEN: "${resources.db.api-token}"}}}
  resources: {db: {type: postgres}}
`, "apply", "-f", "-")
		const want = `Secret "spy-db" already exists and was not created for resource "db".`
		waitForWorkload(t, plinth, ns, "spy", 60*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, "BindingsReady")
			return c != nil && c.Reason == "BindingFailed" && len(w.Status.Bindings) == 1 &&
				w.Status.Bindings[0].Phase == v1b1.BindingPhaseFailed && w.Status.Bindings[0].Message == want, fmt.Sprint(w.Status)
		})
		b, err := plinth.ResourceBindings(ns).Get(ctx, "spy-db", metav1.GetOptions{})
		if err != nil || b.Status.Outputs != nil {
			t.Errorf("binding spy-db publishes outputs: %v %+v", err, b)
		}
		if _, err := plinth.WorkloadPlans(ns).Get(ctx, "spy", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("workload spy has a plan: %v", err)
		}
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, "spy-db", metav1.GetOptions{})
		if err != nil || string(s.Data["password"]) != "not-spys" || len(s.OwnerReferences) != 0 {
			t.Errorf("the Secret was changed: %v %+v", err, s)
		}
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "delete", "workload", "spy", "-n", ns, "--wait=false"); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
		if err := kube.CoreV1().Secrets(ns).Delete(ctx, "spy-db", metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})

	t.Run("a missing configMapRef is SpecInvalid", func(t *testing.T) {
		alice(`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: from-map}
spec:
  source: {configMapRef: {name: no-such-map, key: score.yaml}}
`, "apply", "-f", "-")
		waitForWorkload(t, plinth, ns, "from-map", 60*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, "InputsValid")
			r := meta.FindStatusCondition(w.Status.Conditions, "Ready")
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "SpecInvalid" && r != nil && r.Reason == "SpecInvalid", fmt.Sprint(w.Status)
		})
		// Creating the map fixes it.
		alice(`apiVersion: v1
kind: ConfigMap
metadata: {name: no-such-map}
data:
  score.yaml: |
    apiVersion: score.dev/v1b1
    metadata: {name: from-map}
    containers: {main: {image: registry.example.com/from-map:1}}
`, "apply", "-f", "-")
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/from-map", "-n", ns, "--timeout=60s")
		if err != nil {
			t.Fatalf("workload from a ConfigMap: %v\n%s", err, out)
		}
	})

	t.Run("a policy added later shows PolicyViolation", func(t *testing.T) {
		if out, err := framework.KubectlStdin(p.Kubeconfig("dana"), `apiVersion: score.dev/v1b1
kind: PlatformPolicy
metadata: {name: no-redis}
spec:
  constraints: {resourceTypes: {denied: [redis]}}
`, "apply", "-f", "-"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		waitForWorkload(t, plinth, ns, "shop", 60*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, "InputsValid")
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "PolicyViolation" && strings.Contains(c.Message, `"no-redis"`), fmt.Sprint(w.Status.Conditions)
		})
		if out, err := framework.Kubectl(p.Kubeconfig("dana"), "delete", "platformpolicy", "no-redis"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/shop", "-n", ns, "--timeout=60s"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	})

	t.Run("the tenant sees the workload's transitions as events, once each", func(t *testing.T) {
		// shop went BindingPending → BindingsReady → Ready → PolicyViolation → Ready.
		var out string
		waitForCondition(t, 30*time.Second, func() (bool, string) {
			var err error
			out, err = framework.Kubectl(p.Kubeconfig("alice"), "events", "--for", "workload/shop", "-n", ns)
			return err == nil && strings.Contains(out, "PolicyViolation") && strings.Count(out, "Ready ") >= 2, out
		})
		for _, want := range []string{"BindingPending", "BindingsReady", "Warning   PolicyViolation", "The workload is ready."} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl events lacks %q:\n%s", want, out)
			}
		}
		// The bindings became ready twice — at first, and again when the policy that held the
		// inputs back was lifted — and the workload was reconciled many more times (every
		// Deployment status change): exactly two BindingsReady events, not one per reconcile.
		list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=shop,involvedObject.kind=Workload,reason=BindingsReady"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 || list.Items[0].ReportingController != "plinth-controller" || list.Items[0].InvolvedObject.APIVersion != "score.dev/v1b1" {
			t.Errorf("BindingsReady events: %+v", list.Items)
		}
		described, err := framework.Kubectl(p.Kubeconfig("alice"), "describe", "workload", "shop", "-n", ns)
		if err != nil || !strings.Contains(described, "Events:") || !strings.Contains(described, "PolicyViolation") {
			t.Errorf("kubectl describe: %v\n%s", err, described)
		}
		// bob, a tenant of another namespace, sees none of them.
		if out, err := framework.Kubectl(p.Kubeconfig("bob"), "events", "--for", "workload/shop", "-n", ns); err == nil {
			t.Errorf("bob read alice's events:\n%s", out)
		}
	})

	t.Run("params that use other resources' outputs bind in order; a cycle is SpecInvalid", func(t *testing.T) {
		alice(`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: site}
spec:
  containers: {main: {image: registry.example.com/site:1}}
  resources:
    dns: {type: dns}
    route: {type: route, params: {host: "${resources.dns.host}", path: /, port: 80}}
  service: {ports: {web: {port: 80}}}
`, "apply", "-f", "-")
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/site", "-n", ns, "--timeout=60s"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		// The dns host names the namespace too (with a hash of it and the binding's name), so
		// another namespace's site-dns gets a host of its own.
		host := resourcebinding.DNSHost(ns, "site-dns", "plinth.local")
		if !strings.HasPrefix(host, "site-dns-"+ns+"-") {
			t.Errorf("dns host %q", host)
		}
		route, err := plinth.ResourceBindings(ns).Get(ctx, "site-route", metav1.GetOptions{})
		if err != nil || !strings.Contains(string(route.Spec.Params.Raw), `"host":"`+host+`"`) {
			t.Errorf("route params were not resolved from the dns output: %v %v", err, route)
		}
		// The route is an Ingress to the workload's Service, owned by the binding.
		ing, err := kube.NetworkingV1().Ingresses(ns).Get(ctx, "site-route", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("route ingress: %v", err)
		}
		if r := ing.Spec.Rules; len(r) != 1 || r[0].Host != host || r[0].HTTP.Paths[0].Path != "/" ||
			r[0].HTTP.Paths[0].Backend.Service.Name != "site" || r[0].HTTP.Paths[0].Backend.Service.Port.Number != 80 {
			t.Errorf("ingress rules %+v", r)
		}
		if len(ing.OwnerReferences) != 1 || ing.OwnerReferences[0].Kind != "ResourceBinding" || ing.OwnerReferences[0].UID != route.UID {
			t.Errorf("ingress owners %+v", ing.OwnerReferences)
		}
		// Params a provisioner cannot use fail the binding with the param named, and are not
		// published.
		badRoute := `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: bad-route}
spec:
  containers: {main: {image: registry.example.com/site:1}}
  resources:
    route: {type: route, params: {host: bad-route.example.com, path: shop, port: 80}}
  service: {ports: {web: {port: 80}}}
`
		alice(badRoute, "apply", "-f", "-")
		waitForWorkload(t, plinth, ns, "bad-route", 60*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, "BindingsReady")
			return c != nil && c.Reason == "BindingFailed" && len(w.Status.Bindings) == 1 &&
				w.Status.Bindings[0].Phase == v1b1.BindingPhaseFailed && strings.Contains(w.Status.Bindings[0].Message, `"path"`), fmt.Sprint(w.Status)
		})
		if _, err := kube.NetworkingV1().Ingresses(ns).Get(ctx, "bad-route-route", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("an Ingress was made from invalid route params: %v", err)
		}
		// Fixing the params binds it.
		alice(strings.Replace(badRoute, "path: shop", "path: /shop", 1), "apply", "-f", "-")
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/bad-route", "-n", ns, "--timeout=60s"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if _, err := kube.NetworkingV1().Ingresses(ns).Get(ctx, "bad-route-route", metav1.GetOptions{}); err != nil {
			t.Errorf("the fixed route has no Ingress: %v", err)
		}
		// An IP address passes the DNS-name check but not the cluster's Ingress validation:
		// the binding fails naming the param, and the published Ingress is withdrawn.
		alice(strings.Replace(badRoute, "host: bad-route.example.com, path: shop", "host: 10.1.2.3, path: /shop", 1), "apply", "-f", "-")
		waitForWorkload(t, plinth, ns, "bad-route", 60*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, "BindingsReady")
			return c != nil && c.Reason == "BindingFailed" && len(w.Status.Bindings) == 1 &&
				strings.Contains(w.Status.Bindings[0].Message, `"host"`), fmt.Sprint(w.Status)
		})
		if _, err := kube.NetworkingV1().Ingresses(ns).Get(ctx, "bad-route-route", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the Ingress of the old params is still published: %v", err)
		}
		alice(`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: loop}
spec:
  containers: {main: {image: registry.example.com/loop:1}}
  resources:
    a: {type: dns, params: {alias: "${resources.b.host}"}}
    b: {type: dns, params: {alias: "${resources.a.host}"}}
`, "apply", "-f", "-")
		waitForWorkload(t, plinth, ns, "loop", 30*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, "InputsValid")
			return c != nil && c.Reason == "SpecInvalid" && strings.Contains(c.Message, "cycle"), fmt.Sprint(w.Status.Conditions)
		})
	})

	t.Run("resources with the same Score id are bound once and shared", func(t *testing.T) {
		for _, name := range []string{"orders", "billing"} {
			alice(fmt.Sprintf(`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: %s}
spec:
  containers: {main: {image: registry.example.com/%s:1, variables: {DB_PASSWORD: "${resources.db.password}"}}}
  resources: {db: {type: postgres, id: main-db}}
`, name, name), "apply", "-f", "-")
		}
		for _, name := range []string{"orders", "billing"} {
			if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/"+name, "-n", ns, "--timeout=60s"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ref := d.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef
			if ref.Name != "shared-postgres-main-db" {
				t.Errorf("%s uses secret %q, want the shared database's", name, ref.Name)
			}
		}
		shared, err := plinth.ResourceBindings(ns).Get(ctx, "shared-postgres-main-db", metav1.GetOptions{})
		if err != nil || len(shared.OwnerReferences) != 2 {
			t.Fatalf("shared binding: %v, owners %v", err, shared)
		}
		sts, _ := kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		count := 0
		for _, s := range sts.Items {
			if strings.Contains(s.Name, "main-db") {
				count++
			}
		}
		if count != 1 {
			t.Errorf("%d databases for one shared id", count)
		}
		// The binding outlives one of its workloads and goes with the last. Both steps are the
		// garbage collector's (dangling owner removal, then deletion), which can take a while.
		alice("", "delete", "workload", "orders", "-n", ns)
		waitForCondition(t, 120*time.Second, func() (bool, string) {
			b, err := plinth.ResourceBindings(ns).Get(ctx, "shared-postgres-main-db", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(b.OwnerReferences) == 1 && b.OwnerReferences[0].Name == "billing", fmt.Sprint(b.OwnerReferences)
		})
		alice("", "delete", "workload", "billing", "-n", ns)
		waitForCondition(t, 120*time.Second, func() (bool, string) {
			_, err := plinth.ResourceBindings(ns).Get(ctx, "shared-postgres-main-db", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})

	t.Run("a template provisioner from the provisioners file binds its type", func(t *testing.T) {
		alice(`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: mq-user}
spec:
  containers: {main: {image: registry.example.com/mq-user:1, variables: {AMQP: "amqp://${resources.mq.username}:${resources.mq.password}@${resources.mq.host}:${resources.mq.port}"}}}
  resources: {mq: {type: rabbitmq}}
`, "apply", "-f", "-")
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/mq-user", "-n", ns, "--timeout=60s"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		b, err := plinth.ResourceBindings(ns).Get(ctx, "mq-user-mq", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The file's provisioner names its objects rabbitmq-<workload>-<first 8 of the guid>.
		service := "rabbitmq-mq-user-" + strings.ToLower(string(b.UID)[:8])
		if b.Status.Outputs.Metadata["host"] != service+".team-a.svc" || b.Status.Outputs.Secrets["password"] != (v1b1.SecretKeyReference{Name: service, Key: "password"}) {
			t.Fatalf("binding outputs: %+v", b.Status.Outputs)
		}
		sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, service, metav1.GetOptions{})
		if err != nil || len(sts.OwnerReferences) != 1 || sts.OwnerReferences[0].Kind != "ResourceBinding" {
			t.Fatalf("templated StatefulSet: %v %v", err, sts)
		}
		d, _ := kube.AppsV1().Deployments(ns).Get(ctx, "mq-user", metav1.GetOptions{})
		var amqp string
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "AMQP" {
				amqp = e.Value
			}
		}
		if amqp != "amqp://app:$(PLINTH_SECRET_MQ_PASSWORD)@"+service+".team-a.svc:5672" {
			t.Errorf("AMQP = %q", amqp)
		}
	})

	t.Run("metrics and health", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			resp, err := http.Get(p.ControllerURL() + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("%s: %d", path, resp.StatusCode)
			}
			if path == "/metrics" && !strings.Contains(string(body), `plinth_reconcile_total{controller="workload",result="success"}`) {
				t.Errorf("metrics lack reconcile counts")
			}
		}
	})

	t.Run("a standby takes over when the leader dies mid-flight, without duplicates", func(t *testing.T) {
		port, err := framework.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		standby := exec.Command(filepath.Join(framework.BinDir(), "plinth-controller"),
			"--kubeconfig", p.Kubeconfig(localplatform.ControllerUser), "--bind-address", fmt.Sprintf("127.0.0.1:%d", port),
			"--provisioners-config", filepath.Join(framework.RepoRoot(), "artifacts", "controller", "provisioners.yaml"))
		standbyLog, err := os.Create(filepath.Join(p.LogDir(), "plinth-controller-standby.log"))
		if err != nil {
			t.Fatal(err)
		}
		defer standbyLog.Close()
		standby.Stdout, standby.Stderr = standbyLog, standbyLog
		if err := standby.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = standby.Process.Kill(); _ = standby.Wait() })
		leaderBefore := leaseHolder(t, kube)
		if strings.HasSuffix(leaderBefore, fmt.Sprintf("_%d", standby.Process.Pid)) {
			t.Fatalf("the standby leads before the leader died: %s", leaderBefore)
		}

		alice(strings.NewReplacer("name: shop", "name: shop2", "shop:1.4", "shop:2.0").Replace(shopWorkload), "apply", "--server-side", "-f", "-")
		time.Sleep(300 * time.Millisecond)
		killed := time.Now()
		p.KillController()
		waitForCondition(t, 40*time.Second, func() (bool, string) {
			holder := leaseHolder(t, kube)
			return strings.HasSuffix(holder, fmt.Sprintf("_%d", standby.Process.Pid)), holder
		})
		t.Logf("standby took the lease %s after the leader died (lease duration 15s)", time.Since(killed).Round(100*time.Millisecond))
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "workload/shop2", "-n", ns, "--timeout=90s"); err != nil {
			status, _ := framework.Kubectl(p.AdminKubeconfig(), "get", "workload,resourcebinding,workloadplan", "-n", ns, "-o", "yaml")
			t.Fatalf("%v\n%s\n%s", err, out, status)
		}
		bindings, _ := plinth.ResourceBindings(ns).List(ctx, metav1.ListOptions{LabelSelector: "score.dev/workload=shop2"})
		deployments, _ := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"score.dev/workload": "shop2"}.String()})
		if len(bindings.Items) != 2 || len(deployments.Items) != 1 {
			t.Errorf("after the takeover: %d bindings, %d deployments; want 2 and 1", len(bindings.Items), len(deployments.Items))
		}
		// The platform's own controller comes back as a standby.
		if err := p.StartController(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("workloads stay Ready past the node lifecycle grace period", func(t *testing.T) {
		// kube-controller-manager marks nodes that renew no Lease for 50 s NotReady, and every
		// pod on them with it; kwok would not make those pods Ready again. The nodes renew
		// Leases, so a workload Ready since the start is still Ready a minute later.
		if wait := 70*time.Second - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		leases, err := kube.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
		if err != nil || len(leases.Items) != 3 {
			t.Fatalf("node leases: %v %d", err, len(leases.Items))
		}
		for _, l := range leases.Items {
			if l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > 40*time.Second {
				t.Errorf("lease %s last renewed at %v", l.Name, l.Spec.RenewTime)
			}
		}
		w, err := plinth.Workloads(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, "Ready") {
			t.Errorf("workload shop, Ready since %s ago, is not Ready now: %v %v", time.Since(start).Round(time.Second), err, w.Status.Conditions)
		}
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods.Items {
			for _, c := range pod.Status.Conditions {
				if c.Type == "Ready" && c.Status != "True" && pod.DeletionTimestamp == nil {
					t.Errorf("pod %s is not Ready: %s", pod.Name, c.Reason)
				}
			}
		}
	})

	t.Run("deleting the workload removes what it owns", func(t *testing.T) {
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "delete", "workload", "shop", "-n", ns, "--wait=true"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		waitForCondition(t, 90*time.Second, func() (bool, string) {
			var left []string
			if _, err := plinth.ResourceBindings(ns).Get(ctx, "shop-db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "binding")
			}
			if _, err := plinth.WorkloadPlans(ns).Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "plan")
			}
			if _, err := kube.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "deployment")
			}
			if _, err := kube.CoreV1().Services(ns).Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "service")
			}
			if _, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "shop-db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "statefulset")
			}
			if _, err := kube.CoreV1().Secrets(ns).Get(ctx, "shop-db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "credentials secret")
			}
			return len(left) == 0, strings.Join(left, ", ")
		})
	})
}

func leaseHolder(t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	lease, err := kube.CoordinationV1().Leases("plinth-system").Get(context.Background(), "plinth-controller", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return fmt.Sprint(err)
	}
	return *lease.Spec.HolderIdentity
}

// waitForWorkload waits until check accepts the workload; check returns what to report if it
// never does.
func waitForWorkload(t *testing.T, client scoreclient.ScoreV1b1Interface, ns, name string, timeout time.Duration, check func(w *v1b1.Workload) (bool, string)) {
	t.Helper()
	waitForCondition(t, timeout, func() (bool, string) {
		w, err := client.Workloads(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return check(w)
	})
}

func waitForCondition(t *testing.T, timeout time.Duration, check func() (bool, string)) {
	t.Helper()
	var last string
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = check()
		return ok, nil
	}); err != nil {
		t.Fatalf("not met within %s; last: %s", timeout, last)
	}
}
