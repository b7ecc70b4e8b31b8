package score

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

func projectFixture() (*v1b1.Workload, map[string]Outputs) {
	w := &v1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a"},
		Spec: v1b1.WorkloadSpec{
			Containers: map[string]v1b1.Container{"main": {
				Image: "registry.example.com/shop:1",
				Variables: map[string]string{
					"DB_HOST":     "${resources.db.host}",
					"DB_PASSWORD": "${resources.db.password}",
					"DB_URL":      "postgres://${resources.db.username}:${resources.db.password}@${resources.db.host}:${resources.db.port}/app",
					"GREETING":    "hello from ${metadata.name} in $(shell) and $${literal}",
				},
				Files:   []v1b1.ContainerFile{{Target: "/etc/app.conf", Content: ptr.To("host=${resources.db.host}\npassword=${resources.db.password}\n")}},
				Volumes: []v1b1.ContainerVolume{{Target: "/data", Source: "${resources.data}"}},
			}},
			Resources: map[string]v1b1.ResourceSpec{"db": {Type: "postgres"}, "data": {Type: "volume"}},
			Service:   &v1b1.ServiceSpec{Ports: map[string]v1b1.ServicePort{"web": {Port: 8080}}},
		},
	}
	outputs := map[string]Outputs{
		"db":   {Values: map[string]string{"host": "shop-db.team-a.svc", "port": "5432"}, Secrets: sets.New("username", "password")},
		"data": {Values: map[string]string{"source": "shop-data"}},
	}
	return w, outputs
}

func TestProject(t *testing.T) {
	w, outputs := projectFixture()
	resolved, errs := Resolve(w)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, err := Project(w, resolved, outputs)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Projection.Containers["main"]
	env := map[string]v1b1.EnvProjection{}
	var order []string
	for _, e := range c.Env {
		env[e.Name] = e
		order = append(order, e.Name)
	}
	if v := env["DB_HOST"].Value; v == nil || *v != "shop-db.team-a.svc" {
		t.Errorf("DB_HOST = %+v", env["DB_HOST"])
	}
	if f := env["DB_PASSWORD"].From; f == nil || f.BindingKey != "db" || f.OutputKey != "password" || env["DB_PASSWORD"].Value != nil {
		t.Errorf("DB_PASSWORD must reference the secret, got %+v", env["DB_PASSWORD"])
	}
	wantURL := "postgres://$(PLINTH_SECRET_DB_USERNAME):$(PLINTH_SECRET_DB_PASSWORD)@shop-db.team-a.svc:5432/app"
	if v := env["DB_URL"].Value; v == nil || *v != wantURL {
		t.Errorf("DB_URL = %v, want %s", v, wantURL)
	}
	if f := env["PLINTH_SECRET_DB_PASSWORD"].From; f == nil || f.OutputKey != "password" {
		t.Errorf("hidden secret variable missing: %v", order)
	}
	if !strings.HasPrefix(order[0], "PLINTH_SECRET_") || !strings.HasPrefix(order[1], "PLINTH_SECRET_") {
		t.Errorf("hidden variables must come first: %v", order)
	}
	if v := env["GREETING"].Value; v == nil || *v != "hello from shop in $$(shell) and $${literal}" {
		t.Errorf("GREETING = %q", *v)
	}
	if got := *c.Files[0].Content; got != "host=shop-db.team-a.svc\npassword=${resources.db.password}\n" {
		t.Errorf("file content = %q: plain outputs resolved, secrets left for the runtime", got)
	}
	if c.Volumes[0].Source != "shop-data" {
		t.Errorf("volume source = %q", c.Volumes[0].Source)
	}
	for _, b := range p.Bindings {
		if b.Key == "db" && strings.Join(b.Outputs, ",") != "host,password,port,username" {
			t.Errorf("db binding outputs = %v", b.Outputs)
		}
	}
	for _, e := range c.Env {
		if e.Value != nil && strings.Contains(*e.Value, "secret") {
			t.Errorf("a secret value leaked into %s", e.Name)
		}
	}
}

func TestProjectMissingOutput(t *testing.T) {
	w, outputs := projectFixture()
	resolved, _ := Resolve(w)
	delete(outputs["db"].Values, "host")
	_, err := Project(w, resolved, outputs)
	perr, ok := err.(*ProjectionError)
	if !ok || perr.Path.String() != "spec.containers[main].variables.DB_HOST" && perr.Path.String() != "spec.containers[main].variables.DB_URL" {
		t.Fatalf("missing output: %v", err)
	}
}

func TestEndpoint(t *testing.T) {
	ports := func(p map[string]v1b1.ServicePort) *v1b1.ServiceSpec { return &v1b1.ServiceSpec{Ports: p} }
	for _, tc := range []struct {
		service *v1b1.ServiceSpec
		want    string
	}{
		{nil, ""},
		{ports(map[string]v1b1.ServicePort{"web": {Port: 80}}), "http://h"},
		{ports(map[string]v1b1.ServicePort{"web": {Port: 8080}}), "http://h:8080"},
		{ports(map[string]v1b1.ServicePort{"https": {Port: 443}, "web": {Port: 80}}), "https://h"},
		{ports(map[string]v1b1.ServicePort{"metrics": {Port: 9090}, "main": {Port: 3000}}), "http://h:3000"},
		{ports(map[string]v1b1.ServicePort{"grpc": {Port: 443}}), "https://h"},
		{ports(map[string]v1b1.ServicePort{"a": {Port: 1}, "b": {Port: 2}}), ""},
		{ports(map[string]v1b1.ServicePort{"dns": {Port: 53, Protocol: "UDP"}}), ""},
	} {
		got := ""
		if e := Endpoint("h", tc.service); e != nil {
			got = *e
		}
		if got != tc.want {
			t.Errorf("Endpoint(%v) = %q, want %q", tc.service, got, tc.want)
		}
	}
}

// Score's escapes are undone once on the whole way from the Workload to the container. The plan
// keeps each value in the syntax its runtime expands once: variables in Kubernetes' ($$ is a $,
// $(NAME) a variable), file contents in Score's (escapes as written, secret placeholders left).
// An output's value is text, whatever $ it holds.
func TestProjectUndoesEscapesOnce(t *testing.T) {
	w, outputs := projectFixture()
	outputs["cfg"] = Outputs{Values: map[string]string{"tpl": "x$$y $(z) ${w}"}}
	w.Spec.Resources["cfg"] = v1b1.ResourceSpec{Type: "environment"}
	w.Spec.Containers["main"] = v1b1.Container{
		Image: "registry.example.com/shop:1",
		Variables: map[string]string{
			"HOME_REF":  "$${HOME}",
			"PASS_REF":  "$${resources.db.password}",
			"DOLLARS":   "a$$$$b $$ c$",
			"FROM_CFG":  "${resources.cfg.tpl}",
			"WITH_PASS": "$${resources.db.host} ${resources.db.password}",
		},
		Files: []v1b1.ContainerFile{
			{Target: "/etc/a.conf", Content: ptr.To("home=$${HOME}\nlit=$${resources.db.password}\ncfg=${resources.cfg.tpl}\npw=${resources.db.password}\ncost=5$ and $$$$\n")},
			{Target: "/etc/b.conf", Content: ptr.To("plain $${HOME} $$ ${metadata.name}")},
			{Target: "/etc/c.conf", Content: ptr.To("as is $${HOME} ${x}"), NoExpand: true},
		},
	}
	resolved, errs := Resolve(w)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, err := Project(w, resolved, outputs)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Projection.Containers["main"]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = ptr.Deref(e.Value, "<from>")
	}
	for name, want := range map[string]string{
		"HOME_REF":  "$${HOME}",
		"PASS_REF":  "$${resources.db.password}",
		"DOLLARS":   "a$$$$b $$ c$$",
		"FROM_CFG":  "x$$$$y $$(z) $${w}",
		"WITH_PASS": "$${resources.db.host} $(PLINTH_SECRET_DB_PASSWORD)",
	} {
		if env[name] != want {
			t.Errorf("%s = %q in the plan, want %q", name, env[name], want)
		}
	}
	for i, want := range []string{
		"home=$${HOME}\nlit=$${resources.db.password}\ncfg=x$$$$y $$(z) $${w}\npw=${resources.db.password}\ncost=5$ and $$$$\n",
		"plain $${HOME} $$ shop",
		"as is $${HOME} ${x}",
	} {
		if got := ptr.Deref(c.Files[i].Content, ""); got != want {
			t.Errorf("file %d = %q in the plan, want %q", i, got, want)
		}
	}
}

// TestProjectionMessagesNameWhatTheUserWrote maps each placeholder a workload can get wrong to
// the sentence its ProjectionError carries: the resource, the output or the metadata key as
// the user wrote them, and what there is instead.
func TestProjectionMessagesNameWhatTheUserWrote(t *testing.T) {
	outputs := map[string]Outputs{
		"env":   {Values: map[string]string{"LOG_LEVEL": "debug", "REGION": "eu"}, Secrets: sets.New("API_KEY")},
		"empty": {Values: map[string]string{}},
	}
	for _, tc := range []struct{ placeholder, want string }{
		{"${resources.env.DEBUG}", `Resource "env" has no output "DEBUG"; it has: API_KEY, LOG_LEVEL, REGION.`},
		{"${resources.empty.url}", `Resource "empty" has no output "url"; it has none.`},
		{"${resources.cache.host}", `Resource "cache" has no outputs yet.`},
		{"url=${resources.env.API_KEY}", `Output "API_KEY" of resource "env" is secret and cannot be used here.`},
		{"${metadata.labels.team}", `The workload's metadata has no "labels.team".`},
		{"${resources}", `${resources} names no resource.`},
		{"${spec.name}", `${spec.name} refers to neither metadata nor resources.`},
		{"${resources.env.DEBUG}-${resources.env.TRACE}", `Resource "env" has no output "DEBUG"; it has: API_KEY, LOG_LEVEL, REGION. Resource "env" has no output "TRACE"; it has: API_KEY, LOG_LEVEL, REGION.`},
	} {
		t.Run(tc.placeholder, func(t *testing.T) {
			path := field.NewPath("spec", "containers").Key("main").Child("variables").Key("X")
			_, err := substitute(tc.placeholder, map[string]interface{}{"name": "shop"}, outputs, map[string]sets.Set[string]{}, path)
			var pe *ProjectionError
			if !errors.As(err, &pe) {
				t.Fatalf("want a ProjectionError, got %v", err)
			}
			if pe.Message != tc.want || pe.Path.String() != path.String() {
				t.Errorf("message %q at %s, want %q", pe.Message, pe.Path, tc.want)
			}
		})
	}
}
