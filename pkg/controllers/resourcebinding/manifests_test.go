package resourcebinding

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/provisioners"
)

// Manifests are applied with the controller's identity: they are held to what the namespace's
// editors could create themselves, and a refusal is the binding's BindingFailed sentence.
func TestManifestsAreHeldToWhatTheNamespaceCouldCreate(t *testing.T) {
	for name, tc := range map[string]struct {
		namespace, manifests, want string
	}{
		"a cluster-scoped kind": {"team-a", "- {apiVersion: v1, kind: Namespace, metadata: {name: x}}", "may not create a Namespace"},
		"an RBAC kind": {"team-a", "- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: x}}",
			"may not create a RoleBinding.rbac.authorization.k8s.io"},
		"another namespace": {"team-a", "- {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: plinth-system}}",
			"may not create objects in namespace plinth-system (manifests[0])"},
		"the controller's service account": {"team-a", `- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: x}
  spec: {template: {spec: {serviceAccountName: plinth-controller}}}`, "may not run pods as service account plinth-controller"},
		"the platform's namespace": {"plinth-system", "- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}",
			"may not create objects in namespace plinth-system, which belongs to the cluster or the platform"},
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			p := &templateProvisioner{env: Env{Client: client}, state: newStateStore(client, nil), entry: compile(t, v1b1.ProvisionerSpec{
				URI: "template://team/x", Type: "kv", State: "a: b", Manifests: tc.manifests})}
			b := binding("")
			b.Namespace = tc.namespace
			_, err := p.Provision(context.Background(), b)
			var failed *RenderFailedError
			if !errors.As(err, &failed) || !strings.Contains(failed.Message, tc.want) || !strings.HasPrefix(failed.Message, "The provisioner template://team/x may not") {
				t.Fatalf("error %v, want a RenderFailedError with %q", err, tc.want)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() != "get" {
					t.Errorf("a refused provision wrote: %v", a)
				}
			}
		})
	}
}

// score-k8s's own amqp writes the password it keeps in its state into a plain output: here the
// output is kept in a Secret of the binding's own instead.
func TestAPlainOutputHoldingAStatePasswordIsKeptSecret(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	p := &templateProvisioner{env: Env{Client: client}, state: newStateStore(client, nil), entry: compile(t, v1b1.ProvisionerSpec{
		URI: "template://score-k8s/amqp", Type: "amqp",
		Init:    `randomPassword: {{ randAlphaNum 16 | quote }}`,
		State:   `password: {{ dig "password" .Init.randomPassword .State | quote }}`,
		Outputs: "host: rabbit\nusername: app\npassword: {{ .State.password }}\nurl: amqp://app:{{ .State.password }}@rabbit:5672/"})}
	result, err := p.Provision(ctx, binding(""))
	if err != nil || !result.Ready {
		t.Fatalf("%+v, %v", result, err)
	}
	for _, name := range []string{"password", "url"} {
		if _, plain := result.Values[name]; plain || result.Secrets[name] != (v1b1.SecretKeyReference{Name: "shop-db.outputs", Key: name}) {
			t.Errorf("output %s: values %v, secrets %v", name, result.Values, result.Secrets)
		}
	}
	if result.Values["host"] != "rabbit" || result.Values["username"] != "app" {
		t.Errorf("plain outputs: %v", result.Values)
	}
	s, err := client.CoreV1().Secrets("team-a").Get(ctx, "shop-db.outputs", metav1.GetOptions{})
	if err != nil || len(s.Data["password"]) != 16 || !strings.Contains(string(s.Data["url"]), string(s.Data["password"])) {
		t.Fatalf("outputs secret: %v %v", err, s)
	}
}

// A bound binding keeps the provisioner that bound it: a provisioner applied later for its type
// would make a new, empty instance under a resource whose data is in the old one. When its
// provisioner goes, or stops matching, it is resolved again.
func TestABoundBindingKeepsItsProvisioner(t *testing.T) {
	objects := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	c := &Controller{builtins: Builtins(Env{}), templates: newTemplateSet(nil, listers.NewProvisionerLister(objects))}
	add := func(name, uri string) {
		_ = objects.Add(&v1b1.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: uri},
			Spec: v1b1.ProvisionerSpec{URI: uri, Type: "postgres", Outputs: "host: x"}})
		c.templates.rebuild()
	}
	resolved := func(b *v1b1.ResourceBinding) string {
		switch p := c.provisionerFor(b).(type) {
		case *templateProvisioner:
			return p.entry.Template.Spec().URI
		case nil:
			return "none"
		default:
			return "go"
		}
	}
	goBound := binding("")
	goBound.Spec.Type = "postgres"
	goBound.Status = v1b1.ResourceBindingStatus{Phase: v1b1.BindingPhaseBound, ProvisionerInfo: &v1b1.ProvisionerInfo{Controller: builtinController}}
	fresh := binding("")
	fresh.Spec.Type = "postgres"

	add("pg-a", "template://team/pg-a")
	if got := resolved(goBound); got != "go" {
		t.Errorf("a binding the Go provisioner bound moved to %s", got)
	}
	if got := resolved(fresh); got != "template://team/pg-a" {
		t.Errorf("a new binding resolves to %s", got)
	}
	templBound := fresh.DeepCopy()
	templBound.Status = v1b1.ResourceBindingStatus{Phase: v1b1.BindingPhaseBound, ProvisionerInfo: &v1b1.ProvisionerInfo{
		Controller: templateController, Metadata: map[string]string{"source": provisioners.SourceObject.String(), "name": "pg-a"}}}
	add("pg-0", "template://team/pg-0") // sorts first by name at the same specificity
	if got := resolved(templBound); got != "template://team/pg-a" {
		t.Errorf("a binding pg-a bound moved to %s", got)
	}
	_ = objects.Delete(&v1b1.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "pg-a"}})
	c.templates.rebuild()
	if got := resolved(templBound); got != "template://team/pg-0" {
		t.Errorf("with pg-a gone, the binding resolves to %s", got)
	}
}

// A Provisioner whose type changes concerns the bindings of its new type and those it bound.
func TestAProvisionerChangeConcernsTheBindingsItBound(t *testing.T) {
	bindings := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	mk := func(name, typ string, source string) {
		b := binding("")
		b.Name, b.Spec.Type = name, typ
		if source != "" {
			b.Status = v1b1.ResourceBindingStatus{Phase: v1b1.BindingPhaseBound, ProvisionerInfo: &v1b1.ProvisionerInfo{
				Controller: templateController, Metadata: map[string]string{"source": "object", "name": source}}}
		}
		_ = bindings.Add(b)
	}
	mk("old-type", "cache", "kv")
	mk("new-type", "kv", "")
	mk("other", "cache", "memcached")
	c := &Controller{bindings: listers.NewResourceBindingLister(bindings),
		templates: newTemplateSet(nil, listers.NewProvisionerLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})))}
	keys := c.provisionerChanged(&v1b1.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "kv"}, Spec: v1b1.ProvisionerSpec{Type: "kv"}})
	got := map[string]bool{}
	for _, k := range keys {
		got[k.Name] = true
	}
	if len(got) != 2 || !got["old-type"] || !got["new-type"] {
		t.Errorf("keys = %v, want old-type and new-type", keys)
	}
}
