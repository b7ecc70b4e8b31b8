package resourcebinding

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/errkind"
	listers "github.com/plinth-dev/plinth/pkg/generated/listers/score/v1b1"
	"github.com/plinth-dev/plinth/pkg/provisioners"
)

func writeFile(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "zz.provisioners.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func compile(t *testing.T, spec v1b1.ProvisionerSpec) *provisioners.Entry {
	t.Helper()
	tmpl, err := provisioners.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &provisioners.Entry{Name: spec.Type, Source: provisioners.SourceObject, Template: tmpl}
}

func binding(params string) *v1b1.ResourceBinding {
	b := &v1b1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-db", Namespace: "team-a", UID: types.UID("1a2b3c4d-0000-4000-8000-000000000001")},
		Spec:       v1b1.ResourceBindingSpec{WorkloadRef: v1b1.WorkloadReference{Name: "shop"}, ResourceKey: "db", Type: "kv"},
	}
	if params != "" {
		b.Spec.Params = &common.RawObject{Raw: []byte(params)}
	}
	return b
}

// kv draws a password once and keeps it in its state, publishes it with encodeSecretRef and
// counts its provisions in the namespace's shared state.
var kv = v1b1.ProvisionerSpec{
	URI: "template://test/kv", Type: "kv",
	Init:   `password: {{ randAlphaNum 16 | quote }}`,
	State:  `password: {{ dig "password" .Init.password .State | quote }}` + "\n" + `service: kv-{{ .SourceWorkload }}-{{ substr 0 8 .Guid }}`,
	Shared: `provisions: {{ add 1 (default 0 .Shared.provisions) }}`,
	Outputs: `host: {{ .State.service }}
port: 6380
tls: true
uid: {{ .Uid }}
password: {{ encodeSecretRef .State.service "password" }}`,
}

func TestTemplateProvisionerKeepsItsStateInASecret(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	p := &templateProvisioner{env: Env{Client: client}, state: newStateStore(client, nil), entry: compile(t, kv)}
	b := binding("")
	first, err := p.Provision(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"host": "kv-shop-1a2b3c4d", "port": "6380", "tls": "true", "uid": "kv.default#shop.db"}
	for k, v := range want {
		if first.Values[k] != v {
			t.Errorf("output %s = %q, want %q", k, first.Values[k], v)
		}
	}
	if _, plain := first.Values["password"]; plain || first.Secrets["password"] != (v1b1.SecretKeyReference{Name: "kv-shop-1a2b3c4d", Key: "password"}) {
		t.Fatalf("the password output must be a Secret key only: %+v", first)
	}
	state, err := client.CoreV1().Secrets("team-a").Get(ctx, "shop-db.state", metav1.GetOptions{})
	if err != nil || state.Type != StateSecretType || len(state.OwnerReferences) != 1 || state.OwnerReferences[0].UID != b.UID {
		t.Fatalf("state secret: %v %+v", err, state)
	}
	var saved map[string]interface{}
	if err := json.Unmarshal(state.Data["state"], &saved); err != nil || len(saved["password"].(string)) != 16 {
		t.Fatalf("saved state: %v %v", err, saved)
	}

	// A new process (a restarted or new leader) reads the state back and keeps the password.
	again := &templateProvisioner{env: Env{Client: client}, state: newStateStore(client, nil), entry: compile(t, kv)}
	if _, err := again.Provision(ctx, b); err != nil {
		t.Fatal(err)
	}
	state, _ = client.CoreV1().Secrets("team-a").Get(ctx, "shop-db.state", metav1.GetOptions{})
	var kept map[string]interface{}
	_ = json.Unmarshal(state.Data["state"], &kept)
	if kept["password"] != saved["password"] {
		t.Error("a second provision drew a new password")
	}
	shared, err := client.CoreV1().Secrets("team-a").Get(ctx, SharedStateSecret, metav1.GetOptions{})
	if err != nil || string(shared.Data["state"]) != `{"provisions":2}` {
		t.Fatalf("shared state: %v %s", err, shared.Data["state"])
	}
	// Nothing that is not a Secret carries the password.
	for _, v := range first.Values {
		if strings.Contains(v, saved["password"].(string)) {
			t.Error("the password reached a plain output")
		}
	}
}

func TestTemplateProvisionerStoresNothingWhenStateIsUnchanged(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	p := &templateProvisioner{env: Env{Client: client}, state: newStateStore(client, nil), entry: compile(t, v1b1.ProvisionerSpec{
		URI: "template://test/fixed", Type: "kv", State: `service: fixed`, Outputs: `host: {{ .State.service }}`})}
	for i := 0; i < 3; i++ {
		if _, err := p.Provision(ctx, binding("")); err != nil {
			t.Fatal(err)
		}
	}
	writes := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("%d writes for three provisions of an unchanged state, want 1", writes)
	}
}

func TestTemplateProvisionerFailSurfacesTheAuthorsSentence(t *testing.T) {
	client := fake.NewClientset()
	p := &templateProvisioner{env: Env{Client: client}, state: newStateStore(client, nil), entry: compile(t, v1b1.ProvisionerSpec{
		URI: "template://team/strict", Type: "kv",
		Init: `{{ if not .Params.retention }}{{ fail "params.retention must name how long messages are kept" }}{{ end }}`})}
	_, err := p.Provision(context.Background(), binding(""))
	var failed *RenderFailedError
	if !errors.As(err, &failed) {
		t.Fatalf("error %v, want a RenderFailedError", err)
	}
	if !errkind.IsStalled(err) || err.Error() != "The provisioner template://team/strict failed in its init template: params.retention must name how long messages are kept." {
		t.Errorf("error %v (stalled: %v)", err, errkind.IsStalled(err))
	}
	if _, err := p.Provision(context.Background(), binding(`{"retention":"7d"}`)); err != nil {
		t.Errorf("with the param: %v", err)
	}
	if len(client.Actions()) == 0 {
		t.Error("a provision with the param stored no state")
	}
}

func TestTemplateProvisionerSeesTheNamespacesServices(t *testing.T) {
	workloads := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = workloads.Add(&v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "team-a"},
		Spec: v1b1.WorkloadSpec{Service: &v1b1.ServiceSpec{Ports: map[string]v1b1.ServicePort{"http": {Port: 80, TargetPort: 8080}}}}})
	_ = workloads.Add(&v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", Annotations: map[string]string{"team": "a"}}})
	_ = workloads.Add(&v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "team-b"}})
	client := fake.NewClientset()
	p := &templateProvisioner{env: Env{Client: client, Workloads: listers.NewWorkloadLister(workloads)}, state: newStateStore(client, nil),
		entry: compile(t, v1b1.ProvisionerSpec{URI: "template://community-provisioners/static-service", Type: "service",
			Init: `name: {{ splitList "." .Id | last }}`,
			Outputs: `{{ $w := index .WorkloadServices .Init.name }}{{ if not $w.ServiceName }}{{ fail "unknown workload" }}{{ end }}
name: {{ $w.ServiceName }}
port: {{ (index $w.Ports "80").TargetPort }}
byName: {{ (index $w.Ports "http").Port }}
team: {{ .WorkloadMetadata.annotations.team }}
others: {{ len .WorkloadServices }}`})}
	b := binding("")
	b.Spec.ResourceKey, b.Spec.Type = "api", "service"
	result, err := p.Provision(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"name": "api", "port": "8080", "byName": "80", "team": "a", "others": "2"} {
		if result.Values[k] != v {
			t.Errorf("output %s = %q, want %q", k, result.Values[k], v)
		}
	}
	b.Spec.ResourceKey = "missing"
	if _, err := p.Provision(context.Background(), b); err == nil || !strings.Contains(err.Error(), "unknown workload") {
		t.Errorf("a service resource naming no workload: %v", err)
	}
}

func TestResolutionPrefersTheMostSpecificProvisioner(t *testing.T) {
	objects := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	class := "large"
	_ = objects.Add(&v1b1.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "postgres-large", ResourceVersion: "1"},
		Spec: v1b1.ProvisionerSpec{URI: "template://team/pg-large", Type: "postgres", Class: &class, Outputs: "host: large"}})
	_ = objects.Add(&v1b1.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "amqp-any", ResourceVersion: "1"},
		Spec: v1b1.ProvisionerSpec{URI: "template://team/amqp", Type: "amqp", Outputs: "host: mine"}})
	static, err := staticTemplates(writeFile(t, "- uri: template://file/amqp\n  type: amqp\n  outputs: 'host: file'\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Controller{builtins: Builtins(Env{}), templates: newTemplateSet(static, listers.NewProvisionerLister(objects))}
	c.templates.rebuild()
	uri := func(typ, class string) string {
		b := binding("")
		b.Spec.Type, b.Spec.Class = typ, class
		switch p := c.provisionerFor(b).(type) {
		case *templateProvisioner:
			return p.entry.Template.Spec().URI
		case nil:
			return "none"
		default:
			return "go"
		}
	}
	for _, tc := range []struct{ typ, class, want string }{
		{"postgres", "large", "template://team/pg-large"}, // an object for the class beats the Go provisioner
		{"postgres", "", "go"},                            // other classes keep the Go one
		{"amqp", "", "template://team/amqp"},              // an object beats the file at the same specificity
		{"nothing", "", "none"},
	} {
		if got := uri(tc.typ, tc.class); got != tc.want {
			t.Errorf("%s/%s resolves to %s, want %s", tc.typ, tc.class, got, tc.want)
		}
	}
	if got := uri("mongodb", ""); !strings.HasPrefix(got, "template://") {
		t.Errorf("mongodb resolves to %s, want the built-in template", got)
	}
}

func TestCommandProvisionersOfAFileAreLeftOut(t *testing.T) {
	static, err := staticTemplates(writeFile(t, "- uri: cmd://bash#x\n  type: kv\n  args: [-c, echo]\n- uri: template://file/kv\n  type: kv\n"))
	if err != nil {
		t.Fatal(err)
	}
	set := provisioners.NewSet(static...)
	if e := set.Match("kv", "default", "shop.db"); e == nil || e.Template.Spec().URI != "template://file/kv" {
		t.Fatalf("kv resolves to %+v", e)
	}
}

func TestBadProvisionersFileIsRefused(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"bad template":    {"- uri: template://x\n  type: a\n  outputs: \"{{ .Name \"\n", "[0].outputs"},
		"unknown field":   {"- uri: template://x\n  type: a\n  args: [x]\n", "args"},
		"unreadable file": {"", "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			path := "/nonexistent/provisioners.yaml"
			if tc.file != "" {
				path = writeFile(t, tc.file)
			}
			if err := CheckProvisionersFile(path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// score-k8s's mssql writes its connection string with the password in it: the whole value is a
// secret, assembled into a Secret of the binding's own once the referenced Secret exists.
func TestOutputsThatEmbedSecretsAreAssembledIntoASecret(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	p := &templateProvisioner{env: Env{Client: client}, state: newStateStore(client, nil), entry: compile(t, v1b1.ProvisionerSpec{
		URI: "template://test/mssql", Type: "mssql",
		Outputs: `connection: "Server=tcp:mssql-shop,1433;User ID=sa;Password={{ encodeSecretRef "mssql-shop" "password" }};"`})}
	result, err := p.Provision(ctx, binding(""))
	if err != nil || result.Ready {
		t.Fatalf("before the Secret exists: %+v, %v", result, err)
	}
	if _, err := client.CoreV1().Secrets("team-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mssql-shop", Namespace: "team-a"},
		Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	result, err = p.Provision(ctx, binding(""))
	if err != nil || !result.Ready || result.Secrets["connection"] != (v1b1.SecretKeyReference{Name: "shop-db.outputs", Key: "connection"}) {
		t.Fatalf("result = %+v, %v", result, err)
	}
	if _, plain := result.Values["connection"]; plain {
		t.Error("the connection string is also a plain value")
	}
	s, err := client.CoreV1().Secrets("team-a").Get(ctx, "shop-db.outputs", metav1.GetOptions{})
	if err != nil || string(s.Data["connection"]) != "Server=tcp:mssql-shop,1433;User ID=sa;Password=s3cret;" || len(s.OwnerReferences) != 1 {
		t.Fatalf("outputs secret: %v %+v", err, s)
	}
}

// The state Secret is in the binding's namespace, where its editors can change it. A state value
// that spans lines cannot add objects to the manifests of a template that writes it unquoted (as
// score-k8s's own templates write names): the binding fails naming the template, and nothing is
// applied.
func TestAnEditedStateCannotAddManifests(t *testing.T) {
	b := binding("")
	hostile, err := json.Marshal(map[string]interface{}{"service": "kv-x\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: injected"})
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: StateSecretName(b.Name), Namespace: b.Namespace},
		Type: StateSecretType, Data: map[string][]byte{"state": hostile}})
	p := &templateProvisioner{env: Env{Client: client}, state: newStateStore(client, nil), entry: compile(t, v1b1.ProvisionerSpec{
		URI: "template://test/raw", Type: "kv",
		State:   `service: {{ dig "service" "kv-1" .State | quote }}`,
		Outputs: `host: {{ .State.service | toJson }}`,
		Manifests: `- apiVersion: v1
  kind: Service
  metadata:
    name: {{ .State.service }}
  spec:
    ports: [{port: 80}]`,
	})}
	_, err = p.Provision(context.Background(), b)
	want := "The provisioner template://test/raw failed in its manifests template: it writes a value that spans lines, from the resource's state, params or metadata, into its YAML unquoted; templates write such values with toJson or quote."
	if !errkind.IsStalled(err) || err.Error() != want {
		t.Fatalf("Provision: %v\nwant %q", err, want)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("a refused render wrote %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
