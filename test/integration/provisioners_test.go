package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// microservices are five Score workloads in the shape public Score demos have: a frontend, an
// API with its database and cache, an order service with a database and a queue, a notifier on
// the queue with a document store, and a catalog. They find each other with the community's
// `service` type (a resource named after the workload it reaches) and use postgres, redis, amqp
// and mongodb. Some come as inline Score documents, some in the spec sections.
var microservices = []string{`apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: frontend}
spec:
  source:
    inline:
      apiVersion: score.dev/v1b1
      metadata: {name: frontend}
      containers:
        web:
          image: ghcr.io/example/frontend:1.0
          variables:
            API_URL: http://${resources.api.name}:8080
            CATALOG_URL: http://${resources.catalog.name}:8080
      service:
        ports:
          web: {port: 80, targetPort: 3000}
      resources:
        api: {type: service}
        catalog: {type: service}
`, `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: api}
spec:
  containers:
    main:
      image: ghcr.io/example/api:1.0
      variables:
        DATABASE_URL: postgres://${resources.db.username}:${resources.db.password}@${resources.db.host}:${resources.db.port}/${resources.db.database}
        REDIS_HOST: ${resources.cache.host}
        REDIS_PASSWORD: ${resources.cache.password}
        ORDERS_URL: http://${resources.orders.name}:8080
  service:
    ports:
      http: {port: 8080}
  resources:
    db: {type: postgres}
    cache: {type: redis}
    orders: {type: service}
`, `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: orders}
spec:
  source:
    inline:
      apiVersion: score.dev/v1b1
      metadata: {name: orders}
      containers:
        main:
          image: ghcr.io/example/orders:1.0
          variables:
            PGHOST: ${resources.db.host}
            PGUSER: ${resources.db.username}
            PGPASSWORD: ${resources.db.password}
            AMQP_HOST: ${resources.queue.host}
            AMQP_PORT: ${resources.queue.port}
            AMQP_VHOST: ${resources.queue.vhost}
            AMQP_USER: ${resources.queue.username}
            AMQP_PASSWORD: ${resources.queue.password}
      service:
        ports:
          http: {port: 8080}
      resources:
        db: {type: postgres}
        queue: {type: amqp, id: orders-events}
`, `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: notifier}
spec:
  containers:
    main:
      image: ghcr.io/example/notifier:1.0
      env:
        AMQP_HOST: ${resources.queue.host}
        AMQP_PASSWORD: ${resources.queue.password}
        MONGO_HOST: ${resources.store.host}
        MONGO_USER: ${resources.store.username}
        MONGO_PASSWORD: ${resources.store.password}
  resources:
    queue: {type: amqp, id: orders-events}
    store: {type: mongodb}
`, `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: catalog}
spec:
  containers:
    main:
      image: ghcr.io/example/catalog:1.0
      variables:
        MONGO_HOST: ${resources.store.host}
        MONGO_PORT: ${resources.store.port}
        MONGO_PASSWORD: ${resources.store.password}
        CACHE_HOST: ${resources.cache.host}
  service:
    ports:
      http: {port: 8080}
  resources:
    store: {type: mongodb}
    cache: {type: redis}
`}

// TestScoreProvisioners runs the local platform: a microservice set becomes Ready through the
// built-in provisioners (Go and score-k8s-format templates) with every variable projected,
// secret outputs only as secretKeyRefs; a Provisioner dana applies takes effect without a
// restart; a provisioner's fail reaches the workload as BindingFailed; env and variables.
func TestScoreProvisioners(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	adminCfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(adminCfg)
	plinth := clientset.NewForConfigOrDie(adminCfg).ScoreV1b1()
	dyn := dynamic.NewForConfigOrDie(adminCfg)
	const ns = "team-a"
	as := func(user, stdin string, args ...string) string {
		t.Helper()
		out, err := framework.KubectlStdin(p.Kubeconfig(user), stdin, args...)
		if err != nil {
			t.Fatalf("kubectl %s as %s: %v\n%s", strings.Join(args, " "), user, err, out)
		}
		return out
	}

	t.Run("five linked microservices with postgres, redis, amqp and mongodb become Ready", func(t *testing.T) {
		for _, w := range microservices {
			as("alice", w, "apply", "-n", ns, "-f", "-")
		}
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "-n", ns, "--timeout=120s",
			"workload/frontend", "workload/api", "workload/orders", "workload/notifier", "workload/catalog")
		if err != nil {
			t.Fatalf("kubectl wait: %v\n%s\n%s\n%s", err, out, as("alice", "", "get", "workloads", "-n", ns, "-o", "wide"),
				as("dana", "", "get", "resourcebindings", "-n", ns, "-o", "custom-columns=NAME:.metadata.name,PHASE:.status.phase,MESSAGE:.status.conditions[?(@.type=='Ready')].message"))
		}
		secretRef := func(e corev1.EnvVar) string {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			}
			return e.Value
		}
		env := func(workload string) map[string]string {
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, workload, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				out[e.Name] = secretRef(e)
			}
			return out
		}
		binding := func(name string) *v1b1.ResourceBinding {
			b, err := plinth.ResourceBindings(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		queue, store, catalogStore := binding("shared-amqp-orders-events"), binding("notifier-store"), binding("catalog-store")
		ref := func(b *v1b1.ResourceBinding, output string) string {
			r, ok := b.Status.Outputs.Secrets[output]
			if !ok {
				t.Fatalf("binding %s has no secret output %q: %+v", b.Name, output, b.Status.Outputs)
			}
			return "secret:" + r.Name + "/" + r.Key
		}
		for workload, want := range map[string]map[string]string{
			"frontend": {"API_URL": "http://api:8080", "CATALOG_URL": "http://catalog:8080"},
			"api": {
				"DATABASE_URL":              "postgres://$(PLINTH_SECRET_DB_USERNAME):$(PLINTH_SECRET_DB_PASSWORD)@api-db.team-a.svc:5432/app",
				"PLINTH_SECRET_DB_PASSWORD": "secret:api-db/password",
				"REDIS_HOST":                "api-cache.team-a.svc",
				"REDIS_PASSWORD":            "secret:api-cache/password",
				"ORDERS_URL":                "http://orders:8080",
			},
			"orders": {
				"PGHOST": "orders-db.team-a.svc", "PGPASSWORD": "secret:orders-db/password",
				"AMQP_HOST": queue.Status.Outputs.Metadata["host"], "AMQP_PORT": "5672", "AMQP_VHOST": queue.Status.Outputs.Metadata["vhost"],
				"AMQP_USER": queue.Status.Outputs.Metadata["username"], "AMQP_PASSWORD": ref(queue, "password"),
			},
			"notifier": {
				"AMQP_HOST": queue.Status.Outputs.Metadata["host"], "AMQP_PASSWORD": ref(queue, "password"),
				"MONGO_HOST": store.Status.Outputs.Metadata["host"], "MONGO_USER": store.Status.Outputs.Metadata["username"],
				"MONGO_PASSWORD": ref(store, "password"),
			},
			"catalog": {
				"MONGO_HOST": catalogStore.Status.Outputs.Metadata["host"], "MONGO_PORT": "27017",
				"MONGO_PASSWORD": ref(catalogStore, "password"), "CACHE_HOST": "catalog-cache.team-a.svc",
			},
		} {
			got := env(workload)
			for name, value := range want {
				if value == "" || got[name] != value {
					t.Errorf("%s: env %s = %q, want %q", workload, name, got[name], value)
				}
			}
		}
		// The amqp and mongodb provisioners are score-k8s-format templates: their objects are
		// owned by the binding, and the state with the generated password is in a Secret.
		for _, b := range []*v1b1.ResourceBinding{queue, store} {
			if b.Status.ProvisionerInfo == nil || b.Status.ProvisionerInfo.Controller != "plinth-template" {
				t.Errorf("%s provisioned by %+v", b.Name, b.Status.ProvisionerInfo)
			}
			state, err := kube.CoreV1().Secrets(ns).Get(ctx, b.Name+".state", metav1.GetOptions{})
			if err != nil || state.Type != "score.dev/provisioner-state" || len(state.OwnerReferences) != 1 || state.OwnerReferences[0].UID != b.UID {
				t.Errorf("state of %s: %v %+v", b.Name, err, state)
			}
		}
		w, err := plinth.Workloads(ns).Get(ctx, "frontend", metav1.GetOptions{})
		if err != nil || len(w.Status.Bindings) != 2 {
			t.Errorf("frontend's bindings: %v %+v", err, w.Status.Bindings)
		}
	})

	t.Run("generated passwords appear only in Secrets", func(t *testing.T) {
		var passwords []string
		for _, b := range []string{"shared-amqp-orders-events", "notifier-store", "catalog-store"} {
			bound, err := plinth.ResourceBindings(ns).Get(ctx, b, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := bound.Status.Outputs.Secrets["password"]
			s, err := kube.CoreV1().Secrets(ns).Get(ctx, r.Name, metav1.GetOptions{})
			if err != nil || len(s.Data[r.Key]) < 8 {
				t.Fatalf("secret %s/%s: %v", r.Name, r.Key, err)
			}
			passwords = append(passwords, string(s.Data[r.Key]))
		}
		// And a Go provisioner's: api's database.
		pg, err := kube.CoreV1().Secrets(ns).Get(ctx, "api-db", metav1.GetOptions{})
		if err != nil || len(pg.Data["password"]) < 8 {
			t.Fatalf("api-db's secret: %v", err)
		}
		passwords = append(passwords, string(pg.Data["password"]))
		// Every object of the namespace but Secrets, and the cluster's Plinth objects.
		resources := []schema.GroupVersionResource{
			{Group: "score.dev", Version: "v1b1", Resource: "workloads"},
			{Group: "score.dev", Version: "v1b1", Resource: "resourcebindings"},
			{Group: "score.dev", Version: "v1b1", Resource: "workloadplans"},
			{Group: "apps", Version: "v1", Resource: "deployments"},
			{Group: "apps", Version: "v1", Resource: "statefulsets"},
			{Group: "batch", Version: "v1", Resource: "jobs"},
			{Version: "v1", Resource: "services"},
			{Version: "v1", Resource: "configmaps"},
			{Version: "v1", Resource: "pods"},
			{Group: "events.k8s.io", Version: "v1", Resource: "events"},
		}
		for _, gvr := range resources {
			list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("%s: %v", gvr, err)
			}
			data, _ := json.Marshal(list)
			for _, pw := range passwords {
				if strings.Contains(string(data), pw) {
					t.Errorf("a generated password appears in %s", gvr.Resource)
				}
			}
		}
		// Nor in any component's log: plinth-controller's, plinth-apiserver's audit of writes,
		// kube-apiserver's.
		logs, err := os.ReadDir(p.LogDir())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range logs {
			data, err := os.ReadFile(filepath.Join(p.LogDir(), l.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for _, pw := range passwords {
				if strings.Contains(string(data), pw) {
					t.Errorf("a generated password appears in %s", l.Name())
				}
			}
		}
		for _, user := range []string{"alice", "dana"} {
			for _, pw := range passwords {
				if out := as(user, "", "get", "workloads", "-n", ns, "-o", "yaml"); strings.Contains(out, pw) {
					t.Errorf("a generated password appears in what %s reads", user)
				}
			}
		}
	})

	t.Run("a Provisioner dana applies takes effect without a restart", func(t *testing.T) {
		as("alice", "", "apply", "-n", ns, "-f", filepath.Join(framework.RepoRoot(), "artifacts", "examples", "workload-sessions.yaml"))
		waitForCondition(t, 30*time.Second, func() (bool, string) {
			b, err := plinth.ResourceBindings(ns).Get(ctx, "sessions-cache", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(b.Status.Conditions, "Ready")
			return b.Status.Phase == v1b1.BindingPhasePending && c != nil && strings.Contains(c.Message, `"memcached"`), fmt.Sprintf("%+v", b.Status)
		})
		as("dana", "", "apply", "-f", filepath.Join(framework.RepoRoot(), "artifacts", "examples", "provisioner.yaml"))
		out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "-n", ns, "--timeout=60s", "workload/sessions")
		if err != nil {
			t.Fatalf("kubectl wait: %v\n%s", err, out)
		}
		b, err := plinth.ResourceBindings(ns).Get(ctx, "sessions-cache", metav1.GetOptions{})
		if err != nil || b.Status.Outputs.Metadata["host"] != "memcached-sessions.team-a.svc" || b.Status.Outputs.Metadata["port"] != "11211" {
			t.Fatalf("binding: %v %+v", err, b.Status.Outputs)
		}
		if _, err := kube.AppsV1().Deployments(ns).Get(ctx, "memcached-sessions", metav1.GetOptions{}); err != nil {
			t.Errorf("the provisioner's Deployment: %v", err)
		}
	})

	t.Run("a provisioner that calls fail makes the binding Failed with its message", func(t *testing.T) {
		as("dana", `apiVersion: score.dev/v1b1
kind: Provisioner
metadata: {name: strict-queue}
spec:
  uri: template://team-platform/strict-queue
  type: queue
  description: Refuses queues without a retention param.
  init: |
    {{ if not .Params.retention }}{{ fail "params.retention must name how long messages are kept" }}{{ end }}
  outputs: |
    name: {{ .Id }}
  supported_params: [retention]
  expected_outputs: [name]
`, "apply", "-f", "-")
		as("alice", `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: mailer}
spec:
  containers:
    main: {image: ghcr.io/example/mailer:1.0, variables: {QUEUE: "${resources.jobs.name}"}}
  resources:
    jobs: {type: queue}
`, "apply", "-n", ns, "-f", "-")
		waitForWorkload(t, plinth, ns, "mailer", 30*time.Second, func(w *v1b1.Workload) (bool, string) {
			c := meta.FindStatusCondition(w.Status.Conditions, "BindingsReady")
			return c != nil && c.Reason == v1b1.ReasonBindingFailed, fmt.Sprintf("%+v", w.Status.Conditions)
		})
		b, err := plinth.ResourceBindings(ns).Get(ctx, "mailer-jobs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(b.Status.Conditions, "Ready")
		if b.Status.Phase != v1b1.BindingPhaseFailed || c == nil || c.Reason != v1b1.ReasonBindingFailed ||
			!strings.Contains(c.Message, "params.retention must name how long messages are kept") ||
			!strings.Contains(c.Message, "template://team-platform/strict-queue") {
			t.Fatalf("binding status: %+v", b.Status)
		}
		// Giving the param the template asks for binds it: a failed binding is looked at again
		// when its params change.
		as("alice", `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: mailer}
spec:
  containers:
    main: {image: ghcr.io/example/mailer:1.0, variables: {QUEUE: "${resources.jobs.name}"}}
  resources:
    jobs: {type: queue, params: {retention: 7d}}
`, "apply", "-n", ns, "-f", "-")
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "-n", ns, "--timeout=60s", "workload/mailer"); err != nil {
			t.Fatalf("kubectl wait: %v\n%s", err, out)
		}
	})

	t.Run("env, the seed's name, and variables are one map", func(t *testing.T) {
		as("alice", `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: seed-env}
spec:
  containers:
    main: {image: ghcr.io/example/app:1.0, env: {GREETING: hello}}
`, "apply", "-n", ns, "-f", "-")
		w, err := plinth.Workloads(ns).Get(ctx, "seed-env", metav1.GetOptions{})
		if err != nil || w.Spec.Containers["main"].Variables["GREETING"] != "hello" {
			t.Fatalf("variables follow env: %v %+v", err, w.Spec.Containers)
		}
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "-n", ns, "--timeout=60s", "workload/seed-env"); err != nil {
			t.Fatalf("kubectl wait: %v\n%s", err, out)
		}
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "seed-env", metav1.GetOptions{})
		if err != nil || len(d.Spec.Template.Spec.Containers[0].Env) != 1 || d.Spec.Template.Spec.Containers[0].Env[0].Value != "hello" {
			t.Fatalf("deployment env: %v %+v", err, d)
		}
		out, err := framework.KubectlStdin(p.Kubeconfig("alice"), `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: both-env}
spec:
  containers:
    main: {image: ghcr.io/example/app:1.0, env: {A: "1"}, variables: {A: "2"}}
`, "apply", "-n", ns, "-f", "-")
		if err == nil || !strings.Contains(out, "spec.containers[main].env") || !strings.Contains(out, "must equal spec.containers[main].variables") {
			t.Fatalf("both set and different: %v\n%s", err, out)
		}
		if _, err := plinth.Workloads(ns).Get(ctx, "both-env", metav1.GetOptions{}); err == nil {
			t.Error("the refused workload was stored")
		}
	})

	t.Run("an output the resource does not have is named, with those it has", func(t *testing.T) {
		// score-compose's environment sample reads a variable the environment does not hold.
		workload := func(params string) string {
			return `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: env-reader}
spec:
  containers:
    main:
      image: ghcr.io/example/app:1.0
      variables: {DEBUG: "${resources.env.DEBUG}"}
  resources:
    env: {type: environment, params: ` + params + `}
`
		}
		as("alice", workload("{LOG_LEVEL: debug, REGION: eu}"), "apply", "-n", ns, "-f", "-")
		want := `Resource "env" has no output "DEBUG"; it has: LOG_LEVEL, REGION.`
		var last string
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			w, err := plinth.Workloads(ns).Get(ctx, "env-reader", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			c := meta.FindStatusCondition(w.Status.Conditions, v1b1.ConditionRuntimeReady)
			last = fmt.Sprintf("%+v", c)
			return c != nil && c.Reason == v1b1.ReasonProjectionError && c.Message == want, nil
		}); err != nil {
			t.Fatalf("RuntimeReady: %s, want %s with %q", last, v1b1.ReasonProjectionError, want)
		}
		// Given the output, the same workload runs.
		as("alice", workload("{LOG_LEVEL: debug, REGION: eu, DEBUG: \"true\"}"), "apply", "-n", ns, "-f", "-")
		if out, err := framework.Kubectl(p.Kubeconfig("alice"), "wait", "--for=condition=Ready", "-n", ns, "--timeout=60s", "workload/env-reader"); err != nil {
			t.Fatalf("kubectl wait: %v\n%s", err, out)
		}
	})

	t.Run("a file read from beside an inline document is refused at that file", func(t *testing.T) {
		// score-spec's specification/files example, inline: nothing lies beside it.
		out, err := framework.KubectlStdin(p.Kubeconfig("alice"), `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: files-example}
spec:
  source:
    inline:
      apiVersion: score.dev/v1b1
      metadata: {name: files-example}
      containers:
        main:
          image: busybox
          files:
          - target: /etc/hello-world/config.yaml
            source: fileA.txt
`, "apply", "-n", ns, "-f", "-")
		field := "spec.source.inline.containers[main].files[/etc/hello-world/config.yaml].source"
		if err == nil || !strings.Contains(out, field) || !strings.Contains(out, "spec.source.configMapRef") {
			t.Fatalf("want a refusal naming %s and the ConfigMap source: %v\n%s", field, err, out)
		}
		if _, err := plinth.Workloads(ns).Get(ctx, "files-example", metav1.GetOptions{}); err == nil {
			t.Error("the refused workload was stored")
		}
	})

	t.Run("deleting a Provisioner leaves its type unprovided again", func(t *testing.T) {
		as("dana", "", "delete", "provisioner", "strict-queue")
		as("alice", "", "delete", "workload", "mailer", "-n", ns)
		as("alice", `apiVersion: score.dev/v1b1
kind: Workload
metadata: {name: mailer2}
spec:
  containers:
    main: {image: ghcr.io/example/mailer:1.0}
  resources:
    jobs: {type: queue}
`, "apply", "-n", ns, "-f", "-")
		waitForCondition(t, 30*time.Second, func() (bool, string) {
			b, err := plinth.ResourceBindings(ns).Get(ctx, "mailer2-jobs", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return b.Status.Phase == v1b1.BindingPhasePending, fmt.Sprintf("%+v", b.Status)
		})
	})
}
